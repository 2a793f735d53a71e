#include "profiler/workload_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "profiler/report.h"

namespace co_up::profiler {
namespace {

using json = nlohmann::json;
using Interval = std::pair<int64_t, int64_t>;

constexpr double kNsPerMs = 1e6;

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::vector<Interval> merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (i.second <= i.first) continue;
    if (!out.empty() && i.first <= out.back().second) {
      out.back().second = std::max(out.back().second, i.second);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

int64_t length(const std::vector<Interval>& v) {
  int64_t sum = 0;
  for (const Interval& i : v) sum += i.second - i.first;
  return sum;
}

// Both merged (sorted, disjoint).
int64_t overlap(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  int64_t sum = 0;
  size_t i = 0, k = 0;
  while (i < a.size() && k < b.size()) {
    const int64_t lo = std::max(a[i].first, b[k].first), hi = std::min(a[i].second, b[k].second);
    if (hi > lo) sum += hi - lo;
    (a[i].second < b[k].second ? i : k)++;
  }
  return sum;
}

int64_t end_of_run(const WorkloadProfile& w) {
  int64_t end = w.start_ns;
  for (const NetworkRun& n : w.networks) {
    for (int64_t e : n.end_ns) end = std::max(end, e);
    for (const Event& e : n.profile.events) end = std::max(end, e.end_ns);
  }
  return end;
}

char processor_of(const RunProfile& p, uint32_t subgraph) {
  return subgraph < p.subgraphs.size() ? p.subgraphs[subgraph].processor : '?';
}

}  // namespace

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(values.size()));
  const size_t index = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(values.size()))) - 1;
  return values[index];
}

WorkloadSummary summarize_workload(const WorkloadProfile& w) {
  WorkloadSummary s;
  const int64_t end = end_of_run(w);
  s.wall_ms = static_cast<double>(end - w.start_ns) / kNsPerMs;
  uint64_t total = 0;
  for (const NetworkRun& n : w.networks) {
    NetworkSummary ns;
    ns.name = n.name;
    ns.frames_requested = n.requests != 0 ? n.requests : n.profile.frames_requested;
    ns.frames_completed = std::min(n.arrival_ns.size(), n.end_ns.size());
    const Latencies l = latencies_ms(n.arrival_ns, n.end_ns);
    const std::vector<double>& latencies = l.ms;
    const size_t count = latencies.size();
    ns.latency_max_ms = l.max_ms;
    if (count > 0) {
      ns.latency_mean_ms = l.mean_ms;
      const double span_s = static_cast<double>(n.end_ns[count - 1] - w.start_ns) / 1e9;
      ns.throughput_fps = span_s > 0 ? static_cast<double>(count) / span_s : 0;
    }
    ns.latency_p50_ms = percentile(latencies, 50);
    ns.latency_p90_ms = percentile(latencies, 90);
    ns.latency_p99_ms = percentile(latencies, 99);
    total += count;
    s.networks.push_back(ns);
  }
  s.aggregate_fps = s.wall_ms > 0 ? static_cast<double>(total) / (s.wall_ms / 1000.0) : 0;

  // Processors: the letters any network used, with what each network ran there.
  std::map<char, ProcessorSummary> by_letter;
  std::map<char, std::vector<Interval>> busy, outstanding;
  for (const NetworkRun& n : w.networks) {
    std::map<char, int64_t> busy_ns;
    for (const ProcessorInfo& p : n.profile.processors) {
      by_letter[p.letter].letter = p.letter;
      by_letter[p.letter].name = p.name;
      busy_ns[p.letter] = 0;
      const size_t count = std::min(n.arrival_ns.size(), n.end_ns.size());
      for (size_t f = 0; f < count; ++f) outstanding[p.letter].push_back({n.arrival_ns[f], n.end_ns[f]});
    }
    for (const Event& e : n.profile.events) {
      if (e.kind == EventKind::kLayer) continue;
      const char letter = processor_of(n.profile, e.subgraph);
      busy[letter].push_back({e.begin_ns, e.end_ns});
      busy_ns[letter] += e.end_ns - e.begin_ns;
      if (e.kind == EventKind::kSubGraph) ++by_letter[letter].runs;
      if (e.kind == EventKind::kSubGraph && e.thread_cpu_ns >= 0) {
        by_letter[letter].run_wall_ms += static_cast<double>(e.end_ns - e.begin_ns) / kNsPerMs;
        by_letter[letter].run_cpu_ms += static_cast<double>(e.thread_cpu_ns) / kNsPerMs;
      }
    }
    for (const auto& [letter, ns] : busy_ns) {
      by_letter[letter].busy_ms_by_network.push_back({n.name, static_cast<double>(ns) / kNsPerMs});
    }
  }
  const std::vector<Interval> window{{w.start_ns, end}};
  for (auto& [letter, p] : by_letter) {
    const std::vector<Interval> b = merged(busy[letter]);
    // Idle stretches inside the window: the window minus busy.
    std::vector<Interval> gaps;
    int64_t at = w.start_ns;
    for (const Interval& i : b) {
      if (i.first > at) gaps.push_back({at, std::min(i.first, end)});
      at = std::max(at, i.second);
    }
    if (at < end) gaps.push_back({at, end});
    const int64_t in_flight = overlap(merged(gaps), merged(outstanding[letter]));
    p.busy_ms = static_cast<double>(overlap(b, window)) / kNsPerMs;
    p.bubble_ms = static_cast<double>(in_flight) / kNsPerMs;
    p.idle_ms = static_cast<double>(length(gaps) - in_flight) / kNsPerMs;
    p.utilisation = s.wall_ms > 0 ? p.busy_ms / s.wall_ms : 0;
    s.processors.push_back(p);
  }
  return s;
}

void print_workload_report(std::ostream& out, const WorkloadProfile& w) {
  const WorkloadSummary s = summarize_workload(w);
  out << "workload of " << w.networks.size() << " networks, mode " << w.mode << ", policy "
      << w.policy << ", platform " << w.platform << ": " << format("%.1f", s.wall_ms) << " ms, "
      << format("%.2f", s.aggregate_fps) << " requests/s in all\n";
  out << "  network          order                frames         req/s   p50 ms   p90 ms   p99 ms   max ms"
         "  (latency from arrival)\n";
  for (size_t i = 0; i < s.networks.size(); ++i) {
    const NetworkSummary& n = s.networks[i];
    std::string order = w.networks[i].profile.order;
    if (order.size() > 20) order = order.substr(0, 17) + "...";
    char line[256];
    std::snprintf(line, sizeof line, "  %-16s %-20s %5llu/%-5llu %9.2f %8.2f %8.2f %8.2f %8.2f\n",
                  n.name.c_str(), order.c_str(), static_cast<unsigned long long>(n.frames_completed),
                  static_cast<unsigned long long>(n.frames_requested), n.throughput_fps,
                  n.latency_p50_ms, n.latency_p90_ms, n.latency_p99_ms, n.latency_max_ms);
    out << line;
  }
  out << "  processor  busy ms  utilisation  bubble ms  idle ms  runs  busy ms by network\n";
  for (const ProcessorSummary& p : s.processors) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-9c %8.1f %11.1f%% %10.1f %8.1f %5llu ", p.letter, p.busy_ms,
                  p.utilisation * 100, p.bubble_ms, p.idle_ms, static_cast<unsigned long long>(p.runs));
    out << line;
    for (size_t i = 0; i < p.busy_ms_by_network.size(); ++i) {
      out << (i ? ", " : " ") << p.busy_ms_by_network[i].first << " "
          << format("%.1f", p.busy_ms_by_network[i].second);
    }
    out << "\n";
  }
  std::string on_cpu;
  for (const ProcessorSummary& p : s.processors) {
    if (p.run_wall_ms <= 0) continue;
    on_cpu += std::string(on_cpu.empty() ? "" : ", ") + p.letter + " " + format("%.1f", 100 * p.on_cpu()) + " %";
  }
  if (!on_cpu.empty()) {
    out << "  on CPU during its sub-graph runs (host thread CPU time / wall): " << on_cpu << "\n";
  }
  std::string levels;
  for (const DvfsEvent& d : w.dvfs) {
    levels += std::string(levels.empty() ? "" : ", ") + d.processor + " level " + std::to_string(d.level + 1) + " (" +
              format("%.0f", static_cast<double>(d.khz) / 1000) + " MHz)";
  }
  if (!levels.empty()) out << "  DVFS for the whole run: " << levels << "\n";
}

json workload_to_json(const WorkloadProfile& w) {
  const WorkloadSummary s = summarize_workload(w);
  json j;
  j["mode"] = w.mode;
  j["policy"] = w.policy;
  j["affinity"] = w.affinity;
  j["platform"] = w.platform;
  j["wall_ms"] = s.wall_ms;
  j["aggregate_requests_per_s"] = s.aggregate_fps;
  j["networks"] = json::array();
  for (size_t i = 0; i < w.networks.size(); ++i) {
    const NetworkRun& n = w.networks[i];
    const NetworkSummary& ns = s.networks[i];
    json e;
    e["name"] = n.name;
    e["graph"] = n.profile.graph;
    e["order"] = n.profile.order;
    e["rate"] = n.rate ? json(*n.rate) : json(nullptr);
    e["priority"] = n.priority;
    e["batch"] = n.batch;
    e["frames_requested"] = ns.frames_requested;
    e["frames_completed"] = ns.frames_completed;
    e["interrupted"] = ns.frames_completed < ns.frames_requested;
    e["throughput_fps"] = ns.throughput_fps;
    e["latency_from_arrival_ms"] = {{"p50", ns.latency_p50_ms}, {"p90", ns.latency_p90_ms},
                                    {"p99", ns.latency_p99_ms}, {"mean", ns.latency_mean_ms},
                                    {"max", ns.latency_max_ms}};
    json arrivals = json::array();
    for (size_t f = 0; f < n.arrival_ns.size(); ++f) {
      arrivals.push_back({{"request", f},
                          {"arrival_ms", static_cast<double>(n.arrival_ns[f] - w.start_ns) / kNsPerMs},
                          {"end_ms", static_cast<double>(n.end_ns[f] - w.start_ns) / kNsPerMs}});
    }
    e["requests"] = std::move(arrivals);
    e["profile"] = to_json(n.profile);
    j["networks"].push_back(std::move(e));
  }
  if (!w.dvfs.empty()) {  // as the single-network profile writes its setup levels
    j["dvfs"] = json::array();
    for (const DvfsEvent& d : w.dvfs) j["dvfs"].push_back(dvfs_event_to_json(d));
  }
  j["processors"] = json::array();
  for (const ProcessorSummary& p : s.processors) {
    json by = json::object();
    for (const auto& [name, ms] : p.busy_ms_by_network) by[name] = ms;
    j["processors"].push_back({{"letter", std::string(1, p.letter)}, {"name", p.name},
                               {"busy_ms", p.busy_ms}, {"utilisation", p.utilisation},
                               {"bubble_ms", p.bubble_ms}, {"idle_ms", p.idle_ms},
                               {"runs", p.runs}, {"busy_ms_by_network", by},
                               {"run_wall_ms", p.run_wall_ms}, {"run_cpu_ms", p.run_cpu_ms}});
  }
  return j;
}

void write_workload_json(const io::OutputFile& out, const WorkloadProfile& w) {
  out.write(workload_to_json(w).dump(1) + "\n");
}

json workload_trace(const WorkloadProfile& w) {
  // Chrome's reserved colour names, one per network (Perfetto colours by slice name instead).
  static const char* const kColours[] = {"thread_state_running", "rail_response", "rail_animation",
                                         "cq_build_passed", "rail_load", "thread_state_iowait",
                                         "yellow", "olive"};
  auto us = [&w](int64_t ns) { return static_cast<double>(ns - w.start_ns) / 1000.0; };
  json events = json::array();
  std::map<char, bool> named;
  for (size_t i = 0; i < w.networks.size(); ++i) {
    const NetworkRun& n = w.networks[i];
    for (const ProcessorInfo& p : n.profile.processors) {
      if (named[p.letter]) continue;
      named[p.letter] = true;
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 1},
                        {"tid", static_cast<int>(p.letter)},
                        {"args", {{"name", std::string("processor ") + p.letter + " (" + p.name + ")"}}}});
    }
    for (const Event& e : n.profile.events) {
      if (e.kind != EventKind::kSubGraph) continue;
      const SubGraphInfo& sg = n.profile.subgraphs.at(e.subgraph);
      events.push_back({{"ph", "X"}, {"name", n.name}, {"cat", "subgraph"}, {"pid", 1},
                        {"tid", static_cast<int>(sg.processor)}, {"ts", us(e.begin_ns)},
                        {"dur", static_cast<double>(e.end_ns - e.begin_ns) / 1000.0},
                        {"cname", kColours[i % std::size(kColours)]},
                        {"args", {{"network", n.name}, {"frame", e.frame}, {"subgraph", e.subgraph},
                                  {"layers", std::to_string(sg.first_layer) + "-" +
                                                 std::to_string(sg.last_layer)}}}});
    }
    // One track per network for its requests: arrival to completion.
    const int tid = 1000 + static_cast<int>(i);
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 2}, {"tid", tid},
                      {"args", {{"name", "requests " + n.name}}}});
    for (size_t f = 0; f < std::min(n.arrival_ns.size(), n.end_ns.size()); ++f) {
      events.push_back({{"ph", "X"}, {"name", n.name + " request"}, {"cat", "request"}, {"pid", 2},
                        {"tid", tid}, {"ts", us(n.arrival_ns[f])},
                        {"dur", static_cast<double>(n.end_ns[f] - n.arrival_ns[f]) / 1000.0},
                        {"cname", kColours[i % std::size(kColours)]}, {"args", {{"frame", f}}}});
    }
  }
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", 1}, {"args", {{"name", "processors"}}}});
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", 2}, {"args", {{"name", "requests"}}}});
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

void write_workload_trace(const io::OutputFile& out, const WorkloadProfile& w) {
  out.write(workload_trace(w).dump() + "\n");
}

}  // namespace co_up::profiler
