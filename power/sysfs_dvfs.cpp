#include "power/sysfs_dvfs.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace co_up::power {
namespace {

namespace fs = std::filesystem;

std::string read_word(const fs::path& path) {
  std::ifstream in(path);
  std::string word;
  in >> word;
  return word;
}

bool file_lists(const fs::path& path, const std::string& word) {
  std::ifstream in(path);
  for (std::string w; in >> w;) {
    if (w == word) return true;
  }
  return false;
}

// Live controllers, for the terminate handler.
std::mutex g_live_mutex;
std::vector<SysfsDvfs*> g_live;
std::terminate_handler g_previous_terminate = nullptr;

void restore_on_terminate() {
  {
    std::unique_lock lock(g_live_mutex, std::try_to_lock);
    if (lock.owns_lock()) {
      for (SysfsDvfs* d : g_live) d->restore();
    }
  }
  if (g_previous_terminate != nullptr) g_previous_terminate();
  std::abort();
}

}  // namespace

DvfsPolicy parse_dvfs_policy(const std::string& text) {
  if (text == "strict") return DvfsPolicy::kStrict;
  if (text == "best-effort") return DvfsPolicy::kBestEffort;
  throw InputError("--dvfs='" + text + "' must be 'strict' or 'best-effort'");
}

std::string write_sysfs(const fs::path& path, const std::string& value) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  int err = 0;
  if (fd < 0) {
    err = errno;
  } else {
    const ssize_t n = ::write(fd, value.data(), value.size());
    if (n != static_cast<ssize_t>(value.size())) err = n < 0 ? errno : EIO;
    if (::close(fd) != 0 && err == 0) err = errno;
  }
  if (err == 0) return {};
  const char* name = strerrorname_np(err);
  return "failed to write " + value + " to " + path.string() + ": " + (name ? name : "E?") +
         " (" + std::strerror(err) + ")";
}

// One sysfs directory of a DVFS domain and what co_up changed in it.
struct SysfsDvfs::Node {
  fs::path dir;
  bool devfreq = false;
  bool prepared = false;
  bool userspace = false;  // governor path; else min/max clamp
  std::string saved_governor, saved_setspeed, saved_min, saved_max;
  std::string cur_min;  // clamp path: the min we last wrote (for write ordering)

  fs::path governor() const { return dir / (devfreq ? "governor" : "scaling_governor"); }
  fs::path setspeed() const { return dir / (devfreq ? "userspace/set_freq" : "scaling_setspeed"); }
  fs::path min() const { return dir / (devfreq ? "min_freq" : "scaling_min_freq"); }
  fs::path max() const { return dir / (devfreq ? "max_freq" : "scaling_max_freq"); }
  char letter = 0;
};

SysfsDvfs::SysfsDvfs(const Platform& platform, fs::path sysfs_root) : root_(std::move(sysfs_root)) {
  std::fill(std::begin(levels_), std::end(levels_), -1);
  for (const ProcessorSpec& p : platform.processors) {
    if (!p.dvfs.present()) continue;
    specs_.emplace_back(p.letter, p.dvfs);
    for (const std::string& n : p.dvfs.nodes) {
      auto node = std::make_unique<Node>();
      node->dir = root_ / n;
      node->devfreq = p.dvfs.driver == "devfreq";
      node->letter = p.letter;
      nodes_.push_back(std::move(node));
    }
  }
  std::lock_guard lock(g_live_mutex);
  g_live.push_back(this);
}

SysfsDvfs::~SysfsDvfs() {
  restore();
  std::lock_guard lock(g_live_mutex);
  g_live.erase(std::remove(g_live.begin(), g_live.end(), this), g_live.end());
}

const DvfsSpec* SysfsDvfs::spec(char letter) const {
  for (const auto& [l, s] : specs_) {
    if (l == letter) return &s;
  }
  return nullptr;
}

int SysfsDvfs::level(char letter) const {
  std::lock_guard lock(mutex_);
  return letter >= 'A' && letter <= 'Z' ? levels_[letter - 'A'] : -1;
}

std::string SysfsDvfs::write(const fs::path& path, const std::string& value) {
  std::string error = write_sysfs(path, value);
  writes_.push_back({path.string(), value, error.empty()});
  return error;
}

// Saves what this node's writes will change, before the first one.
std::string SysfsDvfs::prepare(Node& node) {
  if (node.prepared) return {};
  if (!fs::is_directory(node.dir)) {
    return "DVFS node " + node.dir.string() + " of '" + std::string(1, node.letter) +
           "' does not exist (check \"dvfs\".\"node\" in the platform file and --sysfs-root)";
  }
  const fs::path governors =
      node.dir / (node.devfreq ? "available_governors" : "scaling_available_governors");
  node.userspace = file_lists(governors, "userspace") && fs::exists(node.setspeed());
  if (node.userspace) {
    node.saved_governor = read_word(node.governor());
    if (node.saved_governor.empty()) return "cannot read " + node.governor().string();
    if (node.saved_governor == "userspace") node.saved_setspeed = read_word(node.setspeed());
  } else {
    node.saved_min = read_word(node.min());
    node.saved_max = read_word(node.max());
    if (node.saved_min.empty() || node.saved_max.empty()) {
      return "cannot read " + node.min().string() + " and " + node.max().string() +
             " (no userspace governor either)";
    }
    node.cur_min = node.saved_min;
  }
  node.prepared = true;
  touched_.push_back(&node);
  return {};
}

namespace {
int64_t to_int(const std::string& s) {
  try {
    return std::stoll(s);
  } catch (const std::exception&) {
    return 0;
  }
}
}  // namespace

std::string SysfsDvfs::set_level(char letter, int level) {
  const DvfsSpec* s = spec(letter);
  if (s == nullptr || level < 0 || level > s->max_level()) {
    return "no DVFS level " + std::to_string(level) + " for '" + std::string(1, letter) + "'";
  }
  std::lock_guard lock(mutex_);
  for (auto& node : nodes_) {
    if (node->letter != letter) continue;
    if (std::string e = prepare(*node); !e.empty()) return e;
    const int64_t value = s->frequencies_khz[static_cast<size_t>(level)] * (node->devfreq ? 1000 : 1);
    const std::string v = std::to_string(value);
    if (node->userspace) {
      if (read_word(node->governor()) != "userspace") {
        if (std::string e = write(node->governor(), "userspace"); !e.empty()) return e;
      }
      if (std::string e = write(node->setspeed(), v); !e.empty()) return e;
    } else {
      // Keep min <= max at every step: raise max first when going up, lower min first going down.
      const bool up = value >= to_int(node->cur_min);
      if (std::string e = write(up ? node->max() : node->min(), v); !e.empty()) return e;
      if (std::string e = write(up ? node->min() : node->max(), v); !e.empty()) return e;
      node->cur_min = v;
    }
  }
  levels_[letter - 'A'] = level;
  return {};
}

std::vector<std::string> SysfsDvfs::restore() {
  std::lock_guard lock(mutex_);
  std::vector<std::string> errors;
  auto note = [&](std::string e) {
    if (!e.empty()) errors.push_back(std::move(e));
  };
  for (auto it = touched_.rbegin(); it != touched_.rend(); ++it) {
    Node& node = **it;
    if (node.userspace) {
      if (!node.saved_setspeed.empty()) note(write(node.setspeed(), node.saved_setspeed));
      note(write(node.governor(), node.saved_governor));
    } else {
      const bool max_first = to_int(node.saved_max) >= to_int(node.cur_min);
      note(write(max_first ? node.max() : node.min(), max_first ? node.saved_max : node.saved_min));
      note(write(max_first ? node.min() : node.max(), max_first ? node.saved_min : node.saved_max));
    }
    node.prepared = false;
  }
  touched_.clear();
  std::fill(std::begin(levels_), std::end(levels_), -1);
  return errors;
}

std::vector<SysfsWrite> SysfsDvfs::writes() const {
  std::lock_guard lock(mutex_);
  return writes_;
}

void install_terminate_restore() {
  static std::once_flag once;
  std::call_once(once, [] { g_previous_terminate = std::set_terminate(restore_on_terminate); });
}

}  // namespace co_up::power
