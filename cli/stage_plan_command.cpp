#include "cli/stage_plan_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "cli/run_inference.h"
#include "cli/standard_streams.h"
#include "core/error.h"
#include "core/message_text.h"
#include "core/network.h"
#include "graph/npy.h"
#include "graph/stage_plan.h"
#include "planner/layer_profile.h"
#include "planner/relative_error.h"
#include "planner/stage_overheads.h"

namespace co_up::cli {
namespace {

planner::ExitScores read_exit_scores(const Options& o) {
  if (o.exit_logits.empty() || o.exit_labels.empty()) {
    throw InputError("planning a stage plan needs --exit-logits=FILE.npy (every exit's logits on a labelled "
                     "validation set, [frames, exits, classes]) and --exit-labels=FILE.npy (their labels)");
  }
  const graph::NpyArray logits = graph::read_npy(o.exit_logits);
  const graph::NpyArray labels = graph::read_npy(o.exit_labels);
  if (logits.shape.size() != 3 || logits.shape[0] < 1 || logits.shape[1] < 1 || logits.shape[2] < 2) {
    throw InputError("--exit-logits='" + o.exit_logits + "' must have shape [frames, exits, classes]");
  }
  if (labels.shape.size() != 1 || labels.shape[0] != logits.shape[0]) {
    throw InputError("--exit-labels='" + o.exit_labels + "' must hold one label per frame of --exit-logits (" +
                     std::to_string(logits.shape[0]) + ")");
  }
  planner::ExitScores s;
  s.frames = static_cast<size_t>(logits.shape[0]);
  s.exits = static_cast<size_t>(logits.shape[1]);
  s.classes = static_cast<size_t>(logits.shape[2]);
  s.logits = logits.data;
  for (float v : labels.data) {
    if (v < 0 || v >= static_cast<float>(s.classes) || v != std::floor(v)) {
      throw InputError("--exit-labels='" + o.exit_labels + "' holds " + format_number("%g", v) + ", not a class index (0.." +
                       std::to_string(s.classes - 1) + ")");
    }
    s.labels.push_back(static_cast<int64_t>(v));
  }
  return s;
}

// Without measured power: the platform's power model P = alpha V^2 f + beta V at `level` (0: as
// found, taken as the highest level, as the cost model does); -1 when there is none.
double modelled_busy_w(const planner::LayerProfile& profile, char letter, int level) {
  for (const planner::ProfileProcessor& p : profile.processors) {
    if (p.letter != letter || !p.power_model || p.levels_khz.empty()) continue;
    if (level < 0 || level > static_cast<int>(p.levels_khz.size())) return -1;
    const size_t at = level == 0 ? p.levels_khz.size() - 1 : static_cast<size_t>(level - 1);
    const double ghz = static_cast<double>(p.levels_khz[at]) / 1e6;
    const double volts = at < p.voltages_mv.size() ? p.voltages_mv[at] / 1000.0 : 1.0;
    return p.power_model->alpha * volts * volts * ghz + p.power_model->beta * volts;
  }
  return -1;
}

// The per-exit thresholds as --exit lists them: "0.85,off" (a threshold above 1 never stops).
std::string thresholds_text(const planner::StageCandidate& c) {
  std::string list;
  for (double t : c.thresholds) {
    if (!list.empty()) list += ',';
    list += t <= 1 ? format_number("%g", t) : std::string("off");
  }
  return list;
}

std::string objective_of(const Options& o) {
  const std::string objective = o.objective.empty() ? "pareto" : o.objective;
  if (objective != "latency" && objective != "energy" && objective != "accuracy" && objective != "pareto") {
    throw InputError("--objective='" + objective + "' with a stage plan must be latency, energy, accuracy or pareto");
  }
  return objective;
}

std::string numbers(const planner::StageCandidate& c) {
  std::string s = format_number("%9.3f ms", c.latency_ms);
  s += c.energy_mj >= 0 ? format_number("  %9.3f mJ/frame", c.energy_mj) : std::string("  energy n/a");
  s += format_number("  accuracy %5.2f %%", 100 * c.accuracy) + "  exits";
  for (double f : c.exit_fraction) s += format_number(" %.0f%%", 100 * f);
  return s;
}

void print_candidate(std::ostream& out, const Options& o, const std::string& label, const planner::StageCandidate& c) {
  out << label << numbers(c) << "  [" << c.source << "]\n      " << stage_command_line(o, c) << "\n";
}

}  // namespace

std::vector<std::string> stage_command_args(const Options& o, const planner::StageCandidate& c) {
  std::vector<std::string> args = {"--model=" + o.model,
                                   o.stages.empty() ? "--stage-plan=" + o.stage_plan : "--stages=" + o.stages,
                                   "--order=" + c.order,
                                   o.stage_timing == "runtime" ? "--mode=switch" : "--mode=pipeline"};
  const bool early = std::any_of(c.thresholds.begin(), c.thresholds.end(), [](double t) { return t <= 1; });
  if (early) args.push_back("--exit=softmax-max>=" + thresholds_text(c));
  // --frequency takes one level per layer (stage) from 1; a GPU's or NPU's token also needs its
  // host's level, which a stage candidate does not choose: then the levels stay as found.
  const bool settable = std::all_of(c.levels.begin(), c.levels.end(), [](int l) { return l > 0; }) &&
                        c.order.find_first_of("GN") == std::string::npos && !c.levels.empty();
  if (settable) {
    std::string levels;
    for (int l : c.levels) levels += (levels.empty() ? "" : "-") + std::to_string(l);
    args.push_back("--frequency=" + levels);
  }
  return args;
}

std::string stage_command_line(const Options& o, const planner::StageCandidate& c) {
  std::string s = "co_up";
  for (const std::string& a : stage_command_args(o, c)) s.append(" ").append(shell_quote(a));
  std::string levels;
  for (size_t i = 0; i < c.order.size(); ++i) {
    if (c.order.find(c.order[i]) != i) continue;
    levels += std::string(levels.empty() ? "" : " ") + c.order[i] + "=" + std::to_string(c.levels[i]);
  }
  return s + "   # DVFS levels " + levels;
}

namespace {

// std::cout goes to `sink` while it lives: the run command's report is not --verify's output.
class CaptureStdout {
 public:
  explicit CaptureStdout(std::ostream& sink) : previous_(std::cout.rdbuf(sink.rdbuf())) {}
  ~CaptureStdout() { std::cout.rdbuf(previous_); }
  CaptureStdout(const CaptureStdout&) = delete;
  CaptureStdout& operator=(const CaptureStdout&) = delete;

 private:
  std::streambuf* previous_;
};

// A profile file of one verify run, removed with it.
class TemporaryFile {
 public:
  explicit TemporaryFile(std::filesystem::path path) : path_(std::move(path)) {}
  ~TemporaryFile() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

VerifiedStageCandidate measure_stage_candidate(const Options& o, const planner::StageCandidate& c, size_t index,
                                               StopSignal& stop) {
  const TemporaryFile profile(std::filesystem::temp_directory_path() /
                              ("co_up_stage_verify_" + std::to_string(::getpid()) + "_" + std::to_string(index) +
                               ".json"));
  std::vector<std::string> args = stage_command_args(o, c);
  args.push_back("--input=" + o.input);
  if (!o.input_scale.empty()) args.push_back("--input-scale=" + o.input_scale);
  args.push_back("--labels=" + o.labels);
  args.push_back("--n=" + std::to_string(o.frames));
  args.push_back("--profile-out=" + profile.path().string());
  if (!o.platform.empty()) args.push_back("--platform=" + o.platform);
  if (!o.plugins.empty()) args.push_back("--plugins=" + o.plugins);
  if (o.sysfs_root != "/sys") args.push_back("--sysfs-root=" + o.sysfs_root);
  if (!o.state_dir.empty()) args.push_back("--state-dir=" + o.state_dir);
  if (std::any_of(args.begin(), args.end(), [](const std::string& a) { return a.rfind("--frequency=", 0) == 0; })) {
    args.push_back("--dvfs=best-effort");  // where the platform cannot set levels, measure as found
  }
  VerifiedStageCandidate v;
  try {
    const Options run_options = parse_options(args);
    std::ostringstream report;
    int status = 0;
    {
      const CaptureStdout capture(report);
      status = run_inference(run_options, stop);
    }
    if (status != 0) throw RuntimeError("the run ended with status " + std::to_string(status));
    std::ifstream in(profile.path());
    const nlohmann::json j = nlohmann::json::parse(in);
    const uint64_t frames = j.at("frames_completed").get<uint64_t>();
    v.latency_ms = j.at("summary").at("latency_mean_ms").get<double>();
    const nlohmann::json& exits = j.at("exits");
    v.accuracy = exits.at("accuracy").get<double>();
    for (const nlohmann::json& e : exits.at("exits")) {
      const uint64_t n = e.at("frames").get<uint64_t>();
      v.exit_fraction.push_back(frames > 0 ? static_cast<double>(n) / static_cast<double>(frames) : 0.0);
      v.exit_frames.push_back(n);
      v.exit_latency_ms.push_back(n > 0 ? e.at("latency_mean_ms").get<double>() : 0.0);
    }
  } catch (const std::exception& e) {
    v = VerifiedStageCandidate{};
    v.failure = e.what();
  }
  return v;
}

void require_labelled_set(const Options& o) {
  if (o.input.empty() || o.labels.empty()) {
    throw InputError("--verify with a stage plan runs the front on a labelled test set: give --input=TEST.npy "
                     "(with --input-scale=1/255 for 8-bit images) and --labels=TEST_LABELS.npy");
  }
}

std::string shares(const std::vector<double>& fractions) {
  std::string s;
  for (double f : fractions) s += format_number(" %3.0f%%", 100 * f);
  return s;
}

// The runtime model's fit orders: --fit-orders, or the rotations of the profile's first m letters
// and every stage on the first (for 3 stages B L G: BLG, LGB, GBL, whose boundaries determine each
// of B, L and G, and BBB, which determines B's next-stage cost; the other orders are held out).
std::vector<std::string> fit_orders(const Options& o, const std::string& letters, size_t m) {
  std::vector<std::string> orders;
  if (!o.fit_orders.empty()) {
    std::stringstream list(o.fit_orders);
    for (std::string order; std::getline(list, order, ',');) {
      if (order.size() != m || order.find_first_not_of(letters) != std::string::npos) {
        throw InputError("--fit-orders: '" + order + "' must give each of the " + std::to_string(m) +
                         " stages a processor of the profile (" + letters + ")");
      }
      orders.push_back(order);
    }
    return orders;
  }
  const std::string base = letters.substr(0, m);
  for (size_t r = 0; r < m; ++r) orders.push_back(base.substr(r) + base.substr(0, r));
  if (m > 1) orders.push_back(std::string(m, base[0]));
  return orders;
}

// The fit runs leave every exit open at this softmax maximum, so that each exit takes frames.
constexpr double kFitThreshold = 0.9;

// Per exit of candidate c: the stages' own profiled compute up to it, per processor letter (the
// runtime model with every other letter's compute scaled to 0, less the model's transfers).
std::vector<std::map<char, double>> compute_by_processor(const planner::StageSearchInput& compute_only,
                                                         const planner::StageCandidate& c) {
  planner::StageSearchInput none = compute_only;
  none.runtime = planner::StageOverheads{};
  for (char p : c.order) none.runtime->compute_scale[p] = 0.0;
  const std::vector<double> transfers = planner::candidate_exit_latency(none, c);
  std::vector<std::map<char, double>> out(transfers.size());
  for (char p : std::set<char>(c.order.begin(), c.order.end())) {
    planner::StageSearchInput one = none;
    one.runtime->compute_scale[p] = 1.0;
    const std::vector<double> with_p = planner::candidate_exit_latency(one, c);
    for (size_t k = 0; k < out.size(); ++k) out[k][p] = std::max(0.0, with_p[k] - transfers[k]);
  }
  return out;
}

// Runs the fit orders through the runtime, one frame at a time (switch mode), each processor at
// its first profiled level, and fits the runtime model's dispatch and hand-off costs to the
// measured per-exit latencies.
planner::StageOverheads fit_runtime_model(const Options& o, const planner::StageSearchInput& in,
                                          const std::vector<std::string>& orders, StopSignal& stop, std::ostream& out) {
  const size_t m = in.reuse.size();
  std::vector<planner::OverheadSample> samples;
  // What the fit subtracts from each measurement is the runtime model's own compute and
  // transfers (its stages one after another), not Eq. 8's concurrent stages.
  planner::StageSearchInput compute_only = in;
  compute_only.runtime = planner::StageOverheads{};
  out << "runtime model: dispatch and boundary costs fitted to " << o.frames << " frames of " << o.input
      << " per order, switch mode, --exit=softmax-max>=" << format_number("%g", kFitThreshold) << "\n";
  out << "  order  exit  frames  compute ms  measured ms\n";
  for (size_t r = 0; r < orders.size(); ++r) {
    planner::StageCandidate c;
    c.order = orders[r];
    for (char l : c.order) {
      int level = -1;
      for (const planner::ProcessorOption& p : in.options) {
        if (p.letter == l && (level < 0 || p.level == 0)) level = p.level;
      }
      if (level < 0) throw InputError(std::string("--fit-orders: the profile has no times for processor ") + l);
      c.levels.push_back(level);
    }
    c.thresholds.assign(m - 1, kFitThreshold);
    const VerifiedStageCandidate v = measure_stage_candidate(o, c, 1000 + r, stop);
    if (!v.failure.empty()) throw RuntimeError("fitting the runtime stage model: order " + c.order + " failed: " + v.failure);
    const std::vector<double> compute = planner::candidate_exit_latency(compute_only, c);
    // With --profiled-compute the samples carry no compute per processor: no scale is fitted.
    const std::vector<std::map<char, double>> by_processor =
        o.profiled_compute ? std::vector<std::map<char, double>>(m) : compute_by_processor(compute_only, c);
    for (size_t k = 0; k < m && k < v.exit_frames.size(); ++k) {
      out << "  " << c.order << format_number("  %4.0f", static_cast<double>(k))
          << format_number("  %6.0f", static_cast<double>(v.exit_frames[k])) << format_number("  %10.3f", compute[k])
          << (v.exit_frames[k] > 0 ? format_number("  %11.3f", v.exit_latency_ms[k]) : std::string("            -"))
          << "\n";
      if (v.exit_frames[k] == 0) continue;
      samples.push_back({c.order, k, v.exit_latency_ms[k], compute[k], static_cast<double>(v.exit_frames[k]),
                         by_processor[k]});
    }
    if (stop.stopped()) break;
  }
  const planner::StageOverheads fit = planner::fit_stage_overheads(samples);
  out << "  fitted (ms): run a sub-graph on";
  for (const auto& [p, ms] : fit.run_ms) out << " " << p << format_number(" %.3f", ms);
  out << "; a boundary to";
  for (const auto& [p, ms] : fit.boundary_ms) out << " " << p << format_number(" %.3f", ms);
  if (!fit.next_stage_ms.empty()) out << "; the next stage on the same";
  for (const auto& [p, ms] : fit.next_stage_ms) out << " " << p << format_number(" %.3f", ms);
  if (!fit.compute_scale.empty()) out << "; profiled compute x";
  for (const auto& [p, x] : fit.compute_scale) out << " " << p << format_number(" %.3f", x);
  out << "\n";
  for (const auto& [p, x] : fit.unbounded_compute_scale) {
    out << "  " << p << "'s compute scale fitted at" << format_number(" %.3f", x) << ", above"
        << format_number(" %g", planner::kMaxComputeScale) << ": the fit runs on " << p
        << " were slower than the profile by more than the same operators back to back explain (other load, "
           "a lower DVFS level?); held at" << format_number(" %g", planner::kMaxComputeScale)
        << " and the other costs refitted; profile and fit on a quiet host, or --profiled-compute\n";
  }
  out << "\n";
  out.flush();
  return fit;
}

// The prediction error of the verified points, separately for points whose order was one of the
// fit orders and for the others (held out: their hand-offs and dispatch were not fitted on them),
// then for the plan's own points (the first plan_points; the baselines after them left out).
void print_holdout_error(std::ostream& out, const std::vector<planner::StageCandidate>& candidates,
                         const std::vector<VerifiedStageCandidate>& verified, const std::vector<std::string>& fitted,
                         size_t plan_points) {
  struct Sum {
    double total = 0, worst = 0;
    std::string rows;
    size_t n = 0;
    void add(double e, size_t row) {
      total += e;
      worst = std::max(worst, e);
      rows += (rows.empty() ? "" : ",") + std::to_string(row);
      ++n;
    }
  } held_out, fit, plan;
  for (size_t i = 0; i < verified.size() && i < candidates.size(); ++i) {
    if (!verified[i].failure.empty()) continue;
    const double e = std::fabs(planner::relative_error(candidates[i].latency_ms, verified[i].latency_ms));
    if (std::isnan(e)) continue;  // nothing measured: no error to count
    Sum& s = std::find(fitted.begin(), fitted.end(), candidates[i].order) == fitted.end() ? held_out : fit;
    s.add(e, i + 1);
    if (i < plan_points) plan.add(e, i + 1);
  }
  const auto line = [&](const char* what, const Sum& s) {
    out << "  " << what;
    if (s.n == 0) {
      out << " none\n";
      return;
    }
    out << format_number(" mean |error| %.1f %%", 100 * s.total / static_cast<double>(s.n))
        << format_number(", max %.1f %%", 100 * s.worst) << " over " << s.n << " point" << (s.n == 1 ? "" : "s")
        << " (#" << s.rows << ")\n";
  };
  out << "latency prediction error of the runtime model:\n";
  line("held out (order not among the fit orders):", held_out);
  line("fit orders:", fit);
  line("the plan's points (baselines left out):", plan);
  out.flush();
}

}  // namespace

std::vector<VerifiedStageCandidate> verify_stage_candidates(const Options& o,
                                                            const std::vector<planner::StageCandidate>& candidates,
                                                            StopSignal& stop, std::ostream& out) {
  require_labelled_set(o);
  out << "\nverify: each point through the runtime on " << o.frames << " frames of " << o.input << " (labels "
      << o.labels << "), one after another; predicted from the validation exits, measured mean latency per frame\n";
  out << "  #   order  exit thresholds  predicted ms  measured ms  error    predicted acc  measured acc  measured exits\n";
  std::vector<VerifiedStageCandidate> verified;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const planner::StageCandidate& c = candidates[i];
    VerifiedStageCandidate v = measure_stage_candidate(o, c, i, stop);
    const std::string thresholds = thresholds_text(c);
    const auto padded = [](std::string s, size_t width) { return s.size() < width ? s + std::string(width - s.size(), ' ') : s; };
    out << format_number("%3.0f", static_cast<double>(i + 1)) << "   " << padded(c.order, 7) << padded(thresholds, 17)
        << format_number("%12.3f", c.latency_ms);
    if (v.failure.empty()) {
      out << format_number("  %11.3f", v.latency_ms)
          << format_number("  %+6.1f%%", v.latency_ms > 0 ? 100 * (c.latency_ms - v.latency_ms) / v.latency_ms : 0.0)
          << format_number("  %11.2f %%", 100 * c.accuracy) << format_number("  %10.2f %%", 100 * v.accuracy) << " "
          << shares(v.exit_fraction) << (c.source == "nsga2" ? "" : "  [" + c.source + "]") << "\n";
    } else {
      out << "  failed: " << one_line(v.failure) << "\n";
    }
    verified.push_back(std::move(v));
    if (stop.stopped()) break;
  }
  out.flush();
  return verified;
}

int run_stage_plan_command(const Options& o, StopSignal& stop) {
  if (o.model.empty()) throw InputError("a stage plan needs --model=FILE.onnx (the multi-exit model it describes)");
  if (o.profile_file.empty()) {
    throw InputError("co_up plan needs --profile=FILE (a layer profile of the model with --units=ops, from co_up profile)");
  }
  if (!o.stages.empty() && !o.stage_plan.empty()) throw InputError("--stages and --stage-plan both given; use one");
  const std::string objective = objective_of(o);
  if (o.verify) require_labelled_set(o);  // before the search, not after it
  const std::string where = o.stages.empty() ? "stage plan '" + o.stage_plan + "'" : "--stages";
  const graph::StagePlan plan =
      o.stages.empty() ? graph::read_stage_plan_file(o.stage_plan) : graph::parse_stage_plan(o.stages);
  const planner::LayerProfile profile = planner::read_layer_profile(o.profile_file);
  NetworkSpec spec;
  spec.model = o.model;
  spec.units = "ops";
  spec.input_shape = o.input_shape;
  const graph::Graph g = build_network(spec);
  if (profile.network.units != "ops") {
    throw InputError("profile '" + o.profile_file + "' was made with --units=" + profile.network.units +
                     "; a stage plan needs per-op times: co_up profile --model=" + o.model + " --units=ops");
  }
  planner::check_profile_matches(profile, "", o.model, "ops", static_cast<uint32_t>(g.layer_count()));
  const graph::StageStructure stages = graph::find_stages(g, plan, where);

  planner::StageSearchInput in;
  in.reuse = plan.reuse;
  in.seed = o.seed;
  in.whole_stages = o.stage_timing == "stages";
  in.scores = read_exit_scores(o);
  for (const planner::LayerTimes& lt : profile.layer_times) {
    planner::ProcessorOption option;
    option.letter = lt.processor;
    option.level = lt.level;
    const planner::PowerPoint* power = profile.find_power(lt.processor, lt.level);
    option.power_w = power != nullptr ? power->busy_w : modelled_busy_w(profile, lt.processor, lt.level);
    bool runs_all = true;
    for (const auto& row : stages.compute) {
      std::vector<double> tau;
      for (graph::NodeId id : row) {
        const double us = lt.median_us.at(g.node(id).layer);
        runs_all = runs_all && std::isfinite(us);
        tau.push_back(us / 1000.0);
      }
      option.tau_ms.push_back(tau);
    }
    if (runs_all) in.options.push_back(option);  // a processor that declines a layer cannot host a stage
  }
  for (const planner::TransferTimes& tr : profile.transfers) {
    std::vector<std::vector<double>> per_stage;
    for (const auto& row : stages.compute) {
      std::vector<double> per_layer;
      for (graph::NodeId id : row) {
        const uint32_t unit = g.node(id).layer;
        per_layer.push_back(unit < tr.send_us.size() ? (tr.send_us[unit] + tr.receive_us[unit]) / 1000.0 : 0.0);
      }
      per_stage.push_back(per_layer);
    }
    in.transfer_ms[{tr.from, tr.to}] = per_stage;
  }
  std::vector<std::string> fitted_orders;
  if (o.stage_timing != "runtime" && (o.fit_compute_scale || o.profiled_compute)) {
    throw InputError(std::string(o.fit_compute_scale ? "--fit-compute-scale" : "--profiled-compute") +
                     " chooses how --stage-timing=runtime fits its model; add --stage-timing=runtime or drop it");
  }
  if (o.stage_timing == "runtime") {
    if (o.input.empty() || o.labels.empty()) {
      throw InputError("--stage-timing=runtime fits its dispatch and hand-off costs by running the fit orders on a "
                       "labelled set: give --input=TEST.npy (with --input-scale=1/255 for 8-bit images) and "
                       "--labels=TEST_LABELS.npy");
    }
    std::string letters;
    for (const planner::ProcessorOption& p : in.options) {
      if (letters.find(p.letter) == std::string::npos) letters += p.letter;
    }
    if (letters.size() < plan.stage_count()) {
      throw InputError("--stage-timing=runtime: " + std::to_string(plan.stage_count()) + " stages need as many processors; profile '" +
                       o.profile_file + "' has " + letters);
    }
    if (o.fit_compute_scale && o.profiled_compute) {
      throw InputError("--fit-compute-scale and --profiled-compute contradict each other: the compute scale is "
                       "fitted by default; give --profiled-compute alone to fit the fixed costs only");
    }
    fitted_orders = fit_orders(o, letters, plan.stage_count());
    in.runtime = fit_runtime_model(o, in, fitted_orders, stop, std::cout);
    // The model predicts only orders of processors whose boundary cost was fitted.
    std::string left_out;
    std::erase_if(in.options, [&](const planner::ProcessorOption& p) {
      const bool unknown = !in.runtime->boundary_ms.contains(p.letter) || !in.runtime->run_ms.contains(p.letter);
      if (unknown && left_out.find(p.letter) == std::string::npos) left_out += p.letter;
      return unknown;
    });
    if (!left_out.empty()) {
      std::cout << "left out of the search (costs not determined by the fit orders): " << left_out << "\n\n";
    }
  }
  if (objective == "energy" && std::any_of(in.options.begin(), in.options.end(),
                                           [](const planner::ProcessorOption& p) { return p.power_w < 0; })) {
    throw InputError("--objective=energy needs each processor's power in profile '" + o.profile_file +
                     "' (power_w, or a platform power_model with a DVFS table; profile with power, or use "
                     "--objective=latency|accuracy|pareto)");
  }
  const planner::StageSearchResult result = planner::search_stage_mappings(in);

  // Ranking: latency and energy among the points within 1 percentage point of the last exit.
  const double last_exit = planner::evaluate_exit_thresholds(in.scores, std::vector<double>(plan.stage_count() - 1, 2.0)).accuracy;
  std::vector<planner::StageCandidate> ranked;
  for (const planner::StageCandidate& c : result.front) {
    // Points the objectives cannot tell apart (thresholds no frame reaches) are printed once.
    const bool same = std::any_of(ranked.begin(), ranked.end(), [&](const planner::StageCandidate& r) {
      return r.latency_ms == c.latency_ms && r.energy_mj == c.energy_mj && r.accuracy == c.accuracy;
    });
    if (!same && (objective == "pareto" || objective == "accuracy" || c.accuracy >= last_exit - 0.01)) ranked.push_back(c);
  }
  const auto by = [&](const planner::StageCandidate& a, const planner::StageCandidate& b) {
    if (objective == "energy") return a.energy_mj < b.energy_mj;
    if (objective == "accuracy") return a.accuracy > b.accuracy;
    return a.latency_ms < b.latency_ms;
  };
  std::stable_sort(ranked.begin(), ranked.end(), by);
  if (objective != "pareto" && ranked.size() > static_cast<size_t>(o.top)) ranked.resize(static_cast<size_t>(o.top));

  std::ostream& out = std::cout;
  out << "stage plan for --model=" << o.model << " (" << plan.stage_count() << " stages of " << plan.layer_count()
      << " layers and an exit) from profile " << o.profile_file << " (platform '" << profile.platform_name
      << "', processors " << profile.letters() << ")\n";
  out << "validation: " << in.scores.frames << " labelled frames; accuracy per exit:";
  for (size_t k = 0; k < plan.stage_count(); ++k) {
    std::vector<double> t(plan.stage_count() - 1, 2.0);
    for (size_t e = 0; e < k; ++e) t[e] = 2.0;
    if (k + 1 < plan.stage_count()) t[k] = 0.0;  // every frame stops at exit k
    out << format_number(" %.2f %%", 100 * planner::evaluate_exit_thresholds(in.scores, t).accuracy);
  }
  out << "\nobjective: " << objective
      << (objective == "latency" || objective == "energy" ? " (within 1 percentage point of the last exit's accuracy)" : "")
      << "; mean per frame, predicted by Eq. 8-14 over the validation exits"
      << (in.runtime ? " with the runtime model (stages one after another, fitted dispatch and hand-offs)"
                     : in.whole_stages ? " with whole stages as sub-graphs" : "")
      << " (measure with --verify)\n\n";
  for (size_t i = 0; i < ranked.size(); ++i) print_candidate(out, o, format_number("%3.0f. ", static_cast<double>(i + 1)), ranked[i]);
  const auto best = [&](const std::vector<planner::StageCandidate>& cs) {
    return *std::min_element(cs.begin(), cs.end(), [&](const planner::StageCandidate& a, const planner::StageCandidate& b) {
      return objective == "energy" ? a.energy_mj < b.energy_mj : a.latency_ms < b.latency_ms;
    });
  };
  out << "\nbaselines:\n";
  if (!result.single_processor.empty()) print_candidate(out, o, "  single processor ", best(result.single_processor));
  if (!result.static_split.empty()) print_candidate(out, o, "  static split     ", best(result.static_split));
  out.flush();
  if (!o.verify) return 0;
  // The baselines are measured too: the static split is the network the dynamic plan is against.
  std::vector<planner::StageCandidate> to_verify = ranked;
  if (!result.single_processor.empty()) to_verify.push_back(best(result.single_processor));
  if (!result.static_split.empty()) to_verify.push_back(best(result.static_split));
  const std::vector<VerifiedStageCandidate> verified = verify_stage_candidates(o, to_verify, stop, out);
  const bool all_failed = !verified.empty() && std::all_of(verified.begin(), verified.end(), [](const VerifiedStageCandidate& v) { return !v.failure.empty(); });
  if (all_failed) throw RuntimeError("--verify: no point of the front ran (see the rows above)");
  if (in.runtime) print_holdout_error(out, to_verify, verified, fitted_orders, ranked.size());
  return 0;
}

}  // namespace co_up::cli
