//===- Error.h - the runtime's error type -----------------------*- C++ -*-===//

#ifndef ZEROSBP_RUNTIME_CORE_ERROR_H
#define ZEROSBP_RUNTIME_CORE_ERROR_H

#include <stdexcept>
#include <string>

namespace zerosbp::runtime {

/// Every runtime failure (bad plan, bad data, a kernel's precondition, a
/// failed rank) is one of these; its message is one line that names the
/// thing and the place. Tools print it and exit non-zero.
class RuntimeError : public std::runtime_error {
public:
  explicit RuntimeError(const std::string &message)
      : std::runtime_error(message) {}
};

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_CORE_ERROR_H
