#include "profiler/report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include "core/error.h"
#include "profiler/exit_report.h"
#include "profiler/frame_analysis.h"
#include "profiler/power_trace.h"

namespace co_up::profiler {
namespace {

constexpr double kNsPerMs = 1e6;

struct PerFrameStats {
  double exec_ms = 0;      // median per frame
  double transfer_ms = 0;  // median per frame
  double device_ms = -1;   // layers: median per frame of the backend's device time, -1 if none
};

// Median over frames of the per-frame sum of matching event durations. Frames with no matching
// event count as 0 only when `count_missing` (transfers), not for execution.
template <typename Match>
double per_frame_median(const RunProfile& p, Match match, bool count_missing) {
  std::map<uint64_t, double> per_frame;
  for (const Event& e : p.events) {
    if (match(e)) per_frame[e.frame] += static_cast<double>(e.end_ns - e.begin_ns) / kNsPerMs;
  }
  std::vector<double> values;
  if (count_missing) {
    for (uint64_t f = 0; f < p.frames_completed; ++f) {
      auto it = per_frame.find(f);
      values.push_back(it == per_frame.end() ? 0.0 : it->second);
    }
  } else {
    for (const auto& [frame, ms] : per_frame) values.push_back(ms);
  }
  return median(std::move(values));
}

PerFrameStats subgraph_stats(const RunProfile& p, uint32_t sg) {
  PerFrameStats s;
  s.exec_ms = per_frame_median(
      p, [&](const Event& e) { return e.kind == EventKind::kSubGraph && e.subgraph == sg; }, false);
  s.transfer_ms = per_frame_median(
      p, [&](const Event& e) { return e.kind == EventKind::kTransfer && e.subgraph == sg; }, true);
  return s;
}

// A network run by several executors (a workload's replicas, merged) lists its layers once per
// executor, each set under the processor of that executor's order; an event counts for the row
// of its own executor. Per sub-graph: its executor's number (0 for every sub-graph of one
// executor's run), from the rows: each executor's set starts again at a lower layer index.
std::vector<uint32_t> executor_of_subgraphs(const RunProfile& p) {
  std::vector<uint32_t> out(p.subgraphs.size(), 0);
  uint32_t executor = 0;
  for (size_t i = 0; i < p.layers.size(); ++i) {
    if (i > 0 && p.layers[i].index <= p.layers[i - 1].index) ++executor;
    if (p.layers[i].subgraph < out.size()) out[p.layers[i].subgraph] = executor;
  }
  return out;
}

// The row's stats: its layer's events on sub-graphs of the row's executor.
PerFrameStats layer_stats(const RunProfile& p, const LayerInfo& row, const std::vector<uint32_t>& executor_of) {
  const auto executor = [&](uint32_t subgraph) { return subgraph < executor_of.size() ? executor_of[subgraph] : 0u; };
  const uint32_t own = executor(row.subgraph);
  const auto mine = [&](const Event& e) { return e.layer == row.index && executor(e.subgraph) == own; };
  PerFrameStats s;
  s.exec_ms = per_frame_median(p, [&](const Event& e) { return e.kind == EventKind::kLayer && mine(e); }, false);
  s.transfer_ms = per_frame_median(
      p, [&](const Event& e) { return e.kind == EventKind::kTransfer && mine(e); }, true);
  std::map<uint64_t, double> device;  // per frame
  for (const Event& e : p.events) {
    if (e.kind == EventKind::kLayer && mine(e) && e.device_ns >= 0) {
      device[e.frame] += static_cast<double>(e.device_ns) / kNsPerMs;
    }
  }
  if (!device.empty()) {
    std::vector<double> values;
    for (const auto& [frame, ms] : device) values.push_back(ms);
    s.device_ms = median(std::move(values));
  }
  return s;
}

bool has_device_times(const RunProfile& p) {
  return std::any_of(p.events.begin(), p.events.end(), [](const Event& e) {
    return e.kind == EventKind::kLayer && e.device_ns >= 0;
  });
}

std::string format(const char* fmt, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), fmt, value);
  return buffer;
}

std::string pad(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

}  // namespace

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  double m = values[mid];
  if (values.size() % 2 == 0) {
    m = (m + *std::max_element(values.begin(), values.begin() + mid)) / 2;
  }
  return m;
}

Latencies latencies_ms(const std::vector<int64_t>& from_ns, const std::vector<int64_t>& to_ns) {
  Latencies l;
  const size_t n = std::min(from_ns.size(), to_ns.size());
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    const double ms = static_cast<double>(to_ns[i] - from_ns[i]) / kNsPerMs;
    l.ms.push_back(ms);
    sum += ms;
    l.max_ms = std::max(l.max_ms, ms);
  }
  if (n > 0) l.mean_ms = sum / static_cast<double>(n);
  return l;
}

Summary summarize(const RunProfile& p) {
  Summary s;
  const size_t n = std::min(p.frame_start_ns.size(), p.frame_end_ns.size());
  if (n == 0) return s;
  Latencies latencies = latencies_ms(p.frame_start_ns, p.frame_end_ns);
  s.latency_max_ms = latencies.max_ms;
  s.latency_mean_ms = latencies.mean_ms;
  s.latency_median_ms = median(std::move(latencies.ms));
  s.wall_ms = static_cast<double>(p.frame_end_ns[n - 1] - p.frame_start_ns[0]) / kNsPerMs;
  if (n >= 2) {
    // The first frame fills the pipeline; steady-state throughput counts completions after it.
    const double span_s = static_cast<double>(p.frame_end_ns[n - 1] - p.frame_end_ns[0]) / 1e9;
    s.throughput_fps = span_s > 0 ? static_cast<double>(n - 1) / span_s : 0;
  } else if (s.latency_median_ms > 0) {
    s.throughput_fps = 1000.0 / s.latency_median_ms;
  }
  return s;
}

namespace {

// Inside a frame (profiler/frame_analysis.h): the most frequent critical path and the median idle
// time per processor. frames == 0 when the level has no sub-graph events.
struct FrameInsideSummary {
  size_t frames = 0;
  std::vector<uint32_t> path;
  size_t path_frames = 0;
  std::string processors;
  std::vector<double> idle_ms;
  double latency_ms = 0;
};

FrameInsideSummary summarize_inside(const std::vector<FrameAnalysis>& frames) {
  FrameInsideSummary s;
  s.frames = frames.size();
  if (frames.empty()) return s;
  std::map<std::vector<uint32_t>, size_t> counts;
  for (const FrameAnalysis& f : frames) ++counts[f.critical_path];
  for (const auto& [path, count] : counts) {
    if (count > s.path_frames) {
      s.path = path;
      s.path_frames = count;
    }
  }
  s.processors = frames.front().processors;
  std::vector<double> latency;
  for (const FrameAnalysis& f : frames) latency.push_back(f.latency_ms);
  s.latency_ms = median(latency);
  for (size_t k = 0; k < s.processors.size(); ++k) {
    std::vector<double> idle;
    for (const FrameAnalysis& f : frames) idle.push_back(f.idle_ms[k]);
    s.idle_ms.push_back(median(idle));
  }
  return s;
}

}  // namespace

void print_report(std::ostream& out, const RunProfile& p) {
  const Summary s = summarize(p);
  out << "graph " << p.graph << ", order " << p.order << ", mode " << p.mode << ", platform "
      << p.platform << ": " << p.frames_completed << "/" << p.frames_requested << " frames"
      << (p.interrupted ? " (interrupted)" : "") << "\n";
  out << "  throughput " << format("%.2f", s.throughput_fps) << " frames/s, latency median "
      << format("%.2f", s.latency_median_ms) << " ms (mean " << format("%.2f", s.latency_mean_ms)
      << ", max " << format("%.2f", s.latency_max_ms) << "), setup "
      << format("%.1f", static_cast<double>(p.setup_ns) / kNsPerMs) << " ms\n";
  if (p.level >= 1) {
    out << "\n  sub-graph  proc  backend          layers    exec ms/frame  transfer ms/frame\n";
    for (const SubGraphInfo& sg : p.subgraphs) {
      const PerFrameStats st = subgraph_stats(p, sg.index);
      out << "  " << pad(std::to_string(sg.index), 11) << pad(std::string(1, sg.processor), 6)
          << pad(sg.backend, 17)
          << pad(std::to_string(sg.first_layer) + "-" + std::to_string(sg.last_layer), 10)
          << pad(format("%.3f", st.exec_ms), 15) << format("%.3f", st.transfer_ms) << "\n";
    }
    const FrameInsideSummary inside = summarize_inside(analyze_frames(p));
    if (inside.frames > 0) {
      out << "\n  inside a frame (median over " << inside.frames << " frames, latency "
          << format("%.3f", inside.latency_ms) << " ms): critical path " << critical_path_text(p, inside.path)
          << " (in " << inside.path_frames << " of " << inside.frames << " frames); idle";
      for (size_t k = 0; k < inside.processors.size(); ++k) {
        out << (k == 0 ? " " : ", ") << inside.processors[k] << " " << format("%.3f", inside.idle_ms[k]) << " ms ("
            << format("%.0f", inside.latency_ms > 0 ? 100.0 * inside.idle_ms[k] / inside.latency_ms : 0.0) << " %)";
      }
      out << "\n";
    }
  }
  if (p.level >= 2) {
    // Backends that time their device (OpenCL event profiling) add its share of the exec time.
    const bool device = has_device_times(p);
    size_t name_width = 22;  // wider when a name (an ONNX node path) would run into the next column
    for (const LayerInfo& l : p.layers) name_width = std::max(name_width, l.name.size() + 2);
    out << "\n  layer  " << pad("name", name_width) << "proc  exec ms  " << (device ? "device ms  " : "")
        << "transfer ms  MMACs     output\n";
    // An accelerator runs its partition as one node: its event spans first..last layer, so the
    // first layer's row carries the whole partition and the others point at it.
    const std::vector<uint32_t> executor_of = executor_of_subgraphs(p);
    // (executor, covered layer) -> first layer of its node
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> partition_first;
    for (const Event& e : p.events) {
      if (e.kind != EventKind::kLayer || e.last_layer <= e.layer) continue;
      const uint32_t executor = e.subgraph < executor_of.size() ? executor_of[e.subgraph] : 0;
      for (uint32_t l = e.layer; l <= e.last_layer; ++l) partition_first[{executor, l}] = e.layer;
    }
    for (const LayerInfo& l : p.layers) {
      const PerFrameStats st = layer_stats(p, l, executor_of);
      const auto in_node =
          partition_first.find({l.subgraph < executor_of.size() ? executor_of[l.subgraph] : 0, l.index});
      std::string exec = format("%.3f", st.exec_ms);
      if (in_node != partition_first.end() && in_node->second != l.index) {
        exec = "(in " + std::to_string(in_node->second) + ")";
      }
      out << "  " << pad(std::to_string(l.index), 7) << pad(l.name, name_width)
          << pad(std::string(1, l.processor), 6) << pad(exec, 9);
      if (device) out << pad(st.device_ms >= 0 ? format("%.3f", st.device_ms) : "-", 11);
      out << pad(format("%.3f", st.transfer_ms), 13)
          << pad(format("%.1f", static_cast<double>(l.macs) / 1e6), 10) << l.output_shape << "\n";
    }
  }
  print_exit_report(out, p);
}

nlohmann::json dvfs_event_to_json(const DvfsEvent& d) {
  using nlohmann::json;
  json ev = {{"processor", std::string(1, d.processor)}, {"level", d.level + 1}, {"khz", d.khz},
             {"frame", d.frame}, {"issue_ns", d.issue_ns}, {"apply_ns", d.apply_ns},
             {"superseded", d.superseded}};
  ev["layer"] = d.layer == UINT32_MAX ? json("setup") : json(d.layer);
  if (!d.error.empty()) ev["error"] = d.error;
  return ev;
}

nlohmann::json to_json(const RunProfile& p) {
  using nlohmann::json;
  const Summary s = summarize(p);
  json j;
  j["graph"] = p.graph;
  j["order"] = p.order;
  j["mode"] = p.mode;
  j["platform"] = p.platform;
  j["profile_level"] = p.level;
  j["frames_requested"] = p.frames_requested;
  j["frames_completed"] = p.frames_completed;
  j["interrupted"] = p.interrupted;
  j["clock"] = "CLOCK_MONOTONIC ns";
  j["setup_ms"] = static_cast<double>(p.setup_ns) / kNsPerMs;
  j["summary"] = {{"throughput_fps", s.throughput_fps},
                  {"latency_median_ms", s.latency_median_ms},
                  {"latency_mean_ms", s.latency_mean_ms},
                  {"latency_max_ms", s.latency_max_ms},
                  {"wall_ms", s.wall_ms}};
  j["frames"] = {{"start_ns", p.frame_start_ns}, {"end_ns", p.frame_end_ns}};
  json processors = json::array();
  for (const ProcessorInfo& pr : p.processors) {
    processors.push_back({{"letter", std::string(1, pr.letter)},
                          {"name", pr.name},
                          {"backend", pr.backend},
                          {"host_cores", pr.host_cores},
                          {"threads", pr.threads},
                          {"in_frame_sleeps", pr.in_frame_sleeps}});
  }
  j["processors"] = processors;
  json subgraphs = json::array();
  for (const SubGraphInfo& sg : p.subgraphs) {
    const PerFrameStats st = subgraph_stats(p, sg.index);
    subgraphs.push_back({{"index", sg.index},
                         {"processor", std::string(1, sg.processor)},
                         {"backend", sg.backend},
                         {"first_layer", sg.first_layer},
                         {"last_layer", sg.last_layer},
                         {"exec_ms_median", st.exec_ms},
                         {"transfer_ms_median", st.transfer_ms}});
  }
  j["subgraphs"] = subgraphs;
  json layers = json::array();
  const std::vector<uint32_t> executor_of = executor_of_subgraphs(p);
  for (const LayerInfo& l : p.layers) {
    json entry = {{"index", l.index},         {"name", l.name},
                  {"ops", l.ops},             {"output_shape", l.output_shape},
                  {"macs", l.macs},           {"processor", std::string(1, l.processor)},
                  {"subgraph", l.subgraph}};
    if (p.level >= 2) {
      const PerFrameStats st = layer_stats(p, l, executor_of);
      entry["exec_ms_median"] = st.exec_ms;
      entry["transfer_ms_median"] = st.transfer_ms;
      if (st.device_ms >= 0) entry["device_ms_median"] = st.device_ms;
    }
    layers.push_back(entry);
  }
  j["layers"] = layers;
  json receivers = json::array();
  for (const ReceiverInfo& r : p.receivers) {
    receivers.push_back({{"tensor", r.tensor},
                         {"source", r.source},
                         {"destination", r.destination},
                         {"bytes", r.bytes},
                         {"capacity", r.capacity},
                         {"max_occupancy", r.max_occupancy},
                         {"transfers", r.transfers},
                         {"full_stalls", r.full_stalls},
                         {"layout", r.layout}});
    if (!r.in_place.empty()) receivers.back()["in_place"] = r.in_place;
  }
  j["receivers"] = receivers;
  const std::vector<FrameAnalysis> frames = analyze_frames(p);
  if (!frames.empty()) {
    const FrameInsideSummary inside = summarize_inside(frames);
    json per_frame = json::array();
    for (const FrameAnalysis& f : frames) {
      json idle = json::object();
      for (size_t k = 0; k < f.processors.size(); ++k) idle[std::string(1, f.processors[k])] = f.idle_ms[k];
      per_frame.push_back({{"frame", f.frame}, {"critical_path", f.critical_path}, {"idle_ms", idle}});
    }
    json idle = json::object();
    for (size_t k = 0; k < inside.processors.size(); ++k) idle[std::string(1, inside.processors[k])] = inside.idle_ms[k];
    j["inside_frames"] = {{"critical_path", inside.path},
                          {"critical_path_frames", inside.path_frames},
                          {"idle_ms_median", idle},
                          {"per_frame", per_frame}};
  }
  json events = json::array();
  for (const Event& e : p.events) {
    static constexpr const char* kKinds[] = {"subgraph", "layer", "transfer"};
    json ev = {{"kind", kKinds[static_cast<int>(e.kind)]},
               {"subgraph", e.subgraph},
               {"frame", e.frame},
               {"begin_ns", e.begin_ns},
               {"end_ns", e.end_ns}};
    if (e.kind != EventKind::kSubGraph) ev["layer"] = e.layer;
    if (e.kind == EventKind::kLayer && e.last_layer != e.layer) ev["last_layer"] = e.last_layer;
    if (e.kind == EventKind::kLayer && e.device_ns >= 0) ev["device_ns"] = e.device_ns;
    if (e.kind == EventKind::kTransfer) {
      ev["to"] = e.peer == UINT32_MAX ? json("output") : json(e.peer);
      ev["bytes"] = e.bytes;
    }
    events.push_back(std::move(ev));
  }
  j["events"] = events;
  if (!p.dvfs.empty()) {
    json dvfs = json::array();
    for (const DvfsEvent& d : p.dvfs) dvfs.push_back(dvfs_event_to_json(d));
    j["dvfs"] = dvfs;
  }
  if (json exits = exit_report_json(p); !exits.is_null()) j["exits"] = std::move(exits);
  if (!p.power.empty()) {
    json power = json::array();
    for (const PowerSummary& summary : p.power) power.push_back(power_summary_to_json(summary));
    j["power"] = power;
  }
  return j;
}

void write_json(const io::OutputFile& out, const RunProfile& profile) {
  out.write(to_json(profile).dump(1) + "\n");
}

}  // namespace co_up::profiler
