#include "planner/search_algorithm.h"

#include <algorithm>
#include <string>
#include <vector>

#include "planner/search/search_support.h"

namespace co_up::planner {

Candidate shortest_path_latency(const CostModel& model, std::vector<int> levels) {
  levels = resolve_levels(model, std::move(levels));
  const uint32_t n = model.layer_count();
  const size_t n_proc = model.letters().size();
  // dist[i][p]: least latency of layers [0, i] with layer i on p; from[i][p] its predecessor.
  std::vector<std::vector<double>> dist(n, std::vector<double>(n_proc, kInf));
  std::vector<std::vector<size_t>> from(n, std::vector<size_t>(n_proc, 0));
  for (size_t p = 0; p < n_proc; ++p) dist[0][p] = model.input_us(p) + model.layer_us(0, p, levels);
  for (uint32_t i = 1; i < n; ++i) {
    for (size_t q = 0; q < n_proc; ++q) {
      for (size_t p = 0; p < n_proc; ++p) {
        const double d = dist[i - 1][p] + model.send_us(i - 1, p, q, Mode::kSwitch) +
                         model.receive_us(i - 1, p, q, Mode::kSwitch);
        if (d < dist[i][q]) {
          dist[i][q] = d;
          from[i][q] = p;
        }
      }
      dist[i][q] += model.layer_us(i, q, levels);
    }
  }
  size_t at = static_cast<size_t>(std::min_element(dist[n - 1].begin(), dist[n - 1].end()) - dist[n - 1].begin());
  std::string order(n, '?');
  for (uint32_t i = n; i-- > 0;) {
    order[i] = model.letters()[at];
    if (i > 0) at = from[i][at];
  }
  return make_candidate(model, Mapping{order, Mode::kSwitch, levels}, "shortest-path");
}

std::unique_ptr<SearchAlgorithm> create_shortest_path_search() {
  return std::make_unique<FunctionSearch>([](const SearchInput& in) {
    return std::vector<Candidate>{shortest_path_latency(*in.model, in.levels)};
  });
}

}  // namespace co_up::planner
