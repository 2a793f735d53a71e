#include "core/cluster_split.h"

#include <algorithm>
#include <cctype>
#include <iterator>

#include "core/affinity.h"
#include "core/error.h"

namespace co_up {
namespace {

std::string letter_text(char c) { return std::string(1, c); }

bool is_upper_letter(char c) { return std::isupper(static_cast<unsigned char>(c)) != 0; }

}  // namespace

ClusterSplit parse_cluster_split(const std::string& text, const std::string& flag) {
  if (text.size() != 3 || text[1] != ':' || !is_upper_letter(text[0]) || !is_upper_letter(text[2]) ||
      text[0] == text[2]) {
    throw InputError(flag + "='" + text + "' must be CLUSTER:NEW, two different upper-case letters "
                     "(e.g. B:C: B keeps the first half of its cores, C gets the rest)");
  }
  return {text[0], text[2]};
}

void split_cluster(Platform& platform, const ClusterSplit& split, const std::string& flag) {
  const std::string what = flag + "=" + letter_text(split.letter) + ":" + letter_text(split.new_letter);
  const ProcessorSpec* found = platform.find(split.letter);
  if (found == nullptr || !found->is_cpu()) {
    throw InputError(what + ": platform '" + platform.name + "' has no CPU cluster '" +
                     letter_text(split.letter) + "' (its processors: " + platform.letters() + ")");
  }
  if (found->cores.size() < 2) {
    throw InputError(what + ": cluster '" + letter_text(split.letter) + "' of platform '" +
                     platform.name + "' has 1 core (" + format_cores(found->cores) +
                     "); splitting needs 2 or more");
  }
  if (platform.find(split.new_letter) != nullptr) {
    throw InputError(what + ": platform '" + platform.name + "' already has a processor '" +
                     letter_text(split.new_letter) + "'; pick a free letter");
  }
  ProcessorSpec first = *found;
  ProcessorSpec second = *found;
  const size_t half = (found->cores.size() + 1) / 2;
  first.cores.assign(found->cores.begin(), found->cores.begin() + static_cast<std::ptrdiff_t>(half));
  second.cores.assign(found->cores.begin() + static_cast<std::ptrdiff_t>(half), found->cores.end());
  second.letter = split.new_letter;
  first.name = found->name + " (cores " + format_cores(first.cores) + ")";
  second.name = found->name + " (cores " + format_cores(second.cores) + ")";
  for (ProcessorSpec* p : {&first, &second}) {
    p->threads = std::min(found->threads, static_cast<int>(p->cores.size()));
    // Power scales with the cores that do the work (the model's U is per cluster).
    const double share = static_cast<double>(p->cores.size()) / static_cast<double>(found->cores.size());
    p->power_model.alpha *= share;
    p->power_model.beta *= share;
  }
  for (SensorSpec& s : platform.sensors) {
    if (s.processors.find(split.letter) != std::string::npos) s.processors += split.new_letter;
  }
  auto at = std::find_if(platform.processors.begin(), platform.processors.end(),
                         [&](const ProcessorSpec& p) { return p.letter == split.letter; });
  *at = std::move(first);
  platform.processors.insert(std::next(at), std::move(second));
}

}  // namespace co_up
