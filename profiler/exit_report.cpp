#include "profiler/exit_report.h"

#include <cstdio>

#include "core/message_text.h"
#include "profiler/report.h"

namespace co_up::profiler {
namespace {

std::string pad(const std::string& text, size_t width) {
  return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

std::string percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "-";
  return format_number("%.1f %%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

// Frames with a label, and those whose result was right, over the completed frames.
std::pair<uint64_t, uint64_t> overall_accuracy(const RunProfile& p) {
  uint64_t labelled = 0, correct = 0;
  for (size_t f = 0; f < p.frame_correct.size() && f < p.frames_completed; ++f) {
    ++labelled;
    correct += p.frame_correct[f];
  }
  return {labelled, correct};
}

}  // namespace

std::vector<ExitSummary> summarize_exits(const RunProfile& p) {
  std::vector<ExitSummary> exits;
  for (const RunProfile::Exit& e : p.exits) exits.push_back({e.name, e.subgraph});
  std::vector<std::vector<double>> latencies(exits.size());
  const size_t n = std::min({p.frame_exit.size(), p.frame_start_ns.size(), p.frame_end_ns.size()});
  for (size_t f = 0; f < n; ++f) {
    const uint32_t k = p.frame_exit[f];
    if (k >= exits.size()) continue;
    ++exits[k].frames;
    latencies[k].push_back(static_cast<double>(p.frame_end_ns[f] - p.frame_start_ns[f]) / 1e6);
    if (f < p.frame_correct.size()) {
      ++exits[k].labelled;
      exits[k].correct += p.frame_correct[f];
    }
  }
  for (size_t k = 0; k < exits.size(); ++k) {
    if (latencies[k].empty()) continue;
    double sum = 0;
    for (double ms : latencies[k]) sum += ms;
    exits[k].latency_mean_ms = sum / static_cast<double>(latencies[k].size());
    exits[k].latency_median_ms = median(latencies[k]);
  }
  return exits;
}

void print_exit_report(std::ostream& out, const RunProfile& p) {
  const auto [labelled, correct] = overall_accuracy(p);
  if (p.exits.empty()) {
    if (labelled > 0) {
      out << "accuracy " << percent(correct, labelled) << " (" << correct << "/" << labelled
          << " labelled frames)\n";
    }
    return;
  }
  const std::vector<ExitSummary> exits = summarize_exits(p);
  out << "\nexits (" << p.exit_policy << "), " << p.frame_exit.size() << " frames:\n";
  size_t name_width = 8;
  for (const ExitSummary& e : exits) name_width = std::max(name_width, e.name.size() + 2);
  out << "  exit  " << pad("name", name_width)
      << "sub-graph  frames    share     latency mean ms  median ms" << (labelled > 0 ? "  accuracy" : "")
      << "\n";
  for (size_t k = 0; k < exits.size(); ++k) {
    const ExitSummary& e = exits[k];
    const bool any = e.frames > 0;
    out << "  " << pad(std::to_string(k), 6) << pad(e.name, name_width) << pad(std::to_string(e.subgraph), 11)
        << pad(std::to_string(e.frames), 10) << pad(percent(e.frames, p.frame_exit.size()), 10)
        << pad(any ? format_number("%.3f", e.latency_mean_ms) : "-", 17)
        << (labelled > 0 ? pad(any ? format_number("%.3f", e.latency_median_ms) : "-", 11)
                         : (any ? format_number("%.3f", e.latency_median_ms) : "-"));
    if (labelled > 0) {
      out << percent(e.correct, e.labelled);
      if (e.labelled > 0) out << " (" << e.correct << "/" << e.labelled << ")";
    }
    out << "\n";
  }
  if (!p.subgraph_frames_skipped.empty()) {
    out << "  frames each sub-graph skipped (did no work for):";
    for (size_t i = 0; i < p.subgraph_frames_skipped.size(); ++i) {
      out << (i == 0 ? " " : ", ") << i << ": " << p.subgraph_frames_skipped[i];
    }
    out << "\n";
  }
  if (labelled > 0) {
    out << "  overall accuracy " << percent(correct, labelled) << " (" << correct << "/" << labelled
        << ")\n";
  }
}

nlohmann::json exit_report_json(const RunProfile& p) {
  using nlohmann::json;
  const auto [labelled, correct] = overall_accuracy(p);
  if (p.exits.empty() && labelled == 0) return nullptr;
  json j;
  if (!p.exits.empty()) {
    j["policy"] = p.exit_policy;
    json exits = json::array();
    for (const ExitSummary& e : summarize_exits(p)) {
      json entry = {{"name", e.name},
                    {"subgraph", e.subgraph},
                    {"frames", e.frames},
                    {"latency_mean_ms", e.latency_mean_ms},
                    {"latency_median_ms", e.latency_median_ms}};
      if (labelled > 0) {
        entry["labelled"] = e.labelled;
        entry["correct"] = e.correct;
        entry["accuracy"] = nullptr;  // no frame took this exit
        if (e.labelled > 0) {
          entry["accuracy"] = static_cast<double>(e.correct) / static_cast<double>(e.labelled);
        }
      }
      exits.push_back(std::move(entry));
    }
    j["exits"] = exits;
    j["frame_exit"] = p.frame_exit;
    j["subgraph_frames_skipped"] = p.subgraph_frames_skipped;
  }
  if (labelled > 0) {
    j["labelled"] = labelled;
    j["correct"] = correct;
    j["accuracy"] = static_cast<double>(correct) / static_cast<double>(labelled);
  }
  return j;
}

}  // namespace co_up::profiler
