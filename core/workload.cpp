#include "core/workload.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "core/bound_processor.h"
#include "core/error.h"
#include "core/json_input.h"
#include "core/partition.h"

namespace co_up {
namespace {

constexpr uint64_t kMaxFrames = uint64_t{1} << 40;

[[noreturn]] void refuse(const WorkloadNetwork& n, const std::string& what) {
  throw InputError("workload network '" + n.name + "': " + what);
}

std::string number_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

Mode parse_mode_word(const std::string& v) {
  if (v == "pipeline") return Mode::kPipeline;
  if (v == "switch") return Mode::kSwitch;
  throw InputError("workload mode '" + v + "' must be 'pipeline' or 'switch'");
}

GroupPolicy parse_policy_word(const std::string& v) {
  if (v == "oldest") return GroupPolicy::kOldest;
  if (v == "priority") return GroupPolicy::kPriority;
  if (v == "plan") return GroupPolicy::kPlan;
  throw InputError("workload policy '" + v + "' must be 'oldest', 'priority' or 'plan'");
}

// The name a network goes by before its "name" is checked: what the user gave, else the graph,
// else the model file's stem, else its position.
std::string default_name(const WorkloadNetwork& n, size_t index) {
  if (!n.name.empty()) return n.name;
  if (!n.graph.empty()) return n.graph;
  if (!n.model.empty()) return std::filesystem::path(n.model).stem().string();
  return "#" + std::to_string(index + 1);
}

// Rules that hold whatever the source (JSON or short form).
void check_fields(Workload& w, const std::vector<bool>& named, Orders orders) {
  if (w.networks.empty()) throw InputError("workload has no networks; give at least one");
  std::map<std::string, size_t> first;
  for (size_t i = 0; i < w.networks.size(); ++i) {
    WorkloadNetwork& n = w.networks[i];
    const bool given = named[i];
    n.name = default_name(n, i);
    if (given && (n.name.empty() || !std::all_of(n.name.begin(), n.name.end(), [](char c) {
                    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
                  }))) {
      refuse(n, "name may use only letters, digits, '_' and '-'");
    }
    if (auto [it, inserted] = first.emplace(n.name, i); !inserted) {
      refuse(n, "name is used by networks " + std::to_string(it->second + 1) + " and " +
                    std::to_string(i + 1) + "; give each network its own name");
    }
    if (n.graph.empty() == n.model.empty()) {
      refuse(n, n.graph.empty() ? "neither graph nor model given; give exactly one of them"
                                : "both graph and model given; give exactly one of them");
    }
    if (n.image_size != 0 && !n.model.empty()) {
      refuse(n, "image_size applies to zoo graphs only, not to model '" + n.model + "'");
    }
    if (n.order.empty() && orders == Orders::kRequired) {
      refuse(n, "order is missing; give one letter per layer (see --list-layers)");
    }
    if (!n.order.empty()) {
      try {
        check_order_letters(n.order);
      } catch (const InputError& e) {
        refuse(n, std::string("order: ") + e.what());
      }
    }
    for (const std::string& r : n.replicas) {
      try {
        check_order_letters(r);
      } catch (const InputError& e) {
        refuse(n, "replicas: order '" + r + "': " + e.what());
      }
      if (r == n.order) refuse(n, "replicas: order '" + r + "' is the network's own order; give other orders");
      if (std::count(n.replicas.begin(), n.replicas.end(), r) > 1) {
        refuse(n, "replicas: order '" + r + "' is given twice; each replica must be a different order");
      }
    }
    if (!n.replicas.empty() && w.mode == Mode::kSwitch) {
      refuse(n, "replicas run a network's requests side by side, which mode switch (one frame at a time) "
                "forbids; use mode pipeline or drop the replicas");
    }
    if (n.rate && !(*n.rate > 0)) {
      refuse(n, "rate " + number_text(*n.rate) +
                    " must be > 0 requests per second (leave it out to run as fast as possible)");
    }
    if (n.batch != 1 && !n.model.empty()) {
      refuse(n, "batch " + std::to_string(n.batch) +
                    " applies to zoo graphs only (an ONNX model's batch is its input shape); use batch 1");
    }
  }
  for (const std::string& p : w.plan) {
    if (first.count(p) == 0) {
      throw InputError("workload plan names network '" + p + "', which the workload does not have");
    }
  }
  if (!w.plan.empty()) {
    for (const WorkloadNetwork& n : w.networks) {
      if (std::find(w.plan.begin(), w.plan.end(), n.name) == w.plan.end()) {
        refuse(n, "plan never names it; name every network in the plan at least once");
      }
    }
  }
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read workload file '" + path + "' (check the path)");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string json_string(const nlohmann::json& v, const std::string& where) {
  if (!v.is_string()) throw InputError(where + " = " + json_shown(v) + " must be a string");
  return v.get<std::string>();
}

// Reads `key` of network `n` as a JSON value into the network, with errors naming the network.
void read_network_field(WorkloadNetwork& n, const std::string& key, const nlohmann::json& v) {
  const std::string where = "field " + key;
  try {
    if (key == "name") n.name = json_string(v, where);
    else if (key == "graph") n.graph = json_string(v, where);
    else if (key == "model") n.model = json_string(v, where);
    else if (key == "order") n.order = json_string(v, where);
    else if (key == "split") n.split = json_string(v, where);
    else if (key == "input") n.input = json_string(v, where);
    else if (key == "image_size") n.image_size = json_integer(v, where, 1, 4096);
    else if (key == "frames") n.frames = static_cast<uint64_t>(json_integer(v, where, 1, kMaxFrames));
    else if (key == "priority") n.priority = static_cast<int>(json_integer(v, where, -1000000, 1000000));
    else if (key == "batch") n.batch = static_cast<uint32_t>(json_integer(v, where, 1, 4096));
    else if (key == "replicas") {
      if (v.is_string()) {  // the short form: orders separated by '/'
        std::stringstream orders(v.get<std::string>());
        for (std::string o; std::getline(orders, o, '/');) n.replicas.push_back(o);
      } else if (v.is_array()) {
        for (size_t i = 0; i < v.size(); ++i) n.replicas.push_back(json_string(v[i], json_index(where, i)));
      } else {
        throw InputError(where + " = " + json_shown(v) + " must be an array of orders");
      }
    } else if (key == "rate") {
      if (!v.is_number()) throw InputError(where + " = " + json_shown(v) + " must be a number");
      n.rate = v.get<double>();
    } else {
      throw InputError("unknown field '" + key +
                       "' (fields: name, graph, model, image_size, order, split, input, frames, "
                       "rate, priority, batch, replicas)");
    }
  } catch (const InputError& e) {
    refuse(n, e.what());
  }
}

}  // namespace

std::string policy_name(GroupPolicy policy) {
  switch (policy) {
    case GroupPolicy::kOldest: return "oldest";
    case GroupPolicy::kPriority: return "priority";
    case GroupPolicy::kPlan: return "plan";
  }
  return "?";
}

Workload parse_workload_json(const std::string& text, const std::string& origin, Orders orders) {
  const nlohmann::json j = parse_json(text, origin);
  if (!j.is_object()) throw InputError(origin + " must be a JSON object with \"networks\"");
  Workload w;
  for (const auto& [key, v] : j.items()) {
    if (key == "mode") w.mode = parse_mode_word(json_string(v, origin + ": \"mode\""));
    else if (key == "policy") w.policy = parse_policy_word(json_string(v, origin + ": \"policy\""));
    else if (key == "plan") {
      if (!v.is_array()) throw InputError(origin + ": \"plan\" must be an array of network names");
      for (size_t i = 0; i < v.size(); ++i) {
        w.plan.push_back(json_string(v[i], origin + ": " + json_index("\"plan\"", i)));
      }
    } else if (key == "affinity") {
      if (!v.is_boolean()) throw InputError(origin + ": \"affinity\" must be true or false");
      w.affinity = v.get<bool>();
    } else if (key != "networks") {
      throw InputError(origin + ": unknown field '" + key + "' (fields: mode, policy, plan, affinity, networks)");
    }
  }
  if (!j.contains("networks") || !j["networks"].is_array()) {
    throw InputError(origin + ": \"networks\" must be an array of networks");
  }
  std::vector<bool> named;
  for (size_t i = 0; i < j["networks"].size(); ++i) {
    const nlohmann::json& e = j["networks"][i];
    WorkloadNetwork n;
    {  // the name messages use, before the fields are read
      WorkloadNetwork shown;
      const auto text = [&e](const char* key) {
        return e.is_object() && e.contains(key) && e[key].is_string() ? e[key].get<std::string>() : "";
      };
      shown.name = text("name");
      shown.graph = text("graph");
      shown.model = text("model");
      n.name = default_name(shown, i);
    }
    if (!e.is_object()) refuse(n, "must be a JSON object");
    for (const auto& [key, v] : e.items()) read_network_field(n, key, v);
    named.push_back(e.contains("name"));
    w.networks.push_back(std::move(n));
  }
  check_fields(w, named, orders);
  return w;
}

Workload parse_workload_short(const std::string& text, Orders orders) {
  Workload w;
  std::vector<bool> named;
  std::stringstream groups(text);
  std::string group;
  while (std::getline(groups, group, ';')) {
    if (group.empty()) continue;
    if (group.find(':') == std::string::npos && group.find('=') != std::string::npos) {
      const std::string key = group.substr(0, group.find('='));
      const std::string value = group.substr(group.find('=') + 1);
      if (key == "mode") w.mode = parse_mode_word(value);
      else if (key == "policy") w.policy = parse_policy_word(value);
      else if (key == "plan") {
        std::stringstream names(value);
        for (std::string name; std::getline(names, name, ',');) w.plan.push_back(name);
      } else if (key == "affinity") {
        if (value != "0" && value != "1") throw InputError("workload setting affinity='" + value + "' must be 0 or 1");
        w.affinity = value == "1";
      } else {
        throw InputError("workload setting '" + key + "' is unknown (settings: mode, policy, plan, affinity)");
      }
      continue;
    }
    std::vector<std::string> parts;
    std::stringstream fields(group);
    for (std::string part; std::getline(fields, part, ':');) parts.push_back(part);
    WorkloadNetwork n;
    (parts[0].size() > 5 && parts[0].ends_with(".onnx") ? n.model : n.graph) = parts[0];
    bool has_name = false;
    for (size_t i = 1; i < parts.size(); ++i) {
      const size_t eq = parts[i].find('=');
      if (eq == std::string::npos) {
        if (i != 1) {
          n.name = default_name(n, w.networks.size());
          refuse(n, "'" + parts[i] + "' is not key=value (only the order may stand alone, second)");
        }
        n.order = parts[i];
        continue;
      }
      const std::string key = parts[i].substr(0, eq);
      std::string value = parts[i].substr(eq + 1);
      if (key == "name") {
        n.name = value;
        has_name = true;
        continue;
      }
      const std::string who = n.name.empty() ? default_name(n, w.networks.size()) : n.name;
      WorkloadNetwork shown = n;
      shown.name = who;
      if (key == "split") std::replace(value.begin(), value.end(), '/', ':');
      nlohmann::json v = value;  // strings as given; numbers parsed below
      if (key == "rate" || key == "frames" || key == "priority" || key == "batch" ||
          key == "image_size") {
        try {
          v = nlohmann::json::parse(value);
        } catch (const nlohmann::json::exception&) {
          refuse(shown, key + " '" + value + "' must be a number");
        }
      }
      std::string saved_name = n.name;
      n.name = who;
      read_network_field(n, key, v);
      n.name = saved_name;
    }
    named.push_back(has_name);
    w.networks.push_back(std::move(n));
  }
  check_fields(w, named, orders);
  return w;
}

Workload read_workload(const std::string& value, Orders orders) {
  if (value.empty()) throw InputError("--workload is empty; give a workload file (.json) or groups");
  if (value.size() > 5 && value.ends_with(".json")) {
    Workload w = parse_workload_json(read_text(value), "workload '" + value + "'", orders);
    // A file's relative model and input paths are relative to the file, not to where co_up runs,
    // and are kept absolute: `co_up plan --out=DIR` writes them into files in another folder.
    const std::filesystem::path folder = std::filesystem::absolute(value).parent_path();
    const auto anchor = [&folder](std::string& path) {
      if (!path.empty() && std::filesystem::path(path).is_relative()) path = (folder / path).lexically_normal().string();
    };
    for (WorkloadNetwork& n : w.networks) {
      anchor(n.model);
      anchor(n.input);
    }
    return w;
  }
  return parse_workload_short(value, orders);
}

std::string workload_json(const Workload& w) {
  nlohmann::ordered_json root;
  root["mode"] = mode_name(w.mode);
  root["policy"] = policy_name(w.policy);
  if (!w.plan.empty()) root["plan"] = w.plan;
  if (w.affinity) root["affinity"] = true;
  root["networks"] = nlohmann::ordered_json::array();
  for (const WorkloadNetwork& n : w.networks) {
    nlohmann::ordered_json o;
    o["name"] = n.name;
    if (!n.graph.empty()) o["graph"] = n.graph;
    if (!n.model.empty()) o["model"] = n.model;
    if (n.image_size != 0) o["image_size"] = n.image_size;
    if (!n.order.empty()) o["order"] = n.order;
    if (!n.split.empty()) o["split"] = n.split;
    if (!n.input.empty()) o["input"] = n.input;
    o["frames"] = n.frames;
    if (n.rate) o["rate"] = *n.rate;  // written to the shortest text that reads back the same double
    o["priority"] = n.priority;
    o["batch"] = n.batch;
    if (!n.replicas.empty()) o["replicas"] = n.replicas;
    root["networks"].push_back(std::move(o));
  }
  return root.dump(2) + "\n";
}

namespace {

// The order's length and letters (`field` names it in messages: "order", "replicas: order").
void check_network_order(const WorkloadNetwork& network, const std::string& order, const graph::Graph& graph,
                         const Platform& platform, const PluginRegistry& plugins, const std::string& field) {
  if (order.size() != graph.layer_count()) {
    refuse(network, field + " '" + order + "' has " + std::to_string(order.size()) + " letters for " +
                        std::to_string(graph.layer_count()) + " layers; give one letter per layer");
  }
  for (char letter : order) {
    const ProcessorSpec* spec = platform.find(letter);
    if (spec == nullptr) {
      refuse(network, field + " letter '" + std::string(1, letter) + "' is not a processor of platform '" +
                          platform.name + "'");
    }
    if (find_backend_plugin(*spec, plugins) == nullptr) {
      refuse(network, field + " letter '" + std::string(1, letter) + "' (" + spec->name +
                          ") has no backend plugin loaded (needs " + backend_choices(*spec) +
                          "; see --list-plugins)");
    }
  }
}

}  // namespace

void check_workload_network(const WorkloadNetwork& network, const graph::Graph& graph,
                            const Platform& platform, const PluginRegistry& plugins) {
  check_network_order(network, network.order, graph, platform, plugins, "order");
  for (const std::string& replica : network.replicas) {
    check_network_order(network, replica, graph, platform, plugins, "replicas: order");
    for (size_t l = 0; l < replica.size(); ++l) {
      const auto own = find_backend_plugin(*platform.find(network.order[l]), plugins);
      const auto other = find_backend_plugin(*platform.find(replica[l]), plugins);
      if (own != other) {
        refuse(network, "replicas: order '" + replica + "' runs layer " + std::to_string(l) + " on '" +
                            std::string(1, replica[l]) + "', another backend than '" +
                            std::string(1, network.order[l]) +
                            "' of its order; a replica must compute the same bits (same backend per layer)");
      }
    }
  }
}


Placement SharedDevices::place(const graph::Graph& graph, const std::string& order,
                              const Platform& platform, const PluginRegistry& plugins) {
  ResolvedOrder resolved;
  resolved.fallback.order = order;
  for (char letter : order) {
    auto it = bound_.find(letter);
    if (it == bound_.end()) it = bound_.emplace(letter, bind_processor(letter, order, platform, plugins)).first;
    resolved.probe.devices[letter] = it->second;
  }
  return Placement::create(graph, std::move(resolved), platform, plugins);
}

PlanRanks::PlanRanks(const Workload& workload) {
  const auto& nets = workload.networks;
  slots_.resize(nets.size());
  std::vector<std::string> plan = workload.plan;
  if (plan.empty()) {  // one request of each network in turn
    for (const WorkloadNetwork& n : nets) plan.push_back(n.name);
  }
  for (size_t p = 0; p < plan.size(); ++p) {
    for (size_t i = 0; i < nets.size(); ++i) {
      if (nets[i].name == plan[p]) slots_[i].push_back(p);
    }
  }
  cycle_ = plan.size();
}

uint64_t PlanRanks::rank(size_t network, uint64_t frame) const {
  const std::vector<uint64_t>& slots = slots_.at(network);
  if (slots.empty()) return std::numeric_limits<uint64_t>::max();
  return (frame / slots.size()) * cycle_ + slots[frame % slots.size()];
}

}  // namespace co_up
