// MiCS's 2-D reductions share buckets: the gradients' reduce-scatters
// within each group of 2 fuse into one bucket, and the all-reduces of the
// shards across groups, which read that bucket, into one more (a second
// round of zero-bucketing). Before, every gradient had its own pair: 59
// collectives for GPT-2 tiny where there are now 5.
//
// RUN: zero-compile --preset=tiny --world=4 --stage=3 --pipeline='shard-min-size=0 stage3-param-persistence-threshold=0 mics-shard-size=2' --emit-ir=%t.mlir -o %t.zplan --report=none
// RUN: FileCheck %s < %t.mlir

// CHECK: sbp.collective_start all_gather
// CHECK-SAME: axis 1
// CHECK: sbp.collective_start all_reduce
// CHECK: sbp.collective_start all_reduce
// CHECK: %[[RS:.*]] = sbp.collective_start reduce_scatter
// CHECK-SAME: axis 1
// CHECK: %[[SHARDS:.*]]:{{[0-9]+}} = sbp.collective_wait %[[RS]]
// CHECK: sbp.collective_start all_reduce %[[SHARDS]]#{{[0-9]+}}, %[[SHARDS]]#{{[0-9]+}}
// CHECK-SAME: axis 0
// CHECK-NOT: sbp.collective_start
