#include "planner/hetero2pipe.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "planner/kuhn_munkres.h"

namespace co_up::planner {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

void check_cuts(const StageCuts& cuts, const NetworkCosts& costs) {
  if (cuts.size() != costs.stages() + 1 || cuts.front() != 0 || cuts.back() != costs.layers() ||
      !std::is_sorted(cuts.begin(), cuts.end())) {
    throw std::invalid_argument("stage cuts of network '" + costs.name + "' do not partition its " +
                                std::to_string(costs.layers()) + " layers over " +
                                std::to_string(costs.stages()) + " stages");
  }
}

size_t cyclic_distance(size_t a, size_t b, size_t n) {
  const size_t d = a > b ? a - b : b - a;
  return std::min(d, n - d);
}

}  // namespace

void check_costs(const NetworkCosts& c) {
  const size_t k = c.stages();
  const uint32_t n = c.layers();
  if (k == 0 || n == 0) throw std::invalid_argument("network '" + c.name + "' has no stages or no layers");
  const auto bad = [&](const std::string& what) {
    throw std::invalid_argument("network '" + c.name + "': " + what + " has the wrong size");
  };
  if (c.send_us.size() != k || c.receive_us.size() != k || c.input_us.size() != k) bad("transfer table");
  for (size_t s = 0; s < k; ++s) {
    if (c.layer_us[s].size() != n) bad("layer_us[" + std::to_string(s) + "]");
    if (c.send_us[s].size() != n - 1 || c.receive_us[s].size() != n - 1) bad("transfers of stage " + std::to_string(s));
  }
}

double stage_us(const NetworkCosts& c, size_t stage, uint32_t first, uint32_t end) {
  if (end <= first) return 0;
  const std::vector<double>& t = c.layer_us[stage];
  double sum = std::accumulate(t.begin() + first, t.begin() + end, 0.0);
  sum += first == 0 ? c.input_us[stage] : c.receive_us[stage][first - 1];
  if (end < c.layers()) sum += c.send_us[stage][end - 1];
  return sum;
}

double stage_us(const NetworkCosts& c, const StageCuts& cuts, size_t stage) {
  return stage_us(c, stage, cuts[stage], cuts[stage + 1]);
}

std::string order_of(const StageCuts& cuts, const std::string& letters) {
  std::string order;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) order.append(cuts[k + 1] - cuts[k], letters.at(k));
  return order;
}

StageCuts single_stage_cuts(uint32_t layers, size_t stages, size_t stage) {
  StageCuts cuts(stages + 1, 0);
  for (size_t k = stage + 1; k <= stages; ++k) cuts[k] = layers;
  return cuts;
}

HorizontalPartition horizontal_partition(const NetworkCosts& c) {
  check_costs(c);
  const size_t stages = c.stages();
  const uint32_t n = c.layers();
  // best[k][j]: the smallest bottleneck of layers [0, j) over stages 0..k; from[k][j]: where
  // stage k begins in it. T_k(i, j) costs O(1) through stage_us's prefix-free sum; the sums are
  // short, so prefix sums of the layer times suffice.
  std::vector<std::vector<double>> prefix(stages, std::vector<double>(n + 1, 0.0));
  for (size_t k = 0; k < stages; ++k) {
    for (uint32_t i = 0; i < n; ++i) prefix[k][i + 1] = prefix[k][i] + c.layer_us[k][i];
  }
  const auto t = [&](size_t k, uint32_t i, uint32_t j) {
    if (j <= i) return 0.0;
    double sum = prefix[k][j] - prefix[k][i];
    sum += i == 0 ? c.input_us[k] : c.receive_us[k][i - 1];
    if (j < n) sum += c.send_us[k][j - 1];
    return sum;
  };
  std::vector<std::vector<double>> best(stages, std::vector<double>(n + 1, kInf));
  std::vector<std::vector<uint32_t>> from(stages, std::vector<uint32_t>(n + 1, 0));
  for (uint32_t j = 0; j <= n; ++j) best[0][j] = t(0, 0, j);
  for (size_t k = 1; k < stages; ++k) {
    for (uint32_t j = 0; j <= n; ++j) {
      for (uint32_t i = 0; i <= j; ++i) {
        const double v = std::max(best[k - 1][i], t(k, i, j));
        if (v < best[k][j]) {
          best[k][j] = v;
          from[k][j] = i;
        }
      }
    }
  }
  HorizontalPartition result;
  result.cuts.assign(stages + 1, 0);
  result.cuts[stages] = n;
  uint32_t j = n;
  for (size_t k = stages - 1; k >= 1; --k) {
    j = from[k][j];
    result.cuts[k] = j;
  }
  result.bottleneck_us = best[stages - 1][n];
  return result;
}

HorizontalPartition horizontal_brute_force(const NetworkCosts& c) {
  check_costs(c);
  const size_t stages = c.stages();
  const uint32_t n = c.layers();
  HorizontalPartition best;
  best.bottleneck_us = kInf;
  StageCuts cuts(stages + 1, 0);
  cuts[stages] = n;
  size_t visited = 0;
  // Non-decreasing inner cuts, enumerated like an odometer.
  while (true) {
    if (++visited > 5'000'000) throw std::invalid_argument("too many partitions for brute force");
    double worst = 0;
    for (size_t k = 0; k < stages; ++k) worst = std::max(worst, stage_us(c, cuts, k));
    if (worst < best.bottleneck_us) best = {cuts, worst};
    size_t k = stages - 1;
    while (k >= 1 && cuts[k] == n) --k;
    if (k == 0) break;
    ++cuts[k];
    for (size_t m = k + 1; m < stages; ++m) cuts[m] = cuts[k];
  }
  return best;
}

Interference::Interference(size_t networks, size_t stages)
    : networks_(networks), stages_(stages), slowdown_(networks * stages * networks * stages, 0.0) {}

size_t Interference::index(size_t a, size_t ka, size_t b, size_t kb) const {
  if (a >= networks_ || b >= networks_ || ka >= stages_ || kb >= stages_) {
    throw std::invalid_argument("interference index out of range");
  }
  return ((a * stages_ + ka) * networks_ + b) * stages_ + kb;
}

double Interference::at(size_t a, size_t ka, size_t b, size_t kb) const {
  return slowdown_.empty() ? 0.0 : slowdown_[index(a, ka, b, kb)];
}

void Interference::set(size_t a, size_t ka, size_t b, size_t kb, double s) {
  slowdown_[index(a, ka, b, kb)] = std::max(0.0, s);  // co-running never speeds a slice up
}

double Interference::intensity(size_t network) const {
  double sum = 0;
  int count = 0;
  for (size_t victim = 0; victim < networks_; ++victim) {
    for (size_t kv = 0; kv < stages_; ++kv) {
      for (size_t ka = 0; ka < stages_; ++ka) {
        if (ka == kv) continue;
        sum += at(victim, kv, network, ka);
        ++count;
      }
    }
  }
  return count == 0 ? 0.0 : sum / count;
}

SimulationResult simulate(const std::vector<NetworkCosts>& networks, const std::vector<StageCuts>& cuts,
                          const std::vector<size_t>& sequence, const Interference& interference,
                          const SimulationSettings& settings,
                          const std::vector<std::vector<size_t>>& replica_stages) {
  if (networks.empty() || cuts.size() != networks.size() || sequence.empty()) {
    throw std::invalid_argument("simulate needs networks, one partition each and a request sequence");
  }
  const size_t stages = networks[0].stages();
  for (size_t i = 0; i < networks.size(); ++i) {
    if (networks[i].stages() != stages) throw std::invalid_argument("networks differ in stage count");
    check_cuts(cuts[i], networks[i]);
  }
  for (size_t s : sequence) {
    if (s >= networks.size()) throw std::invalid_argument("request sequence names an unknown network");
  }
  if (settings.whole_run ? settings.cycles < 1
                         : settings.cycles <= 2 * settings.warmup_cycles || settings.warmup_cycles < 1) {
    throw std::invalid_argument("simulation needs cycles > 2 * warmup_cycles >= 2 (a whole run: cycles >= 1)");
  }
  const bool contention = interference.networks() == networks.size() && interference.stages() == stages;

  struct Slice {
    size_t stage;
    double us;
    std::vector<std::pair<size_t, double>> also;  // replicas: other stages that may run it, and how long
  };
  // Per network: its non-empty slices in stage order.
  std::vector<std::vector<Slice>> slices(networks.size());
  for (size_t i = 0; i < networks.size(); ++i) {
    for (size_t k = 0; k < stages; ++k) {
      if (cuts[i][k + 1] > cuts[i][k]) slices[i].push_back({k, stage_us(networks[i], cuts[i], k), {}});
    }
    if (i >= replica_stages.size() || replica_stages[i].empty()) continue;
    if (slices[i].size() != 1) throw std::invalid_argument("a network with replicas must run whole on one stage");
    for (size_t k : replica_stages[i]) {
      if (k >= stages || k == slices[i][0].stage) throw std::invalid_argument("replica stage out of range or repeated");
      const StageCuts whole = single_stage_cuts(networks[i].layers(), stages, k);
      slices[i][0].also.emplace_back(k, stage_us(networks[i], whole, k));
    }
  }
  const size_t q = sequence.size();
  const size_t total = q * static_cast<size_t>(settings.cycles);
  struct Request {
    size_t network;
    size_t frame;      // per network
    size_t next = 0;   // index into slices[network]
    bool running = false;
    double done_at = -1;
  };
  std::vector<Request> requests(total);
  std::vector<size_t> frames_of(networks.size(), 0);
  for (size_t r = 0; r < total; ++r) {
    const size_t net = sequence[r % q];
    requests[r] = {net, frames_of[net]++};
  }
  std::vector<size_t> completed_of(networks.size(), 0);
  struct Running {
    size_t request;
    size_t stage;
    double remaining;  // solo microseconds left
    double started;
  };
  std::vector<Running> running;
  std::vector<bool> stage_busy(stages, false);
  std::vector<std::vector<std::pair<double, double>>> busy_intervals(stages);
  std::vector<double> completions;
  completions.reserve(total);
  double now = 0;
  // The requests not yet complete, in arrival order: a list threaded through the indices (total
  // ends it), so that finished ones cost the start scan nothing.
  std::vector<size_t> open_next(total), open_prev(total);
  for (size_t r = 0; r < total; ++r) {
    open_next[r] = r + 1;
    open_prev[r] = r == 0 ? total : r - 1;
  }
  size_t open_head = 0;
  const auto close = [&](size_t r) {
    if (open_prev[r] == total) {
      open_head = open_next[r];
    } else {
      open_next[open_prev[r]] = open_next[r];
    }
    if (open_next[r] != total) open_prev[open_next[r]] = open_prev[r];
  };

  const auto in_flight_limit = [&](size_t net) {
    if (settings.in_flight > 0) return static_cast<size_t>(settings.in_flight);
    // A replica is one more executor with its own window.
    return slices[net].size() + 1 + (slices[net].empty() ? 0 : 2 * slices[net][0].also.size());
  };
  // Networks whose next frame may not start (in-flight window full) during one stage's scan.
  std::vector<char> window_full(networks.size(), 0);
  while (completions.size() < total) {
    // Networks with requests left: the scan may stop once each of them has a full window.
    size_t unfinished = 0;
    for (size_t i = 0; i < networks.size(); ++i) unfinished += completed_of[i] < frames_of[i] ? 1 : 0;
    // Start the oldest ready slice on every idle stage. A network's frames pass every stage in
    // order (each stage takes the oldest ready slice), so once one of its frames may not start for
    // the in-flight window, none of its later ones may: the scan ends when every unfinished
    // network is at its window, after at most its window + 1 requests per network (finished ones
    // have left the list). The same slices start as with a scan over all requests.
    for (size_t k = 0; k < stages; ++k) {
      if (stage_busy[k]) continue;
      std::fill(window_full.begin(), window_full.end(), 0);
      size_t full = 0;
      for (size_t r = open_head; r < total && full < unfinished; r = open_next[r]) {
        Request& req = requests[r];
        if (req.running) continue;
        const std::vector<Slice>& sl = slices[req.network];
        if (sl.empty()) continue;
        if (req.next == 0 && req.frame >= completed_of[req.network] + in_flight_limit(req.network)) {
          if (!window_full[req.network]) {
            window_full[req.network] = 1;
            ++full;
          }
          continue;
        }
        const Slice& slice = sl[req.next];
        double us = slice.stage == k ? slice.us : -1;
        for (const auto& [stage, t] : slice.also) us = stage == k ? t : us;
        if (us < 0) continue;
        req.running = true;
        stage_busy[k] = true;
        running.push_back({r, k, us, now});
        break;
      }
    }
    // A network with no layers anywhere cannot happen (cuts cover its layers), so an idle system
    // with requests left is a bug in this function.
    if (running.empty()) throw std::logic_error("pipeline simulation stalled");
    // Rates under contention, then the next finish.
    std::vector<double> rate(running.size(), 1.0);
    double dt = kInf;
    for (size_t x = 0; x < running.size(); ++x) {
      double slow = 0;
      if (contention) {
        for (size_t y = 0; y < running.size(); ++y) {
          if (y == x) continue;
          slow += interference.at(requests[running[x].request].network, running[x].stage,
                                  requests[running[y].request].network, running[y].stage);
        }
      }
      rate[x] = 1.0 / (1.0 + slow);
      dt = std::min(dt, running[x].remaining / rate[x]);
    }
    now += dt;
    std::vector<Running> still;
    for (size_t x = 0; x < running.size(); ++x) {
      Running& run = running[x];
      run.remaining -= dt * rate[x];
      if (run.remaining > 1e-9 * (1.0 + dt)) {
        still.push_back(run);
        continue;
      }
      stage_busy[run.stage] = false;
      busy_intervals[run.stage].push_back({run.started, now});
      Request& req = requests[run.request];
      req.running = false;
      if (++req.next == slices[req.network].size()) {
        req.done_at = now;
        ++completed_of[req.network];
        completions.push_back(now);
        close(run.request);
      }
    }
    running.swap(still);
  }
  std::sort(completions.begin(), completions.end());
  // Steady state: between the end of the warm-up cycles and the start of the drain (a whole
  // run: from the start to the last completion).
  const size_t skip = settings.whole_run ? 0 : q * static_cast<size_t>(settings.warmup_cycles);
  const double t0 = settings.whole_run ? 0.0 : completions[skip - 1];
  const double t1 = settings.whole_run ? completions.back() : completions[total - skip - 1];
  SimulationResult result;
  const double counted = static_cast<double>(settings.whole_run ? total : total - 2 * skip);
  result.throughput_fps = t1 > t0 ? counted * 1e6 / (t1 - t0) : 0.0;
  result.period_us = result.throughput_fps > 0 ? static_cast<double>(q) * 1e6 / result.throughput_fps : 0.0;
  result.busy_fraction.assign(stages, 0.0);
  double idle_sum = 0;
  int used = 0;
  for (size_t k = 0; k < stages; ++k) {
    double busy = 0;
    for (const auto& [a, b] : busy_intervals[k]) busy += std::max(0.0, std::min(b, t1) - std::max(a, t0));
    result.busy_fraction[k] = t1 > t0 ? busy / (t1 - t0) : 0.0;
    if (!busy_intervals[k].empty()) {
      idle_sum += 1.0 - result.busy_fraction[k];
      ++used;
    }
  }
  result.bubble_fraction = used > 0 ? idle_sum / used : 0.0;
  return result;
}

std::vector<bool> high_contention(const Interference& interference, double high_fraction) {
  const size_t n = interference.networks();
  std::vector<double> intensity(n);
  for (size_t i = 0; i < n; ++i) intensity[i] = interference.intensity(i);
  std::vector<double> sorted = intensity;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  const size_t count = static_cast<size_t>(std::ceil(high_fraction * static_cast<double>(n) - 1e-9));
  std::vector<bool> high(n, false);
  if (count == 0) return high;
  const double threshold = sorted[std::min(count, n) - 1];
  for (size_t i = 0; i < n; ++i) high[i] = intensity[i] >= threshold && intensity[i] > 0;
  return high;
}

int contention_conflicts(const std::vector<size_t>& sequence, const std::vector<bool>& high, size_t stages) {
  const size_t q = sequence.size();
  const size_t width = std::min(stages, q);
  int conflicts = 0;
  for (size_t j = 0; j < q; ++j) {
    int h = 0;
    for (size_t d = 0; d < width; ++d) h += high.at(sequence[(j + d) % q]) ? 1 : 0;
    if (h >= 2) ++conflicts;
  }
  return conflicts;
}

std::vector<size_t> mitigate_contention(const std::vector<size_t>& sequence, const std::vector<bool>& high,
                                        size_t stages) {
  std::vector<size_t> seq = sequence;
  const size_t q = seq.size();
  if (q < 3 || stages < 2) return seq;
  std::vector<bool> moved(q, false);  // per position, kept in step with seq
  int conflicts = contention_conflicts(seq, high, stages);
  // Moving the request at `from` to just before position `to` (indices of the current sequence).
  const auto move = [](std::vector<size_t> s, size_t from, size_t to) {
    const size_t v = s[from];
    s.erase(s.begin() + static_cast<std::ptrdiff_t>(from));
    if (to > from) --to;
    s.insert(s.begin() + static_cast<std::ptrdiff_t>(to), v);
    return s;
  };
  while (conflicts > 0) {
    // Columns: high requests with another high one fewer than K places before them.
    std::vector<size_t> places;
    for (size_t j = 0; j < q; ++j) {
      if (!high[seq[j]]) continue;
      for (size_t d = 1; d < stages && d < q; ++d) {
        if (high[seq[(j + q - d) % q]]) {
          places.push_back(j);
          break;
        }
      }
    }
    std::vector<size_t> movable;
    for (size_t i = 0; i < q; ++i) {
      if (!high[seq[i]] && !moved[i]) movable.push_back(i);
    }
    if (places.empty() || movable.empty()) break;
    std::vector<std::vector<double>> cost(movable.size(), std::vector<double>(places.size(), kForbidden));
    for (size_t r = 0; r < movable.size(); ++r) {
      for (size_t c = 0; c < places.size(); ++c) {
        const size_t i = movable[r], j = places[c];
        if (cyclic_distance(i, j, q) < stages) continue;  // within j's windows: moving it is no help
        if (contention_conflicts(move(seq, i, j), high, stages) >= conflicts) continue;
        cost[r][c] = static_cast<double>(i > j ? i - j : j - i);
      }
    }
    const Assignment a = solve_assignment(cost);
    if (a.assigned == 0) break;
    // Apply the assigned moves cheapest first, each re-checked on the sequence as it is then.
    std::vector<std::pair<double, size_t>> picks;
    for (size_t r = 0; r < movable.size(); ++r) {
      if (a.column_of_row[r] >= 0) picks.push_back({cost[r][static_cast<size_t>(a.column_of_row[r])], r});
    }
    std::sort(picks.begin(), picks.end());
    // Track requests by identity across moves: tag = original position in this round.
    std::vector<size_t> tag(q);
    std::iota(tag.begin(), tag.end(), 0);
    const int before = conflicts;
    for (const auto& [unused, r] : picks) {
      const size_t i = static_cast<size_t>(std::find(tag.begin(), tag.end(), movable[r]) - tag.begin());
      const size_t j = static_cast<size_t>(
          std::find(tag.begin(), tag.end(), places[static_cast<size_t>(a.column_of_row[r])]) - tag.begin());
      std::vector<size_t> next = move(seq, i, j);
      const int c = contention_conflicts(next, high, stages);
      if (c >= conflicts) continue;
      std::vector<bool> next_moved(moved.begin(), moved.end());
      std::vector<size_t> next_tag = tag;
      {
        const bool m = next_moved[i];
        next_moved.erase(next_moved.begin() + static_cast<std::ptrdiff_t>(i));
        const size_t t = next_tag[i];
        next_tag.erase(next_tag.begin() + static_cast<std::ptrdiff_t>(i));
        const size_t to = j > i ? j - 1 : j;
        next_moved.insert(next_moved.begin() + static_cast<std::ptrdiff_t>(to), m);
        next_tag.insert(next_tag.begin() + static_cast<std::ptrdiff_t>(to), t);
        next_moved[to] = true;
      }
      seq = std::move(next);
      moved = std::move(next_moved);
      tag = std::move(next_tag);
      conflicts = c;
    }
    if (conflicts >= before) break;
  }
  return seq;
}

std::vector<StageCuts> align_by_work_stealing(const std::vector<NetworkCosts>& networks, std::vector<StageCuts> cuts,
                                              const std::vector<size_t>& sequence, const Interference& interference,
                                              const SimulationSettings& settings, int max_rounds) {
  const size_t stages = networks.at(0).stages();
  const size_t q = sequence.size();
  double best = simulate(networks, cuts, sequence, interference, settings).throughput_fps;
  const auto try_keep = [&](const std::vector<StageCuts>& candidate) {
    const double v = simulate(networks, candidate, sequence, interference, settings).throughput_fps;
    if (v > best * (1 + 1e-9)) {
      best = v;
      cuts = candidate;
      return true;
    }
    return false;
  };
  const auto total_us = [&](size_t net) {
    double sum = 0;
    for (size_t k = 0; k < stages; ++k) sum += stage_us(networks[net], cuts[net], k);
    return sum;
  };
  // Phase 1: contention windows of K requests, slid by K.
  for (size_t u = 0; u < q; u += stages) {
    const size_t width = std::min(stages, q - u);
    size_t critical = u;
    for (size_t p = u; p < u + width; ++p) {
      if (total_us(sequence[p]) > total_us(sequence[critical])) critical = p;
    }
    const size_t c_net = sequence[critical];
    for (size_t p = u; p < u + width; ++p) {
      const size_t net = sequence[p];
      if (net == c_net) continue;
      const long d = static_cast<long>(p) - static_cast<long>(critical);  // its slice k-d co-runs with critical's k
      std::vector<StageCuts> candidate = cuts;
      StageCuts& mine = candidate[net];
      for (size_t kk = 0; kk < stages; ++kk) {
        const long partner = static_cast<long>(kk) + d;
        if (partner < 0 || partner >= static_cast<long>(stages)) continue;
        const double target = stage_us(networks[c_net], cuts[c_net], static_cast<size_t>(partner));
        // Steal right (d > 0: later requests hand layers on) or left (d < 0), one layer at a time,
        // while the slice moves closer to its critical partner.
        const bool right = d > 0;
        if (right ? kk + 1 >= stages : kk == 0) continue;
        while (mine[kk + 1] > mine[kk]) {
          const double now_gap = std::abs(stage_us(networks[net], mine, kk) - target);
          StageCuts next = mine;
          if (right) {
            --next[kk + 1];
            for (size_t m = kk + 1; m > 0 && next[m - 1] > next[m]; --m) next[m - 1] = next[m];
          } else {
            ++next[kk];
            for (size_t m = kk; m + 1 < next.size() && next[m + 1] < next[m]; ++m) next[m + 1] = next[m];
          }
          if (std::abs(stage_us(networks[net], next, kk) - target) >= now_gap) break;
          mine = next;
        }
      }
      try_keep(candidate);
    }
  }
  // Phase 2: single-layer moves of any boundary, first improvement, until none helps.
  for (int round = 0; round < max_rounds; ++round) {
    bool improved = false;
    for (size_t net = 0; net < networks.size(); ++net) {
      for (size_t k = 1; k < stages; ++k) {
        for (int step : {-1, 1}) {
          std::vector<StageCuts> candidate = cuts;
          StageCuts& c = candidate[net];
          if (step < 0 ? c[k] == 0 : c[k] == networks[net].layers()) continue;
          c[k] = static_cast<uint32_t>(static_cast<long>(c[k]) + step);
          for (size_t m = k; m > 0 && c[m - 1] > c[m]; --m) c[m - 1] = c[m];
          for (size_t m = k; m + 1 < c.size() && c[m + 1] < c[m]; ++m) c[m + 1] = c[m];
          if (try_keep(candidate)) improved = true;
        }
      }
    }
    if (!improved) break;
  }
  return cuts;
}

}  // namespace co_up::planner
