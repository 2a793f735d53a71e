#include "power/sysfs_dvfs.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/io/input_file.h"
#include "power/dvfs_journal.h"

namespace co_up::power {

namespace fs = std::filesystem;

// A saved value as bytes in place: a signal handler reads it without allocating. Values longer
// than the buffer (never seen: governor names and frequencies are short) are not restored there.
struct FixedText {
  char text[64] = {};
  size_t size = 0;
  void set(const std::string& s) {
    size = s.size() < sizeof(text) ? s.size() : 0;
    std::memcpy(text, s.data(), size);
  }
};

// One node as restore_dvfs_async_signal_safe() sees it. Paths are built at construction and never
// change; saved values are filled before the node is published (EmergencyPlan::count).
struct EmergencyNode {
  std::string governor, setspeed, min, max;  // full paths
  bool userspace = false;
  bool restore_setspeed = false;
  FixedText saved_governor, saved_setspeed, saved_min, saved_max;
  std::atomic<bool> min_first{false};  // clamp mode: restore min before max (see restore_writes)
};

struct DvfsEmergencyPlan {
  explicit DvfsEmergencyPlan(size_t n) : nodes(n), first_use(n, 0) {}
  std::vector<EmergencyNode> nodes;  // index = the controller's node index; never resized
  std::vector<int> first_use;        // [0, count): node indices in order of first use
  std::atomic<int> count{0};
  std::string journal;               // "" without a journal
};

namespace {

// What restore_dvfs_async_signal_safe() reads: the plans of live controllers. Signal-handler
// state, the documented exception to "no hidden globals". A controller registers its plan at
// construction; before it changes or frees published data it waits until no reader is inside
// (g_readers), so the signal-side reader never blocks and never sees a half-written entry.
constexpr int kMaxPlans = 32;  // live controllers covered (co_up has one; tests a few)
std::atomic<DvfsEmergencyPlan*> g_plans[kMaxPlans];
std::atomic<int> g_readers{0};
// Set once the process is ending (restore_dvfs_async_signal_safe ran): no more level writes.
std::atomic<bool> g_frozen{false};
std::terminate_handler g_previous_terminate = nullptr;

void wait_for_readers() {
  while (g_readers.load() != 0) std::this_thread::yield();
}

void restore_on_terminate() {
  restore_dvfs_async_signal_safe();
  if (g_previous_terminate != nullptr) g_previous_terminate();
  std::abort();
}

int64_t to_int(const std::string& s) {
  try {
    return std::stoll(s);
  } catch (const std::exception&) {
    return 0;
  }
}

using io::read_attribute_word;

bool file_lists(const fs::path& path, const std::string& word) {
  std::istringstream in(io::read_attribute(path));
  for (std::string w; in >> w;) {
    if (w == word) return true;
  }
  return false;
}

// open/write/close: async-signal-safe.
bool write_raw(const std::string& path, const FixedText& value) noexcept {
  if (value.size == 0) return false;
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, value.text, value.size) == static_cast<ssize_t>(value.size);
  return ::close(fd) == 0 && ok;
}

bool restore_node(const EmergencyNode& n) noexcept {
  if (n.userspace) {
    bool ok = !n.restore_setspeed || write_raw(n.setspeed, n.saved_setspeed);
    return write_raw(n.governor, n.saved_governor) && ok;
  }
  if (n.min_first.load()) {
    const bool ok = write_raw(n.min, n.saved_min);
    return write_raw(n.max, n.saved_max) && ok;
  }
  const bool ok = write_raw(n.max, n.saved_max);
  return write_raw(n.min, n.saved_min) && ok;
}

}  // namespace

int restore_dvfs_async_signal_safe() noexcept {
  const int saved_errno = errno;
  g_frozen.store(true);
  g_readers.fetch_add(1);
  bool all_ok = true;
  int restored = 0;
  for (std::atomic<DvfsEmergencyPlan*>& slot : g_plans) {
    const DvfsEmergencyPlan* plan = slot.load();
    if (plan == nullptr) continue;
    const int count = plan->count.load();
    bool ok = true;
    for (int i = count - 1; i >= 0; --i) {
      ok = restore_node(plan->nodes[static_cast<size_t>(plan->first_use[static_cast<size_t>(i)])]) && ok;
    }
    if (ok && count > 0 && !plan->journal.empty()) ::unlink(plan->journal.c_str());
    all_ok = all_ok && ok;
    restored += count;
  }
  g_readers.fetch_sub(1);
  errno = saved_errno;
  return all_ok ? restored : -1;
}

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
  std::string rel;  // relative to the root, as the platform names it
  fs::path dir;
  std::string letters;  // processors it clocks (several: a shared DVFS domain)
  bool prepared = false;
  size_t index = 0;  // in nodes_ and the emergency plan
  JournalNode saved;  // devfreq, userspace and the saved values
  std::string cur_min;  // clamp path: the min we last wrote (for write ordering)

  fs::path file(const char* name) const { return dir / name; }
  fs::path governor() const { return file(node_files(saved.devfreq).governor); }
  fs::path setspeed() const { return file(node_files(saved.devfreq).setspeed); }
  fs::path min() const { return file(node_files(saved.devfreq).min); }
  fs::path max() const { return file(node_files(saved.devfreq).max); }
};

SysfsDvfs::SysfsDvfs(const Platform& platform, fs::path sysfs_root, fs::path journal_dir)
    : root_(std::move(sysfs_root)) {
  std::fill(std::begin(levels_), std::end(levels_), -1);
  for (const ProcessorSpec& p : platform.processors) {
    if (!p.dvfs.present()) continue;
    specs_.emplace_back(p.letter, p.dvfs);
    for (const std::string& n : p.dvfs.nodes) {
      auto same = std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& x) { return x->rel == n; });
      if (same != nodes_.end()) {  // one policy for several processors: one node
        (*same)->letters += p.letter;
        continue;
      }
      auto node = std::make_unique<Node>();
      node->rel = n;
      node->dir = root_ / n;
      node->saved.dir = n;
      node->saved.devfreq = p.dvfs.driver == "devfreq";
      node->letters = std::string(1, p.letter);
      node->index = nodes_.size();
      nodes_.push_back(std::move(node));
    }
  }
  emergency_ = std::make_unique<DvfsEmergencyPlan>(nodes_.size());
  for (const auto& node : nodes_) {
    EmergencyNode& e = emergency_->nodes[node->index];
    e.governor = node->governor().string();
    e.setspeed = node->setspeed().string();
    e.min = node->min().string();
    e.max = node->max().string();
  }
  if (!journal_dir.empty() && !nodes_.empty()) {
    static std::atomic<int> sequence{0};
    journal_file_ = journal_dir / ("dvfs-" + std::to_string(::getpid()) + "-" +
                                   std::to_string(++sequence) + ".json");
    emergency_->journal = journal_file_.string();
  }
  for (std::atomic<DvfsEmergencyPlan*>& slot : g_plans) {
    DvfsEmergencyPlan* expected = nullptr;
    if (slot.compare_exchange_strong(expected, emergency_.get())) break;
  }
}

SysfsDvfs::~SysfsDvfs() {
  restore();
  for (std::atomic<DvfsEmergencyPlan*>& slot : g_plans) {
    DvfsEmergencyPlan* expected = emergency_.get();
    if (slot.compare_exchange_strong(expected, nullptr)) break;
  }
  wait_for_readers();  // then emergency_ may go
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
  std::string error = g_frozen.load() ? "not writing " + value + " to " + path.string() +
                                            ": co_up is ending and has restored DVFS"
                                      : write_sysfs(path, value);
  writes_.push_back({path.string(), value, error.empty(), error});
  return error;
}

// The journal with every touched node and `adding`, written before `adding` is first written.
std::string SysfsDvfs::write_journal(const Node& adding) {
  if (journal_file_.empty()) return {};
  Journal j;
  j.file = journal_file_;
  j.pid = ::getpid();
  j.start_time = process_start_time(::getpid());
  j.sysfs_root = canonical_root(root_);
  for (const Node* n : touched_) j.nodes.push_back(n->saved);
  j.nodes.push_back(adding.saved);
  try {
    power::write_journal(j);
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

// Saves what this node's writes will change, journals it and publishes it for the emergency
// restore, before the first write.
std::string SysfsDvfs::prepare(Node& node) {
  if (node.prepared) return {};
  if (!fs::is_directory(node.dir)) {
    return "DVFS node " + node.dir.string() + " of '" + node.letters +
           "' does not exist (check \"dvfs\".\"node\" in the platform file and --sysfs-root)";
  }
  JournalNode& saved = node.saved;
  const fs::path governors =
      node.dir / (saved.devfreq ? "available_governors" : "scaling_available_governors");
  saved.userspace = file_lists(governors, "userspace") && fs::exists(node.setspeed());
  saved.governor.clear();
  saved.setspeed.clear();
  saved.min.clear();
  saved.max.clear();
  if (saved.userspace) {
    saved.governor = read_attribute_word(node.governor());
    if (saved.governor.empty()) return "cannot read " + node.governor().string();
    if (saved.governor == "userspace") saved.setspeed = read_attribute_word(node.setspeed());
  } else {
    saved.min = read_attribute_word(node.min());
    saved.max = read_attribute_word(node.max());
    if (saved.min.empty() || saved.max.empty()) {
      return "cannot read " + node.min().string() + " and " + node.max().string() +
             " (no userspace governor either)";
    }
    node.cur_min = saved.min;
  }
  if (std::string e = write_journal(node); !e.empty()) return e;
  // The emergency plan's entry: filled while unpublished (restore() waited for readers when it
  // unpublished the last round), then published with one store.
  EmergencyNode& e = emergency_->nodes[node.index];
  e.userspace = saved.userspace;
  e.restore_setspeed = !saved.setspeed.empty();
  e.saved_governor.set(saved.governor);
  e.saved_setspeed.set(saved.setspeed);
  e.saved_min.set(saved.min);
  e.saved_max.set(saved.max);
  e.min_first.store(false);
  const int count = emergency_->count.load();
  emergency_->first_use[static_cast<size_t>(count)] = static_cast<int>(node.index);
  emergency_->count.store(count + 1);
  node.prepared = true;
  touched_.push_back(&node);
  return {};
}

std::string SysfsDvfs::set_level(char letter, int level) {
  const DvfsSpec* s = spec(letter);
  if (s == nullptr || level < 0 || level > s->max_level()) {
    // Users count levels from 1 (--dvfs, plan tables); `level` is the 0-based index.
    const std::string range = s == nullptr ? "no DVFS levels"
                                           : "levels 1.." + std::to_string(s->max_level() + 1);
    return "no DVFS level " + std::to_string(level + 1) + " for '" + std::string(1, letter) +
           "' (it has " + range + ")";
  }
  std::lock_guard lock(mutex_);
  const int64_t khz = s->frequencies_khz[static_cast<size_t>(level)];
  for (auto& node : nodes_) {
    if (node->letters.find(letter) == std::string::npos) continue;
    if (std::string e = prepare(*node); !e.empty()) return e;
    const int64_t value = khz * (node->saved.devfreq ? 1000 : 1);
    const std::string v = std::to_string(value);
    if (node->saved.userspace) {
      if (read_attribute_word(node->governor()) != "userspace") {
        if (std::string e = write(node->governor(), "userspace"); !e.empty()) return e;
      }
      if (std::string e = write(node->setspeed(), v); !e.empty()) return e;
    } else {
      // Keep min <= max at every step: raise max first when going up, lower min first going down.
      const bool up = value >= to_int(node->cur_min);
      if (std::string e = write(up ? node->max() : node->min(), v); !e.empty()) return e;
      node->cur_min = up ? node->cur_min : v;
      emergency_->nodes[node->index].min_first.store(to_int(node->saved.max) < to_int(node->cur_min));
      if (std::string e = write(up ? node->min() : node->max(), v); !e.empty()) return e;
      node->cur_min = v;
      emergency_->nodes[node->index].min_first.store(to_int(node->saved.max) < value);
    }
  }
  // Every processor clocked by the same nodes is now at this frequency too.
  for (const auto& [other, table] : specs_) {
    const bool shares = std::any_of(nodes_.begin(), nodes_.end(), [&](const auto& n) {
      return n->letters.find(letter) != std::string::npos && n->letters.find(other) != std::string::npos;
    });
    if (!shares) continue;
    const auto it = std::find(table.frequencies_khz.begin(), table.frequencies_khz.end(), khz);
    levels_[other - 'A'] =
        it == table.frequencies_khz.end() ? -1 : static_cast<int>(it - table.frequencies_khz.begin());
  }
  levels_[letter - 'A'] = level;
  return {};
}

std::vector<std::string> SysfsDvfs::restore() {
  std::lock_guard lock(mutex_);
  std::vector<std::string> errors;
  for (auto it = touched_.rbegin(); it != touched_.rend(); ++it) {
    Node& node = **it;
    for (const auto& [file, value] : restore_writes(node.saved, to_int(node.cur_min))) {
      // Written even after the emergency restore froze level writes: these are the saved values.
      std::string e = write_sysfs(node.dir / file, value);
      writes_.push_back({(node.dir / file).string(), value, e.empty(), e});
      if (!e.empty()) errors.push_back(std::move(e));
    }
    node.prepared = false;
  }
  if (!touched_.empty()) {
    emergency_->count.store(0);
    wait_for_readers();  // before prepare() refills entries of this plan
    if (errors.empty() && !journal_file_.empty()) {
      std::error_code ec;
      fs::remove(journal_file_, ec);
    }
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
