//===- runtime_fuzzer.cpp - fuzzes the runtime's file readers -------------===//
//
// The first byte picks the reader: even bytes feed the rest to the plan
// reader, odd bytes to the .npy parser. Either may reject its input with a
// RuntimeError; any other exception, a crash or a sanitizer report is a bug.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/io/Npy.h"
#include "runtime/plan/Plan.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace zerosbp::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  std::string text(reinterpret_cast<const char *>(data) + 1, size - 1);
  try {
    if (data[0] % 2 == 0) {
      Plan plan = parsePlan(text, "fuzz.zplan");
      // A plan that reads must be safe to walk: every id is in range.
      for (const Instruction &instruction : plan.instructions)
        for (int id : instruction.operands)
          if (id < 0 || id >= static_cast<int>(plan.values.size()))
            std::abort();
    } else {
      NpyArray array = parseNpy(text, "fuzz.npy");
      if (array.data.size() !=
          static_cast<size_t>(array.numel()) * dtypeBytes(array.dtype))
        std::abort();
    }
  } catch (const RuntimeError &) {
  }
  return 0;
}
