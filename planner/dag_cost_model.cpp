#include "planner/dag_cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <span>
#include <stdexcept>

#include "core/error.h"

namespace co_up::planner {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();
// Frames simulated for the steady state (DagCostOptions::pipeline_frames = 0).
constexpr uint32_t kSteadyStateFrames = 64;

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  if (values.size() % 2 == 1) return values[mid];
  const double upper = values[mid];
  return (upper + *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
}

// The MAD of a normal distribution is 0.6745 standard deviations.
constexpr double kSigmaPerMad = 1.4826;
// predict_run's draws are cut here (in standard deviations): a layer time never goes negative
// or far beyond what a profile's repetitions saw.
constexpr double kMostDeviations = 3;

}  // namespace

// predict_run's draws: per sub-graph, the standard deviation of its run's layer time and the
// half-width of its executor cost's spread.
struct DagCostModel::RunNoise {
  std::vector<double> sigma_us, spread_us;
  // Layer times and the executor's costs from engines of their own: the executor's draws leave
  // the layer draws as they were.
  std::mt19937_64 random, executor_random;
  double uniform() { return static_cast<double>(executor_random() >> 11) * 0x1p-53; }  // [0, 1)
  // A standard normal draw (Box-Muller on the engine's 53-bit uniforms, which the standard fixes,
  // unlike std::normal_distribution), cut at kMostDeviations.
  double normal() {
    const double u1 = (static_cast<double>(random() >> 11) + 1) * 0x1p-53;  // (0, 1]
    const double u2 = static_cast<double>(random() >> 11) * 0x1p-53;        // [0, 1)
    const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::acos(-1.0) * u2);
    return std::clamp(z, -kMostDeviations, kMostDeviations);
  }
  double run_us(uint32_t s, double cost_us) {
    const double executor = spread_us[s] > 0 ? spread_us[s] * (2 * uniform() - 1) : 0;
    return executor + (sigma_us[s] > 0 ? std::max(0.0, cost_us + sigma_us[s] * normal()) : cost_us);
  }
};

struct DagCostModel::Plan {
  struct Out {
    uint32_t destination;
    uint32_t capacity;
    bool shared_across = false;  // a tensor shared in place with another processor's sub-graph
    double delay_us = 0;  // pipeline: the pair's hand-off, between publishing and the reader seeing it
  };
  std::vector<size_t> processor;  // per sub-graph: index in letters()
  std::vector<uint32_t> first, last;
  std::vector<double> cost_us;
  // Switch and overlap mode with a co-run slowdown (`corun` not empty, [p * processors + q]: the
  // factor on p's layers while q runs): per sub-graph, the part of cost_us before its layers
  // (input, receives, wake-ups) and its layers; the rest (its sends) follows them.
  std::vector<double> corun, head_us, layer_us;
  // Flat per sub-graph lists (one allocation each, not one per sub-graph: a search builds a plan
  // per candidate): sub-graph s reads source_list[source_begin[s] .. source_begin[s + 1]),
  // ascending (each with its edge's delay in source_delay_us), and feeds
  // out_list[out_begin[s] .. out_begin[s + 1]), ascending.
  std::vector<uint32_t> source_begin, source_list;
  std::vector<double> source_delay_us;
  bool delays = false;  // any edge with a delay
  std::vector<uint32_t> out_begin;
  std::vector<Out> out_list;
  std::span<const uint32_t> sources(size_t s) const {
    return {source_list.data() + source_begin[s], source_list.data() + source_begin[s + 1]};
  }
  std::span<const double> source_delays(size_t s) const {
    return {source_delay_us.data() + source_begin[s], source_delay_us.data() + source_begin[s + 1]};
  }
  std::span<const Out> outs(size_t s) const {
    return {out_list.data() + out_begin[s], out_list.data() + out_begin[s + 1]};
  }
  std::vector<bool> reads_input, writes_output;
  std::vector<double> busy_us;  // per processor
  std::vector<bool> used;
  // Overlap mode: per sub-graph, the sub-graphs of other processors that touch one of the
  // buffers it touches (the executor's buffer_guards): it runs frame g only once they all
  // finished g - 1. guard_list[guard_begin[s] .. guard_begin[s + 1]).
  std::vector<uint32_t> guard_begin, guard_list;
  std::span<const uint32_t> guards(size_t s) const {
    return {guard_list.data() + guard_begin[s], guard_list.data() + guard_begin[s + 1]};
  }
};

DagCostModel::DagCostModel(const CostModel& model, graph::UnitDag dag, DagCostOptions options)
    : model_(&model), dag_(std::move(dag)), options_(options) {
  const uint32_t n = model.layer_count();
  if (dag_.predecessors.size() != n || dag_.outputs.size() != n) {
    throw InputError("the network's unit graph has " + std::to_string(dag_.predecessors.size()) +
                     " units but the profile has " + std::to_string(n) +
                     " layer units (was it profiled with other --units?)");
  }
  if (dag_.inputs.size() != n) {
    dag_.inputs.assign(n, false);
    if (n > 0) dag_.inputs[0] = true;
  }
  if (dag_.shareable.size() != n) dag_.shareable.clear();  // unknown: as the profile says
  for (uint32_t u = 0; u < n; ++u) {
    for (uint32_t q : dag_.predecessors[u]) {
      if (q >= u) throw std::logic_error("unit DAG: a predecessor is not before its unit");
    }
  }
  // A period is a time between completions: it takes two frames (one would divide by zero).
  if (options_.pipeline_frames == 1) {
    throw InputError("DAG cost model: pipeline_frames is 1; simulate at least 2 frames (0: the steady state)");
  }
  if (options_.receiver_buffers < 1) options_.receiver_buffers = 1;
  std::vector<std::string> names;
  for (const ProfileLayer& l : model.profile().network.layers) names.push_back(l.name);
  if (names.size() == n) split_units_ = graph::find_split_units(names);
  const std::string& letters = model.letters();
  in_place_.assign(letters.size(), false);
  for (size_t p = 0; p < letters.size(); ++p) {
    for (const ProfileProcessor& x : model.profile().processors) {
      if (x.letter == letters[p]) in_place_[p] = x.in_place_boundaries;
    }
  }
  profile_edge_us_.assign(letters.size(), std::vector<double>(letters.size(), 0.0));
  profile_edge_mb_us_ = profile_edge_us_;
  for (size_t a = 0; a < letters.size(); ++a) {
    for (size_t b = 0; b < letters.size(); ++b) {
      if (a == b) continue;
      const HandoffTime* h = model.profile().find_switch_edge(letters[a], letters[b]);
      if (h != nullptr) profile_edge_us_[a][b] = h->us;
      const HandoffTime* mb = model.profile().find_switch_edge_mb(letters[a], letters[b]);
      if (mb != nullptr) profile_edge_mb_us_[a][b] = mb->us;
    }
  }
  // Pipeline costs: the profile's fit against this model's simulation where it has one (then
  // the hand-off is the chain model's only), else the hand-off as the delay and nothing per
  // sub-graph, as before such fits.
  const bool pipeline_fitted = !model.profile().pipeline_edges.empty() || !model.profile().pipeline_subgraphs.empty();
  profile_subgraph_us_.assign(letters.size(), 0.0);
  profile_work_factor_.assign(letters.size(), 0.0);
  profile_delay_us_.assign(letters.size(), std::vector<double>(letters.size(), 0.0));
  for (size_t a = 0; a < letters.size(); ++a) {
    for (size_t b = 0; b < letters.size(); ++b) {
      if (a == b) continue;
      if (const HandoffTime* h = model.profile().find_pipeline_subgraph(letters[a], letters[b])) {
        profile_subgraph_us_[a] = std::max({profile_subgraph_us_[a], h->us, kExecutorRunUs});
      }
      if (const HandoffTime* h = model.profile().find_pipeline_work_factor(letters[a], letters[b])) {
        profile_work_factor_[a] = std::max(profile_work_factor_[a], h->us);
      }
      if (!pipeline_fitted) {
        profile_delay_us_[a][b] = model.handoff_us(a, b);
      } else if (const HandoffTime* h = model.profile().find_pipeline_edge(letters[a], letters[b])) {
        profile_delay_us_[a][b] = h->us;
      }
    }
  }
  // At least 1, as the co-run factor below: the factor is the slowdown of layers beside the other
  // processor's work, and that work never speeds them up. A fit below 1 took something else for
  // it (the profile's references alone ran slower than their layers for reasons of their own;
  // docs/para_pipe.md, "How close the model is").
  for (double& f : profile_work_factor_) f = f > 0 ? std::max(1.0, f) : 1.0;
  profile_corun_factor_.assign(letters.size(), std::vector<double>(letters.size(), 1.0));
  for (size_t a = 0; a < letters.size(); ++a) {
    for (size_t b = 0; b < letters.size(); ++b) {
      if (model.resource_of(a) == model.resource_of(b)) continue;
      if (const HandoffTime* h = model.profile().find_pipeline_work_factor(letters[a], letters[b])) {
        profile_corun_factor_[a][b] = std::max(1.0, h->us);
      }
    }
  }
  relative_mad_.resize(letters.size());
  for (size_t p = 0; p < letters.size(); ++p) {
    const int domain = model.domain_of(p);
    const int levels = domain < 0 ? 0 : model.level_count(static_cast<size_t>(domain));
    const LayerTimes* any = nullptr;
    for (const LayerTimes& t : model.profile().layer_times) {
      if (t.processor == letters[p] && (any == nullptr || t.level == 0)) any = &t;
    }
    for (int l = 0; l <= levels; ++l) {
      const LayerTimes* t = model.profile().find_layer_times(letters[p], l);
      if (t == nullptr) t = any;
      std::vector<double>& rel = relative_mad_[p].emplace_back(n, 0.0);
      for (uint32_t u = 0; t != nullptr && u < n && u < t->mad_us.size() && u < t->median_us.size(); ++u) {
        const double mad = t->mad_us[u], median = t->median_us[u];
        if (std::isfinite(mad) && std::isfinite(median) && median > 0 && mad > 0) rel[u] = mad / median;
      }
    }
  }
  output_mb_.assign(n, 0.0);
  const std::vector<ProfileLayer>& layers = model.profile().network.layers;
  if (layers.size() == n) {
    for (uint32_t u = 0; u < n; ++u) output_mb_[u] = static_cast<double>(layers[u].output_bytes) / 1e6;
  }
  concat_first_.assign(n, false);
  concat_only_.assign(n, false);
  conv_last_.assign(n, false);
  if (layers.size() == n) {
    for (uint32_t u = 0; u < n; ++u) {
      const std::string& ops = layers[u].ops;
      const size_t last = ops.rfind('+');
      concat_first_[u] = ops.rfind("Concat", 0) == 0;
      concat_only_[u] = ops == "Concat";
      conv_last_[u] = ops.compare(last == std::string::npos ? 0 : last + 1, 4, "Conv") == 0;
    }
  }
  sole_successor_.assign(n, UINT32_MAX);
  {
    std::vector<uint32_t> successors(n, 0);
    for (uint32_t u = 0; u < n; ++u) {
      for (uint32_t q : dag_.predecessors[u]) {
        sole_successor_[q] = ++successors[q] == 1 ? u : UINT32_MAX - 1;
      }
    }
    for (uint32_t& s : sole_successor_) {
      if (s == UINT32_MAX - 1) s = UINT32_MAX;
    }
  }
  feeds_output_ = dag_.outputs;
  // No output marked: the last sub-graph's end is the frame's (as build() decides).
  if (n > 0 && std::none_of(feeds_output_.begin(), feeds_output_.end(), [](bool b) { return b; })) {
    feeds_output_.back() = true;
  }
  for (uint32_t u = n; u-- > 0;) {
    if (!feeds_output_[u]) continue;
    for (uint32_t q : dag_.predecessors[u]) feeds_output_[q] = true;
  }
  // Copies on a same-processor cut: the profile times transfers only between processors, and a
  // send is the same copy whoever receives it (a receive the same bind whoever sent it).
  same_send_us_.assign(letters.size(), std::vector<double>(n, 0.0));
  same_receive_us_.assign(letters.size(), std::vector<double>(n, 0.0));
  for (size_t p = 0; p < letters.size(); ++p) {
    for (uint32_t q = 0; q + 1 < n; ++q) {
      double send = kNever, receive = kNever;
      for (size_t x = 0; x < letters.size(); ++x) {
        if (x == p) continue;
        send = std::min(send, model.send_us(q, p, x, Mode::kSwitch));
        receive = std::min(receive, model.receive_us(q, x, p, Mode::kSwitch));
      }
      if (send < kNever) same_send_us_[p][q] = send;
      if (receive < kNever) same_receive_us_[p][q] = receive;
    }
  }
}

double DagCostModel::switch_edge_us(size_t a, size_t b) const {
  if (a == b) return 0;
  return options_.switch_edge_us >= 0 ? options_.switch_edge_us : profile_edge_us_[a][b];
}

double DagCostModel::switch_edge_mb_us(size_t a, size_t b) const {
  if (a == b) return 0;
  return options_.switch_edge_mb_us >= 0 ? options_.switch_edge_mb_us : profile_edge_mb_us_[a][b];
}

double DagCostModel::pipeline_subgraph_us(size_t p) const {
  return options_.pipeline_subgraph_us >= 0 ? options_.pipeline_subgraph_us : profile_subgraph_us_[p];
}

double DagCostModel::pipeline_work_factor(size_t p) const {
  return options_.pipeline_work_factor > 0 ? std::max(1.0, options_.pipeline_work_factor) : profile_work_factor_[p];
}

double DagCostModel::corun_work_factor(size_t p, size_t q) const {
  if (model_->resource_of(p) == model_->resource_of(q)) return 1;
  return options_.corun_work_factor > 0 ? std::max(1.0, options_.corun_work_factor) : profile_corun_factor_[p][q];
}

double DagCostModel::pipeline_edge_us(size_t a, size_t b) const {
  if (a == b) return 0;
  return options_.pipeline_edge_us >= 0 ? options_.pipeline_edge_us : profile_delay_us_[a][b];
}

DagCostModel::Plan DagCostModel::build(const Mapping& m, bool capacities) const {
  const CostModel& model = *model_;
  model.check(m);
  const uint32_t n = model.layer_count();
  Plan plan;
  std::vector<uint32_t> sg_of(n);
  const std::vector<bool> split_starts = graph::split_subgraph_starts(split_units_, m.order);
  for (uint32_t u = 0; u < n; ++u) {
    if (u == 0 || m.order[u] != m.order[u - 1] || split_starts[u]) {
      plan.processor.push_back(model.index_of(m.order[u]));
      plan.first.push_back(u);
      plan.last.push_back(u);
    }
    plan.last.back() = u;
    sg_of[u] = static_cast<uint32_t>(plan.processor.size() - 1);
  }
  const size_t count = plan.processor.size();
  plan.cost_us.assign(count, 0.0);
  if (m.mode == Mode::kPipeline) {
    for (size_t s = 0; s < count; ++s) plan.cost_us[s] = pipeline_subgraph_us(plan.processor[s]);
  }
  plan.reads_input.assign(count, false);
  plan.writes_output.assign(count, false);
  // Marks instead of searches keep this linear in the units and edges: the planner's searches
  // build a plan per candidate, hundreds of thousands of times. A sub-graph's units are
  // consecutive, so "already charged for destination d" is "the mark holds d".
  std::vector<uint32_t> charged_for(n, UINT32_MAX);      // per producing unit: last destination
  // Per source sub-graph: the index in `links` of its link to the destination last seen. A
  // destination may read s, then s2, then s again: its units are consecutive, so the link to
  // mark is links[link_of[s]] when that link's destination is d, not the last one pushed.
  std::vector<uint32_t> link_of(count, UINT32_MAX);
  // Sub-graph edges (source, destination) in unit order, so destinations never decrease.
  struct Link {
    uint32_t source, destination;
    bool shared_across;
    double delay_us;
  };
  std::vector<Link> links;
  std::vector<std::pair<uint32_t, uint32_t>> shared_edges;  // overlap mode: (unit, reading sub-graph) in place
  const size_t n_proc = model.letters().size();
  std::vector<double> work_factor(n_proc, 1.0);
  if (m.mode == Mode::kPipeline) {
    for (size_t p = 0; p < n_proc; ++p) work_factor[p] = pipeline_work_factor(p);
  } else {
    plan.corun.assign(n_proc * n_proc, 1.0);
    bool any = false;
    for (size_t p = 0; p < n_proc; ++p) {
      for (size_t q = 0; q < n_proc; ++q) {
        if (p != q) plan.corun[p * n_proc + q] = corun_work_factor(p, q);
        any = any || plan.corun[p * n_proc + q] != 1;
      }
    }
    if (!any) {
      plan.corun.clear();  // none: the sub-graphs' times as they are
    } else {
      plan.head_us.assign(count, 0.0);
      plan.layer_us.assign(count, 0.0);
    }
  }
  const bool corun = !plan.corun.empty();
  for (uint32_t u = 0; u < n; ++u) {
    const uint32_t d = sg_of[u];
    const size_t pd = plan.processor[d];
    plan.cost_us[d] += model.layer_us(u, pd, m.levels) * work_factor[pd];
    if (corun) plan.layer_us[d] += model.layer_us(u, pd, m.levels);
    if (dag_.inputs[u] && !plan.reads_input[d]) {
      plan.reads_input[d] = true;
      plan.cost_us[d] += model.input_us(pd);
      if (corun) plan.head_us[d] += model.input_us(pd);
    }
    if (dag_.outputs[u]) plan.writes_output[d] = true;
    for (uint32_t q : dag_.predecessors[u]) {
      const uint32_t s = sg_of[q];
      // One edge per (producing unit, destination sub-graph), as Partition makes one per tensor.
      if (s == d || charged_for[q] == d) continue;
      charged_for[q] = d;
      const size_t ps = plan.processor[s];
      // Switch mode shares the tensor in place between two such backends, where the runtime
      // would (graph::shareable_boundary, UnitDag::shareable): no copy to charge.
      // (A split layer's Concat is then written in place by its parts too; the profile timed it
      // inside one sub-graph, where the backend does the same, so its unit time stays.)
      const bool in_place = m.mode != Mode::kPipeline && in_place_[ps] && in_place_[pd] &&
                            (dag_.shareable.empty() || dag_.shareable[q]);
      // The copies only: a pipeline's hand-off is a delay on the edge (below), not work of
      // either processor.
      if (!in_place) {
        plan.cost_us[s] += ps == pd ? same_send_us_[ps][q] : model.send_us(q, ps, pd, Mode::kSwitch);
        const double receive = ps == pd ? same_receive_us_[pd][q] : model.receive_us(q, ps, pd, Mode::kSwitch);
        plan.cost_us[d] += receive;
        if (corun) plan.head_us[d] += receive;
      }
      if (m.mode != Mode::kPipeline && ps != pd) {
        const double wake_up = switch_edge_us(ps, pd) + switch_edge_mb_us(ps, pd) * output_mb_[q];
        plan.cost_us[d] += wake_up;
        if (corun) plan.head_us[d] += wake_up;
      }
      if (link_of[s] == UINT32_MAX || links[link_of[s]].destination != d) {
        link_of[s] = static_cast<uint32_t>(links.size());
        const double delay = m.mode == Mode::kPipeline ? pipeline_edge_us(ps, pd) : 0.0;
        links.push_back({s, d, false, delay});
        plan.delays = plan.delays || delay > 0;
      }
      if (in_place && ps != pd) links[link_of[s]].shared_across = true;
      if (in_place && m.mode == Mode::kOverlap) shared_edges.push_back({q, d});
    }
  }
  // Both lists by counting: sources grouped by destination (already in order, each group sorted),
  // destinations grouped by source (stable, so ascending).
  plan.source_begin.assign(count + 1, 0);
  plan.out_begin.assign(count + 1, 0);
  for (const Link& l : links) {
    ++plan.source_begin[l.destination + 1];
    ++plan.out_begin[l.source + 1];
  }
  for (size_t i = 0; i < count; ++i) {
    plan.source_begin[i + 1] += plan.source_begin[i];
    plan.out_begin[i + 1] += plan.out_begin[i];
  }
  plan.source_list.resize(links.size());
  plan.source_delay_us.resize(links.size());
  plan.out_list.resize(links.size());
  {
    std::vector<uint32_t> fill(plan.out_begin.begin(), plan.out_begin.end() - 1);
    for (size_t i = 0; i < links.size(); ++i) {
      plan.source_list[i] = links[i].source;  // links are grouped by destination already
      plan.source_delay_us[i] = links[i].delay_us;
      plan.out_list[fill[links[i].source]++] = {links[i].destination, options_.receiver_buffers,
                                                links[i].shared_across, links[i].delay_us};
    }
  }
  for (size_t d = 0; d < count; ++d) {
    // Sorted by source, each source's delay with it.
    const uint32_t b = plan.source_begin[d], e = plan.source_begin[d + 1];
    for (uint32_t i = b + 1; i < e; ++i) {
      for (uint32_t k = i; k > b && plan.source_list[k - 1] > plan.source_list[k]; --k) {
        std::swap(plan.source_list[k - 1], plan.source_list[k]);
        std::swap(plan.source_delay_us[k - 1], plan.source_delay_us[k]);
      }
    }
  }
  if (m.mode == Mode::kOverlap) set_guards(plan, sg_of, shared_edges);
  if (std::none_of(plan.writes_output.begin(), plan.writes_output.end(), [](bool b) { return b; })) {
    plan.writes_output.back() = true;
  }
  // Receiver capacities as core/partition.cpp's receiver_capacities: base x the most edges on a
  // path between the two ends (longest path from each source, in index order: edges point to
  // higher indices). One switch-mode frame never fills a receiver, so only pipelines need them.
  if (capacities) {
    std::vector<int64_t> hops(count);
    for (size_t s = 0; s < count; ++s) {
      if (plan.out_begin[s] == plan.out_begin[s + 1]) continue;
      size_t reach = s;  // highest index reached so far
      std::fill(hops.begin() + static_cast<std::ptrdiff_t>(s), hops.end(), -1);
      hops[s] = 0;
      for (size_t k = s; k <= reach; ++k) {
        if (hops[k] < 0) continue;
        for (const Plan::Out& out : plan.outs(k)) {
          hops[out.destination] = std::max(hops[out.destination], hops[k] + 1);
          reach = std::max<size_t>(reach, out.destination);
        }
      }
      for (uint32_t i = plan.out_begin[s]; i < plan.out_begin[s + 1]; ++i) {
        Plan::Out& out = plan.out_list[i];
        out.capacity = options_.receiver_buffers * std::max(1u, static_cast<uint32_t>(hops[out.destination]));
      }
    }
  }
  plan.busy_us.assign(model.letters().size(), 0.0);
  plan.used.assign(model.letters().size(), false);
  for (size_t s = 0; s < count; ++s) {
    plan.busy_us[plan.processor[s]] += plan.cost_us[s];
    plan.used[plan.processor[s]] = true;
  }
  return plan;
}

// The executor's buffers and guards (core/executor.cpp: plan_shared_tensors, guard_shared_buffers):
// every tensor shared in place is one buffer, except that the convolutions feeding a join (a
// Concat whose inputs are convolution results read by it alone, at least one from another
// sub-graph) write their slices of the Concat's output. Every sub-graph touching a buffer
// guards against those of other processors touching it.
void DagCostModel::set_guards(Plan& plan, const std::vector<uint32_t>& sg_of,
                              const std::vector<std::pair<uint32_t, uint32_t>>& shared_edges) const {
  const auto n = static_cast<uint32_t>(sg_of.size());
  const size_t count = plan.processor.size();
  std::vector<uint32_t> buffer(n);
  for (uint32_t u = 0; u < n; ++u) buffer[u] = u;
  std::vector<bool> shared_out(n, false);
  for (const auto& [unit, destination] : shared_edges) shared_out[unit] = true;
  // Buffer ids: a unit's output (u), or a join inside a unit that is more than the Concat (n + c).
  std::vector<std::vector<uint32_t>> touching(2 * static_cast<size_t>(n));
  auto touch = [&](uint32_t id, uint32_t s) {
    if (std::find(touching[id].begin(), touching[id].end(), s) == touching[id].end()) touching[id].push_back(s);
  };
  for (uint32_t c = 0; c < n; ++c) {
    const std::vector<uint32_t>& inputs = dag_.predecessors[c];
    if (!concat_first_[c] || inputs.size() < 2) continue;
    bool joins = true;
    int slices = 0;
    for (uint32_t p : inputs) {
      if (!conv_last_[p] || sole_successor_[p] != c || buffer[p] != p) {
        joins = false;
      } else if (sg_of[p] != sg_of[c]) {
        joins = joins && shared_out[p];
        ++slices;
      }
    }
    if (!joins || slices == 0) continue;
    const uint32_t joined = concat_only_[c] ? c : n + c;
    for (uint32_t p : inputs) {
      if (sg_of[p] != sg_of[c]) buffer[p] = joined;
    }
    touch(joined, sg_of[c]);
  }
  for (const auto& [unit, destination] : shared_edges) {
    touch(buffer[unit], sg_of[unit]);
    touch(buffer[unit], destination);
  }
  std::vector<std::vector<uint32_t>> guards(count);
  for (const std::vector<uint32_t>& list : touching) {
    for (uint32_t a : list) {
      for (uint32_t b : list) {
        if (plan.processor[a] != plan.processor[b] &&
            std::find(guards[a].begin(), guards[a].end(), b) == guards[a].end()) {
          guards[a].push_back(b);
        }
      }
    }
  }
  plan.guard_begin.assign(count + 1, 0);
  for (size_t s = 0; s < count; ++s) {
    plan.guard_begin[s + 1] = plan.guard_begin[s] + static_cast<uint32_t>(guards[s].size());
    plan.guard_list.insert(plan.guard_list.end(), guards[s].begin(), guards[s].end());
  }
}

std::vector<double> DagCostModel::simulate(const Plan& plan, uint32_t frames, Mode mode, FrameSchedule* first,
                                           std::vector<double>* ends, RunNoise* noise,
                                           const CyclicOrder* cyclic) const {
  const size_t count = plan.processor.size();
  const size_t n_proc = model_->letters().size();
  std::vector<std::vector<uint32_t>> of_processor(n_proc);
  for (uint32_t s = 0; s < count; ++s) of_processor[plan.processor[s]].push_back(s);
  std::vector<uint64_t> next(count, 0);  // frames committed (= the frame it runs next)
  std::vector<uint32_t> running(n_proc, UINT32_MAX);
  std::vector<double> running_end(n_proc, kNever), last_end(n_proc, 0.0);
  std::vector<uint32_t> last_run(n_proc, UINT32_MAX);
  std::vector<double> frame_start(frames, -1.0), frame_end(frames, -1.0);
  std::vector<double> sg_start(count, 0.0), sg_end(count, 0.0);  // of frame 0
  std::vector<uint32_t> waited_for(count, UINT32_MAX);           // frame 0's critical predecessor
  uint64_t completed = 0;
  double now = 0;
  std::vector<size_t> ending;  // processors whose run ends now (reused: no allocation per event)
  std::vector<uint64_t> floor(n_proc, 0);  // overlap: the oldest frame a processor has left
  // Cyclic sequences: per processor, the next entry and its cycle; a processor is done once its
  // cycle passed the last frame plus the largest lag.
  std::vector<size_t> position(n_proc, 0);
  std::vector<uint64_t> cycle(n_proc, 0), cycles(n_proc, 0);
  if (cyclic != nullptr) {
    for (size_t p = 0; p < n_proc; ++p) {
      uint32_t lag = 0;
      for (const CyclicEntry& e : (*cyclic)[p]) lag = std::max(lag, e.lag);
      cycles[p] = (*cyclic)[p].empty() ? 0 : static_cast<uint64_t>(frames) + lag;
    }
  }
  // Edges with a delay (a pipeline's hand-off): when each sub-graph published each frame, and the
  // instants at which a published frame reaches a reader (events of their own).
  std::vector<double> published(plan.delays ? count * frames : 0, 0.0);
  std::vector<double> arrivals;
  // The co-run slowdown (Plan::corun): per processor, the running sub-graph's work done (in
  // profiled us: its head, layers, then sends) at `progress_at`, and the factor on its layers
  // since then.
  const bool corun = !plan.corun.empty();
  std::vector<double> done_us(corun ? n_proc : 0, 0.0), progress_at(done_us), factor(corun ? n_proc : 0, 1.0);
  std::vector<double> busy_frame0(n_proc, 0.0);  // frame 0's run times per processor (schedule)
  // Work done from `progress_at` to `t` at the processor's factor on the layers.
  auto advance = [&](size_t p, double t) {
    const uint32_t s = running[p];
    const double head = plan.head_us[s], layers_end = head + plan.layer_us[s];
    double left = t - progress_at[p], done = done_us[p];
    if (done < head) {
      const double x = std::min(left, head - done);
      done += x;
      left -= x;
    }
    if (left > 0 && done < layers_end) {
      const double wall = (layers_end - done) * factor[p];
      if (left >= wall) {
        done = layers_end;
        left -= wall;
      } else {
        done += left / factor[p];
        left = 0;
      }
    }
    done_us[p] = std::min(plan.cost_us[s], done + left);
    progress_at[p] = t;
  };
  // Where a processor's factor changes, its end from the work left at the new factor (a run
  // alone from start to end: start + cost_us exactly, as without the slowdown).
  auto rerate = [&]() {
    for (size_t p = 0; p < n_proc; ++p) {
      if (running[p] == UINT32_MAX) continue;
      double f = 1;
      for (size_t q = 0; q < n_proc; ++q) {
        if (q != p && running[q] != UINT32_MAX) f = std::max(f, plan.corun[p * n_proc + q]);
      }
      if (f == factor[p]) continue;
      advance(p, now);
      factor[p] = f;
      const uint32_t s = running[p];
      const double head = plan.head_us[s], layers_end = head + plan.layer_us[s];
      const double layers_left = std::max(0.0, layers_end - std::max(done_us[p], head));
      running_end[p] = now + (plan.cost_us[s] - done_us[p]) + (f - 1) * layers_left;
    }
  };

  auto ready = [&](uint32_t s) {
    const uint64_t f = next[s];
    if (f >= frames) return false;
    if (plan.reads_input[s] && mode == Mode::kSwitch && completed < f) return false;
    // Overlap mode as the executor runs it: admission (g enters once g - 2 completed), the
    // processor floor (g runs on a processor once g - 1 has nothing left there) and the buffer
    // guards (g runs once every sub-graph of another processor touching one of its shared
    // buffers, a join's slices included, has finished g - 1; set_guards).
    if (mode == Mode::kOverlap) {
      if (cyclic == nullptr && plan.reads_input[s] && completed + 1 < f) return false;
      if (cyclic == nullptr && floor[plan.processor[s]] < f) return false;
      for (uint32_t t : plan.guards(s)) {
        if (next[t] < f) return false;
      }
    }
    const std::span<const uint32_t> sources = plan.sources(s);
    for (size_t i = 0; i < sources.size(); ++i) {
      const uint32_t src = sources[i];
      if (next[src] <= f) return false;
      if (plan.delays && published[static_cast<size_t>(src) * frames + f] + plan.source_delays(s)[i] > now) return false;
    }
    for (const Plan::Out& out : plan.outs(s)) {
      if (f + 1 > next[out.destination] + out.capacity) return false;
    }
    return true;
  };

  while (true) {
    for (size_t p = 0; p < n_proc; ++p) {
      if (running[p] != UINT32_MAX) continue;
      if (mode == Mode::kOverlap) {
        floor[p] = UINT64_MAX;
        for (uint32_t s : of_processor[p]) floor[p] = std::min(floor[p], next[s]);
      }
      uint32_t pick = UINT32_MAX;
      if (cyclic != nullptr) {
        // The sequence's next entry of a frame that exists, once ready; nothing else.
        const std::vector<CyclicEntry>& sequence = (*cyclic)[p];
        const auto step = [&] {
          if (++position[p] == sequence.size()) {
            position[p] = 0;
            ++cycle[p];
          }
        };
        while (cycle[p] < cycles[p]) {
          const CyclicEntry& e = sequence[position[p]];
          if (cycle[p] >= e.lag && cycle[p] - e.lag < frames) break;
          step();
        }
        if (cycle[p] == cycles[p]) continue;
        const CyclicEntry& e = sequence[position[p]];
        if (next[e.subgraph] != cycle[p] - e.lag) throw std::logic_error("cyclic order: a sub-graph's frames out of order");
        if (!ready(e.subgraph)) continue;
        pick = e.subgraph;
        step();
      } else {
        for (uint32_t s : of_processor[p]) {
          if (ready(s) && (pick == UINT32_MAX || next[s] < next[pick])) {
            pick = s;
            if (frames == 1) break;  // every ready one runs frame 0: the lowest index wins
          }
        }
      }
      if (pick == UINT32_MAX) continue;
      const uint64_t f = next[pick];
      if (plan.reads_input[pick] && frame_start[f] < 0) frame_start[f] = now;
      if (f == 0 && first != nullptr) {
        sg_start[pick] = now;
        // What it waited for: the input that arrived last, unless the processor was busy longer.
        uint32_t cause = UINT32_MAX;
        double at = -1;
        for (uint32_t src : plan.sources(pick)) {
          if (sg_end[src] > at) {
            at = sg_end[src];
            cause = src;
          }
        }
        if (last_run[p] != UINT32_MAX && last_end[p] > at && next[last_run[p]] == 1 &&
            plan.processor[last_run[p]] == p) {
          cause = last_run[p];
        }
        waited_for[pick] = cause;
      }
      running[p] = pick;
      // (predict_run draws noise in pipeline mode only, where the co-run slowdown is not simulated.)
      running_end[p] = now + (noise != nullptr ? noise->run_us(pick, plan.cost_us[pick]) : plan.cost_us[pick]);
      if (corun) {
        done_us[p] = 0;
        progress_at[p] = now;
        factor[p] = 1;
      }
    }
    if (corun) rerate();
    double t = kNever;
    for (size_t p = 0; p < n_proc; ++p) t = std::min(t, running_end[p]);
    std::erase_if(arrivals, [&](double at) { return at <= now; });
    for (double at : arrivals) t = std::min(t, at);
    if (t == kNever) break;
    now = t;
    // Commits at the same instant in sub-graph order, as the lowest index would take the lock first.
    ending.clear();
    for (size_t p = 0; p < n_proc; ++p) {
      if (running_end[p] == t) ending.push_back(p);
    }
    std::sort(ending.begin(), ending.end(), [&](size_t a, size_t b) { return running[a] < running[b]; });
    for (size_t p : ending) {
      const uint32_t s = running[p];
      if (next[s] == 0) {
        sg_end[s] = now;
        if (first != nullptr) busy_frame0[p] += now - sg_start[s];
      }
      if (plan.delays) {
        published[static_cast<size_t>(s) * frames + next[s]] = now;
        for (const Plan::Out& out : plan.outs(s)) {
          if (out.delay_us > 0) arrivals.push_back(now + out.delay_us);
        }
      }
      ++next[s];
      last_run[p] = s;
      last_end[p] = now;
      running[p] = UINT32_MAX;
      running_end[p] = kNever;
      if (plan.writes_output[s]) {
        uint64_t done = frames;
        for (uint32_t o = 0; o < count; ++o) {
          if (plan.writes_output[o]) done = std::min<uint64_t>(done, next[o]);
        }
        for (; completed < done; ++completed) frame_end[completed] = now;
      }
    }
  }
  if (completed < frames) {
    if (cyclic != nullptr) throw InputError("cyclic order: the sequences deadlock (an entry waits for one that comes after it)");
    throw std::logic_error("DAG cost model: the simulated executor stalled");
  }

  std::vector<double> latency(frames);
  for (uint32_t f = 0; f < frames; ++f) latency[f] = frame_end[f] - std::max(0.0, frame_start[f]);
  if (ends != nullptr) *ends = frame_end;
  if (first != nullptr) {
    FrameSchedule& fs = *first;
    const double t0 = std::max(0.0, frame_start[0]);
    fs.latency_us = latency[0];
    uint32_t last = UINT32_MAX;
    for (uint32_t s = 0; s < count; ++s) {
      fs.subgraphs.push_back({s, model_->letters()[plan.processor[s]], plan.first[s], plan.last[s],
                              sg_start[s] - t0, sg_end[s] - t0});
      if (plan.writes_output[s] && (last == UINT32_MAX || sg_end[s] >= sg_end[last])) last = s;
    }
    for (uint32_t s = last; s != UINT32_MAX; s = waited_for[s]) fs.critical_path.push_back(s);
    std::reverse(fs.critical_path.begin(), fs.critical_path.end());
    for (size_t p = 0; p < n_proc; ++p) {
      if (!plan.used[p]) continue;
      fs.processors += model_->letters()[p];
      // Stretched by the co-run slowdown where it applies: the simulated run times.
      const double busy = corun ? busy_frame0[p] : plan.busy_us[p];
      fs.busy_us.push_back(busy);
      fs.idle_us.push_back(std::max(0.0, fs.latency_us - busy));
    }
  }
  return latency;
}

Prediction DagCostModel::predict(const Mapping& m) const {
  return predict(build(m, m.mode != Mode::kSwitch), m, nullptr);
}

double DagCostModel::layer_sigma_us(uint32_t u, size_t p, const std::vector<int>& levels) const {
  const std::vector<double>& rel = relative_mad_.at(p).at(static_cast<size_t>(model_->level_of(p, levels)));
  return kSigmaPerMad * rel.at(u) * model_->layer_us(u, p, levels);
}

Prediction DagCostModel::predict_run(const Mapping& m, uint32_t draws, uint64_t seed) const {
  const Plan plan = build(m, m.mode != Mode::kSwitch);
  RunNoise noise;
  noise.sigma_us.assign(plan.processor.size(), 0.0);
  noise.spread_us.assign(plan.processor.size(), 0.0);
  bool any = false;
  // Pipeline mode only: one switch frame queues nothing (the draws moved the saved runs' switch
  // latency errors by 0-0.4 points either way), and overlap mode's gate keeps two frames in flight.
  for (size_t s = 0; s < plan.processor.size() && m.mode == Mode::kPipeline; ++s) {
    const size_t p = plan.processor[s];
    for (uint32_t u = plan.first[s]; u <= plan.last[s]; ++u) {
      noise.sigma_us[s] += layer_sigma_us(u, p, m.levels) * pipeline_work_factor(p);
    }
    noise.spread_us[s] = std::min(kExecutorRunSpreadUs, pipeline_subgraph_us(p));
    any = any || noise.sigma_us[s] > 0;
  }
  if (!any || draws == 0) return predict(plan, m, nullptr);
  noise.random.seed(seed);
  noise.executor_random.seed(~seed);
  std::vector<double> latency_ms, period_us;
  Prediction out;
  for (uint32_t k = 0; k < draws; ++k) {
    out = predict(plan, m, &noise);
    latency_ms.push_back(out.latency_ms);
    period_us.push_back(out.period_us);
  }
  out.latency_ms = median(latency_ms);
  out.period_us = median(period_us);
  out.throughput_fps = out.period_us > 0 ? 1e6 / out.period_us : std::numeric_limits<double>::infinity();
  out.energy_mj_per_frame = model_->energy_mj(plan.busy_us, plan.used, out.period_us, m.levels);
  return out;
}

Prediction DagCostModel::predict(const Plan& plan, const Mapping& m, RunNoise* noise) const {
  Prediction out;
  const bool steady = options_.pipeline_frames == 0;
  const uint32_t frames = m.mode == Mode::kSwitch ? 1 : steady ? kSteadyStateFrames : options_.pipeline_frames;
  std::vector<double> ends;
  const std::vector<double> latency = simulate(plan, frames, m.mode, nullptr, &ends, noise);
  out.latency_ms = median(latency) / 1000.0;
  out.resources.resize(model_->resource_count());
  for (size_t p = 0; p < model_->letters().size(); ++p) {
    out.resources[model_->resource_of(p)].processors += model_->letters()[p];
    out.resources[model_->resource_of(p)].busy_us += plan.busy_us[p];
  }
  out.period_us = latency[0];
  if (m.mode == Mode::kPipeline && !steady) {
    // As the run is measured (profiler::summarize): completions after the first over the time
    // from the first to the last. Over a short run this is above the busiest resource's rate:
    // the first frame ends late (its processors ran later frames' early sub-graphs meanwhile)
    // and the later ones follow closely.
    out.period_us = (ends[frames - 1] - ends[0]) / static_cast<double>(frames - 1);
  }
  if (m.mode == Mode::kPipeline && steady) {
    // The steady state: neither the first frames (ending late) nor the last (the early stages
    // have no more frames to run, so the late ones speed up): the middle half.
    const size_t from = frames / 4, to = 3 * frames / 4;
    out.period_us = (ends[to] - ends[from]) / static_cast<double>(to - from);
  }
  if (m.mode == Mode::kOverlap) {
    // Frames leave in pairs or unevenly (the gate leaves idle time that the busiest resource
    // cannot see): the mean period over the steady frames, after the first quarter.
    const size_t from = frames / 4, to = frames - 1;
    out.period_us = (ends[to] - ends[from]) / static_cast<double>(to - from);
  }
  out.throughput_fps = out.period_us > 0 ? 1e6 / out.period_us : std::numeric_limits<double>::infinity();
  out.energy_mj_per_frame = model_->energy_mj(plan.busy_us, plan.used, out.period_us, m.levels);
  return out;
}

std::vector<SubGraphCost> DagCostModel::subgraph_costs(const Mapping& mapping) const {
  Mapping m = mapping;
  m.mode = Mode::kOverlap;
  const Plan plan = build(m, false);
  const size_t n_proc = model_->letters().size();
  std::vector<SubGraphCost> out(plan.processor.size());
  for (size_t s = 0; s < out.size(); ++s) {
    SubGraphCost& c = out[s];
    c.processor = plan.processor[s];
    c.first_layer = plan.first[s];
    c.last_layer = plan.last[s];
    c.cost_us = c.corun_us = plan.cost_us[s];
    if (!plan.corun.empty()) {
      double f = 1;
      for (size_t q = 0; q < n_proc; ++q) {
        if (q != c.processor) f = std::max(f, plan.corun[c.processor * n_proc + q]);
      }
      c.corun_us += (f - 1) * plan.layer_us[s];
    }
    c.sources.assign(plan.sources(s).begin(), plan.sources(s).end());
    c.guards.assign(plan.guards(s).begin(), plan.guards(s).end());
  }
  return out;
}

Prediction DagCostModel::predict_cyclic(const Mapping& mapping, const CyclicOrder& order) const {
  Mapping m = mapping;
  m.mode = Mode::kOverlap;
  const Plan plan = build(m, true);
  const size_t n_proc = model_->letters().size();
  if (order.size() != n_proc) {
    throw InputError("cyclic order: " + std::to_string(order.size()) + " sequences for " + std::to_string(n_proc) +
                     " processors");
  }
  std::vector<int> seen(plan.processor.size(), 0);
  for (size_t p = 0; p < n_proc; ++p) {
    for (const CyclicEntry& e : order[p]) {
      if (e.subgraph >= seen.size() || plan.processor[e.subgraph] != p) {
        throw InputError("cyclic order: processor " + std::string(1, model_->letters()[p]) + "'s sequence names sub-graph " +
                         std::to_string(e.subgraph) + ", which is not one of its sub-graphs");
      }
      ++seen[e.subgraph];
    }
  }
  for (size_t s = 0; s < seen.size(); ++s) {
    if (seen[s] != 1) {
      throw InputError("cyclic order: sub-graph " + std::to_string(s) + " appears " + std::to_string(seen[s]) +
                       " times in its processor's sequence (once is needed)");
    }
  }
  const uint32_t frames = options_.pipeline_frames == 0 ? kSteadyStateFrames : options_.pipeline_frames;
  std::vector<double> ends;
  const std::vector<double> latency = simulate(plan, frames, Mode::kOverlap, nullptr, &ends, nullptr, &order);
  Prediction out;
  out.latency_ms = median(latency) / 1000.0;
  out.resources.resize(model_->resource_count());
  for (size_t p = 0; p < n_proc; ++p) {
    out.resources[model_->resource_of(p)].processors += model_->letters()[p];
    out.resources[model_->resource_of(p)].busy_us += plan.busy_us[p];
  }
  // The middle half, as a pipeline's steady state: the first frames run in a prologue (some
  // entries of the sequences have no frame yet), the last in an epilogue (no next frame to wait for).
  const size_t from = frames / 4, to = 3 * frames / 4;
  out.period_us = to > from ? (ends[to] - ends[from]) / static_cast<double>(to - from) : latency[0];
  out.throughput_fps = out.period_us > 0 ? 1e6 / out.period_us : std::numeric_limits<double>::infinity();
  out.energy_mj_per_frame = model_->energy_mj(plan.busy_us, plan.used, out.period_us, m.levels);
  return out;
}

FrameSchedule DagCostModel::schedule(const Mapping& mapping) const {
  Mapping m = mapping;
  m.mode = Mode::kSwitch;
  const Plan plan = build(m, false);
  FrameSchedule fs;
  simulate(plan, 1, Mode::kSwitch, &fs);
  return fs;
}

double DagCostModel::switch_latency_us(const Mapping& mapping) const {
  Mapping m = mapping;
  m.mode = Mode::kSwitch;
  return simulate(build(m, false), 1, Mode::kSwitch, nullptr)[0];
}

double DagCostModel::pipeline_period_us(const Mapping& mapping) const {
  Mapping m = mapping;
  m.mode = Mode::kPipeline;
  const Plan plan = build(m, false);
  std::vector<double> busy(model_->resource_count(), 0.0);
  for (size_t p = 0; p < plan.busy_us.size(); ++p) busy[model_->resource_of(p)] += plan.busy_us[p];
  return busy.empty() ? 0.0 : *std::max_element(busy.begin(), busy.end());
}

double DagCostModel::latency_lower_bound_us(const std::string& order, const std::vector<int>& levels) const {
  const CostModel& model = *model_;
  const uint32_t n = model.layer_count();
  std::vector<double> path(n, 0.0), per_processor(model.letters().size(), 0.0);
  double bound = 0;
  for (uint32_t u = 0; u < n; ++u) {
    double w;
    const size_t placed = u < order.size() ? model.index_of(order[u]) : model.letters().size();
    if (placed < model.letters().size()) {
      w = model.layer_us(u, placed, levels);
    } else {
      w = kNever;
      for (size_t p = 0; p < model.letters().size(); ++p) w = std::min(w, model.layer_us(u, p, levels));
    }
    if (!feeds_output_[u]) continue;
    if (placed < model.letters().size()) per_processor[placed] += w;
    double before = 0;
    for (uint32_t q : dag_.predecessors[u]) before = std::max(before, path[q]);
    path[u] = before + w;
    bound = std::max(bound, path[u]);
  }
  for (double busy : per_processor) bound = std::max(bound, busy);
  return bound;
}

double DagCostModel::period_lower_bound_us(const std::string& order, const std::vector<int>& levels,
                                           Mode mode) const {
  if (mode == Mode::kSwitch) return latency_lower_bound_us(order, levels);
  const CostModel& model = *model_;
  std::vector<double> busy(model.resource_count(), 0.0);
  for (uint32_t u = 0; u < order.size() && u < model.layer_count(); ++u) {
    const size_t p = model.index_of(order[u]);
    if (p >= model.letters().size()) continue;
    busy[model.resource_of(p)] += model.layer_us(u, p, levels) * (mode == Mode::kPipeline ? pipeline_work_factor(p) : 1.0);
  }
  return busy.empty() ? 0.0 : *std::max_element(busy.begin(), busy.end());
}

}  // namespace co_up::planner
