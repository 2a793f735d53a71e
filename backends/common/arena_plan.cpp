#include "arena_plan.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace co_up::backends {

ArenaPlan plan_arena(const std::vector<TensorLifetime>& tensors, int64_t alignment) {
  if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
    throw std::invalid_argument("plan_arena: alignment " + std::to_string(alignment) + " is not a power of two");
  }
  ArenaPlan plan;
  plan.offsets.assign(tensors.size(), -1);
  std::vector<size_t> order;
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (tensors[t].first_step > tensors[t].last_step) {
      throw std::invalid_argument("plan_arena: tensor " + std::to_string(t) + " is last used at step " +
                                  std::to_string(tensors[t].last_step) + ", before it is written at step " +
                                  std::to_string(tensors[t].first_step));
    }
    if (tensors[t].bytes > 0) order.push_back(t);
  }
  // Largest first; equal sizes by first use, so the plan does not depend on the sort's stability.
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (tensors[a].bytes != tensors[b].bytes) return tensors[a].bytes > tensors[b].bytes;
    return tensors[a].first_step != tensors[b].first_step ? tensors[a].first_step < tensors[b].first_step : a < b;
  });
  auto round_up = [&](int64_t v) { return (v + alignment - 1) / alignment * alignment; };
  std::vector<size_t> placed;     // in placement order
  std::vector<size_t> conflicts;  // placed tensors live together with the current one, by offset
  for (size_t t : order) {
    const TensorLifetime& me = tensors[t];
    conflicts.clear();
    for (size_t o : placed) {
      if (tensors[o].first_step <= me.last_step && me.first_step <= tensors[o].last_step) conflicts.push_back(o);
    }
    std::sort(conflicts.begin(), conflicts.end(),
              [&](size_t a, size_t b) { return plan.offsets[a] < plan.offsets[b]; });
    int64_t best = -1, best_gap = 0, end = 0;  // `end`: first free byte after the conflicts so far
    for (size_t o : conflicts) {
      const int64_t gap = plan.offsets[o] - end;
      if (gap >= me.bytes && (best < 0 || gap < best_gap)) {
        best = end;
        best_gap = gap;
      }
      end = std::max(end, round_up(plan.offsets[o] + tensors[o].bytes));
    }
    plan.offsets[t] = best >= 0 ? best : end;
    plan.bytes = std::max(plan.bytes, plan.offsets[t] + me.bytes);
    placed.push_back(t);
  }
  return plan;
}

}  // namespace co_up::backends
