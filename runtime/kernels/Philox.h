//===- Philox.h - the counter-based generator of dropout --------*- C++ -*-===//
//
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC'11; Random123's philox4x32 with 10 rounds) and the dropout mask
// built on it (docs/compiler.md, "Dropout"). Header-only and usable from
// host and device code, so the CPU and CUDA kernels draw the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_KERNELS_PHILOX_H
#define ZEROSBP_RUNTIME_KERNELS_PHILOX_H

#include "runtime/kernels/HostDevice.h"

#include <cstdint>

namespace zerosbp::runtime::philox {

struct Counter {
  uint32_t v[4];
};

struct Key {
  uint32_t v[2];
};

/// The 64-bit product of `a` and `b`, as its high and low words.
ZEROSBP_HOST_DEVICE inline void mulhilo(uint32_t a, uint32_t b, uint32_t &hi,
                                        uint32_t &lo) {
  uint64_t product = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(product >> 32);
  lo = static_cast<uint32_t>(product);
}

/// Philox4x32 with 10 rounds: the Weyl key schedule adds (W0, W1) between
/// rounds.
ZEROSBP_HOST_DEVICE inline Counter philox4x32_10(Counter ctr, Key key) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key.v[0] += kW0;
      key.v[1] += kW1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kM0, ctr.v[0], hi0, lo0);
    mulhilo(kM1, ctr.v[2], hi1, lo1);
    ctr = {{hi1 ^ ctr.v[1] ^ key.v[0], lo1, hi0 ^ ctr.v[3] ^ key.v[1], lo0}};
  }
  return ctr;
}

/// What one dropout op draws from, besides the element index and the step.
struct DropoutStream {
  Key key;             // {lo32(seed), hi32(seed)}
  uint32_t microBatch; // < 2^16
  uint32_t stream;
  /// Keep iff (x >> 8) >= threshold, i.e. (x >> 8) 2^-24 >= p:
  /// threshold = ceil(p 2^24), exact since 2^24 p is.
  uint32_t threshold;
};

/// Output word 0 for element `index` (< 2^48) at `step`.
ZEROSBP_HOST_DEVICE inline uint32_t dropoutBits(const DropoutStream &s,
                                                uint64_t index, uint64_t step) {
  Counter ctr = {{static_cast<uint32_t>(index),
                  static_cast<uint32_t>(index >> 32) | (s.microBatch << 16),
                  static_cast<uint32_t>(step), s.stream}};
  return philox4x32_10(ctr, s.key).v[0];
}

ZEROSBP_HOST_DEVICE inline bool dropoutKeeps(const DropoutStream &s,
                                             uint64_t index, uint64_t step) {
  return (dropoutBits(s, index, step) >> 8) >= s.threshold;
}

} // namespace zerosbp::runtime::philox

#endif // ZEROSBP_RUNTIME_KERNELS_PHILOX_H
