// zero-compile's and zero-opt's files: inputs that are not regular files
// are refused, not read forever; an output may be neither an input nor
// another output; a write that fails names its file; integer flags are
// decimal; --world and --pipeline's world must agree. Each check shows the
// whole message and the exit status.
// RUN: rm -rf %t && mkdir -p %t
//
// Character devices and directories as inputs.
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --config=/dev/zero 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=ZERO
// ZERO: BEGIN
// ZERO-NEXT: zero-compile: /dev/zero: is a character device, not the config
// ZERO-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --deepspeed_config=/dev/urandom 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=URANDOM
// URANDOM: BEGIN
// URANDOM-NEXT: zero-compile: /dev/urandom: is a character device, not the config
// URANDOM-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-compile /dev/zero 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=GRAPH
// GRAPH: BEGIN
// GRAPH-NEXT: zero-compile: /dev/zero: is a character device, not the input graph
// GRAPH-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-compile %t 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=DIR -DDIR=%t
// DIR: BEGIN
// DIR-NEXT: zero-compile: [[DIR]]: is a directory, not the input graph
// DIR-NEXT: exit 1
// RUN: mkfifo %t/fifo
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --config=%t/fifo 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=FIFO -DDIR=%t
// FIFO: BEGIN
// FIFO-NEXT: zero-compile: [[DIR]]/fifo: is a FIFO, not the config
// FIFO-NEXT: exit 1
// RUN: ln -s /dev/zero %t/zero.json
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --config=%t/zero.json 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=LINK -DDIR=%t
// LINK: BEGIN
// LINK-NEXT: zero-compile: [[DIR]]/zero.json: is a character device, not the config
// LINK-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-opt /dev/zero 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=OPT
// OPT: BEGIN
// OPT-NEXT: zero-opt: /dev/zero: is a character device, not the input graph
// OPT-NEXT: exit 1
//
// An output that is an input, or another output, under any name; the input
// is left as it was.
// RUN: zero-compile --preset tiny --report=none --emit-ir %t/in.mlir
// RUN: cp %t/in.mlir %t/in.copy
// RUN: ln -s in.mlir %t/link.mlir
// RUN: sh -c 'echo BEGIN; zero-compile %t/in.mlir -o %t/in.mlir 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=SAME -DDIR=%t
// SAME: BEGIN
// SAME-NEXT: zero-compile: -o [[DIR]]/in.mlir and the input graph [[DIR]]/in.mlir are the same path
// SAME-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-compile %t/in.mlir -o %t/link.mlir 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=SYMLINK -DDIR=%t
// SYMLINK: BEGIN
// SYMLINK-NEXT: zero-compile: -o [[DIR]]/link.mlir and the input graph [[DIR]]/in.mlir are the same path
// SYMLINK-NEXT: exit 1
// RUN: sh -c 'cd %t && echo BEGIN; zero-compile in.mlir --emit-ir ./in.mlir 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=DOTS
// DOTS: BEGIN
// DOTS-NEXT: zero-compile: --emit-ir ./in.mlir and the input graph in.mlir are the same path
// DOTS-NEXT: exit 1
// RUN: printf '{}' > %t/ds.json
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --config %t/ds.json -o %t/ds.json 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=CONFIG -DDIR=%t
// CONFIG: BEGIN
// CONFIG-NEXT: zero-compile: -o [[DIR]]/ds.json and the config [[DIR]]/ds.json are the same path
// CONFIG-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny -o %t/x --emit-ir %t/x 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=BOTH -DDIR=%t
// BOTH: BEGIN
// BOTH-NEXT: zero-compile: -o [[DIR]]/x and --emit-ir [[DIR]]/x are the same path
// BOTH-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-opt %t/in.mlir -o %t/link.mlir 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=OPTSAME -DDIR=%t
// OPTSAME: BEGIN
// OPTSAME-NEXT: zero-opt: -o [[DIR]]/link.mlir and the input graph [[DIR]]/in.mlir are the same path
// OPTSAME-NEXT: exit 1
// RUN: cmp %t/in.mlir %t/in.copy
// RUN: test ! -e %t/x
//
// Writes that fail name the file: a file-size limit (the plan), a full
// device (standard output).
// RUN: sh -c 'ulimit -f 2; echo BEGIN; zero-compile --preset tiny --world 2 --stage 2 --report=none -o %t/big.zplan 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=LIMIT -DDIR=%t
// LIMIT: BEGIN
// LIMIT-NEXT: zero-compile: zero-export-plan: cannot write '[[DIR]]/big.zplan': File too large
// LIMIT-NEXT: exit 1
// RUN: test ! -e %t/big.zplan
// RUN: sh -c 'echo BEGIN >&2; zero-compile --preset tiny --report=json > /dev/full; echo "exit $?" >&2' 2>&1 | FileCheck %s --match-full-lines --check-prefix=FULL
// FULL: BEGIN
// FULL-NEXT: zero-compile: cannot write to standard output: No space left on device
// FULL-NEXT: exit 1
// RUN: sh -c 'echo BEGIN >&2; zero-opt %t/in.mlir > /dev/full; echo "exit $?" >&2' 2>&1 | FileCheck %s --match-full-lines --check-prefix=OPTFULL
// OPTFULL: BEGIN
// OPTFULL-NEXT: zero-opt: cannot write to standard output: No space left on device
// OPTFULL-NEXT: exit 1
//
// Integer flags are decimal: 010 is ten, as `zero-run --ranks 010` is.
// RUN: zero-compile --preset tiny --world=010 --report=json | FileCheck %s --check-prefix=DECIMAL
// DECIMAL: "world": 10
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --world=0x10 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=HEX
// HEX: BEGIN
// HEX-NEXT: zero-compile: for the --world option: expected a decimal integer, got '0x10'
// HEX-NEXT: exit 1
//
// --world given once and --pipeline's world: they must agree.
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --world=2 --pipeline="world=4" 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=WORLD
// WORLD: BEGIN
// WORLD-NEXT: zero-compile: --pipeline: world 4 != --world 2
// WORLD-NEXT: exit 1
// RUN: zero-compile --preset tiny --pipeline="world=4" --report=json | FileCheck %s --check-prefix=PAIR
// RUN: zero-compile --preset tiny --world=4 --pipeline="world=4" --report=json | FileCheck %s --check-prefix=PAIR
// PAIR: "world": 4
//
// A bucket size of 0 is refused where the config is read.
// RUN: printf '{"zero_optimization": {"stage": 2, "reduce_bucket_size": 0}}' > %t/bucket.json
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --world 2 --config %t/bucket.json 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=BUCKET -DDIR=%t
// BUCKET: BEGIN
// BUCKET-NEXT: zero-compile: [[DIR]]/bucket.json: zero_optimization.reduce_bucket_size: expected an integer >= 1, got 0
// BUCKET-NEXT: exit 1
