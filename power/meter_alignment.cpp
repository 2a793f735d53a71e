#include "power/meter_alignment.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "core/error.h"

namespace co_up::power {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// co_up's tag line over time, in ms since the first edge: segment i holds value[i] from begin[i]
// to begin[i + 1]; segment 0 (the line before the run) starts at -inf, the last ends at +inf.
// Segments shorter than `shortest` are left out (their neighbours meet in their middle, and merge
// when equal): the line drops for microseconds between two tagged layers, a meter almost never
// samples that, and a sample reading 0 would otherwise look consistent with every layer boundary.
struct HostTimeline {
  std::vector<double> begin;
  std::vector<unsigned> value;

  HostTimeline(std::vector<RecordingTagSink::Edge> edges, int64_t ref_ns, double shortest) {
    std::stable_sort(edges.begin(), edges.end(), [](const auto& a, const auto& b) { return a.t_ns < b.t_ns; });
    begin.push_back(-kInf);
    value.push_back(0);
    for (const auto& e : edges) {
      if (e.value == value.back()) continue;  // the line did not change
      const double t = static_cast<double>(e.t_ns - ref_ns) * 1e-6;
      if (begin.size() > 1 && t - begin.back() < shortest) {
        // The last segment was too short to see: drop it.
        const double middle = (begin.back() + t) / 2;
        begin.pop_back();
        value.pop_back();
        if (value.back() == e.value) continue;  // its neighbours merge
        begin.push_back(middle);
        value.push_back(e.value);
        continue;
      }
      begin.push_back(t);
      value.push_back(e.value);
    }
  }
  size_t size() const { return begin.size(); }
  double end(size_t i) const { return i + 1 < begin.size() ? begin[i + 1] : kInf; }
  size_t index_at(double t) const {
    return static_cast<size_t>(std::upper_bound(begin.begin(), begin.end(), t) - begin.begin()) - 1;
  }
  unsigned at(double t) const { return value[index_at(t)]; }
  // Whether the line held v at some time within [t - tol, t + tol].
  bool held(double t, unsigned v, double tol) const {
    for (size_t i = index_at(t - tol); i < size() && begin[i] <= t + tol; ++i) {
      if (value[i] == v) return true;
    }
    return false;
  }
};

struct Sample {
  double m;  // meter ms
  unsigned pin;
};

// meter = c + d * host (host ms since the first tag edge).
struct Line {
  double c = 0, d = 1;
  double host(double m) const { return (m - c) / d; }
  double meter(double h) const { return c + d * h; }
};

struct Consensus {
  double c = 0;      // the middle of the best stretch
  double width = 0;  // its length
  size_t count = 0;  // samples that agree there
};

// Maximum consensus for a fixed rate d, under meter = c + d * (host - h_a): the c within
// [c_lo, c_hi] that the most samples [from, to) agree with. Sample i agrees when co_up's line held
// s[i].pin at host time h_a + (m_i - c) / d, give or take tol: for each host segment with that value
// an interval of c. A sweep over the interval ends finds where most overlap. Counting agreeing
// samples (rather than fitting all of them) ignores glitches, and every agreeing sample narrows
// the stretch, so many samples at random phases pin c far finer than the sample period.
Consensus consensus(const std::vector<Sample>& s, size_t from, size_t to, const HostTimeline& host, double h_a,
                    double d, double c_lo, double c_hi, double tol, std::vector<std::pair<double, int>>& events) {
  events.clear();
  size_t always = 0;  // samples that agree with every c in range
  for (size_t i = from; i < to; ++i) {
    const double m = s[i].m;
    const double h_lo = h_a + (m - c_hi) / d, h_hi = h_a + (m - c_lo) / d;
    // Segments in host order give intervals of c in decreasing order; widened by tol, neighbours
    // can overlap: merge them so that a sample counts once.
    double run_lo = kInf, run_hi = -kInf;
    bool runs = false;
    auto flush = [&] {
      if (run_hi < run_lo) return;
      if (!runs && run_lo <= c_lo && run_hi >= c_hi) {
        ++always;
      } else {
        events.emplace_back(run_lo, +1);
        events.emplace_back(run_hi, -1);
      }
      runs = true;
    };
    for (size_t seg = host.index_at(h_lo - tol); seg < host.size() && host.begin[seg] <= h_hi + tol; ++seg) {
      if (host.value[seg] != s[i].pin) continue;
      // host in [begin - tol, end + tol]  <=>  c in [m - d (end + tol - h_a), m - d (begin - tol - h_a)]
      const double lo = std::max(c_lo, m - d * (host.end(seg) + tol - h_a));
      const double hi = std::min(c_hi, m - d * (host.begin[seg] - tol - h_a));
      if (lo > hi) continue;
      if (hi >= run_lo) {
        run_lo = std::min(run_lo, lo);
        continue;
      }
      flush();
      run_lo = lo, run_hi = hi;
    }
    flush();
  }
  Consensus best{(c_lo + c_hi) / 2, c_hi - c_lo, always};
  std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;  // closed intervals: open first
  });
  int depth = 0, best_depth = 0;
  for (size_t e = 0; e + 1 < events.size(); ++e) {
    depth += events[e].second;
    if (depth > best_depth) {
      best_depth = depth;
      best = {(events[e].first + events[e + 1].first) / 2, events[e + 1].first - events[e].first,
              always + static_cast<size_t>(depth)};
    }
  }
  return best;
}

// Searches the rate d in [d - dd, d + dd] (11 points, then 5x finer around the best, until dd * R
// is below `target`) and the offset c_a within `reach` of its estimate, narrowing that reach as
// the offset firms up; ties between rates are averaged.
void refine(const std::vector<Sample>& s, size_t from, size_t to, const HostTimeline& host, double h_a,
            double radius, double period, double target, double d_min, double d_max, double tol, double& d,
            double& dd, double& c_a, double& reach, std::vector<std::pair<double, int>>& events) {
  constexpr int kPoints = 11;
  for (int level = 0; level < 12; ++level) {
    size_t best_count = 0;
    double sum_d = 0, sum_c = 0, width = 0;
    int ties = 0;
    for (int k = 0; k < kPoints; ++k) {
      const double dk = std::clamp(d - dd + 2 * dd * k / (kPoints - 1), d_min, d_max);
      const Consensus r = consensus(s, from, to, host, h_a, dk, c_a - reach, c_a + reach, tol, events);
      if (r.count > best_count) best_count = r.count, sum_d = 0, sum_c = 0, ties = 0, width = r.width;
      if (r.count == best_count) sum_d += dk, sum_c += r.c, ++ties;
    }
    if (ties > 0) d = sum_d / ties, c_a = sum_c / ties;
    dd /= 5;
    // c_a is the offset at the anchor, which a change of rate does not move: the stretch found,
    // with margin, is all the next level needs to search. Samples farther than that from every
    // edge agree throughout and cost nothing.
    reach = std::clamp(4 * width, 0.05 * period, 2 * period);
    if (dd * radius < target) break;
  }
}

struct Candidate {
  double c = 0;
  size_t anchor = 0;  // sample index the pairing was made at
  double score = 0;   // fraction of the samples near the anchor that agree
  double margin = 0;  // over the best pairing at another offset
};

}  // namespace

int64_t MeterClockFit::to_host_ns(double meter_ms) const {
  const double host_ms = (meter_ms - offset_ms) / rate;
  return host_ref_ns + static_cast<int64_t>(std::llround(host_ms * 1e6));
}

profiler::PowerSummary::MeterClock MeterClockFit::summary() const {
  profiler::PowerSummary::MeterClock c;
  c.offset_ms = offset_ms;
  c.drift_ppm = drift_ppm();
  c.residual_ms = residual_ms;
  c.offset_uncertainty_ms = offset_uncertainty_ms;
  c.sample_period_ms = sample_period_ms;
  c.edges_matched = edges_matched;
  c.meter_edges = meter_edges;
  c.host_edges = host_edges;
  c.pin_agreement = pin_agreement;
  return c;
}

MeterClockFit align_meter_clock(const MeterLog& log, const std::vector<RecordingTagSink::Edge>& host_edges,
                                const MeterAlignOptions& options) {
  if (host_edges.empty()) {
    throw InputError("the meter log is aligned by the GPIO tag edges, but co_up recorded none: run with --gpio-tags");
  }
  MeterClockFit fit;
  fit.host_ref_ns = std::min_element(host_edges.begin(), host_edges.end(), [](const auto& a, const auto& b) {
                      return a.t_ns < b.t_ns;
                    })->t_ns;
  fit.sample_period_ms = log.sample_period_ms();
  if (log.samples.size() < 2 || fit.sample_period_ms <= 0) {
    throw RuntimeError("meter log '" + log.source + "' has " + std::to_string(log.samples.size()) +
                       " sample(s) at distinct times; at least two are needed to align it");
  }
  const double period = fit.sample_period_ms;
  const HostTimeline host(host_edges, fit.host_ref_ns, std::min(0.1, period / 20));
  fit.host_edges = host.size() - 1;
  if (options.time_quantum_ms >= 0) {
    fit.quantum_ms = options.time_quantum_ms;
  } else {
    const bool integers = std::all_of(log.samples.begin(), log.samples.end(),
                                      [](const MeterSample& s) { return s.t_ms == std::floor(s.t_ms); });
    fit.quantum_ms = integers ? 1.0 : 0.0;
  }
  // A sample stamped t was taken in [t, t + quantum): place it in the middle, give or take half.
  const double tol = fit.quantum_ms / 2 + options.edge_tolerance_ms;
  std::vector<Sample> s;
  s.reserve(log.samples.size());
  for (const MeterSample& x : log.samples) s.push_back({x.t_ms + fit.quantum_ms / 2, x.pin});
  std::vector<size_t> edges;  // sample k where the pin changed since k - 1
  for (size_t k = 1; k < s.size(); ++k) {
    if (s[k].pin != s[k - 1].pin) edges.push_back(k);
  }
  fit.meter_edges = edges.size();
  if (edges.empty()) {
    throw RuntimeError("meter log '" + log.source + "': its pin reads " + std::to_string(s.front().pin) +
                       " in every sample, so it cannot be aligned to the tags; check that the tag line is wired to the "
                       "meter's input pin and that the log covers the run");
  }
  const double max_drift = options.max_drift_ppm * 1e-6;
  const double d_min = 1 - max_drift, d_max = 1 + max_drift;
  const double span = s.back().m - s.front().m;
  std::vector<std::pair<double, int>> events;

  // Live logs: a line arrives after it was sampled, so host(m_k) <= received_k, i.e.
  // c >= m_k - received_k (up to drift over the log).
  std::optional<double> c_min;
  if (log.received_ns.size() == s.size()) {
    double bound = -kInf;
    for (size_t k = 0; k < s.size(); ++k) {
      bound = std::max(bound, s[k].m - static_cast<double>(log.received_ns[k] - fit.host_ref_ns) * 1e-6);
    }
    c_min = bound;
  }
  const double c_slack = max_drift * span + 2 * period;

  // 1. Coarse: pair anchor edges with host changes to the same value (rate 1).
  constexpr size_t kAnchors = 3, kPairings = 1000, kHalfWidth = 64;
  const size_t first_end_anchor = edges.size() > kAnchors ? edges.size() - kAnchors : 0;
  std::vector<size_t> anchors;
  for (size_t i = 0; i < std::min(kAnchors, edges.size()); ++i) anchors.push_back(edges[i]);
  for (size_t i = first_end_anchor; i < edges.size(); ++i) anchors.push_back(edges[i]);
  if (c_min) anchors.push_back(edges[edges.size() / 2]);
  std::sort(anchors.begin(), anchors.end());
  anchors.erase(std::unique(anchors.begin(), anchors.end()), anchors.end());
  std::vector<Candidate> best_per_anchor;
  for (const size_t k : anchors) {
    const double m_mid = (s[k - 1].m + s[k].m) / 2;
    std::vector<size_t> js;
    // The first (last) kPairings host changes to this value: the log may have missed that many
    // edges at the run's start (end), or have extra ones of its own.
    if (k <= edges[std::min(kAnchors, edges.size()) - 1]) {
      for (size_t j = 1, found = 0; j < host.size() && found < kPairings; ++j) {
        if (host.value[j] == s[k].pin) js.push_back(j), ++found;
      }
    }
    if (k >= edges[first_end_anchor]) {
      for (size_t j = host.size() - 1, found = 0; j >= 1 && found < kPairings; --j) {
        if (host.value[j] == s[k].pin) js.push_back(j), ++found;
      }
    }
    if (c_min) {
      // Around where the arrival times put this sample: up to 250 ms of latency.
      const double h_hi = m_mid - (*c_min - c_slack), h_lo = m_mid - (*c_min + 250 + c_slack);
      for (size_t j = host.index_at(h_lo) + 1; j < host.size() && host.begin[j] <= h_hi; ++j) js.push_back(j);
    }
    std::sort(js.begin(), js.end());
    js.erase(std::unique(js.begin(), js.end()), js.end());
    const size_t from = k > kHalfWidth ? k - kHalfWidth : 0, to = std::min(s.size(), k + kHalfWidth + 1);
    // The change lies somewhere between the two samples: search the offsets that allows.
    const double reach = (s[k].m - s[k - 1].m) / 2 + tol;
    // The offset c0 (rate 1 at the anchor) scored on the samples within half_width of k, the rate
    // free within the drift allowed over that stretch.
    auto score_wide = [&](double c0, size_t k, size_t half_width) {
      const size_t from = k > half_width ? k - half_width : 0, to = std::min(s.size(), k + half_width + 1);
      const double h_k = s[k].m - c0;
      const double stretch = std::max(s[k].m - s[from].m, s[to - 1].m - s[k].m);
      const int steps = 2 * std::clamp(static_cast<int>(std::ceil(max_drift * stretch / tol)), 0, 20) + 1;
      Consensus best;
      for (int i = 0; i < steps; ++i) {
        const double rate = steps == 1 ? 1.0 : d_min + (d_max - d_min) * i / (steps - 1);
        const Consensus r = consensus(s, from, to, host, h_k, rate, s[k].m - reach, s[k].m + reach, tol, events);
        if (r.count > best.count) best = r;
      }
      return Candidate{best.c - h_k, k, static_cast<double>(best.count) / static_cast<double>(to - from), 0};
    };
    std::vector<Candidate> cands;
    for (const size_t j : js) {
      if (host.value[j] != s[k].pin) continue;
      const double c0 = m_mid - host.begin[j];
      if (c_min && c0 < *c_min - c_slack) continue;  // the line would have arrived before it was sampled
      const Consensus r = consensus(s, from, to, host, 0, 1, c0 - reach, c0 + reach, tol, events);
      cands.push_back({r.c, k, static_cast<double>(r.count) / static_cast<double>(to - from), 0});
    }
    if (cands.empty()) continue;
    auto by_score = [](const Candidate& a, const Candidate& b) { return a.score > b.score; };
    std::stable_sort(cands.begin(), cands.end(), by_score);
    // Contenders: distinct offsets (more than a period apart) scoring about as well as the best.
    constexpr double kClear = 0.02;
    std::vector<Candidate> top;
    double runner_up = 0;
    for (const Candidate& c : cands) {
      const bool distinct = std::none_of(top.begin(), top.end(), [&](const Candidate& t) { return std::abs(t.c - c.c) <= period; });
      if (!distinct) continue;
      if (!top.empty() && (c.score < top.front().score - kClear || top.size() == 8)) {
        runner_up = c.score;
        break;
      }
      top.push_back(c);
    }
    // Several fit the samples near the anchor (frames alike over that stretch): ask 4x as many
    // samples (up to 64x), letting the rate vary as far as the drift allows, until one stands out.
    for (size_t half_width = kHalfWidth; top.size() > 1 && top[0].score >= 0.9 && half_width < std::min(s.size(), kHalfWidth << 6);) {
      half_width *= 4;
      for (Candidate& c : top) {
        const Candidate wider = score_wide(c.c, k, half_width);
        c.c = wider.c, c.score = wider.score;
      }
      std::stable_sort(top.begin(), top.end(), by_score);
      if (top[0].score - top[1].score >= kClear) break;
    }
    Candidate best = top.front();
    best.margin = best.score - (top.size() > 1 ? top[1].score : runner_up);
    if (c_min && best.margin <= 0) {
      // Identical frames: prefer the pairing the arrival times make likeliest (least latency).
      for (const Candidate& c : top) {
        if (c.score >= best.score && c.c < best.c) best.c = c.c;
      }
    }
    best_per_anchor.push_back(best);
  }
  if (best_per_anchor.empty()) {
    throw RuntimeError("meter log '" + log.source + "': none of its pin values at its first and last edges (" +
                       std::to_string(s[edges.front()].pin) + ", " + std::to_string(s[edges.back()].pin) +
                       ") is a value co_up drove on the tag lines; check the wiring and --gpio-tags");
  }
  const Candidate start = *std::max_element(best_per_anchor.begin(), best_per_anchor.end(),
                                            [](const Candidate& a, const Candidate& b) {
                                              // A clear winner first, then the best agreement.
                                              const bool clear_a = a.score >= 0.9 && a.margin >= 0.02;
                                              const bool clear_b = b.score >= 0.9 && b.margin >= 0.02;
                                              if (clear_a != clear_b) return clear_b;
                                              return a.score != b.score ? a.score < b.score : a.margin < b.margin;
                                            });
  if (start.score < 0.5) {
    throw RuntimeError("meter log '" + log.source + "' does not match the tags co_up drove: at best " +
                       std::to_string(static_cast<int>(start.score * 100)) +
                       "% of the samples near an edge read the driven value; check the wiring, --gpio-tags and "
                       "that the log is from this run");
  }
  if (start.margin <= 0) {
    fit.warning = "the meter log's edges match several frames equally well (it covers neither the run's start nor "
                  "its end, and the frames look alike); start the meter before co_up and stop it after";
  }

  // 2. Grow a window around the anchor, doubling, refining rate and offset by maximum consensus.
  //    The model is anchored there (meter = c_a + d (host - h_a)) so that a change of rate does not
  //    move the offset where the samples are.
  const double m_a = s[start.anchor].m;
  const double h_a = m_a - start.c;
  double c_a = m_a, d = 1, dd = max_drift, reach = 2 * period;
  double radius = std::max(20 * period, period / 4 / std::max(max_drift, 1e-9));
  for (bool whole = false; !whole; radius *= 2) {
    whole = m_a - radius <= s.front().m && m_a + radius >= s.back().m;
    const auto from = static_cast<size_t>(
        std::lower_bound(s.begin(), s.end(), m_a - radius, [](const Sample& x, double m) { return x.m < m; }) - s.begin());
    const auto to = static_cast<size_t>(
        std::upper_bound(s.begin(), s.end(), m_a + radius, [](double m, const Sample& x) { return m < x.m; }) - s.begin());
    refine(s, from, to, host, h_a, radius, period, whole ? period / 2000 : period / 50, d_min, d_max, tol, d, dd, c_a,
           reach, events);
    dd = std::min(max_drift, 8 * period / radius);  // what the next, twice as wide window must search
  }
  const Consensus final_fit = consensus(s, 0, s.size(), host, h_a, d, c_a - reach, c_a + reach, tol, events);
  const Line line{c_a - d * h_a, d};
  // Meter time of the first edge. Samples sit in the middle of their quantum (Sample::m), and so
  // does this: to_host_ns() maps the meter's clock, not its truncated stamps.
  fit.offset_ms = line.c;
  fit.rate = line.d;
  fit.offset_uncertainty_ms = final_fit.width / 2;
  fit.samples_used = final_fit.count;

  // 3. Quality: agreement inside the run, matched edges and their residual.
  const double run_begin = host.size() > 1 ? host.begin[1] : 0, run_end = host.begin.back();
  size_t inside = 0, agree = 0;
  for (const Sample& x : s) {
    const double h = line.host(x.m);
    if (h < run_begin || h > run_end) continue;
    ++inside;
    agree += host.held(h, x.pin, tol);
  }
  fit.pin_agreement = inside > 0 ? static_cast<double>(agree) / static_cast<double>(inside) : 0;
  // Local agreement: a stretch where most samples disagree with the fit was stamped by a clock
  // that jumped (or a meter that restarted); the fit is right elsewhere, those samples are not.
  {
    constexpr size_t kHalf = 25;
    constexpr double kMinLocal = 0.8;
    std::vector<int> agrees(s.size(), -1);  // -1: outside the run
    for (size_t i = 0; i < s.size(); ++i) {
      const double h = line.host(s[i].m);
      if (h >= run_begin && h <= run_end) agrees[i] = host.held(h, s[i].pin, tol) ? 1 : 0;
    }
    std::vector<bool> low(s.size(), false);  // local agreement under kMinLocal
    size_t in_window = 0, agreeing = 0, lo = 0, hi = 0;  // window [lo, hi)
    for (size_t i = 0; i < s.size(); ++i) {
      const size_t want_lo = i >= kHalf ? i - kHalf : 0, want_hi = std::min(s.size(), i + kHalf + 1);
      for (; hi < want_hi; ++hi) {
        if (agrees[hi] >= 0) ++in_window, agreeing += static_cast<size_t>(agrees[hi]);
      }
      for (; lo < want_lo; ++lo) {
        if (agrees[lo] >= 0) --in_window, agreeing -= static_cast<size_t>(agrees[lo]);
      }
      if (agrees[i] >= 0 && in_window >= kHalf &&
          static_cast<double>(agreeing) < kMinLocal * static_cast<double>(in_window)) {
        low[i] = true;
      }
    }
    // Widened by the window on both sides: next to a jump, the window still holds enough good
    // samples to pass misplaced ones.
    std::vector<bool> distrusted(s.size(), false);
    for (size_t i = 0; i < s.size(); ++i) {
      if (!low[i]) continue;
      for (size_t k = i >= kHalf ? i - kHalf : 0; k < std::min(s.size(), i + kHalf + 1); ++k) distrusted[k] = true;
    }
    for (size_t i = 0; i < s.size(); ++i) {
      if (!distrusted[i]) continue;
      ++fit.samples_distrusted;
      const double stamp = s[i].m - fit.quantum_ms / 2;  // the log's own time stamp
      if (i > 0 && distrusted[i - 1]) {
        fit.distrusted_ms.back().second = stamp;
      } else {
        fit.distrusted_ms.emplace_back(stamp, stamp);
      }
    }
  }
  double sum_sq = 0;
  size_t single = 0;
  for (const size_t k : edges) {
    if (!host.held(line.host(s[k - 1].m), s[k - 1].pin, tol) || !host.held(line.host(s[k].m), s[k].pin, tol)) continue;
    ++fit.edges_matched;
    const size_t first = host.index_at(line.host(s[k - 1].m - tol)) + 1, last = host.index_at(line.host(s[k].m + tol));
    if (first == last) {  // exactly one host change between the two samples
      const double r = line.meter(host.begin[first]) - (s[k - 1].m + s[k].m) / 2;
      sum_sq += r * r;
      ++single;
    }
  }
  fit.residual_ms = single > 0 ? std::sqrt(sum_sq / static_cast<double>(single)) : 0;
  if (fit.warning.empty() && fit.pin_agreement < 0.9) {
    fit.warning = "only " + std::to_string(static_cast<int>(fit.pin_agreement * 100)) +
                  "% of the meter's samples read the tag value co_up drove: the alignment is doubtful";
  }
  return fit;
}

MeterPower attribute_meter_power(const MeterLog& log, const MeterClockFit& fit,
                                 const std::vector<profiler::LayerSpan>& spans, double window_ms) {
  return attribute_meter_power(log, fit, spans, MeterSensor{window_ms, 0, 0});
}

MeterPower attribute_meter_power(const MeterLog& log, const MeterClockFit& fit,
                                 const std::vector<profiler::LayerSpan>& spans, const MeterSensor& sensor) {
  const double window_ms = sensor.window_ms;
  const int64_t lag_ns = static_cast<int64_t>(sensor.lag_ms * 1e6);
  const double tau_ns = sensor.time_constant_ms * 1e6;
  MeterPower out;
  out.summary.source = "meter";
  out.summary.meter_clock = fit.summary();
  if (spans.empty()) return out;
  // Columns: 0 = idle, then one per layer (index order).
  std::map<uint32_t, size_t> column;
  for (const auto& span : spans) column.emplace(span.layer, 0);
  size_t n = 1;
  for (auto& [layer, col] : column) col = n++;
  // Spans per processor, sorted: on one processor they do not overlap.
  std::map<char, std::vector<profiler::LayerSpan>> by_processor;
  int64_t run_begin = INT64_MAX, run_end = INT64_MIN;
  for (const auto& span : spans) {
    by_processor[span.processor].push_back(span);
    run_begin = std::min(run_begin, span.begin_ns);
    run_end = std::max(run_end, span.end_ns);
  }
  for (auto& [p, v] : by_processor) {
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.begin_ns < b.begin_ns; });
  }
  // A sample's reading is the power averaged over its window (a point when window_ms = 0). With
  // integer time stamps the sample sits anywhere in [t, t + quantum): its expected reading is the
  // window's average over those positions, so the row averages over them too (for a point: one
  // window of the quantum's width ending at t + quantum).
  const int64_t window_ns = static_cast<int64_t>(window_ms * 1e6);
  const double quantum = fit.quantum_ms;
  std::vector<std::pair<double, int64_t>> positions;  // (meter ms where the window ends, width ns)
  std::vector<std::pair<size_t, double>> row;
  // Adds the fraction of [end - width, end] that each layer span covers (width 0: the span at end).
  auto add_window = [&](int64_t end, int64_t width, double weight) {
    end -= lag_ns;
    if (tau_ns > 0) {
      // First-order low-pass filter: the reading is the power weighted by exp(-(end - u) / tau) /
      // tau over u <= end; span [a, b] gets exp(-(end - min(b, end)) / tau) - exp(-(end - a) / tau).
      for (const auto& [p, v] : by_processor) {
        auto it = std::upper_bound(v.begin(), v.end(), end, [](int64_t time, const auto& sp) { return time < sp.begin_ns; });
        while (it != v.begin()) {
          --it;
          const double near = static_cast<double>(end - std::min(it->end_ns, end)) / tau_ns;
          if (near > 12) break;  // exp(-12): nothing earlier counts
          const double far = static_cast<double>(end - it->begin_ns) / tau_ns;
          row.emplace_back(column[it->layer], weight * (std::exp(-near) - std::exp(-far)));
        }
      }
      return;
    }
    for (const auto& [p, v] : by_processor) {
      auto it = std::upper_bound(v.begin(), v.end(), end, [](int64_t time, const auto& sp) { return time < sp.begin_ns; });
      while (it != v.begin()) {
        --it;
        if (width == 0) {
          if (end < it->end_ns) row.emplace_back(column[it->layer], weight);
          break;
        }
        if (it->end_ns <= end - width) break;
        const int64_t overlap = std::min(it->end_ns, end) - std::max(it->begin_ns, end - width);
        if (overlap > 0) row.emplace_back(column[it->layer], weight * static_cast<double>(overlap) / static_cast<double>(width));
      }
    }
  };
  std::vector<double> ata(n * n, 0), atp(n, 0);
  double ptp = 0;
  uint64_t used = 0;
  for (const MeterSample& x : log.samples) {
    positions.clear();
    if (quantum <= 0) {
      positions.emplace_back(x.t_ms, window_ns);
    } else if (window_ns == 0) {
      positions.emplace_back(x.t_ms + quantum, static_cast<int64_t>(quantum * 1e6));
    } else {
      constexpr int kSteps = 8;
      for (int j = 0; j < kSteps; ++j) positions.emplace_back(x.t_ms + quantum * (j + 0.5) / kSteps, window_ns);
    }
    const int64_t reach = tau_ns > 0 ? static_cast<int64_t>(5 * tau_ns) : positions.front().second;
    const int64_t first_begin = fit.to_host_ns(positions.front().first) - lag_ns - reach;
    const int64_t last_end = fit.to_host_ns(positions.back().first) - lag_ns;
    if (first_begin < run_begin || last_end > run_end) continue;
    // distrusted_ms is in meter time order: the last stretch starting at or before the sample.
    const auto stretch = std::upper_bound(fit.distrusted_ms.begin(), fit.distrusted_ms.end(), x.t_ms,
                                          [](double t, const auto& r) { return t < r.first; });
    if (stretch != fit.distrusted_ms.begin() && x.t_ms <= std::prev(stretch)->second) continue;
    row.clear();
    const double weight = 1.0 / static_cast<double>(positions.size());
    for (const auto& [meter_ms, width] : positions) add_window(fit.to_host_ns(meter_ms), width, weight);
    // Merge repeated columns; the idle column takes what no layer covers.
    std::sort(row.begin(), row.end());
    size_t out_i = 0;
    double busy = 0;
    for (size_t i = 0; i < row.size(); ++i) {
      busy += row[i].second;
      if (out_i > 0 && row[out_i - 1].first == row[i].first) {
        row[out_i - 1].second += row[i].second;
      } else {
        row[out_i++] = row[i];
      }
    }
    row.resize(out_i);
    row.emplace_back(0, 1.0 - busy);
    for (const auto& [i, a] : row) {
      for (const auto& [j, b] : row) ata[i * n + j] += a * b;
      atp[i] += a * x.mw;
    }
    ptp += x.mw * x.mw;
    ++used;
  }
  if (used == 0) {
    throw RuntimeError("meter log '" + log.source +
                       "': no sample falls inside the run once aligned; does the log cover the run?");
  }
  out.summary.meter_samples_used = used;
  // Solve the normal equations by Cholesky over the columns that are determined; a column that
  // no sample touches, or that depends on the others (two layers always seen together), drops out.
  std::vector<bool> active(n);
  double max_diag = 0;
  for (size_t i = 0; i < n; ++i) max_diag = std::max(max_diag, ata[i * n + i]);
  for (size_t i = 0; i < n; ++i) active[i] = ata[i * n + i] > 1e-9 * max_diag;
  std::vector<size_t> cols;
  std::vector<double> chol;
  for (;;) {
    cols.clear();
    for (size_t i = 0; i < n; ++i) {
      if (active[i]) cols.push_back(i);
    }
    const size_t m = cols.size();
    chol.assign(m * m, 0);
    size_t failed = m;
    for (size_t j = 0; j < m && failed == m; ++j) {
      double d = ata[cols[j] * n + cols[j]];
      for (size_t k = 0; k < j; ++k) d -= chol[j * m + k] * chol[j * m + k];
      if (d <= 1e-9 * ata[cols[j] * n + cols[j]]) {
        failed = j;
        break;
      }
      chol[j * m + j] = std::sqrt(d);
      for (size_t i = j + 1; i < m; ++i) {
        double v = ata[cols[i] * n + cols[j]];
        for (size_t k = 0; k < j; ++k) v -= chol[i * m + k] * chol[j * m + k];
        chol[i * m + j] = v / chol[j * m + j];
      }
    }
    if (failed == m) break;
    active[cols[failed]] = false;
  }
  const size_t m = cols.size();
  auto solve = [&](std::vector<double> b) {  // L L^T x = b
    for (size_t i = 0; i < m; ++i) {
      for (size_t k = 0; k < i; ++k) b[i] -= chol[i * m + k] * b[k];
      b[i] /= chol[i * m + i];
    }
    for (size_t i = m; i-- > 0;) {
      for (size_t k = i + 1; k < m; ++k) b[i] -= chol[k * m + i] * b[k];
      b[i] /= chol[i * m + i];
    }
    return b;
  };
  std::vector<double> rhs(m);
  for (size_t i = 0; i < m; ++i) rhs[i] = atp[cols[i]];
  const std::vector<double> x = solve(rhs);
  double rss = ptp;
  for (size_t i = 0; i < m; ++i) {
    rss -= 2 * x[i] * rhs[i];
    for (size_t j = 0; j < m; ++j) rss += x[i] * ata[cols[i] * n + cols[j]] * x[j];
  }
  rss = std::max(rss, 0.0);
  const double sigma2 = used > m ? rss / static_cast<double>(used - m) : 0;
  out.summary.fit_residual_mw = std::sqrt(rss / static_cast<double>(used));
  std::vector<double> power(n, 0), stderr_mw(n, 0);
  std::vector<bool> known(n, false);
  for (size_t i = 0; i < m; ++i) {
    std::vector<double> unit(m, 0);
    unit[i] = 1;
    power[cols[i]] = x[i];
    stderr_mw[cols[i]] = std::sqrt(std::max(0.0, sigma2 * solve(unit)[i]));
    known[cols[i]] = true;
  }
  if (known[0]) out.summary.idle_mw = power[0];

  std::map<uint32_t, profiler::LayerPower> layers;
  for (const auto& span : spans) {
    profiler::LayerPower& lp = layers[span.layer];
    lp.layer = span.layer;
    lp.processor = span.processor;
    lp.source = "meter";
    lp.frames += 1;
    lp.time_ms += static_cast<double>(span.end_ns - span.begin_ns) * 1e-6;  // total for now
  }
  for (auto& [layer, lp] : layers) {
    const size_t col = column[layer];
    const double total_ms = lp.time_ms;
    lp.time_ms = total_ms / static_cast<double>(lp.frames);
    if (!known[col]) {
      out.undetermined.push_back(layer);
    } else {
      lp.power_mw = power[col];
      lp.power_stderr_mw = stderr_mw[col];
      lp.total_energy_mj = power[col] * total_ms / 1000.0;  // mW * ms = uJ
      lp.energy_mj = lp.total_energy_mj / static_cast<double>(lp.frames);
    }
    out.summary.layers.push_back(lp);
  }
  return out;
}

}  // namespace co_up::power
