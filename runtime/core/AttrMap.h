//===- AttrMap.h - an instruction's attributes ------------------*- C++ -*-===//
//
// The `attrs` of a plan instruction, decoded once by the plan reader. A
// missing attribute takes the default its op declares in NNOps.td; kernels
// pass that default to the getters.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_RUNTIME_CORE_ATTRMAP_H
#define ZEROSBP_RUNTIME_CORE_ATTRMAP_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace zerosbp::runtime {

using AttrValue = std::variant<bool, int64_t, double, std::string,
                               std::vector<int64_t>, std::vector<double>>;

class AttrMap {
public:
  void set(const std::string &name, AttrValue value) {
    values[name] = std::move(value);
  }
  bool has(const std::string &name) const { return values.count(name) != 0; }
  const std::map<std::string, AttrValue> &all() const { return values; }

  /// A unit attribute: false when absent.
  bool flag(const std::string &name) const;
  /// Throw RuntimeError naming the attribute when absent or of another type.
  int64_t getInt(const std::string &name) const;
  double getFloat(const std::string &name) const;
  const std::vector<int64_t> &getInts(const std::string &name) const;
  const std::string &getString(const std::string &name) const;
  /// With the op's declared default.
  int64_t getInt(const std::string &name, int64_t fallback) const;
  double getFloat(const std::string &name, double fallback) const;
  std::optional<int64_t> findInt(const std::string &name) const;

private:
  std::map<std::string, AttrValue> values;
};

} // namespace zerosbp::runtime

#endif // ZEROSBP_RUNTIME_CORE_ATTRMAP_H
