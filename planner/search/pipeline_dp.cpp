#include "planner/search_algorithm.h"

#include <algorithm>
#include <string>
#include <vector>

#include "planner/search/search_support.h"

namespace co_up::planner {
namespace {

// ---- pipeline DP -------------------------------------------------------------------------------
//
// State (i, used, last): layers [0, i) are mapped in contiguous stages on the processors of the
// bit set `used`, the last stage on `last`. A label is the vector of per-resource busy times so
// far, plus the maximum over "closed" resources (every member processor used, none running the
// current stage), which no later stage can change. Labels dominated in every component are
// dropped; labels whose bottleneck already reaches the incumbent are pruned. Stage i..j-1 on q
// after `last` adds send(i-1, last, q) to last's resource, receive(i-1, last, q) and the layer
// times to q's resource. The answer minimises the final max component: the pipeline period.

struct Label {
  std::vector<double> value;  // [0, R): open resource times; [R]: max over closed resources
  size_t parent = SIZE_MAX;   // arena index of the previous label
  uint32_t begin = 0;         // this stage's first layer
  uint32_t end = 0;           // one past its last layer
  size_t processor = 0;
};

double label_max(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

bool dominated_by(const std::vector<double>& a, const std::vector<double>& b) {  // b <= a everywhere
  for (size_t k = 0; k < a.size(); ++k) {
    if (b[k] > a[k]) return false;
  }
  return true;
}

std::string order_from_labels(const std::vector<Label>& arena, size_t index, uint32_t layers,
                              const std::string& letters) {
  std::string order(layers, '?');
  for (size_t at = index; at != SIZE_MAX; at = arena[at].parent) {
    const Label& l = arena[at];
    for (uint32_t i = l.begin; i < l.end; ++i) order[i] = letters[l.processor];
  }
  return order;
}

// Best contiguous pipeline using only processors in `allowed` (bit p = letters()[p]); with
// `all_of_them`, using exactly those. Returns false when none beats `incumbent_period`.
bool dp_search(const CostModel& model, const std::vector<int>& levels, uint32_t allowed,
               bool all_of_them, double incumbent_period, std::string& best_order) {
  const uint32_t n = model.layer_count();
  const size_t n_proc = model.letters().size();
  const size_t n_res = model.resource_count();
  if (n_proc > 16) throw InputError("pipeline DP supports at most 16 processors");

  // prefix[p][i] = sum of layer times [0, i) on p.
  std::vector<std::vector<double>> prefix(n_proc, std::vector<double>(n + 1, 0.0));
  for (size_t p = 0; p < n_proc; ++p) {
    for (uint32_t i = 0; i < n; ++i) prefix[p][i + 1] = prefix[p][i] + model.layer_us(i, p, levels);
  }
  // Lower bound on the work left after layer i: every layer at its cheapest allowed processor.
  std::vector<double> rest(n + 1, 0.0);
  for (uint32_t i = n; i-- > 0;) {
    double cheapest = kInf;
    for (size_t p = 0; p < n_proc; ++p) {
      if (allowed >> p & 1u) cheapest = std::min(cheapest, model.layer_us(i, p, levels));
    }
    rest[i] = rest[i + 1] + cheapest;
  }
  // Member processors of each resource, as bit sets.
  std::vector<uint32_t> members(n_res, 0);
  for (size_t p = 0; p < n_proc; ++p) members[model.resource_of(p)] |= 1u << p;

  const size_t n_masks = size_t{1} << n_proc;
  auto state_index = [&](uint32_t i, uint32_t mask, size_t last) {
    return (static_cast<size_t>(i) * n_masks + mask) * n_proc + last;
  };
  std::vector<std::vector<size_t>> states((n + 1) * n_masks * n_proc);
  std::vector<Label> arena;
  double best = incumbent_period;
  size_t best_label = SIZE_MAX;

  auto insert = [&](size_t state, Label&& label) {
    std::vector<size_t>& list = states[state];
    for (size_t idx : list) {
      if (dominated_by(label.value, arena[idx].value)) return;
    }
    std::erase_if(list, [&](size_t idx) { return dominated_by(arena[idx].value, label.value); });
    arena.push_back(std::move(label));
    list.push_back(arena.size() - 1);
  };

  auto extend = [&](const Label* from, size_t from_index, uint32_t i, uint32_t mask, size_t last) {
    for (size_t q = 0; q < n_proc; ++q) {
      if (!(allowed >> q & 1u) || (mask >> q & 1u)) continue;
      const uint32_t new_mask = mask | (1u << q);
      std::vector<double> base = from != nullptr ? from->value : std::vector<double>(n_res + 1, 0.0);
      if (from == nullptr) {
        base[model.resource_of(q)] += model.input_us(q);
      } else {
        base[model.resource_of(last)] += model.send_us(i - 1, last, q, Mode::kPipeline);
        base[model.resource_of(q)] += model.receive_us(i - 1, last, q, Mode::kPipeline);
      }
      // The previous stage's resource may now be closed.
      if (from != nullptr) {
        const size_t r = model.resource_of(last);
        if ((members[r] & new_mask) == members[r] && model.resource_of(q) != r) {
          base[n_res] = std::max(base[n_res], base[r]);
          base[r] = 0;
        }
      }
      for (uint32_t j = i + 1; j <= n; ++j) {
        std::vector<double> value = base;
        value[model.resource_of(q)] += prefix[q][j] - prefix[q][i];
        const double peak = label_max(value);
        if (peak >= best) break;  // longer stages only add time to q
        // Every resource's time only grows, and the remaining layers add at least rest[j] in all.
        double closed_total = 0;
        for (size_t r = 0; r < n_res; ++r) closed_total += value[r];
        if (std::max(peak, (closed_total + rest[j]) / static_cast<double>(n_res)) >= best && j < n) continue;
        Label label{std::move(value), from_index, i, j, q};
        if (j == n) {
          if (all_of_them && new_mask != allowed) continue;
          best = peak;
          arena.push_back(std::move(label));
          best_label = arena.size() - 1;
        } else {
          insert(state_index(j, new_mask, q), std::move(label));
        }
      }
    }
  };

  extend(nullptr, SIZE_MAX, 0, 0, 0);
  for (uint32_t i = 1; i < n; ++i) {
    for (uint32_t mask = 1; mask < n_masks; ++mask) {
      if ((mask & ~allowed) != 0) continue;
      for (size_t last = 0; last < n_proc; ++last) {
        if (!(mask >> last & 1u)) continue;
        // Copy the indices: extend() may grow the arena but never this (earlier) state's list.
        const std::vector<size_t> list = states[state_index(i, mask, last)];
        for (size_t idx : list) {
          if (label_max(arena[idx].value) >= best) continue;
          const Label from = arena[idx];
          extend(&from, idx, i, mask, last);
        }
      }
    }
  }
  if (best_label == SIZE_MAX) return false;
  best_order = order_from_labels(arena, best_label, n, model.letters());
  return true;
}

}  // namespace

Candidate pipeline_dp(const CostModel& model, std::vector<int> levels) {
  levels = resolve_levels(model, std::move(levels));
  // The best single processor is a feasible contiguous mapping: start from it as incumbent.
  Candidate incumbent;
  for (char letter : model.letters()) {
    Candidate c = make_candidate(model, Mapping{std::string(model.layer_count(), letter), Mode::kPipeline, levels}, "dp");
    if (incumbent.mapping.order.empty() || c.prediction.period_us < incumbent.prediction.period_us) incumbent = c;
  }
  const uint32_t all = (1u << model.letters().size()) - 1;
  std::string order;
  if (dp_search(model, levels, all, false, incumbent.prediction.period_us, order)) {
    return make_candidate(model, Mapping{order, Mode::kPipeline, levels}, "dp");
  }
  return incumbent;
}

std::vector<Candidate> pipeline_dp_per_subset(const CostModel& model, std::vector<int> levels) {
  levels = resolve_levels(model, std::move(levels));
  const size_t n_proc = model.letters().size();
  std::vector<Candidate> out;
  for (uint32_t subset = 1; subset < (1u << n_proc); ++subset) {
    std::string order;
    if (!dp_search(model, levels, subset, true, kInf, order)) continue;  // fewer layers than processors
    out.push_back(make_candidate(model, Mapping{order, Mode::kPipeline, levels}, "dp"));
  }
  std::stable_sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    return better(a.prediction, b.prediction, Mode::kPipeline);
  });
  return out;
}

std::unique_ptr<SearchAlgorithm> create_pipeline_dp_search() {
  return std::make_unique<FunctionSearch>([](const SearchInput& in) {
    return std::vector<Candidate>{pipeline_dp(*in.model, in.levels)};
  });
}

std::unique_ptr<SearchAlgorithm> create_pipeline_dp_per_subset_search() {
  return std::make_unique<FunctionSearch>(
      [](const SearchInput& in) { return pipeline_dp_per_subset(*in.model, in.levels); });
}

}  // namespace co_up::planner
