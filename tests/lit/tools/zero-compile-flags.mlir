// A value the user typed is checked, 0 and -1 included (they are not taken
// for "not given"), and a --stage that disagrees with the config's stage is
// an error, as a batch that disagrees with train_batch_size is. Each check
// shows the first line of the message and the exit status.
// RUN: split-file %s %t
//
// RUN: sh -c 'echo BEGIN; zero-compile --hidden-size 0 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=HIDDEN
// HIDDEN: BEGIN
// HIDDEN-NEXT: zero-compile: --hidden-size must be positive, got 0
// HIDDEN-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-compile --num-layers 0 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=LAYERS
// LAYERS: BEGIN
// LAYERS-NEXT: zero-compile: --num-layers must be positive, got 0
// LAYERS-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --num-attention-heads=-4 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=HEADS
// HEADS: BEGIN
// HEADS-NEXT: zero-compile: --num-attention-heads must be positive, got -4
// HEADS-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --seq-length 0 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=SEQ
// SEQ: BEGIN
// SEQ-NEXT: zero-compile: --seq-length must be positive, got 0
// SEQ-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --vocab-size 0 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=VOCAB
// VOCAB: BEGIN
// VOCAB-NEXT: zero-compile: --vocab-size must be positive, got 0
// VOCAB-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --world 16385 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=WORLD
// WORLD: BEGIN
// WORLD-NEXT: zero-compile: --world: expected a number of ranks in [1, 16384], got 16385
// WORLD-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --world 0 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=WORLD0
// WORLD0: BEGIN
// WORLD0-NEXT: zero-compile: --world: expected a number of ranks in [1, 16384], got 0
// WORLD0-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --world 4 --num-virtual-stages-per-pipeline-rank 0 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=VIRTUAL0
// VIRTUAL0: BEGIN
// VIRTUAL0-NEXT: zero-compile: --num-virtual-stages-per-pipeline-rank: expected an integer >= 1, got 0
// VIRTUAL0-NEXT: exit 1
// The pipeline's schedule flags without pipeline stages.
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --world 4 --num-virtual-stages-per-pipeline-rank 2 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=VIRTUAL
// VIRTUAL: BEGIN
// VIRTUAL-NEXT: zero-compile: --num-virtual-stages-per-pipeline-rank: only used with --pipeline-model-parallel-size > 1
// VIRTUAL-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --world 4 --pipeline-schedule gpipe 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=SCHEDULE
// SCHEDULE: BEGIN
// SCHEDULE-NEXT: zero-compile: --pipeline-schedule: only used with --pipeline-model-parallel-size > 1
// SCHEDULE-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --batch-size 0 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=BATCH
// BATCH: BEGIN
// BATCH-NEXT: zero-compile: --batch-size must be positive, got 0
// BATCH-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --stage=-1 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=STAGE
// STAGE: BEGIN
// STAGE-NEXT: zero-compile: --stage must be 0, 1, 2 or 3, got -1
// STAGE-NEXT: exit 1
// An empty --preset is a preset name too.
// RUN: sh -c 'echo BEGIN; zero-compile --preset= 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=PRESET
// PRESET: BEGIN
// PRESET-NEXT: zero-compile: unknown preset '' (expected tiny, small, medium, large or xl)
// PRESET-NEXT: exit 1
// A graph file with --batch-size 0 (it used to be ignored there).
// RUN: sh -c 'echo BEGIN; zero-compile %s --batch-size 0 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=FILE
// FILE: BEGIN
// FILE-NEXT: zero-compile: --batch-size must be positive, got 0
// FILE-NEXT: exit 1
//
// The config's stage against --stage.
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --world 2 --config %t/stage1.json --stage 2 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=CONFIG
// CONFIG: BEGIN
// CONFIG-NEXT: zero-compile: {{.*}}stage1.json: zero_optimization.stage 1 != --stage 2
// CONFIG-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --world 2 --deepspeed_config %t/stage1.json --stage 0 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=DEEPSPEED
// DEEPSPEED: BEGIN
// DEEPSPEED-NEXT: zero-compile: {{.*}}stage1.json: zero_optimization.stage 1 != --stage 0
// DEEPSPEED-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --world 2 --pipeline "stage=3 shard-min-size=0" --stage 1 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=PIPELINE
// PIPELINE: BEGIN
// PIPELINE-NEXT: zero-compile: --pipeline: stage 3 != --stage 1
// PIPELINE-NEXT: exit 1
// The same stage, or a config that states none, is accepted.
// RUN: zero-compile --preset tiny --world 2 --config %t/stage1.json --stage 1 --report=text | FileCheck %s --check-prefix=AGREE
// AGREE: params 134912  world 2  stage 1
// RUN: zero-compile --preset tiny --world 2 --config %t/fp32.json --stage 3 --report=text | FileCheck %s --check-prefix=UNSTATED
// UNSTATED: params 134912  world 2  stage 3

//--- stage1.json
{"zero_optimization": {"stage": 1}}
//--- fp32.json
{"gradient_clipping": 1.0}
