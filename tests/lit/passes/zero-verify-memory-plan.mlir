// RUN: zero-opt %s --split-input-file --verify-diagnostics --zero-verify-memory-plan

// The checker catches a wrong plan from the IR alone.

// Two buffers live together may not share bytes.
// expected-error@+1 {{zero-verify-memory-plan: buffers 0 [0, 16) and 1 [8, 24) overlap while both are live (ops 1 to 2)}}
func.func @overlap() -> tensor<4xf32> attributes {
    zero.buffers = [#sbp.buffer<offset = 0, bytes = 16, live = [0, 2], role = activation>,
                    #sbp.buffer<offset = 8, bytes = 16, live = [1, 2], role = activation>,
                    #sbp.buffer<offset = 32, bytes = 16, live = [2, 3], role = activation>]} {
  %a = nn.fill 1.0 {zero.slots = array<i64: 0, 0>} : tensor<4xf32>
  %b = nn.fill 2.0 {zero.slots = array<i64: 1, 0>} : tensor<4xf32>
  %c = nn.add %a, %b {zero.slots = array<i64: 2, 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %c : tensor<4xf32>
}

// -----

// A value read after its buffer is released.
func.func @released() -> tensor<4xf32> attributes {
    zero.buffers = [#sbp.buffer<offset = 0, bytes = 16, live = [0, 1], role = activation>,
                    #sbp.buffer<offset = 16, bytes = 16, live = [1, 2], role = activation>,
                    #sbp.buffer<offset = 32, bytes = 16, live = [2, 3], role = activation>]} {
  // expected-error@+1 {{zero-verify-memory-plan: result #0 is used in [0, 2] but buffer 0 is live in [0, 1]}}
  %a = nn.fill 1.0 {zero.slots = array<i64: 0, 0>} : tensor<4xf32>
  %b = nn.fill 2.0 {zero.slots = array<i64: 1, 0>} : tensor<4xf32>
  %c = nn.add %a, %b {zero.slots = array<i64: 2, 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %c : tensor<4xf32>
}

// -----

// A value that does not fit its buffer.
func.func @outside() -> tensor<4xf32> attributes {
    zero.buffers = [#sbp.buffer<offset = 0, bytes = 16, live = [0, 1], role = activation>]} {
  // expected-error@+1 {{zero-verify-memory-plan: result #0 (16 bytes at offset 8) lies outside buffer 0}}
  %a = nn.fill 1.0 {zero.slots = array<i64: 0, 8>} : tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// An in-place write over bytes that are still to be read.
func.func @clobber() -> (tensor<4xf32>, tensor<4xf32>) attributes {
    zero.buffers = [#sbp.buffer<offset = 0, bytes = 16, live = [0, 3], role = activation>]} {
  %a = nn.fill 1.0 {zero.slots = array<i64: 0, 0>} : tensor<4xf32>
  // expected-error@+1 {{zero-verify-memory-plan: overwrites bytes of nn.fill}}
  %b = nn.relu %a {zero.slots = array<i64: 0, 0>} : (tensor<4xf32>) -> tensor<4xf32>
  %c = nn.relu %a {zero.slots = array<i64: 0, 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return %b, %c : tensor<4xf32>, tensor<4xf32>
}

// -----

// No plan at all.
// expected-error@+1 {{has no memory plan (zero.buffers); run zero-memory-plan first}}
func.func @unplanned() {
  return
}

// -----

// A plan whose buffers are not #sbp.buffer attributes.
// expected-error@+1 {{buffer #1 of zero.buffers is not an #sbp.buffer}}
func.func @untyped() -> tensor<4xf32> attributes {
    zero.buffers = [#sbp.buffer<offset = 0, bytes = 16, live = [0, 1], role = activation>,
                    {offset = 16, bytes = 16, live = array<i64: 1, 2>, role = "activation"}]} {
  %a = nn.fill 1.0 {zero.slots = array<i64: 0, 0>} : tensor<4xf32>
  return %a : tensor<4xf32>
}
