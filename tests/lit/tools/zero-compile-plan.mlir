// The whole pipeline on GPT-2 tiny (134912 parameters, 4 ranks), with the
// thresholds at 0 so that docs/design.md#model-state-memory holds exactly:
// the model states the memory plan holds at once equal the formula, and the
// bucket buffers come on top.
//
// RUN: zero-compile --preset=tiny --world=4 --stage=2 --pipeline='stage3-param-persistence-threshold=0 reduce-bucket-size=20000' --report=json -o %t2.zplan | FileCheck %s --check-prefix=STAGE2
// RUN: zero-compile --preset=tiny --world=4 --stage=3 --pipeline='stage3-param-persistence-threshold=0 reduce-bucket-size=20000 stage3-prefetch-bucket-size=20000 stage3-max-reuse-distance=0 overlap-comm=true' --report=json -o %t3.zplan | FileCheck %s --check-prefix=STAGE3
// RUN: zero-compile --preset=tiny --world=4 --stage=3 --pipeline='precision=bf16 stage3-param-persistence-threshold=0 stage3-max-reuse-distance=0' --report=json | FileCheck %s --check-prefix=BF16

// fp32 Adam, stage 2: 4Ψ + (4 + 8)Ψ/N = 539648 + 404736 (+ padding).
// STAGE2: "memory_plan": {
// STAGE2: "model_state_bytes": 944384,
// STAGE2: "model_states_vs_formula": {
// STAGE2-NEXT: "bucket_buffer_bytes": 75008,
// STAGE2-NEXT: "equal": true,
// STAGE2-NEXT: "formula_bytes": 944384,
// STAGE2-NEXT: "planned_bytes": 944384

// fp32 Adam, stage 3: (4 + 4 + 8)Ψ/N; gathered parameters and gradient
// buckets are the bucket buffers. With overlap_comm most traffic has
// compute to hide behind.
// STAGE3: "model_states_vs_formula": {
// STAGE3-NEXT: "bucket_buffer_bytes": {{[0-9]+}},
// STAGE3-NEXT: "equal": true,
// STAGE3-NEXT: "formula_bytes": 539648,
// STAGE3-NEXT: "planned_bytes": 539648
// STAGE3: "overlap": {
// STAGE3-NEXT: "comm_bytes": 1203654,
// A 1-D placement: every byte on its one axis.
// STAGE3-NEXT: "comm_bytes_by_axis": [
// STAGE3-NEXT: 1203654
// STAGE3-NEXT: ],
// STAGE3-NEXT: "fraction": 0.75

// bf16 with fp32 master, stage 3: (2 + 2 + 12)Ψ/N.
// BF16: "model_states_vs_formula": {
// BF16: "equal": true,
// BF16-NEXT: "formula_bytes": 539648,


// DeepSpeed's stage-3 defaults (reuse distance 1e9: the forward copies
// serve the backward, so parameters are gathered once).
// RUN: zero-compile --preset=tiny --world=4 --stage=3 --pipeline='stage3-param-persistence-threshold=0' --report=text -o %t.zplan | FileCheck %s --check-prefix=DEFAULTS
// The planned traffic is Ψ(N-1)/N gathered plus as much reduce-scattered
// (4 bytes each: 404736 + 404736) and the loss all-reduce (6 bytes).
// DEFAULTS: planned peak {{[0-9]+}} bytes per rank {{.*}} of 809478 bytes sent overlap compute
