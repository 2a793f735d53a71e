#include "power/dvfs_journal.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/io/input_file.h"

namespace co_up::power {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kJournalVersion = 1;

bool writable_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir, ec) && ::access(dir.c_str(), W_OK) == 0;
}

int64_t to_int(const std::string& s) {
  try {
    return std::stoll(s);
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

fs::path resolve_state_dir(const std::string& option) {
  if (!option.empty()) return option;
  if (const char* env = std::getenv("CO_UP_STATE_DIR"); env != nullptr && *env != '\0') return env;
  const fs::path system_dir = "/var/lib/co_up";
  std::error_code ec;
  if (fs::exists(system_dir, ec) ? writable_dir(system_dir) : writable_dir(system_dir.parent_path())) {
    return system_dir;
  }
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg != nullptr && *xdg == '/') {
    return fs::path(xdg) / "co_up";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') {
    return fs::path(home) / ".local/state/co_up";
  }
  return {};
}

NodeFiles node_files(bool devfreq) {
  if (devfreq) return {"governor", "userspace/set_freq", "min_freq", "max_freq"};
  return {"scaling_governor", "scaling_setspeed", "scaling_min_freq", "scaling_max_freq"};
}

std::vector<std::pair<std::string, std::string>> restore_writes(const JournalNode& node,
                                                                int64_t current_min) {
  const NodeFiles f = node_files(node.devfreq);
  if (node.userspace) {
    std::vector<std::pair<std::string, std::string>> writes;
    if (!node.setspeed.empty()) writes.emplace_back(f.setspeed, node.setspeed);
    writes.emplace_back(f.governor, node.governor);
    return writes;
  }
  if (to_int(node.max) >= current_min) return {{f.max, node.max}, {f.min, node.min}};
  return {{f.min, node.min}, {f.max, node.max}};
}

namespace {
// State (field 3) and start time (field 22) of /proc/<pid>/stat; {0, 0} when unreadable.
std::pair<char, uint64_t> process_stat(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
  const auto paren = stat.rfind(')');
  if (paren == std::string::npos) return {0, 0};
  std::istringstream fields(stat.substr(paren + 1));
  std::string field;
  char state = 0;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 3) state = field[0];
    if (i == 22) return {state, static_cast<uint64_t>(to_int(field))};
  }
  return {state, 0};
}
}  // namespace

uint64_t process_start_time(pid_t pid) { return process_stat(pid).second; }

bool journal_owner_alive(const Journal& journal) {
  if (journal.pid <= 0) return false;
  const auto pid = static_cast<pid_t>(journal.pid);
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  const auto [state, start_time] = process_stat(pid);
  if (state == 'Z' || state == 'X') return false;  // killed, not yet reaped by its parent
  if (journal.start_time == 0 || start_time == 0) return true;  // cannot tell a reused pid
  return start_time == journal.start_time;
}

std::string canonical_root(const fs::path& root) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(root, ec), ec);
  if (ec) p = fs::absolute(root);
  std::string s = p.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

void write_journal(const Journal& journal) {
  json nodes = json::array();
  for (const JournalNode& n : journal.nodes) {
    json j = {{"dir", n.dir},
              {"driver", n.devfreq ? "devfreq" : "cpufreq"},
              {"mode", n.userspace ? "userspace" : "clamp"}};
    if (n.userspace) {
      j["governor"] = n.governor;
      j["setspeed"] = n.setspeed;
    } else {
      j["min"] = n.min;
      j["max"] = n.max;
    }
    nodes.push_back(std::move(j));
  }
  const json j = {{"co_up_dvfs_journal", kJournalVersion},
                  {"pid", journal.pid},
                  {"start_time", journal.start_time},
                  {"sysfs_root", journal.sysfs_root},
                  {"nodes", std::move(nodes)}};
  std::error_code ec;
  fs::create_directories(journal.file.parent_path(), ec);
  const fs::path tmp = journal.file.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(1) << "\n";
    out.close();
    if (!out) {
      throw RuntimeError("cannot write the DVFS journal " + journal.file.string() +
                         " (co_up keeps the original governors and frequencies there while it "
                         "changes them; use --state-dir=DIR or CO_UP_STATE_DIR for a writable "
                         "directory)");
    }
  }
  fs::rename(tmp, journal.file, ec);
  if (ec) {
    throw RuntimeError("cannot write the DVFS journal " + journal.file.string() + ": " +
                       ec.message() + " (use --state-dir=DIR for a writable directory)");
  }
}

Journal read_journal(const fs::path& file) {
  std::string text;
  try {
    text = io::read_input_file(file, "DVFS journal", io::kMaxConfigBytes);
  } catch (const InputError& e) {
    throw RuntimeError(e.what());
  }
  Journal journal;
  journal.file = file;
  try {
    const json j = json::parse(text);
    if (j.value("co_up_dvfs_journal", 0) != kJournalVersion) {
      throw RuntimeError(file.string() + " is not a co_up DVFS journal (version 1)");
    }
    journal.pid = j.at("pid").get<int64_t>();
    journal.start_time = j.value("start_time", uint64_t{0});
    journal.sysfs_root = j.at("sysfs_root").get<std::string>();
    for (const json& n : j.at("nodes")) {
      JournalNode node;
      node.dir = n.at("dir").get<std::string>();
      node.devfreq = n.at("driver").get<std::string>() == "devfreq";
      node.userspace = n.at("mode").get<std::string>() == "userspace";
      if (node.userspace) {
        node.governor = n.at("governor").get<std::string>();
        node.setspeed = n.value("setspeed", std::string());
        if (node.governor.empty()) throw RuntimeError(file.string() + ": a node without a governor");
      } else {
        node.min = n.at("min").get<std::string>();
        node.max = n.at("max").get<std::string>();
      }
      if (node.dir.empty() || node.dir.find("..") != std::string::npos || node.dir[0] == '/') {
        throw RuntimeError(file.string() + ": node dir '" + node.dir + "' is not a path inside the sysfs root");
      }
      journal.nodes.push_back(std::move(node));
    }
  } catch (const json::exception& e) {
    throw RuntimeError(file.string() + " is not a valid DVFS journal (" + e.what() + ")");
  }
  return journal;
}

JournalScan scan_journals(const fs::path& state_dir, const fs::path& sysfs_root) {
  JournalScan scan;
  std::error_code ec;
  if (state_dir.empty() || !fs::is_directory(state_dir, ec)) return scan;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(state_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("dvfs-", 0) == 0 && entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  const std::string root = canonical_root(sysfs_root);
  for (const fs::path& file : files) {
    try {
      Journal j = read_journal(file);
      if (j.sysfs_root != root) {
        ++scan.other_roots;
      } else if (journal_owner_alive(j)) {
        scan.live.push_back(std::move(j));
      } else {
        scan.dead.push_back(std::move(j));
      }
    } catch (const std::exception& e) {
      if (fs::exists(file, ec)) scan.unreadable.push_back(e.what());  // else removed meanwhile
    }
  }
  return scan;
}

std::vector<SysfsWrite> restore_journal(const Journal& journal) {
  std::vector<SysfsWrite> writes;
  bool ok = true;
  for (auto it = journal.nodes.rbegin(); it != journal.nodes.rend(); ++it) {
    const fs::path dir = fs::path(journal.sysfs_root) / it->dir;
    const int64_t current_min = to_int(io::read_attribute_word(dir / node_files(it->devfreq).min));
    for (const auto& [file, value] : restore_writes(*it, current_min)) {
      SysfsWrite w{(dir / file).string(), value, true, {}};
      w.error = write_sysfs(dir / file, value);
      w.ok = w.error.empty();
      ok = ok && w.ok;
      writes.push_back(std::move(w));
    }
  }
  if (ok) {
    std::error_code ec;
    fs::remove(journal.file, ec);
  }
  return writes;
}

std::string dead_journal_warning(const JournalScan& scan, const std::string& sysfs_root_option,
                                 const std::string& state_dir_option) {
  if (scan.dead.empty()) return {};
  std::string pids, files;
  for (const Journal& j : scan.dead) {
    pids += (pids.empty() ? "" : ", ") + std::to_string(j.pid);
    files += (files.empty() ? "" : ", ") + j.file.string();
  }
  std::string command = "co_up --restore-dvfs";
  if (sysfs_root_option != "/sys") command += " --sysfs-root=" + sysfs_root_option;
  if (!state_dir_option.empty()) command += " --state-dir=" + state_dir_option;
  const bool one = scan.dead.size() == 1;
  return std::string(one ? "a co_up run (pid " : "co_up runs (pids ") + pids + ") ended without " +
         "restoring the DVFS governors and frequencies it changed under " + scan.dead.front().sysfs_root +
         " (journal" + (one ? " " : "s ") + files + "); run '" + command + "' to put them back";
}

}  // namespace co_up::power
