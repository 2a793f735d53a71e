#include "graph/attributes.h"

#include <stdexcept>

namespace co_up::graph {
namespace {

template <typename T>
const T& get_as(const std::map<std::string, AttrValue>& values, const std::string& name) {
  auto it = values.find(name);
  if (it == values.end()) throw std::logic_error("attribute '" + name + "' is missing");
  const T* value = std::get_if<T>(&it->second);
  if (value == nullptr) throw std::logic_error("attribute '" + name + "' has another type");
  return *value;
}

}  // namespace

int64_t Attributes::get_int(const std::string& name) const { return get_as<int64_t>(values_, name); }
double Attributes::get_float(const std::string& name) const { return get_as<double>(values_, name); }
const std::vector<int64_t>& Attributes::get_ints(const std::string& name) const {
  return get_as<std::vector<int64_t>>(values_, name);
}
const std::vector<float>& Attributes::get_floats(const std::string& name) const {
  return get_as<std::vector<float>>(values_, name);
}
const std::string& Attributes::get_string(const std::string& name) const {
  return get_as<std::string>(values_, name);
}

}  // namespace co_up::graph
