// zero-compile's --model-parallel-size (Megatron's; --tensor-model-parallel-size
// is its alias) on a captured graph split on a [data, model] = [2, 2]
// placement: the batch sizes of a DeepSpeed config count the data-parallel
// ranks, world / model-parallel size, as DeepSpeed's do with model
// parallelism (docs/design.md#tensor-parallelism). Without the flag a graph
// with model axes takes their size when no batch size is configured, and
// a configured batch is counted over every rank; a size the world does not
// divide, or that is not the graph's, is refused in one line.
// RUN: rm -rf %t && mkdir -p %t && split-file %s %t
//
// RUN: zero-compile %t/mlp.mlir --world=4 --tensor-model-parallel-size=2 --config=%t/ds.json --report=json -o %t/a.zplan | FileCheck %s --check-prefix=ALIAS
// ALIAS-DAG: "model_parallel_size": 2
// ALIAS-DAG: "train_batch_size": 8
// ALIAS-DAG: "train_micro_batch_size_per_gpu": 4
// RUN: zero-compile %t/mlp.mlir --world=4 --stage=2 --report=json -o %t/b.zplan | FileCheck %s --check-prefix=ADOPT
// ADOPT: "model_parallel_size": 2
//
// RUN: sh -c 'echo BEGIN; zero-compile %t/mlp.mlir --world=4 --config=%t/ds.json --report=none -o %t/c.zplan 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=ALL
// ALL: BEGIN
// ALL-NEXT: zero-compile: {{.*}}ds.json: train_batch_size: 8 is not divisible by train_micro_batch_size_per_gpu (4) * world (4)
// ALL-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-compile %t/mlp.mlir --world=4 --model-parallel-size=4 --report=none -o %t/d.zplan 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=MISMATCH
// MISMATCH: BEGIN
// MISMATCH-NEXT: zero-compile: model-parallel-size 4, but input 'x' is split over 2 of the graph's 4 ranks (model-parallel size 2); the batch sizes count its data-parallel ranks
// MISMATCH-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-compile %t/mlp.mlir --world=4 --model-parallel-size=3 --report=none -o %t/e.zplan 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=DIVISOR
// DIVISOR: BEGIN
// DIVISOR-NEXT: zero-compile: model-parallel-size: expected a divisor of world (4), got 3
// DIVISOR-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-compile %t/mlp.mlir --world=4 --model-parallel-size=0 --report=none -o %t/f.zplan 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=ZERO
// ZERO: BEGIN
// ZERO-NEXT: zero-compile: --model-parallel-size: expected an integer >= 1, got 0
// ZERO-NEXT: exit 1

//--- ds.json
{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4,
 "zero_optimization": {"stage": 2}}

//--- mlp.mlir
#g = #sbp.placement<cpu, [0, 1, 2, 3], hierarchy = [2, 2]>
func.func @mlp() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x6xf32, #sbp.global<[S(0), B], #g, input>>
  %y = nn.input "y" : tensor<8xi64, #sbp.global<[S(0), B], #g, input>>
  %w1 = nn.variable "fc1.weight" param init = uniform(0.4) : tensor<8x6xf32, #sbp.global<[B, S(0)], #g, param>>
  %w2 = nn.variable "fc2.weight" param init = uniform(0.4) : tensor<4x8xf32, #sbp.global<[B, S(1)], #g, param>>
  %h = nn.matmul %x, %w1 {transpose_rhs} : (tensor<8x6xf32, #sbp.global<[S(0), B], #g, input>>, tensor<8x6xf32, #sbp.global<[B, S(0)], #g, param>>) -> tensor<8x8xf32>
  %r = nn.gelu %h : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %z = nn.matmul %r, %w2 {transpose_rhs} : (tensor<8x8xf32>, tensor<4x8xf32, #sbp.global<[B, S(1)], #g, param>>) -> tensor<8x4xf32>
  %l = nn.cross_entropy %z, %y : (tensor<8x4xf32>, tensor<8xi64, #sbp.global<[S(0), B], #g, input>>) -> tensor<f32>
  return %l : tensor<f32>
}
