// RUN: zero-opt --help | FileCheck %s

// `zero-opt --help` lists every zero-pipeline key with its help, from
// compiler/config/ConfigOptions.def.

// CHECK: {{--zero-pipeline }}
// CHECK-SAME: The whole global-view ZeRO pipeline
// CHECK-DAG: --stage=<long> {{.*}}- ZeRO stage, 0 to 3
// CHECK-DAG: --world=<long> {{.*}}- ranks in all
// CHECK-DAG: --model-parallel-size=<long> {{.*}}- ranks of the model axes (tensor parallelism)
// CHECK-DAG: --pipeline-parallel-size=<long> {{.*}}- pipeline stages the layers are cut into
// CHECK-DAG: --pipeline-schedule=<string> {{.*}}- 1f1b or gpipe
// CHECK-DAG: --optimizer=<string> {{.*}}- sgd, adam or adamw
// CHECK-DAG: --precision=<string> {{.*}}- fp32, fp16 or bf16
// CHECK-DAG: --overlap-comm {{.*}}- overlap reductions with the backward
// CHECK-DAG: --stage3-max-reuse-distance=<long> {{.*}}- stage 3: a gathered parameter reused
// CHECK-DAG: --loss-scale=<number> {{.*}}- static loss scale
// CHECK-DAG: --train-micro-batch-size-per-gpu=<long>
// CHECK-DAG: --sub-group-size=<long>
