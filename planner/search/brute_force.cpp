#include "planner/search.h"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "planner/search/search_support.h"

namespace co_up::planner {

void brute_force(const CostModel& model, Mode mode, const std::vector<int>& levels,
                 const std::function<void(const Mapping&, const Prediction&)>& visit) {
  const uint32_t n = model.layer_count();
  const size_t k = model.letters().size();
  double total = std::pow(static_cast<double>(k), static_cast<double>(n));
  if (total > 2e6) {
    throw InputError("brute force over " + std::to_string(k) + "^" + std::to_string(n) + " orders is too many");
  }
  std::vector<size_t> digits(n, 0);
  Mapping m{std::string(n, model.letters()[0]), mode, levels};
  while (true) {
    visit(m, model.predict(m));
    uint32_t i = 0;
    while (i < n && ++digits[i] == k) {
      digits[i] = 0;
      m.order[i] = model.letters()[0];
      ++i;
    }
    if (i == n) break;
    m.order[i] = model.letters()[digits[i]];
  }
}

}  // namespace co_up::planner
