#include "core/foreign_cpu_time.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace co_up {
namespace {

// user nice system idle iowait irq softirq steal of each "cpuN" line of /proc/stat (guest time
// is already inside user and nice).
struct CpuLine {
  uint64_t busy = 0, elapsed = 0;
};

std::optional<CpuLine> read_cpu_line(const std::string& text, int core) {
  std::istringstream lines(text);
  const std::string label = "cpu" + std::to_string(core);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string name;
    fields >> name;
    if (name != label) continue;
    uint64_t v[8] = {};
    for (uint64_t& x : v) {
      if (!(fields >> x)) return std::nullopt;
    }
    CpuLine c;
    c.busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    c.elapsed = c.busy + v[3] + v[4];
    return c;
  }
  return std::nullopt;
}

std::optional<std::string> read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// utime + stime of /proc/self/stat (fields 14 and 15; the name in field 2 may hold spaces and
// parentheses, so counting starts after its last ')').
std::optional<uint64_t> read_own_ticks(const std::filesystem::path& path) {
  const std::optional<std::string> text = read_text(path);
  if (!text) return std::nullopt;
  const size_t name_end = text->rfind(')');
  if (name_end == std::string::npos) return std::nullopt;
  std::istringstream fields(text->substr(name_end + 1));
  std::string field;
  for (int i = 3; i <= 13; ++i) {
    if (!(fields >> field)) return std::nullopt;
  }
  uint64_t utime = 0, stime = 0;
  if (!(fields >> utime >> stime)) return std::nullopt;
  return utime + stime;
}

}  // namespace

ForeignCpuTime::ForeignCpuTime(std::vector<int> cores, std::filesystem::path proc)
    : cores_(std::move(cores)), proc_(std::move(proc)) {
  std::sort(cores_.begin(), cores_.end());
  cores_.erase(std::unique(cores_.begin(), cores_.end()), cores_.end());
  start_ = read();
}

std::optional<ForeignCpuTime::Counters> ForeignCpuTime::read() const {
  if (cores_.empty()) return std::nullopt;
  const std::optional<std::string> stat = read_text(proc_ / "stat");
  const std::optional<uint64_t> own = read_own_ticks(proc_ / "self" / "stat");
  if (!stat || !own) return std::nullopt;
  Counters c;
  c.own = *own;
  for (int core : cores_) {
    const std::optional<CpuLine> line = read_cpu_line(*stat, core);
    if (!line) return std::nullopt;
    c.busy += line->busy;
    c.elapsed += line->elapsed;
  }
  return c;
}

std::optional<ForeignCpuTime::Share> ForeignCpuTime::share() const {
  const std::optional<Counters> now = read();
  if (!start_ || !now || now->elapsed <= start_->elapsed) return std::nullopt;
  const auto delta = [](uint64_t later, uint64_t earlier) { return later > earlier ? later - earlier : 0; };
  const uint64_t busy = delta(now->busy, start_->busy), own = delta(now->own, start_->own);
  const uint64_t foreign = busy > own ? busy - own : 0;
  const auto elapsed = static_cast<double>(now->elapsed - start_->elapsed);
  return Share{std::min(1.0, static_cast<double>(foreign) / elapsed), 1.0 / elapsed};
}

}  // namespace co_up
