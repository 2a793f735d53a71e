#include "core/platform.h"

#include <sched.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/cluster_split.h"
#include "core/error.h"
#include "core/io/input_file.h"
#include "core/json_input.h"

namespace co_up {
namespace {

using nlohmann::json;

// CPU_SETSIZE: what sched_setaffinity can name.
constexpr int64_t kMaxCore = 1023;
constexpr int64_t kMaxThreads = 1024;
constexpr int64_t kMaxKhz = 100'000'000;  // 100 GHz
constexpr int64_t kMaxMillivolts = 100'000;
constexpr int64_t kMaxGpioLine = 65535;
constexpr double kMaxModelConstant = 1e6;

std::string core_list(const std::vector<int>& cores) {
  std::ostringstream out;
  for (size_t i = 0; i < cores.size(); ++i) out << (i ? "," : "") << cores[i];
  return out.str();
}

char parse_letter(const json& value, const std::string& where) {
  if (!value.is_string() || value.get<std::string>().size() != 1 ||
      !std::isupper(static_cast<unsigned char>(value.get<std::string>()[0]))) {
    throw InputError(where + " must be one upper-case letter such as \"B\"");
  }
  return value.get<std::string>()[0];
}

DvfsSpec parse_dvfs(const json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(where + " must be an object");
  DvfsSpec d;
  d.driver = j.value("driver", std::string("cpufreq"));
  if (d.driver != "cpufreq" && d.driver != "devfreq") {
    throw InputError(json_key(where, "driver") + " is \"" + d.driver + "\"; use cpufreq or devfreq");
  }
  if (j.contains("node")) {
    if (j["node"].is_string()) {
      d.nodes.push_back(j["node"].get<std::string>());
    } else if (j["node"].is_array()) {
      for (const json& n : j["node"]) {
        if (!n.is_string()) throw InputError(json_key(where, "node") + " entries must be strings");
        d.nodes.push_back(n.get<std::string>());
      }
    }
  }
  if (d.nodes.empty()) throw InputError(where + " needs \"node\": its sysfs directory");
  if (!j.contains("frequencies_khz") || !j["frequencies_khz"].is_array() ||
      j["frequencies_khz"].empty()) {
    throw InputError(where + " needs \"frequencies_khz\": [ascending kHz values]");
  }
  const json& frequencies = j["frequencies_khz"];
  for (size_t i = 0; i < frequencies.size(); ++i) {
    const int64_t khz = json_integer(frequencies[i], json_index(json_key(where, "frequencies_khz"), i),
                                     1, kMaxKhz, "a frequency in kHz");
    if (!d.frequencies_khz.empty() && khz <= d.frequencies_khz.back()) {
      throw InputError(json_key(where, "frequencies_khz") + " must be strictly ascending");
    }
    d.frequencies_khz.push_back(khz);
  }
  if (j.contains("voltages_mv")) {
    if (!j["voltages_mv"].is_array()) throw InputError(json_key(where, "voltages_mv") + " must be a list of millivolts");
    const json& voltages = j["voltages_mv"];
    for (size_t i = 0; i < voltages.size(); ++i) {
      d.voltages_mv.push_back(static_cast<int>(json_integer(
          voltages[i], json_index(json_key(where, "voltages_mv"), i), 1, kMaxMillivolts, "a voltage in mV")));
    }
    if (d.voltages_mv.size() != d.frequencies_khz.size()) {
      throw InputError(where + " has " + std::to_string(d.voltages_mv.size()) +
                       " voltages for " + std::to_string(d.frequencies_khz.size()) +
                       " frequencies (give one per level or none)");
    }
  }
  // Written as --frequency writes levels (1 = lowest); stored as a position in the table.
  // Absent: none declared.
  d.default_level = -1;
  if (j.contains("default_level")) {
    d.default_level = static_cast<int>(json_integer(j["default_level"], json_key(where, "default_level"),
                                                    1, d.max_level() + 1, "a level of this table")) - 1;
  }
  return d;
}

SensorSpec parse_sensor(const json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(where + " must be an object");
  SensorSpec s;
  s.name = j.value("name", std::string());
  s.kind = j.value("kind", std::string());
  s.processors = j.value("processors", std::string());
  s.path = j.value("path", std::string());
  s.current = j.value("current", std::string());
  s.voltage = j.value("voltage", std::string());
  s.max_path = j.value("max_path", std::string());
  if (j.contains("scale")) s.scale = json_number(j["scale"], json_key(where, "scale"), 0, 1e12, "a scale factor");
  if (s.scale == 0) throw InputError(json_key(where, "scale") + " = 0 must be above 0");
  if (s.name.empty()) throw InputError(where + " needs a \"name\"");
  if (s.kind == "power" || s.kind == "energy") {
    if (s.path.empty()) throw InputError(where + " ('" + s.name + "') needs \"path\"");
  } else if (s.kind == "iv") {
    if (s.current.empty() || s.voltage.empty()) {
      throw InputError(where + " ('" + s.name + "') needs \"current\" and \"voltage\"");
    }
  } else {
    throw InputError(where + " ('" + s.name + "') has kind \"" + s.kind +
                     "\"; use power, iv or energy");
  }
  return s;
}

GpioSpec parse_gpio(const json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(where + " must be an object");
  GpioSpec g;
  g.chip = j.value("chip", std::string());
  g.mode = j.value("mode", std::string("edge"));
  if (g.chip.empty()) throw InputError(where + " needs \"chip\" (e.g. \"gpiochip0\")");
  if (g.mode != "edge" && g.mode != "code") {
    throw InputError(json_key(where, "mode") + " is \"" + g.mode + "\"; use edge or code");
  }
  if (!j.contains("lines") || !j["lines"].is_array() || j["lines"].empty()) {
    throw InputError(where + " needs \"lines\": [line offsets]");
  }
  for (size_t i = 0; i < j["lines"].size(); ++i) {
    g.lines.push_back(static_cast<unsigned>(json_integer(
        j["lines"][i], json_index(json_key(where, "lines"), i), 0, kMaxGpioLine, "a line offset")));
  }
  if (g.mode == "edge" && g.lines.size() != 1) {
    throw InputError(where + " in edge mode takes one line (code mode takes several)");
  }
  return g;
}

ProcessorSpec parse_processor(const json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(where + " must be an object");
  ProcessorSpec p;
  if (!j.contains("letter")) throw InputError(where + " has no \"letter\"");
  p.letter = parse_letter(j["letter"], json_key(where, "letter"));
  const std::string here = where + " ('" + std::string(1, p.letter) + "')";
  p.name = j.value("name", std::string(1, p.letter));
  p.kind = j.value("kind", std::string("cpu"));
  if (p.kind != "cpu" && p.kind != "gpu" && p.kind != "npu" && p.kind != "dsp") {
    throw InputError(here + " has kind \"" + p.kind + "\"; use cpu, gpu, npu or dsp");
  }
  if (!j.contains("backend")) throw InputError(here + " has no \"backend\" (plugin name)");
  const json& backend = j["backend"];
  if (backend.is_string()) {
    p.backends.push_back(backend.get<std::string>());
  } else if (backend.is_array() && !backend.empty()) {
    for (const json& b : backend) {
      if (!b.is_string()) throw InputError(json_key(where, "backend") + " entries must be strings");
      p.backends.push_back(b.get<std::string>());
    }
  } else {
    throw InputError(json_key(where, "backend") + " must be a plugin name or a list of names");
  }
  if (p.is_cpu()) {
    if (!j.contains("cores") || !j["cores"].is_array() || j["cores"].empty()) {
      throw InputError(here + " is a CPU cluster and needs \"cores\": [ids]");
    }
    for (size_t i = 0; i < j["cores"].size(); ++i) {
      p.cores.push_back(static_cast<int>(json_integer(
          j["cores"][i], json_index(json_key(where, "cores"), i), 0, kMaxCore, "a core number")));
    }
    p.threads = static_cast<int>(p.cores.size());
    if (j.contains("threads")) {
      p.threads = static_cast<int>(
          json_integer(j["threads"], json_key(where, "threads"), 1, kMaxThreads, "a thread count"));
    }
    if (p.threads < 1 || p.threads > static_cast<int>(p.cores.size())) {
      throw InputError(here + " has threads " + std::to_string(p.threads) + " for " +
                       std::to_string(p.cores.size()) + " core(s) (use 1.." +
                       std::to_string(p.cores.size()) + ")");
    }
  } else {
    if (!j.contains("host")) throw InputError(here + " needs \"host\": the CPU letter hosting it");
    p.host = parse_letter(j["host"], json_key(where, "host"));
  }
  if (j.contains("dvfs")) p.dvfs = parse_dvfs(j["dvfs"], json_key(where, "dvfs"));
  if (j.contains("power_model")) {
    const json& m = j["power_model"];
    if (!m.is_object() || !m.contains("alpha")) {
      throw InputError(json_key(where, "power_model") + " must be {\"alpha\": number, \"beta\": number}");
    }
    const std::string model = json_key(where, "power_model");
    p.power_model.present = true;
    p.power_model.alpha = json_number(m["alpha"], json_key(model, "alpha"), 0, kMaxModelConstant);
    if (m.contains("beta")) {
      p.power_model.beta = json_number(m["beta"], json_key(model, "beta"), 0, kMaxModelConstant);
    }
  }
  if (j.contains("options")) {
    if (!j["options"].is_object()) throw InputError(json_key(where, "options") + " must be an object");
    for (const auto& [key, value] : j["options"].items()) {
      p.options.emplace_back(key, value.is_string() ? value.get<std::string>() : value.dump());
    }
  }
  return p;
}

void check_consistency(const Platform& platform, const std::string& origin) {
  std::set<char> letters;
  std::map<int, char> owner;
  for (const ProcessorSpec& p : platform.processors) {
    if (!letters.insert(p.letter).second) {
      throw InputError(origin + ": letter '" + std::string(1, p.letter) + "' is defined twice");
    }
    for (int core : p.cores) {
      auto [it, inserted] = owner.emplace(core, p.letter);
      if (!inserted) {
        throw InputError(origin + ": core " + std::to_string(core) + " belongs to both '" +
                         std::string(1, it->second) + "' and '" + std::string(1, p.letter) +
                         "' (CPU clusters must not overlap)");
      }
    }
  }
  for (const ProcessorSpec& p : platform.processors) {
    if (p.is_cpu()) continue;
    const ProcessorSpec* host = platform.find(p.host);
    if (host == nullptr || !host->is_cpu()) {
      throw InputError(origin + ": '" + std::string(1, p.letter) + "' has host '" +
                       std::string(1, p.host) + "', which is not a CPU cluster of this platform");
    }
  }
}

std::vector<int> online_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cores;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cores.push_back(c);
    }
  }
  if (cores.empty()) cores.push_back(0);
  return cores;
}

std::string read_line(const std::filesystem::path& path) {
  const std::string text = io::read_attribute(path);
  return text.substr(0, text.find('\n'));
}

// "0-3,6" or "0 1 2 3" (sysfs uses both) -> {0,1,2,3,...}
std::vector<int> parse_cpu_list(std::string text) {
  std::replace(text.begin(), text.end(), ' ', ',');
  std::vector<int> cores;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (part.empty()) continue;
    const auto dash = part.find('-');
    try {
      const int first = std::stoi(part.substr(0, dash));
      const int last = dash == std::string::npos ? first : std::stoi(part.substr(dash + 1));
      for (int c = first; c <= last; ++c) cores.push_back(c);
    } catch (const std::exception&) {
      return {};
    }
  }
  return cores;
}

// A cpufreq policy's levels: scaling_available_frequencies, else cpuinfo min and max.
DvfsSpec cpufreq_table(const std::filesystem::path& policy, const std::string& node) {
  DvfsSpec d;
  d.driver = "cpufreq";
  d.nodes.push_back(node);
  std::stringstream list(read_line(policy / "scaling_available_frequencies"));
  std::vector<int64_t> khz;
  for (std::string word; list >> word;) {
    try {
      khz.push_back(std::stoll(word));
    } catch (const std::exception&) {
    }
  }
  if (khz.empty()) {
    for (const char* file : {"cpuinfo_min_freq", "cpuinfo_max_freq"}) {
      try {
        khz.push_back(std::stoll(read_line(policy / file)));
      } catch (const std::exception&) {
      }
    }
  }
  std::sort(khz.begin(), khz.end());
  khz.erase(std::unique(khz.begin(), khz.end()), khz.end());
  if (!khz.empty() && khz.front() > 0) d.frequencies_khz = std::move(khz);
  return d;
}

ProcessorSpec cpu_cluster(char letter, const std::string& name, std::vector<int> cores) {
  ProcessorSpec p;
  p.letter = letter;
  p.name = name + " (cores " + core_list(cores) + ")";
  p.kind = "cpu";
  p.backends = {"cpu-xnnpack", "cpu-reference"};  // the fast one once its plugin exists
  p.threads = static_cast<int>(cores.size());
  p.cores = std::move(cores);
  return p;
}

}  // namespace

const ProcessorSpec* Platform::find(char letter) const {
  for (const ProcessorSpec& p : processors) {
    if (p.letter == letter) return &p;
  }
  return nullptr;
}

ProcessorSpec* Platform::find(char letter) {
  for (ProcessorSpec& p : processors) {
    if (p.letter == letter) return &p;
  }
  return nullptr;
}

std::string Platform::dvfs_domain(char letter) const {
  const ProcessorSpec* self = find(letter);
  if (self == nullptr || !self->dvfs.present()) return {};
  std::set<std::string> nodes(self->dvfs.nodes.begin(), self->dvfs.nodes.end());
  std::set<char> members = {letter};
  // Grow until no processor outside shares a node with one inside (transitive closure).
  for (bool grew = true; grew;) {
    grew = false;
    for (const ProcessorSpec& p : processors) {
      if (members.count(p.letter) != 0 || !p.dvfs.present()) continue;
      if (std::any_of(p.dvfs.nodes.begin(), p.dvfs.nodes.end(),
                      [&](const std::string& n) { return nodes.count(n) != 0; })) {
        members.insert(p.letter);
        nodes.insert(p.dvfs.nodes.begin(), p.dvfs.nodes.end());
        grew = true;
      }
    }
  }
  std::string domain;
  for (const ProcessorSpec& p : processors) {
    if (members.count(p.letter) != 0) domain += p.letter;
  }
  return domain;
}

std::string Platform::letters() const {
  std::string result;
  for (const ProcessorSpec& p : processors) result += p.letter;
  return result;
}

const std::vector<int>& Platform::host_cores(char letter) const {
  const ProcessorSpec* p = find(letter);
  if (p == nullptr) throw InputError("platform '" + name + "' has no processor '" + letter + "'");
  if (p->is_cpu()) return p->cores;
  return host_cores(p->host);
}

Platform parse_platform(const std::string& json_text, const std::string& origin) {
  const json j = parse_json(json_text, origin);
  if (!j.is_object()) throw InputError(origin + " must hold a JSON object");
  Platform platform;
  // A string where a number belongs (or the reverse) surfaces as nlohmann's type_error from
  // j.value() and get(): one line naming the file, like every other mistake in it.
  try {
    platform.name = j.value("name", std::string("unnamed"));
    platform.description = j.value("description", std::string());
    if (!j.contains("processors") || !j["processors"].is_array() || j["processors"].empty()) {
      throw InputError(origin + " has no \"processors\" list");
    }
    for (size_t i = 0; i < j["processors"].size(); ++i) {
      platform.processors.push_back(
          parse_processor(j["processors"][i], json_index(origin + ": \"processors\"", i)));
    }
    if (j.contains("sensors")) {
      if (!j["sensors"].is_array()) throw InputError(origin + ": \"sensors\" must be a list");
      for (size_t i = 0; i < j["sensors"].size(); ++i) {
        platform.sensors.push_back(
            parse_sensor(j["sensors"][i], json_index(origin + ": \"sensors\"", i)));
      }
    }
    if (j.contains("gpio")) platform.gpio = parse_gpio(j["gpio"], origin + ": \"gpio\"");
  } catch (const json::exception& e) {
    throw InputError(origin + ": a field has the wrong type (" + json_error_text(e) + ")");
  }
  check_consistency(platform, origin);
  return platform;
}

Platform load_platform(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw InputError("cannot read platform file '" + path.string() +
                     "' (check the path; shipped ones are in platforms/)");
  }
  return parse_platform(io::read_input_file(path, "platform file", io::kMaxConfigBytes),
                        "platform '" + path.string() + "'");
}

Platform detect_host_platform(const std::filesystem::path& sysfs_root) {
  // Policies, in order of their first core; clusters = policies grouped by maximum frequency.
  struct Policy {
    long max_khz = 0;
    std::vector<int> cores;
    DvfsSpec dvfs;
  };
  std::vector<Policy> policies;
  const auto cpufreq = sysfs_root / "devices/system/cpu/cpufreq";
  std::error_code ec;
  if (std::filesystem::is_directory(cpufreq, ec)) {
    for (const auto& entry : std::filesystem::directory_iterator(cpufreq, ec)) {
      if (entry.path().filename().string().rfind("policy", 0) != 0) continue;
      std::vector<int> cores = parse_cpu_list(read_line(entry.path() / "related_cpus"));
      if (cores.empty()) cores = parse_cpu_list(read_line(entry.path() / "affected_cpus"));
      if (cores.empty()) continue;
      long khz = 0;
      try {
        khz = std::stol(read_line(entry.path() / "cpuinfo_max_freq"));
      } catch (const std::exception&) {
      }
      std::sort(cores.begin(), cores.end());
      policies.push_back({khz, std::move(cores),
                          cpufreq_table(entry.path(), "devices/system/cpu/cpufreq/" +
                                                          entry.path().filename().string())});
    }
  }
  std::sort(policies.begin(), policies.end(),
            [](const Policy& a, const Policy& b) { return a.cores < b.cores; });
  // Rank by maximum frequency; policies at one frequency are one kind of core: merge their cores.
  std::vector<std::pair<long, std::vector<int>>> clusters;
  for (const Policy& p : policies) {
    auto it = std::find_if(clusters.begin(), clusters.end(),
                           [&](const auto& c) { return c.first == p.max_khz; });
    if (it == clusters.end()) {
      clusters.emplace_back(p.max_khz, p.cores);
    } else {
      it->second.insert(it->second.end(), p.cores.begin(), p.cores.end());
    }
  }
  std::stable_sort(clusters.begin(), clusters.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });

  Platform platform;
  platform.name = "host";
  if (clusters.size() >= 2) {
    platform.description = "this machine: big.LITTLE clusters from cpufreq";
    platform.processors.push_back(cpu_cluster('B', "big CPU cluster", clusters[0].second));
    platform.processors.push_back(cpu_cluster('L', "LITTLE CPU cluster", clusters[1].second));
  } else {
    // A symmetric CPU: split the cores into two halves so that B and L are real, separate
    // clusters whose threads never compete for a core.
    std::vector<int> cores = clusters.empty() ? online_cores() : clusters[0].second;
    std::sort(cores.begin(), cores.end());
    platform.description = "this machine: symmetric CPU split into two halves";
    const size_t half = (cores.size() + 1) / 2;
    platform.processors.push_back(
        cpu_cluster('B', "CPU half B", std::vector<int>(cores.begin(), cores.begin() + half)));
    if (cores.size() > 1) {
      platform.processors.push_back(
          cpu_cluster('L', "CPU half L", std::vector<int>(cores.begin() + half, cores.end())));
    }
  }
  // Each cluster is clocked by exactly the policies of its own cores; a level must be one that
  // every one of them offers. A policy that also covers another cluster's cores makes the two one
  // DVFS domain (Platform::dvfs_domain), which --list-frequencies reports.
  for (ProcessorSpec& cluster : platform.processors) {
    DvfsSpec dvfs;
    for (const Policy& p : policies) {
      const bool covers = std::any_of(p.cores.begin(), p.cores.end(), [&](int c) {
        return std::find(cluster.cores.begin(), cluster.cores.end(), c) != cluster.cores.end();
      });
      if (!covers || !p.dvfs.present()) continue;
      if (dvfs.nodes.empty()) {
        dvfs = p.dvfs;
        continue;
      }
      dvfs.nodes.push_back(p.dvfs.nodes.front());
      std::vector<int64_t> common;
      std::set_intersection(dvfs.frequencies_khz.begin(), dvfs.frequencies_khz.end(),
                            p.dvfs.frequencies_khz.begin(), p.dvfs.frequencies_khz.end(),
                            std::back_inserter(common));
      dvfs.frequencies_khz = std::move(common);
    }
    if (dvfs.present()) cluster.dvfs = std::move(dvfs);
  }
  ProcessorSpec gpu;
  gpu.letter = 'G';
  gpu.name = "OpenCL GPU";
  gpu.kind = "gpu";
  gpu.backends = {"opencl"};
  gpu.host = 'B';
  platform.processors.push_back(gpu);
  ProcessorSpec npu;
  npu.letter = 'N';
  npu.name = "NPU";
  npu.kind = "npu";
  npu.backends = {"rknn", "npu-int8"};
  npu.host = platform.find('L') != nullptr ? 'L' : 'B';
  platform.processors.push_back(npu);
  return platform;
}

void apply_overrides(Platform& platform, const CpuOverrides& o) {
  auto apply_cpu = [&](char letter, const char* cores_flag, const char* threads_flag,
                       std::optional<int> cores, std::optional<int> threads) {
    if (!cores && !threads) return;
    ProcessorSpec* p = platform.find(letter);
    if (p == nullptr || !p->is_cpu()) {
      throw InputError(std::string(cores ? cores_flag : threads_flag) + " is set but platform '" +
                       platform.name + "' has no CPU cluster '" + letter + "'");
    }
    if (cores) {
      if (*cores < 1 || *cores > static_cast<int>(p->cores.size())) {
        throw InputError(std::string(cores_flag) + "=" + std::to_string(*cores) + " but cluster '" +
                         letter + "' of platform '" + platform.name + "' has " +
                         std::to_string(p->cores.size()) + " core(s) (" + core_list(p->cores) +
                         "); use 1.." + std::to_string(p->cores.size()));
      }
      p->cores.resize(static_cast<size_t>(*cores));
      p->threads = std::min(p->threads, *cores);
    }
    if (threads) {
      if (*threads < 1 || *threads > static_cast<int>(p->cores.size())) {
        throw InputError(std::string(threads_flag) + "=" + std::to_string(*threads) +
                         " but cluster '" + letter + "' has " + std::to_string(p->cores.size()) +
                         " core(s) (" + core_list(p->cores) + "); use 1.." +
                         std::to_string(p->cores.size()));
      }
      p->threads = *threads;
    }
  };
  apply_cpu('B', "--cores", "--threads", o.cores_big, o.threads_big);
  apply_cpu('L', "--cores_little", "--threads_little", o.cores_little, o.threads_little);
  auto apply_host = [&](std::optional<char> host, const char* kind, const char* flag) {
    if (!host) return;
    const ProcessorSpec* h = platform.find(*host);
    if (h == nullptr || !h->is_cpu()) {
      throw InputError(std::string(flag) + "=" + std::string(1, *host) +
                       " is not a CPU cluster of platform '" + platform.name + "' (use B or L)");
    }
    for (ProcessorSpec& p : platform.processors) {
      if (p.kind == kind) p.host = *host;
    }
  };
  apply_host(o.host_gpu, "gpu", "--host_gpu");
  apply_host(o.host_npu, "npu", "--host_npu");
  if (o.split_cluster) split_cluster(platform, *o.split_cluster, "--split-cluster");
}

void check_cores_exist(const Platform& platform) {
  const std::vector<int> online = online_cores();
  for (const ProcessorSpec& p : platform.processors) {
    for (int core : p.cores) {
      if (std::find(online.begin(), online.end(), core) == online.end()) {
        throw InputError("processor '" + std::string(1, p.letter) + "' of platform '" +
                         platform.name + "' uses core " + std::to_string(core) +
                         ", which this machine does not offer (available: " +
                         core_list(online) + "); pick another --platform or fix its cores");
      }
    }
  }
}

}  // namespace co_up
