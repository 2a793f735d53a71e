#include "planner/layer_profile.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/io/input_file.h"
#include "core/io/output_file.h"
#include "core/json_input.h"
#include "planner/thread_times.h"

namespace co_up::planner {
namespace {

constexpr const char* kFormat = "co_up-layer-profile";
// v2 added "handoff_us"; v1 files read as v2 without it (hand-off 0 us).
constexpr int kVersion = 2;
constexpr int kOldestVersion = 1;

using Json = nlohmann::json;

// Reads one profile, naming the origin and the key path in every error.
class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    throw InputError("profile '" + origin_ + "': key '" + key + "' " + why);
  }

  const Json& required(const Json& obj, const std::string& path, const char* key) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(join(path, key), "is missing");
    return *it;
  }
  const Json* optional(const Json& obj, const char* key) const {
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }

  const Json& object(const Json& v, const std::string& key) const {
    if (!v.is_object()) fail(key, "must be an object");
    return v;
  }
  const Json& array(const Json& v, const std::string& key) const {
    if (!v.is_array()) fail(key, "must be an array");
    return v;
  }
  std::string string(const Json& v, const std::string& key) const {
    if (!v.is_string()) fail(key, "must be a string");
    return v.get<std::string>();
  }
  // The rule every co_up JSON reader follows (core/json_input.h).
  int64_t integer(const Json& v, const std::string& key, int64_t min, int64_t max) const {
    return json_integer(v, where(key), min, max);
  }
  double number(const Json& v, const std::string& key, double min) const {
    return json_number(v, where(key), min);
  }
  std::string where(const std::string& key) const { return "profile '" + origin_ + "': key '" + key + "'"; }
  char letter(const Json& v, const std::string& key) const {
    const std::string s = string(v, key);
    if (s.size() != 1 || !std::isalpha(static_cast<unsigned char>(s[0]))) {
      fail(key, "is '" + s + "', must be one processor letter");
    }
    return s[0];
  }
  // `declined`: layers whose entry is null (not measurable), read as NaN.
  std::vector<double> numbers(const Json& v, const std::string& key, size_t count,
                              const std::map<uint32_t, std::string>* declined = nullptr) const {
    array(v, key);
    if (v.size() != count) {
      fail(key, "has " + std::to_string(v.size()) + " entries, expected " + std::to_string(count) +
                    " (network.layer_count is " + std::to_string(layer_count_) + ")");
    }
    std::vector<double> out;
    out.reserve(count);
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string entry = key + "[" + std::to_string(i) + "]";
      const bool may_be_null = declined != nullptr && declined->count(static_cast<uint32_t>(i)) != 0;
      if (v[i].is_null()) {
        if (!may_be_null) fail(entry, "is null, but the layer is not in 'declined'");
        out.push_back(std::numeric_limits<double>::quiet_NaN());
        continue;
      }
      if (may_be_null) fail(entry, "is a time, but the layer is in 'declined' (must be null)");
      out.push_back(number(v[i], entry, 0));
    }
    return out;
  }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }
  static std::string at(const std::string& path, size_t i) {
    return path + "[" + std::to_string(i) + "]";
  }

  void set_layer_count(uint32_t n) { layer_count_ = n; }

 private:
  std::string origin_;
  uint32_t layer_count_ = 0;
};

ProfileNetwork read_network(const Reader& r, const Json& root) {
  const Json& net = r.object(r.required(root, "", "network"), "network");
  ProfileNetwork n;
  if (const Json* v = r.optional(net, "graph")) n.graph = r.string(*v, "network.graph");
  if (const Json* v = r.optional(net, "model")) n.model = r.string(*v, "network.model");
  if (n.graph.empty() && n.model.empty()) r.fail("network.graph", "and network.model are both empty");
  n.units = r.string(r.required(net, "network", "units"), "network.units");
  if (n.units != "layers" && n.units != "ops" && n.units != "branches") {
    r.fail("network.units", "is '" + n.units + "', must be layers, ops or branches");
  }
  if (const Json* v = r.optional(net, "split")) n.split = r.string(*v, "network.split");
  if (const Json* v = r.optional(net, "image_size")) n.image_size = r.integer(*v, "network.image_size", 0, 1 << 20);
  n.layer_count = static_cast<uint32_t>(
      r.integer(r.required(net, "network", "layer_count"), "network.layer_count", 1, 1 << 20));
  if (const Json* v = r.optional(net, "layers")) {
    r.array(*v, "network.layers");
    if (v->size() != n.layer_count) {
      r.fail("network.layers", "has " + std::to_string(v->size()) + " entries, network.layer_count is " +
                                   std::to_string(n.layer_count));
    }
    for (size_t i = 0; i < v->size(); ++i) {
      const std::string key = Reader::at("network.layers", i);
      const Json& l = r.object((*v)[i], key);
      ProfileLayer layer;
      layer.index = static_cast<uint32_t>(i);
      if (const Json* x = r.optional(l, "index")) {
        if (r.integer(*x, key + ".index", 0, n.layer_count) != static_cast<int64_t>(i)) {
          r.fail(key + ".index", "is " + x->dump() + ", expected " + std::to_string(i));
        }
      }
      if (const Json* x = r.optional(l, "name")) layer.name = r.string(*x, key + ".name");
      if (const Json* x = r.optional(l, "ops")) layer.ops = r.string(*x, key + ".ops");
      if (const Json* x = r.optional(l, "macs")) layer.macs = r.integer(*x, key + ".macs", 0, INT64_MAX);
      if (const Json* x = r.optional(l, "output_bytes")) {
        layer.output_bytes = r.integer(*x, key + ".output_bytes", 0, INT64_MAX);
      }
      n.layers.push_back(std::move(layer));
    }
  }
  return n;
}

ProfileProcessor read_processor(const Reader& r, const Json& v, const std::string& key) {
  r.object(v, key);
  ProfileProcessor p;
  p.letter = r.letter(r.required(v, key, "letter"), key + ".letter");
  p.host = p.letter;
  if (const Json* x = r.optional(v, "name")) p.name = r.string(*x, key + ".name");
  if (const Json* x = r.optional(v, "kind")) p.kind = r.string(*x, key + ".kind");
  if (const Json* x = r.optional(v, "backend")) p.backend = r.string(*x, key + ".backend");
  if (const Json* x = r.optional(v, "in_place_boundaries")) {
    if (!x->is_boolean()) r.fail(key + ".in_place_boundaries", "must be true or false");
    p.in_place_boundaries = x->get<bool>();
  }
  if (const Json* x = r.optional(v, "host")) {
    const std::string h = r.string(*x, key + ".host");
    if (h.size() > 1) r.fail(key + ".host", "is '" + h + "', must be one letter or empty");
    if (!h.empty()) p.host = h[0];
  }
  if (const Json* x = r.optional(v, "host_cores")) {
    r.array(*x, key + ".host_cores");
    for (size_t i = 0; i < x->size(); ++i) {
      p.host_cores.push_back(static_cast<int>(r.integer((*x)[i], Reader::at(key + ".host_cores", i), 0, 65535)));
    }
  }
  if (const Json* x = r.optional(v, "dvfs_domain")) p.dvfs_domain = r.string(*x, key + ".dvfs_domain");
  if (const Json* x = r.optional(v, "levels_khz")) {
    r.array(*x, key + ".levels_khz");
    for (size_t i = 0; i < x->size(); ++i) {
      const int64_t khz = r.integer((*x)[i], Reader::at(key + ".levels_khz", i), 1, INT64_MAX);
      if (!p.levels_khz.empty() && khz <= p.levels_khz.back()) {
        r.fail(Reader::at(key + ".levels_khz", i), "is not above the previous level (must ascend)");
      }
      p.levels_khz.push_back(khz);
    }
  }
  if (!p.levels_khz.empty() && p.dvfs_domain.empty()) {
    r.fail(key + ".dvfs_domain", "is empty but levels_khz has a table");
  }
  if (const Json* x = r.optional(v, "voltages_mv")) {
    r.array(*x, key + ".voltages_mv");
    if (x->size() != p.levels_khz.size()) {
      r.fail(key + ".voltages_mv", "has " + std::to_string(x->size()) + " entries, levels_khz has " +
                                       std::to_string(p.levels_khz.size()));
    }
    for (size_t i = 0; i < x->size(); ++i) {
      p.voltages_mv.push_back(static_cast<int>(r.integer((*x)[i], Reader::at(key + ".voltages_mv", i), 1, 100000)));
    }
  }
  if (const Json* x = r.optional(v, "power_model")) {
    r.object(*x, key + ".power_model");
    ProfilePowerModel m;
    m.alpha = r.number(r.required(*x, key + ".power_model", "alpha"), key + ".power_model.alpha", 0);
    m.beta = r.number(r.required(*x, key + ".power_model", "beta"), key + ".power_model.beta", 0);
    p.power_model = m;
  }
  return p;
}

int read_level(const Reader& r, const Json& v, const std::string& key, const ProfileProcessor& p) {
  return static_cast<int>(r.integer(v, key, 0, static_cast<int64_t>(p.levels_khz.size())));
}

}  // namespace

const ProfileProcessor* LayerProfile::find_processor(char letter) const {
  for (const ProfileProcessor& p : processors) {
    if (p.letter == letter) return &p;
  }
  return nullptr;
}

const LayerTimes* LayerProfile::find_layer_times(char processor, int level) const {
  for (const LayerTimes& t : layer_times) {
    if (t.processor == processor && t.level == level) return &t;
  }
  return nullptr;
}

const TransferTimes* LayerProfile::find_transfer(char from, char to) const {
  for (const TransferTimes& t : transfers) {
    if (t.from == from && t.to == to) return &t;
  }
  return nullptr;
}

const PowerPoint* LayerProfile::find_power(char processor, int level) const {
  for (const PowerPoint& p : power_w) {
    if (p.processor == processor && p.level == level) return &p;
  }
  return nullptr;
}

const HandoffTime* LayerProfile::find_handoff(char a, char b) const {
  for (const HandoffTime& h : handoffs) {
    if ((h.a == a && h.b == b) || (h.a == b && h.b == a)) return &h;
  }
  return nullptr;
}

void LayerProfile::set_handoff(char a, char b, double us) {
  for (HandoffTime& h : handoffs) {
    if ((h.a == a && h.b == b) || (h.a == b && h.b == a)) {
      h.us = us;
      return;
    }
  }
  handoffs.push_back({a, b, us});
}

namespace {

const HandoffTime* find_pair(const std::vector<HandoffTime>& list, char a, char b) {
  for (const HandoffTime& h : list) {
    if ((h.a == a && h.b == b) || (h.a == b && h.b == a)) return &h;
  }
  return nullptr;
}

void set_pair(std::vector<HandoffTime>& list, char a, char b, double us) {
  for (HandoffTime& h : list) {
    if ((h.a == a && h.b == b) || (h.a == b && h.b == a)) {
      h.us = us;
      return;
    }
  }
  list.push_back({a, b, us});
}

}  // namespace

const HandoffTime* LayerProfile::find_switch_edge(char a, char b) const {
  return find_pair(switch_edges, a, b);
}

void LayerProfile::set_switch_edge(char a, char b, double us) { set_pair(switch_edges, a, b, us); }

const HandoffTime* LayerProfile::find_switch_edge_mb(char a, char b) const {
  return find_pair(switch_edge_mb, a, b);
}

void LayerProfile::set_switch_edge_mb(char a, char b, double us_per_mb) {
  set_pair(switch_edge_mb, a, b, us_per_mb);
}

const HandoffTime* LayerProfile::find_pipeline_subgraph(char a, char b) const {
  return find_pair(pipeline_subgraphs, a, b);
}

const HandoffTime* LayerProfile::find_pipeline_edge(char a, char b) const {
  return find_pair(pipeline_edges, a, b);
}

void LayerProfile::set_pipeline_costs(char a, char b, double subgraph_us, double edge_us) {
  set_pair(pipeline_subgraphs, a, b, subgraph_us);
  set_pair(pipeline_edges, a, b, edge_us);
}

const HandoffTime* LayerProfile::find_pipeline_work_factor(char a, char b) const {
  return find_pair(pipeline_work_factors, a, b);
}

void LayerProfile::set_pipeline_work_factor(char a, char b, double factor) {
  set_pair(pipeline_work_factors, a, b, factor);
}

bool LayerProfile::is_completed(const std::string& step) const {
  return std::find(completed.begin(), completed.end(), step) != completed.end();
}

std::string LayerProfile::letters() const {
  std::string s;
  for (const ProfileProcessor& p : processors) s += p.letter;
  return s;
}

LayerProfile parse_layer_profile(const std::string& json_text, const std::string& origin) {
  Reader r(origin);
  const Json root = parse_json(json_text, "profile '" + origin + "'");
  if (!root.is_object()) throw InputError("profile '" + origin + "' is not a JSON object");
  const std::string format = r.string(r.required(root, "", "format"), "format");
  if (format != kFormat) r.fail("format", "is '" + format + "', expected '" + kFormat + "' (written by co_up profile)");
  const int64_t version = r.integer(r.required(root, "", "version"), "version", 1, INT32_MAX);
  if (version < kOldestVersion || version > kVersion) {
    r.fail("version", "is " + std::to_string(version) + "; this co_up reads versions " +
                          std::to_string(kOldestVersion) + " to " + std::to_string(kVersion) +
                          " (re-run co_up profile)");
  }

  LayerProfile profile;
  profile.network = read_network(r, root);
  const uint32_t n = profile.network.layer_count;
  r.set_layer_count(n);

  const Json& platform = r.object(r.required(root, "", "platform"), "platform");
  if (const Json* x = r.optional(platform, "name")) profile.platform_name = r.string(*x, "platform.name");
  const Json& procs = r.array(r.required(platform, "platform", "processors"), "platform.processors");
  if (procs.empty()) r.fail("platform.processors", "is empty");
  for (size_t i = 0; i < procs.size(); ++i) {
    const std::string key = Reader::at("platform.processors", i);
    ProfileProcessor p = read_processor(r, procs[i], key);
    if (profile.find_processor(p.letter) != nullptr) {
      r.fail(key + ".letter", "repeats processor '" + std::string(1, p.letter) + "'");
    }
    profile.processors.push_back(std::move(p));
  }
  // Processors of one DVFS domain must agree on its table. (A host need not be in the profile:
  // `co_up profile --processors=N` profiles an accelerator without its host cluster; host_cores
  // still say which cores it shares.)
  for (size_t i = 0; i < profile.processors.size(); ++i) {
    const ProfileProcessor& p = profile.processors[i];
    for (size_t j = 0; j < i; ++j) {
      const ProfileProcessor& q = profile.processors[j];
      if (!p.dvfs_domain.empty() && p.dvfs_domain == q.dvfs_domain && p.levels_khz != q.levels_khz) {
        r.fail(Reader::at("platform.processors", i) + ".levels_khz",
               "differs from processor '" + std::string(1, q.letter) + "' of the same dvfs_domain '" +
                   p.dvfs_domain + "'");
      }
    }
  }
  auto known = [&](const Json& v, const std::string& key) -> const ProfileProcessor& {
    const char letter = r.letter(v, key);
    const ProfileProcessor* p = profile.find_processor(letter);
    if (p == nullptr) {
      r.fail(key, "names processor '" + std::string(1, letter) +
                      "', which is not in platform.processors (" + profile.letters() + ")");
    }
    return *p;
  };

  profile.repetitions = static_cast<int>(r.integer(r.required(root, "", "repetitions"), "repetitions", 1, INT32_MAX));

  const Json& times = r.array(r.required(root, "", "layer_times"), "layer_times");
  for (size_t i = 0; i < times.size(); ++i) {
    const std::string key = Reader::at("layer_times", i);
    r.object(times[i], key);
    LayerTimes t;
    const ProfileProcessor& p = known(r.required(times[i], key, "processor"), key + ".processor");
    t.processor = p.letter;
    t.level = read_level(r, r.required(times[i], key, "level"), key + ".level", p);
    if (profile.find_layer_times(t.processor, t.level) != nullptr) {
      r.fail(key, "repeats processor '" + std::string(1, t.processor) + "' level " + std::to_string(t.level));
    }
    if (const Json* x = r.optional(times[i], "declined")) {
      r.object(*x, key + ".declined");
      for (auto it = x->begin(); it != x->end(); ++it) {
        const std::string entry = key + ".declined." + it.key();
        uint32_t layer = 0;
        const auto [end, ec] = std::from_chars(it.key().data(), it.key().data() + it.key().size(), layer);
        if (ec != std::errc() || end != it.key().data() + it.key().size() || layer >= n) {
          r.fail(entry, "is not a layer index (0.." + std::to_string(n - 1) + ")");
        }
        t.declined[layer] = r.string(it.value(), entry);
      }
    }
    t.median_us = r.numbers(r.required(times[i], key, "median_us"), key + ".median_us", n, &t.declined);
    if (const Json* x = r.optional(times[i], "mad_us")) {
      t.mad_us = r.numbers(*x, key + ".mad_us", n, &t.declined);
    } else {
      t.mad_us.assign(n, 0.0);
      for (const auto& [layer, why] : t.declined) t.mad_us[layer] = std::numeric_limits<double>::quiet_NaN();
    }
    profile.layer_times.push_back(std::move(t));
  }

  if (const Json* transfers = r.optional(root, "transfers")) {
    r.array(*transfers, "transfers");
    for (size_t i = 0; i < transfers->size(); ++i) {
      const std::string key = Reader::at("transfers", i);
      const Json& v = r.object((*transfers)[i], key);
      TransferTimes t;
      t.from = known(r.required(v, key, "from"), key + ".from").letter;
      t.to = known(r.required(v, key, "to"), key + ".to").letter;
      if (t.from == t.to) r.fail(key + ".to", "equals 'from' ('" + std::string(1, t.to) + "')");
      if (profile.find_transfer(t.from, t.to) != nullptr) {
        r.fail(key, "repeats the pair " + std::string(1, t.from) + "->" + std::string(1, t.to));
      }
      t.send_us = r.numbers(r.required(v, key, "send_us"), key + ".send_us", n - 1);
      t.receive_us = r.numbers(r.required(v, key, "receive_us"), key + ".receive_us", n - 1);
      profile.transfers.push_back(std::move(t));
    }
  }
  if (const Json* input = r.optional(root, "input_transfer_us")) {
    r.object(*input, "input_transfer_us");
    for (auto it = input->begin(); it != input->end(); ++it) {
      const std::string key = "input_transfer_us." + it.key();
      const ProfileProcessor& p = known(Json(it.key()), key);
      profile.input_transfer_us[p.letter] = r.number(it.value(), key, 0);
    }
  }
  if (const Json* handoff = r.optional(root, "handoff_us")) {
    r.object(*handoff, "handoff_us");
    for (auto it = handoff->begin(); it != handoff->end(); ++it) {
      const std::string key = "handoff_us." + it.key();
      if (it.key().size() != 2) r.fail(key, "must name two processors, e.g. \"BL\"");
      const char a = known(Json(it.key().substr(0, 1)), key).letter;
      const char b = known(Json(it.key().substr(1, 1)), key).letter;
      if (a == b) r.fail(key, "names one processor twice");
      if (profile.find_handoff(a, b) != nullptr) r.fail(key, "repeats the pair " + it.key());
      profile.handoffs.push_back({a, b, r.number(it.value(), key, 0)});
    }
  }
  const auto read_pairs = [&](const char* name, std::vector<HandoffTime>& list) {
    const Json* pairs = r.optional(root, name);
    if (pairs == nullptr) return;
    r.object(*pairs, name);
    for (auto it = pairs->begin(); it != pairs->end(); ++it) {
      const std::string key = std::string(name) + "." + it.key();
      if (it.key().size() != 2) r.fail(key, "must name two processors, e.g. \"BL\"");
      const char a = known(Json(it.key().substr(0, 1)), key).letter;
      const char b = known(Json(it.key().substr(1, 1)), key).letter;
      if (a == b) r.fail(key, "names one processor twice");
      if (find_pair(list, a, b) != nullptr) r.fail(key, "repeats the pair " + it.key());
      list.push_back({a, b, r.number(it.value(), key, 0)});
    }
  };
  read_pairs("switch_edge_us", profile.switch_edges);
  read_pairs("switch_edge_mb_us", profile.switch_edge_mb);
  read_pairs("pipeline_subgraph_us", profile.pipeline_subgraphs);
  read_pairs("pipeline_edge_us", profile.pipeline_edges);
  read_pairs("pipeline_work_factor", profile.pipeline_work_factors);
  for (const HandoffTime& h : profile.pipeline_work_factors) {
    if (!(h.us > 0)) {
      r.fail(std::string("pipeline_work_factor.") + h.a + h.b, "must be positive (1: layers as fast as profiled)");
    }
  }
  if (const Json* power = r.optional(root, "power_w")) {
    r.array(*power, "power_w");
    for (size_t i = 0; i < power->size(); ++i) {
      const std::string key = Reader::at("power_w", i);
      const Json& v = r.object((*power)[i], key);
      PowerPoint pp;
      const ProfileProcessor& p = known(r.required(v, key, "processor"), key + ".processor");
      pp.processor = p.letter;
      pp.level = read_level(r, r.required(v, key, "level"), key + ".level", p);
      if (profile.find_power(pp.processor, pp.level) != nullptr) {
        r.fail(key, "repeats processor '" + std::string(1, pp.processor) + "' level " + std::to_string(pp.level));
      }
      pp.busy_w = r.number(r.required(v, key, "busy_w"), key + ".busy_w", 0);
      pp.idle_w = r.number(r.required(v, key, "idle_w"), key + ".idle_w", 0);
      profile.power_w.push_back(pp);
    }
  }
  if (const Json* done = r.optional(root, "completed")) {
    r.array(*done, "completed");
    for (size_t i = 0; i < done->size(); ++i) {
      profile.completed.push_back(r.string((*done)[i], Reader::at("completed", i)));
    }
  }
  read_thread_layer_times(root, origin, profile);
  return profile;
}

LayerProfile read_layer_profile(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw InputError("profile '" + path.string() + "' cannot be read (no such file; write one with co_up profile)");
  }
  return parse_layer_profile(io::read_input_file(path, "profile", io::kMaxConfigBytes), path.string());
}

std::string layer_profile_json(const LayerProfile& profile) {
  using Ordered = nlohmann::ordered_json;
  const auto letter = [](char c) { return c == 0 ? std::string() : std::string(1, c); };
  Ordered root;
  root["format"] = kFormat;
  root["version"] = kVersion;
  Ordered net;
  net["graph"] = profile.network.graph;
  net["model"] = profile.network.model;
  net["units"] = profile.network.units;
  if (!profile.network.split.empty()) net["split"] = profile.network.split;
  net["image_size"] = profile.network.image_size;
  net["layer_count"] = profile.network.layer_count;
  net["layers"] = Ordered::array();
  for (const ProfileLayer& l : profile.network.layers) {
    net["layers"].push_back(Ordered{{"index", l.index}, {"name", l.name}, {"ops", l.ops},
                                    {"macs", l.macs}, {"output_bytes", l.output_bytes}});
  }
  root["network"] = std::move(net);
  Ordered procs = Ordered::array();
  for (const ProfileProcessor& p : profile.processors) {
    Ordered o{{"letter", letter(p.letter)}, {"name", p.name}, {"kind", p.kind}, {"backend", p.backend},
              {"host", letter(p.host)}, {"host_cores", p.host_cores}, {"dvfs_domain", p.dvfs_domain},
              {"levels_khz", p.levels_khz}};
    if (!p.voltages_mv.empty()) o["voltages_mv"] = p.voltages_mv;
    if (p.in_place_boundaries) o["in_place_boundaries"] = true;
    if (p.power_model) o["power_model"] = Ordered{{"alpha", p.power_model->alpha}, {"beta", p.power_model->beta}};
    procs.push_back(std::move(o));
  }
  root["platform"] = Ordered{{"name", profile.platform_name}, {"processors", std::move(procs)}};
  root["repetitions"] = profile.repetitions;
  root["layer_times"] = Ordered::array();
  for (const LayerTimes& t : profile.layer_times) {
    // NaN (a declined layer) is written as null.
    Ordered entry{{"processor", letter(t.processor)}, {"level", t.level},
                  {"median_us", t.median_us}, {"mad_us", t.mad_us}};
    if (!t.declined.empty()) {
      Ordered declined = Ordered::object();
      for (const auto& [layer, why] : t.declined) declined[std::to_string(layer)] = why;
      entry["declined"] = std::move(declined);
    }
    root["layer_times"].push_back(std::move(entry));
  }
  root["transfers"] = Ordered::array();
  for (const TransferTimes& t : profile.transfers) {
    root["transfers"].push_back(Ordered{{"from", letter(t.from)}, {"to", letter(t.to)},
                                        {"send_us", t.send_us}, {"receive_us", t.receive_us}});
  }
  if (!profile.input_transfer_us.empty()) {
    Ordered input = Ordered::object();
    for (const auto& [p, us] : profile.input_transfer_us) input[letter(p)] = us;
    root["input_transfer_us"] = std::move(input);
  }
  if (!profile.handoffs.empty()) {
    Ordered handoff = Ordered::object();
    for (const HandoffTime& h : profile.handoffs) handoff[letter(h.a) + letter(h.b)] = h.us;
    root["handoff_us"] = std::move(handoff);
  }
  const auto write_pairs = [&](const char* name, const std::vector<HandoffTime>& list) {
    if (list.empty()) return;
    Ordered pairs = Ordered::object();
    for (const HandoffTime& h : list) pairs[letter(h.a) + letter(h.b)] = h.us;
    root[name] = std::move(pairs);
  };
  write_pairs("switch_edge_us", profile.switch_edges);
  write_pairs("switch_edge_mb_us", profile.switch_edge_mb);
  write_pairs("pipeline_subgraph_us", profile.pipeline_subgraphs);
  write_pairs("pipeline_edge_us", profile.pipeline_edges);
  write_pairs("pipeline_work_factor", profile.pipeline_work_factors);
  if (!profile.power_w.empty()) {
    root["power_w"] = Ordered::array();
    for (const PowerPoint& p : profile.power_w) {
      root["power_w"].push_back(Ordered{{"processor", letter(p.processor)}, {"level", p.level},
                                        {"busy_w", p.busy_w}, {"idle_w", p.idle_w}});
    }
  }
  if (!profile.thread_times.empty()) root["thread_layer_times"] = thread_layer_times_json(profile);
  root["completed"] = profile.completed;
  return root.dump(1) + "\n";
}

void write_layer_profile(const io::OutputFile& out, const LayerProfile& profile) {
  out.write(layer_profile_json(profile));
}

void write_layer_profile(const std::filesystem::path& path, const LayerProfile& profile) {
  write_layer_profile(io::OutputFile::check(path, "profile"), profile);
}

void check_profile_matches(const LayerProfile& profile, const std::string& graph,
                           const std::string& model, const std::string& units,
                           uint32_t layer_count) {
  const ProfileNetwork& n = profile.network;
  const std::string have = !n.graph.empty() ? "--graph=" + n.graph : "--model=" + n.model;
  if (!graph.empty() || !model.empty()) {
    const std::string want = !graph.empty() ? "--graph=" + graph : "--model=" + model;
    bool same = false;
    if (!graph.empty()) {
      same = graph == n.graph;
    } else if (!n.model.empty()) {
      const std::filesystem::path a(model), b(n.model);
      same = a.lexically_normal() == b.lexically_normal() || a.filename() == b.filename();
    }
    if (!same) {
      throw InputError("the profile was taken of " + have + ", not " + want +
                       " (profile the network with co_up profile " + want + ")");
    }
  }
  if (!units.empty() && units != n.units) {
    throw InputError("the profile has --units=" + n.units + " but --units=" + units +
                     " was asked (layer units differ; re-profile with --units=" + units + ")");
  }
  if (layer_count != 0 && layer_count != n.layer_count) {
    throw InputError("the profile of " + have + " has " + std::to_string(n.layer_count) +
                     " layer units, but the network has " + std::to_string(layer_count) +
                     " (different --image-size, --input-shape or model version? re-profile)");
  }
}

void check_profile_unit_ops(const LayerProfile& profile, const std::vector<std::string>& unit_ops) {
  const std::vector<ProfileLayer>& layers = profile.network.layers;
  for (size_t i = 0; i < layers.size() && i < unit_ops.size(); ++i) {
    if (layers[i].ops.empty() || layers[i].ops == unit_ops[i]) continue;
    throw InputError("the profile's layer unit " + std::to_string(i) + " ('" + layers[i].name + "') holds " +
                     layers[i].ops + " but the network's holds " + unit_ops[i] +
                     " (the profile predates a change of the graph passes; re-profile with co_up profile)");
  }
}

void check_profile_has_processors(const LayerProfile& profile, const std::string& letters) {
  std::set<char> seen;
  for (char c : letters) {
    if (!seen.insert(c).second) continue;
    const ProfileProcessor* p = profile.find_processor(c);
    bool timed = false;
    for (const LayerTimes& t : profile.layer_times) timed = timed || t.processor == c;
    if (p == nullptr || !timed) {
      throw InputError("the profile has no layer times for processor '" + std::string(1, c) +
                       "' (it measured " + [&] {
                         std::string s;
                         for (const LayerTimes& t : profile.layer_times) {
                           if (s.find(t.processor) == std::string::npos) s += t.processor;
                         }
                         return s.empty() ? std::string("none") : s;
                       }() + "); profile it, or plan without it");
    }
  }
}

}  // namespace co_up::planner
