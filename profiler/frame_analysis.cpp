#include "profiler/frame_analysis.h"

#include <algorithm>
#include <map>

namespace co_up::profiler {

std::vector<FrameAnalysis> analyze_frames(const RunProfile& p) {
  std::vector<FrameAnalysis> result;
  if (p.level < 1) return result;
  std::map<uint32_t, char> processor_of;
  for (const SubGraphInfo& sg : p.subgraphs) processor_of[sg.index] = sg.processor;
  std::map<uint32_t, std::vector<uint32_t>> feeds;  // destination -> sources
  for (const ReceiverInfo& r : p.receivers) {
    if (r.source != UINT32_MAX) feeds[r.destination].push_back(r.source);
  }
  std::string letters;
  for (const ProcessorInfo& info : p.processors) {
    const bool has = std::any_of(p.subgraphs.begin(), p.subgraphs.end(),
                                 [&](const SubGraphInfo& sg) { return sg.processor == info.letter; });
    if (has) letters += info.letter;
  }
  // Sub-graph runs by frame, and per processor in time order.
  std::map<uint64_t, std::vector<const Event*>> of_frame;
  std::map<char, std::vector<const Event*>> of_processor;
  for (const Event& e : p.events) {
    if (e.kind != EventKind::kSubGraph) continue;
    of_frame[e.frame].push_back(&e);
    of_processor[processor_of[e.subgraph]].push_back(&e);
  }
  for (auto& [letter, events] : of_processor) {
    std::sort(events.begin(), events.end(), [](const Event* a, const Event* b) { return a->begin_ns < b->begin_ns; });
  }
  const size_t frames = std::min(p.frame_start_ns.size(), p.frame_end_ns.size());
  for (uint64_t f = 0; f < frames; ++f) {
    FrameAnalysis a;
    a.frame = f;
    const int64_t start = p.frame_start_ns[f], end = p.frame_end_ns[f];
    a.latency_ms = static_cast<double>(end - start) / 1e6;
    a.processors = letters;
    for (char letter : letters) {
      int64_t busy = 0;
      for (const Event* e : of_processor[letter]) {
        busy += std::max<int64_t>(0, std::min(e->end_ns, end) - std::max(e->begin_ns, start));
      }
      a.idle_ms.push_back(static_cast<double>(std::max<int64_t>(0, end - start - busy)) / 1e6);
    }
    const std::vector<const Event*>& runs = of_frame[f];
    const Event* last = nullptr;
    for (const Event* e : runs) {
      if (last == nullptr || e->end_ns > last->end_ns) last = e;
    }
    for (const Event* at = last; at != nullptr;) {
      a.critical_path.push_back(at->subgraph);
      const Event* cause = nullptr;
      for (uint32_t source : feeds[at->subgraph]) {
        for (const Event* e : runs) {
          if (e->subgraph == source && e->end_ns <= at->begin_ns && (cause == nullptr || e->end_ns > cause->end_ns)) {
            cause = e;
          }
        }
      }
      const std::vector<const Event*>& same = of_processor[processor_of[at->subgraph]];
      const auto it = std::find(same.begin(), same.end(), at);
      if (it != same.begin() && it != same.end()) {
        const Event* before = *(it - 1);
        if (cause == nullptr || before->end_ns > cause->end_ns) cause = before->frame == f ? before : nullptr;
      }
      at = cause;
    }
    std::reverse(a.critical_path.begin(), a.critical_path.end());
    result.push_back(std::move(a));
  }
  return result;
}

std::string critical_path_text(const RunProfile& p, const std::vector<uint32_t>& path) {
  std::string text;
  for (uint32_t sg : path) {
    char letter = '?';
    for (const SubGraphInfo& info : p.subgraphs) {
      if (info.index == sg) letter = info.processor;
    }
    text += (text.empty() ? "" : " -> ") + std::to_string(sg) + " (" + std::string(1, letter) + ")";
  }
  return text;
}

}  // namespace co_up::profiler
