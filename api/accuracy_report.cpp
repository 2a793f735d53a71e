#include "api/accuracy_report.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <mutex>
#include <vector>

#include "core/network.h"
#include "core/partition.h"
#include "profiler/report.h"

namespace co_up::api {
namespace {

constexpr const char* kInt8Backend = "npu-int8";

size_t argmax(const std::vector<float>& v) {
  return static_cast<size_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// Median latency in ms of the frames [first, completed) of a profile.
double median_latency_ms(const profiler::RunProfile& profile, uint64_t first) {
  std::vector<double> ms;
  for (uint64_t f = first; f < profile.frame_end_ns.size(); ++f) {
    ms.push_back(static_cast<double>(profile.frame_end_ns[f] - profile.frame_start_ns[f]) / 1e6);
  }
  return ms.empty() ? 0.0 : profiler::median(ms);
}

}  // namespace

struct AccuracyReport::State {
  const graph::Graph* graph = nullptr;
  Platform platform;  // the placement's: the reference run's devices get the same options
  const PluginRegistry* registry = nullptr;
  const RunRequest* request = nullptr;
  std::string letters;           // processors served by npu-int8
  std::string layers;            // "5-9" or "0-2, 7-9"
  uint64_t calibration = 0;
  uint64_t compared = 0;         // frames after calibration that are compared
  std::mutex mutex;
  std::map<uint64_t, std::vector<float>> int8_outputs;  // frame -> first graph output
};

AccuracyReport::AccuracyReport(const Placement& placement, const PluginRegistry& registry,
                               uint64_t calibration) {
  const graph::Graph& graph = placement.graph();
  const std::string& order = placement.order();
  std::string letters;
  for (const BoundProcessor& p : placement.processors()) {
    if (p.backend == kInt8Backend) letters += p.letter;
  }
  if (letters.empty()) return;

  auto state = std::make_unique<State>();
  state->graph = &graph;
  state->platform = placement.platform();
  state->registry = &registry;
  state->letters = letters;
  for (size_t l = 0; l < order.size(); ++l) {
    if (letters.find(order[l]) == std::string::npos) continue;
    size_t last = l;
    while (last + 1 < order.size() && letters.find(order[last + 1]) != std::string::npos) ++last;
    if (!state->layers.empty()) state->layers += ", ";
    state->layers += std::to_string(l);
    if (last > l) state->layers.append("-").append(std::to_string(last));
    l = last;
  }
  state->calibration = calibration;
  state_ = std::move(state);
}

void AccuracyReport::prepare(RunRequest& request, bool inputs_fixed, uint64_t seed) {
  if (!state_) return;
  State* s = state_.get();
  s->request = &request;
  const graph::Graph& graph = *s->graph;
  const uint64_t frames = request.frames;
  s->compared = frames > s->calibration ? std::min<uint64_t>(frames - s->calibration, kMaxComparedFrames) : 0;

  // Distinct inputs, so that agreement over frames means something; a fixed --input/--image
  // stays fixed.
  if (!inputs_fixed) {
    const uint64_t sets = std::min<uint64_t>(frames, s->calibration + s->compared);
    request.input_sets.clear();
    for (uint64_t f = 0; f < sets; ++f) request.input_sets.push_back(seeded_inputs(graph, seed + f));
  }

  auto previous = request.on_output;
  request.on_output = [s, previous](uint64_t frame, uint32_t output, std::span<const float> values) {
    if (previous) previous(frame, output, values);
    if (output != 0 || frame < s->calibration || frame >= s->calibration + s->compared) return;
    std::lock_guard lock(s->mutex);
    s->int8_outputs[frame].assign(values.begin(), values.end());
  };
}

AccuracyReport::~AccuracyReport() = default;

void AccuracyReport::print(std::ostream& out, const RunResult& result) const {
  if (!state_) return;
  const State& s = *state_;
  out << "int8 accuracy (npu-int8 on " << s.letters << ", layers " << s.layers
      << ", vs f32 with every layer on B):\n";
  std::map<uint64_t, std::vector<float>> int8_outputs;
  {
    std::lock_guard lock(state_->mutex);
    int8_outputs = s.int8_outputs;
  }
  if (int8_outputs.empty()) {
    out << "  no frame after the " << s.calibration
        << " calibration frame(s) completed (run --n greater than --calibration)\n";
    return;
  }

  // The reference: the same inputs, frames after calibration only, all on B.
  const uint64_t first = int8_outputs.begin()->first;
  const uint64_t count = int8_outputs.rbegin()->first - first + 1;
  RunRequest reference;
  reference.frames = count;
  const auto& sets = s.request->input_sets;
  for (uint64_t f = first; f < first + count; ++f) reference.input_sets.push_back(sets[f % sets.size()]);
  std::map<uint64_t, std::vector<float>> f32_outputs;
  reference.on_output = [&](uint64_t frame, uint32_t output, std::span<const float> values) {
    if (output == 0) f32_outputs[first + frame].assign(values.begin(), values.end());
  };
  Executor executor(Placement::create(*s.graph, std::string(s.graph->layer_count(), 'B'),
                                      s.platform, *s.registry),
                    ExecutorOptions{});
  const RunResult f32_run = executor.run(reference);

  uint64_t agree = 0, compared = 0;
  double max_error = 0.0, sum_error = 0.0, lo = INFINITY, hi = -INFINITY;
  size_t elements = 0;
  for (const auto& [frame, int8_values] : int8_outputs) {
    auto it = f32_outputs.find(frame);
    if (it == f32_outputs.end() || it->second.size() != int8_values.size()) continue;
    const std::vector<float>& f32_values = it->second;
    ++compared;
    if (argmax(int8_values) == argmax(f32_values)) ++agree;
    for (size_t i = 0; i < f32_values.size(); ++i) {
      const double e = std::fabs(static_cast<double>(int8_values[i]) - f32_values[i]);
      max_error = std::max(max_error, e);
      sum_error += e;
      lo = std::min(lo, static_cast<double>(f32_values[i]));
      hi = std::max(hi, static_cast<double>(f32_values[i]));
    }
    elements += f32_values.size();
  }
  const double range = hi > lo ? hi - lo : 0.0;
  const auto flags = out.flags();
  out << std::fixed << std::setprecision(1);
  out << "  frames compared   " << compared << " (frames " << first << "-" << first + count - 1
      << ", after " << s.calibration << " calibration frame(s))\n";
  out << "  top-1 agreement   " << (compared ? 100.0 * static_cast<double>(agree) / static_cast<double>(compared) : 0.0)
      << " % (" << agree << "/" << compared << ")\n";
  out << std::setprecision(6) << "  max abs error     " << max_error;
  if (range > 0) out << std::setprecision(2) << "  (" << 100.0 * max_error / range << " % of the f32 output range " << std::setprecision(6) << range << ")";
  out << "\n  mean abs error    " << std::setprecision(6)
      << (elements ? sum_error / static_cast<double>(elements) : 0.0) << "\n";
  out << std::setprecision(2) << "  latency median    " << median_latency_ms(result.profile, s.calibration)
      << " ms this run (frames after calibration), " << median_latency_ms(f32_run.profile, 0)
      << " ms f32 all-B\n";
  out.flags(flags);
}

}  // namespace co_up::api
