// RUN: zero-opt %s --zero-pipeline='stage=2 world=2 offload-optimizer=cpu' | FileCheck %s --check-prefix=CPU
// RUN: zero-opt %s --zero-pipeline='stage=2 world=2 offload-optimizer=nvme offload-optimizer-nvme-path=/nvme' | FileCheck %s --check-prefix=NVME
// RUN: zero-opt %s --zero-pipeline='stage=2 world=2 offload-optimizer=nvme offload-optimizer-nvme-path=/nvme' -zero-partition | FileCheck %s --check-prefix=LOCAL
// RUN: zero-opt %s --zero-pipeline='stage=2 world=2 offload-optimizer=nvme offload-optimizer-nvme-path=/nvme' -zero-partition | zero-opt -zero-bucketing -zero-schedule=nvme-depth=2 -zero-memory-plan -zero-verify-memory-plan | FileCheck %s --check-prefix=PLAN
// RUN: zero-opt %s --zero-pipeline='stage=3 world=2 stage3-param-persistence-threshold=0 offload-param=nvme offload-param-nvme-path=/nvme' | FileCheck %s --check-prefix=PARAM
// RUN: zero-opt %s --zero-pipeline='stage=2 world=2 offload-optimizer=cpu offload-optimizer-delayed-update=true' | FileCheck %s --check-prefix=DPU
// RUN: zero-opt %s --zero-pipeline='stage=2 world=2 offload-optimizer=cpu offload-optimizer-delayed-update=true' -zero-partition | zero-opt -zero-bucketing -zero-schedule=overlap-comm=true -zero-memory-plan -zero-verify-memory-plan | FileCheck %s --check-prefix=DPUPLAN
// RUN: not zero-opt %s --zero-pipeline='stage=2 world=2 precision=fp16 offload-optimizer=cpu offload-optimizer-delayed-update=true' 2>&1 | FileCheck %s --check-prefix=DPUFP16
// RUN: not zero-opt %s --zero-pipeline='stage=2 world=2 offload-optimizer-delayed-update=true' 2>&1 | FileCheck %s --check-prefix=DPUALONE
// RUN: not zero-opt %s --zero-pipeline='stage=2 world=2 offload-param=cpu' 2>&1 | FileCheck %s --check-prefix=PARAM2
// RUN: not zero-opt %s --zero-pipeline='stage=0 world=2 offload-optimizer=cpu' 2>&1 | FileCheck %s --check-prefix=STAGE0
// RUN: not zero-opt %s --zero-pipeline='stage=1 world=2 offload-optimizer=nvme' 2>&1 | FileCheck %s --check-prefix=NOPATH
// RUN: not zero-opt %s --zero-pipeline='stage=1 world=2 offload-optimizer=disk' 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: not zero-opt %s --zero-pipeline='stage=1 world=2 offload-optimizer-pin-memory=true' 2>&1 | FileCheck %s --check-prefix=UNUSED

// DPUFP16: offload-optimizer-delayed-update: not with fp16: the loss scale that divides a gradient may change before its delayed update
// DPUALONE: offload-optimizer-delayed-update: only used with offload-optimizer=cpu or nvme
// PARAM2: offload-param: needs ZeRO stage 3 (below it every rank holds whole parameters)
// STAGE0: offload-optimizer: needs ZeRO stage 1, 2 or 3 (stage 0 keeps whole optimizer states on every rank)
// NOPATH: offload-optimizer-nvme-path: expected the directory for the NVMe files, got none
// KIND: offload-optimizer: expected none, cpu or nvme, got 'disk'
// UNUSED: offload-optimizer-pin-memory: only used with offload-optimizer=cpu or nvme

// A linear layer trained with Adam at stage 2 on 2 ranks.
#p = #sbp.placement<cpu, [0, 1]>
func.func @linear() -> tensor<f32> {
  %x = nn.input "x" : tensor<4x8xf32, #sbp.global<[S(0)], #p, input>>
  %y = nn.input "y" : tensor<4xi64, #sbp.global<[S(0)], #p, input>>
  %w = nn.variable "w" param : tensor<16x8xf32, #sbp.global<[B], #p, param>>
  %logits = nn.matmul %x, %w {transpose_rhs} : (tensor<4x8xf32, #sbp.global<[S(0)], #p, input>>, tensor<16x8xf32, #sbp.global<[B], #p, param>>) -> tensor<4x16xf32>
  %loss = nn.cross_entropy %logits, %y : (tensor<4x16xf32>, tensor<4xi64, #sbp.global<[S(0)], #p, input>>) -> tensor<f32>
  return %loss : tensor<f32>
}

// Host memory: the moments live there and the update reads them in place;
// the gradient shard, the parameter shard and the step are cast to host
// memory before it, the new parameter back to the device after it.
// CPU: #[[HOST:cpus2_host]] = #sbp.placement<cpu, [0, 1], memory = host>
// CPU-LABEL: func.func @linear
// CPU: %[[M:.*]] = nn.variable "w.exp_avg" opt_state {{.*}}#sbp.global<[S(0)], #[[HOST]], opt_state>>
// CPU: %[[V:.*]] = nn.variable "w.exp_avg_sq" opt_state {{.*}}#sbp.global<[S(0)], #[[HOST]], opt_state>>
// CPU: %[[P:.*]] = sbp.cast %{{.*}} : tensor<128xf32, #sbp.global<[S(0)], #cpus2, param>> to tensor<128xf32, #sbp.global<[S(0)], #[[HOST]], param>>
// CPU-NEXT: %[[G:.*]] = sbp.cast %{{.*}} : tensor<128xf32, #sbp.global<[S(0)], #cpus2, grad>> to tensor<128xf32, #sbp.global<[S(0)], #[[HOST]], grad>>
// CPU-NEXT: %[[S:.*]] = sbp.cast %{{.*}} : tensor<i64, #sbp.global<[B], #cpus2>> to tensor<i64, #sbp.global<[B], #[[HOST]]>>
// CPU-NEXT: %[[NP:.*]], %[[NM:.*]], %[[NV:.*]] = nn.adam %[[P]], %[[G]], %[[M]], %[[V]], %[[S]]
// CPU-SAME: -> (tensor<128xf32, #sbp.global<[S(0)], #[[HOST]], param>>, tensor<128xf32, #sbp.global<[S(0)], #[[HOST]], opt_state>>, tensor<128xf32, #sbp.global<[S(0)], #[[HOST]], opt_state>>)
// CPU-NEXT: %[[D:.*]] = sbp.cast %[[NP]] : {{.*}}#[[HOST]], param>> to tensor<128xf32, #sbp.global<[S(0)], #cpus2, param>>
// CPU-NEXT: sbp.cast %[[D]] : {{.*}}[S(0)]{{.*}} to {{.*}}[B]
// CPU: nn.assign "w.exp_avg", %[[NM]]
// CPU-NEXT: nn.assign "w.exp_avg_sq", %[[NV]]

// NVMe: the moments are read into host memory right before the update and
// written back after it.
// NVME: #[[HOST:cpus2_host]] = #sbp.placement<cpu, [0, 1], memory = host>
// NVME: #[[NVME:cpus2_nvme]] = #sbp.placement<cpu, [0, 1], memory = nvme>
// NVME: %[[M:.*]] = nn.variable "w.exp_avg" opt_state {{.*}}#[[NVME]], opt_state>>
// NVME: %[[MH:.*]] = sbp.cast %[[M]] : {{.*}}#[[NVME]], opt_state>> to {{.*}}#[[HOST]], opt_state>>
// NVME: %[[NP:.*]], %[[NM:.*]], %[[NV:.*]] = nn.adam %{{.*}}, %{{.*}}, %[[MH]]
// NVME: %[[MW:.*]] = sbp.cast %[[NM]] : {{.*}}#[[HOST]], opt_state>> to {{.*}}#[[NVME]], opt_state>>
// NVME: nn.assign "w.exp_avg", %[[MW]] : tensor<128xf32, #sbp.global<[S(0)], #[[NVME]], opt_state>>

// Partitioned, each memory cast is a transfer of the rank's shard, and the
// update computes in host memory.
// LOCAL: shard.grid @cpus2(shape = 2) {zero.placement = #cpus2}
// LOCAL-NOT: shard.grid
// LOCAL: nn.variable "w.exp_avg" opt_state {{.*}}#cpus2_nvme, opt_state>>, zero.memory_kind = #sbp<memory nvme>} : tensor<64xf32>
// LOCAL: %[[F:.*]] = sbp.transfer_start %{{.*}} from nvme to host : tensor<64xf32> -> !sbp.future<tensor<64xf32>>
// LOCAL-NEXT: %[[MH:.*]] = sbp.transfer_wait %[[F]]
// LOCAL: nn.adam {{.*}} {lr = 1.000000e-03 : f64, zero.memory_kind = #sbp<memory host>}
// LOCAL: sbp.transfer_start %{{.*}} from host to device
// LOCAL: sbp.transfer_start %{{.*}} from host to nvme

// Planned: the moments (2 x 64 floats per rank) in the NVMe arena, not on
// the device; in host memory the update's operands, one at a time: the
// parameter and gradient shards, both moments and the step (8 bytes).
// Both NVMe reads start before the first wait (nvme-depth=2).
// PLAN-LABEL: func.func @linear
// PLAN-SAME: #sbp.buffer<offset = 0, bytes = 256, live = [0, {{[0-9]+}}], role = opt_state, memory = nvme>
// PLAN-SAME: #sbp.buffer<offset = 256, bytes = 256, live = [0, {{[0-9]+}}], role = opt_state, memory = nvme>
// PLAN-SAME: zero.memory = {arena = {{[0-9]+}} : i64, host = {arena = 1032 : i64, lower_bound = 1032 : i64, peak = {activation = 264 : i64, comm_buffer = 0 : i64, grad = 256 : i64, input = 0 : i64, master = 0 : i64, opt_state = 512 : i64, param = 0 : i64}}
// PLAN-SAME: model_states = 512 : i64, nvme = {arena = 512 : i64, lower_bound = 512 : i64, peak = {activation = 0 : i64, comm_buffer = 0 : i64, grad = 0 : i64, input = 0 : i64, master = 0 : i64, opt_state = 512 : i64, param = 0 : i64}}
// PLAN-SAME: opt_state = 0 : i64
// PLAN: %[[R1:.*]] = sbp.transfer_start %{{.*}} from nvme to host
// PLAN-NEXT: %[[R2:.*]] = sbp.transfer_start %{{.*}} from nvme to host
// PLAN-NEXT: sbp.transfer_wait %[[R1]]
// PLAN-NEXT: sbp.transfer_wait %[[R2]]
// PLAN: nn.adam {{.*}}zero.memory_kind = #sbp<memory host>

// offload_param at stage 3: the parameter's shard lives in the NVMe file;
// its gather and the update (left on the device) each read a copy that
// passes through host memory, and the new shard goes back the same way.
// PARAM: %[[W:.*]] = nn.variable "w" param {{.*}} : tensor<128xf32, #sbp.global<[S(0)], #cpus2_nvme, param>>
// PARAM: %[[H1:.*]] = sbp.cast %[[W]] : {{.*}}#cpus2_nvme, param>> to {{.*}}#cpus2_host, param>>
// PARAM-NEXT: %[[D1:.*]] = sbp.cast %[[H1]] : {{.*}}#cpus2_host, param>> to tensor<128xf32, #sbp.global<[S(0)], #cpus2, param>>
// PARAM-NEXT: sbp.cast %[[D1]] : {{.*}}[S(0)]{{.*}} to {{.*}}[B]
// PARAM: %[[H2:.*]] = sbp.cast %[[W]] : {{.*}}#cpus2_nvme, param>> to {{.*}}#cpus2_host, param>>
// PARAM-NEXT: %[[D2:.*]] = sbp.cast %[[H2]]
// PARAM-NEXT: %[[NP:.*]], %{{.*}}, %{{.*}} = nn.adam %[[D2]],
// PARAM-NEXT: %[[B1:.*]] = sbp.cast %[[NP]] : {{.*}}#cpus2, param>> to {{.*}}#cpus2_host, param>>
// PARAM-NEXT: %[[B2:.*]] = sbp.cast %[[B1]] : {{.*}}#cpus2_host, param>> to {{.*}}#cpus2_nvme, param>>
// PARAM-NEXT: nn.assign "w", %[[B2]]

// The delayed update (ZeRO-Offload's DPU): the update reads the gradient
// kept from the step before, in host memory with the states, and this
// step's gradient shard is assigned to it.
// DPU:      %[[KEPT:.*]] = nn.variable "w.delayed_grad" grad {logical_shape = array<i64: 16, 8>} : tensor<128xf32, #sbp.global<[S(0)], #cpus2_host, grad>>
// DPU:      %[[FRESH:.*]] = sbp.cast %{{.*}} : tensor<128xf32, #sbp.global<[P(sum)], #cpus2, grad>> to tensor<128xf32, #sbp.global<[S(0)], #cpus2, grad>>
// DPU:      nn.adam %{{.*}}, %[[KEPT]], %{{.*}}, %{{.*}}, %{{.*}} {lr = 1.000000e-03 : f64}
// DPU:      %[[HOST:.*]] = sbp.cast %[[FRESH]] : tensor<128xf32, #sbp.global<[S(0)], #cpus2, grad>> to tensor<128xf32, #sbp.global<[S(0)], #cpus2_host, grad>>
// DPU-NEXT: nn.assign "w.delayed_grad", %[[HOST]]

// With overlap_comm the delayed update runs before the forward: it reads
// only variables, the parameter shard and the step.
// DPUPLAN:     nn.adam {{.*}}zero.memory_kind = #sbp<memory host>
// DPUPLAN:     nn.matmul
// DPUPLAN-NOT: nn.adam
// DPUPLAN:     nn.assign "w.delayed_grad"
