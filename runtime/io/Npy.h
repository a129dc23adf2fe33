//===- Npy.h - NumPy .npy files ----------------------------------*- C++
//-*-===//
//
// Reads and writes NumPy's .npy format (versions 1-3, little-endian,
// C order), the exchange format of `zero-run --init/--data/--save`.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_IO_NPY_H
#define ZEROSBP_RUNTIME_IO_NPY_H

#include "runtime/core/DType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zerosbp::runtime {

struct NpyArray {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<unsigned char> data; // numel * dtypeBytes(dtype), C order.
  int64_t numel() const;
};

/// Throws RuntimeError ("<path>: ...") on a missing, truncated or
/// unsupported file (big-endian, Fortran order, an object dtype).
NpyArray readNpy(const std::string &path);
NpyArray parseNpy(const std::string &bytes, const std::string &source);
/// Writes f32, f64, i64, i32 or i1 data; f16 is written as '<f2'. bf16 has
/// no NumPy type: callers widen it to f32 first. The file is flushed to
/// disk (fsync); on an error it is removed, and the RuntimeError names it
/// and the system's reason ("<path>: cannot write (No space left on
/// device)").
void writeNpy(const std::string &path, const NpyArray &array);

/// A shape as NumPy writes it: "(2, 3)", "(5,)", "()".
std::string npyShapeText(const std::vector<int64_t> &shape);

/// Element i of a float or integer array, as double.
double npyElement(const NpyArray &array, int64_t index);

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_IO_NPY_H
