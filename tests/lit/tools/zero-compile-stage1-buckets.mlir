// Stage 1 reduces its gradients in reduce buckets, as stage 2 does: the
// reshapes and pads that flatten each gradient for its reduce-scatter sit
// right after the gradient, not at its update, so zero-bucketing fuses the
// reduce-scatters of the whole model into one bucket (reduce-bucket-size
// 5e8) issued after the backward, and the updated shards into one gather.
// Before, each update's flattened gradient opened a bucket of its own.
//
// RUN: zero-compile --preset=tiny --world=4 --stage=1 --pipeline='shard-min-size=0 precision=bf16' --emit-ir=%t.mlir -o %t.zplan --report=none
// RUN: FileCheck %s < %t.mlir

// CHECK: sbp.collective_start all_reduce
// CHECK: sbp.collective_start reduce_scatter
// CHECK-SAME: bucket = 1
// CHECK-NOT: sbp.collective_start reduce_scatter
// CHECK: nn.adam
// CHECK: sbp.collective_start all_gather
// CHECK-SAME: bucket = 2
// CHECK-NOT: sbp.collective_start
