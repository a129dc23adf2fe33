// zero-compile --print-ir-after=PASS prints the module after that pass of a
// real compile to stderr (docs/design.md#running-passes-by-hand); here
// GPT-2 in Megatron's layout at (dp, tp) = (2, 2), one sequence per
// data-parallel rank. After zero-sbp-propagation no parameter split on the
// model axis is cast: the activations move to the weights, and the
// attention's heads split over the model axis while its batch splits over
// the data axis alone (docs/design.md#tensor-parallelism).
// RUN: zero-compile --preset=tiny --world=4 --model-parallel-size=2 --batch-size=2 --report=none -o %t.zplan --print-ir-after=zero-sbp-propagation 2>&1 | FileCheck %s
// RUN: zero-compile --preset=tiny --world=4 --model-parallel-size=2 --batch-size=2 --report=none -o %t.zplan --print-ir-after=zero-sbp-propagation 2>&1 | FileCheck %s --check-prefix=HEADS
// RUN: zero-compile --preset=tiny --world=4 --report=none -o %t.zplan --print-ir-after=capture 2>&1 | FileCheck %s --check-prefix=CAPTURE
// RUN: sh -c 'echo BEGIN; zero-compile --preset=tiny --world=4 --report=none -o %t.zplan --print-ir-after=zero-nothing 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=UNKNOWN

// CHECK: // -----// IR after zero-sbp-propagation //----- //
// CHECK: %[[WTE:.*]] = nn.variable "wte.weight" param {{.*}}#sbp.global<[B, S(0)]
// CHECK: %[[QKV:.*]] = nn.variable "h.0.attn.c_attn.weight" param {{.*}}#sbp.global<[B, S(1)]
// CHECK: %[[PROJ:.*]] = nn.variable "h.0.attn.c_proj.weight" param {{.*}}#sbp.global<[B, S(1)]
// CHECK: %[[FC:.*]] = nn.variable "h.0.mlp.c_fc.weight" param {{.*}}#sbp.global<[B, S(0)]
// CHECK: %[[FCPROJ:.*]] = nn.variable "h.0.mlp.c_proj.weight" param {{.*}}#sbp.global<[B, S(1)]
// CHECK-NOT: sbp.cast %[[WTE]] :
// CHECK-NOT: sbp.cast %[[QKV]] :
// CHECK-NOT: sbp.cast %[[PROJ]] :
// CHECK-NOT: sbp.cast %[[FC]] :
// CHECK-NOT: sbp.cast %[[FCPROJ]] :
// CHECK: return

// HEADS: // -----// IR after zero-sbp-propagation //----- //
// HEADS: nn.attention {{.*}} : (tensor<2x4x32x16xf32, #sbp.global<[S(0), S(1)]

// CAPTURE: // -----// IR after capture //----- //
// CAPTURE: nn.variable "wte.weight" param {{.*}} : tensor<512x64xf32, #sbp.global<[B], #{{.*}}, param>>
// CAPTURE-NOT: IR after

// UNKNOWN: BEGIN
// UNKNOWN-NEXT: zero-compile: --print-ir-after: no pass is named 'zero-nothing' (see zero-opt --help)
// UNKNOWN-NEXT: exit 1
