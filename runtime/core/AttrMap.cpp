//===- AttrMap.cpp - an instruction's attributes --------------------------===//

#include "runtime/core/AttrMap.h"

#include "runtime/core/Error.h"

namespace zerosbp::runtime {

static RuntimeError wrongAttr(const std::string &name, const char *expected) {
  return RuntimeError("attribute '" + name + "' is missing or not " + expected);
}

bool AttrMap::flag(const std::string &name) const {
  auto it = values.find(name);
  if (it == values.end())
    return false;
  if (const bool *value = std::get_if<bool>(&it->second))
    return *value;
  throw wrongAttr(name, "a boolean");
}

int64_t AttrMap::getInt(const std::string &name) const {
  if (std::optional<int64_t> value = findInt(name))
    return *value;
  throw wrongAttr(name, "an integer");
}

std::optional<int64_t> AttrMap::findInt(const std::string &name) const {
  auto it = values.find(name);
  if (it == values.end())
    return std::nullopt;
  if (const int64_t *value = std::get_if<int64_t>(&it->second))
    return *value;
  throw wrongAttr(name, "an integer");
}

double AttrMap::getFloat(const std::string &name) const {
  auto it = values.find(name);
  if (it != values.end()) {
    if (const double *value = std::get_if<double>(&it->second))
      return *value;
    // JSON writes 1.0 as 1: an integral float reads back as an integer.
    if (const int64_t *value = std::get_if<int64_t>(&it->second))
      return static_cast<double>(*value);
  }
  throw wrongAttr(name, "a number");
}

const std::vector<int64_t> &AttrMap::getInts(const std::string &name) const {
  static const std::vector<int64_t> empty;
  auto it = values.find(name);
  if (it != values.end()) {
    if (const auto *value = std::get_if<std::vector<int64_t>>(&it->second))
      return *value;
    // An empty JSON array has no element type to decide by.
    if (const auto *value = std::get_if<std::vector<double>>(&it->second))
      if (value->empty())
        return empty;
  }
  throw wrongAttr(name, "an integer array");
}

const std::string &AttrMap::getString(const std::string &name) const {
  auto it = values.find(name);
  if (it != values.end())
    if (const auto *value = std::get_if<std::string>(&it->second))
      return *value;
  throw wrongAttr(name, "a string");
}

int64_t AttrMap::getInt(const std::string &name, int64_t fallback) const {
  return has(name) ? getInt(name) : fallback;
}

double AttrMap::getFloat(const std::string &name, double fallback) const {
  return has(name) ? getFloat(name) : fallback;
}

} // namespace zerosbp::runtime
