// Sizes past what a plan addresses are refused before anything overflows:
// at most 2^53 parameters, 2^53 bytes per tensor and per rank's arena, and
// at most 1024 GPT-2 layers. Each check shows the first line of the message
// and the exit status.
// RUN: split-file %s %t
//
// h*h wrapped: a wrong parameter count and exit 0.
// RUN: sh -c 'echo BEGIN; zero-compile --hidden-size 4294967296 --num-attention-heads 16 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=WRAP
// WRAP: BEGIN
// WRAP-NEXT: zero-compile: GPT-2 with --num-layers 12 --hidden-size 4294967296 --vocab-size 50257 --seq-length 1024 has more than 2^53 (9007199254740992) parameters, the most a plan addresses
// WRAP-NEXT: exit 1
//
// A negative-offset overlap in zero-verify-memory-plan.
// RUN: sh -c 'echo BEGIN; zero-compile --hidden-size 1000000000 --num-attention-heads 10 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=BILLION
// BILLION: BEGIN
// BILLION-NEXT: zero-compile: GPT-2 with --num-layers 12 --hidden-size 1000000000 --vocab-size 50257 --seq-length 1024 has more than 2^53 (9007199254740992) parameters, the most a plan addresses
// BILLION-NEXT: exit 1
//
// A tensor past 2^53 bytes although the parameters fit.
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --seq-length 1073741824 --batch-size 4 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=SCORES
// SCORES: BEGIN
// SCORES-NEXT: zero-compile: GPT-2's attention scores tensor (4 x 4 x 1073741824 x 1073741824 elements of 4 bytes) holds more than 2^53 bytes (9007199254740992), the most a plan addresses
// SCORES-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --batch-size 4611686018427387904 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=TOKENS
// TOKENS: BEGIN
// TOKENS-NEXT: zero-compile: GPT-2's tokens tensor (4611686018427387904 x 32 elements of 8 bytes) holds more than 2^53 bytes (9007199254740992), the most a plan addresses
// TOKENS-NEXT: exit 1
//
// Memory grew for minutes.
// RUN: sh -c 'echo BEGIN; zero-compile --preset tiny --num-layers 1000000 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=LAYERS
// LAYERS: BEGIN
// LAYERS-NEXT: zero-compile: --num-layers 1000000: at most 1024 layers are supported (each adds to compile time)
// LAYERS-NEXT: exit 1
//
// A graph file: a tensor past the limit (its element count wraps int64),
// then two that fit alone but not together in one rank's arena.
// RUN: sh -c 'echo BEGIN; zero-compile %t/tensor.mlir --world=4 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=TENSOR
// TENSOR: BEGIN
// TENSOR-NEXT: zero-compile: {{.*}}tensor.mlir:4:10: nn.variable 'big' of type tensor<4294967296x4294967296xf32> holds more than 2^53 bytes (9007199254740992), the most a plan addresses
// TENSOR-NEXT: exit 1
// RUN: sh -c 'echo BEGIN; zero-compile %t/arena.mlir --world=4 --stage=0 2>&1; echo "exit $?"' | FileCheck %s --match-full-lines --check-prefix=ARENA
// ARENA: BEGIN
// ARENA-NEXT: zero-compile: zero-memory-plan: the arena of one rank needs more than 2^53 bytes (9007199254740992), the most a plan addresses
// ARENA-NEXT: exit 1
// At stage 3 each rank holds a quarter: it fits.
// RUN: zero-compile %t/arena.mlir --world=4 --stage=3 --report=text | FileCheck %s --check-prefix=SHARDED
// SHARDED: params 4000000000000064  world 4  stage 3
//
// zero-opt's memory plan refuses the same, with the location.
// RUN: not zero-opt %t/tensor.mlir --zero-pipeline='stage=0 world=4' -zero-partition -zero-memory-plan -o /dev/null 2>&1 | FileCheck %s --check-prefix=OPT
// OPT: tensor.mlir:4:10: error: 'nn.variable' op zero-memory-plan: result #0 of type 'tensor<4294967296x4294967296xf32>' holds more than 2^53 bytes (9007199254740992), the most a plan addresses
// RUN: not zero-opt %t/arena.mlir --zero-pipeline='stage=0 world=4' -zero-partition -zero-memory-plan -o /dev/null 2>&1 | FileCheck %s --check-prefix=OPT-ARENA
// OPT-ARENA: arena.mlir:2:1: error: zero-memory-plan: the arena of one rank needs more than 2^53 bytes (9007199254740992), the most a plan addresses

//--- tensor.mlir
#p = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @linear() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x16xf32, #sbp.global<[S(0)], #p, input>>
  %big = nn.variable "big" param : tensor<4294967296x4294967296xf32, #sbp.global<[B], #p, param>>
  %w = nn.variable "w" param : tensor<4x16xf32, #sbp.global<[B], #p, param>>
  %h = nn.matmul %x, %w {transpose_rhs} : (tensor<8x16xf32, #sbp.global<[S(0)], #p, input>>, tensor<4x16xf32, #sbp.global<[B], #p, param>>) -> tensor<8x4xf32>
  %l = nn.reduce_mean %h {axes = array<i64: 0, 1>} : (tensor<8x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

//--- arena.mlir
#p = #sbp.placement<cpu, [0, 1, 2, 3]>
func.func @linear() -> tensor<f32> {
  %x = nn.input "x" : tensor<8x16xf32, #sbp.global<[S(0)], #p, input>>
  %a = nn.variable "a" param : tensor<2000000000x1000000xf32, #sbp.global<[B], #p, param>>
  %b = nn.variable "b" param : tensor<2000000000x1000000xf32, #sbp.global<[B], #p, param>>
  %w = nn.variable "w" param : tensor<4x16xf32, #sbp.global<[B], #p, param>>
  %h = nn.matmul %x, %w {transpose_rhs} : (tensor<8x16xf32, #sbp.global<[S(0)], #p, input>>, tensor<4x16xf32, #sbp.global<[B], #p, param>>) -> tensor<8x4xf32>
  %l = nn.reduce_mean %h {axes = array<i64: 0, 1>} : (tensor<8x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
