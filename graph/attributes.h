// Node attributes: a small typed map whose value kinds match co_up_attr in the plugin ABI.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace co_up::graph {

using AttrValue = std::variant<int64_t, double, std::vector<int64_t>, std::vector<float>, std::string>;

class Attributes {
 public:
  Attributes() = default;
  Attributes(std::initializer_list<std::pair<const std::string, AttrValue>> values) : values_(values) {}

  void set(const std::string& name, AttrValue value) { values_[name] = std::move(value); }
  bool has(const std::string& name) const { return values_.count(name) != 0; }

  // Typed getters throw std::logic_error naming the attribute when it is absent or of another
  // type: the builder always sets every attribute, so a miss is a bug, not bad input.
  int64_t get_int(const std::string& name) const;
  double get_float(const std::string& name) const;
  const std::vector<int64_t>& get_ints(const std::string& name) const;
  const std::vector<float>& get_floats(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;

  const std::map<std::string, AttrValue>& values() const { return values_; }

 private:
  std::map<std::string, AttrValue> values_;
};

}  // namespace co_up::graph
