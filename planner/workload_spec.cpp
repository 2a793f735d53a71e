#include "planner/workload_spec.h"

#include <set>

#include "core/error.h"
#include "core/io/input_file.h"
#include "core/json_input.h"

namespace co_up::planner {
namespace {

bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

}  // namespace

WorkloadSpec parse_workload(const std::string& text, const std::string& origin, bool orders_required) {
  const nlohmann::json root = parse_json(text, origin);
  if (!root.is_object()) throw InputError(origin + ": the top level must be an object with \"networks\"");
  static const std::set<std::string> kTop = {"mode", "policy", "networks"};
  for (const auto& [key, value] : root.items()) {
    if (!kTop.count(key)) throw InputError(origin + ": unknown key \"" + key + "\" (known: mode, policy, networks)");
  }
  WorkloadSpec spec;
  const auto text_of = [&](const nlohmann::json& v, const std::string& where) {
    if (!v.is_string()) throw InputError(origin + ": " + where + " = " + json_shown(v) + " is not a string");
    return v.get<std::string>();
  };
  if (root.contains("mode")) {
    spec.mode = text_of(root["mode"], "\"mode\"");
    if (spec.mode != "pipeline" && spec.mode != "switch") {
      throw InputError(origin + ": \"mode\" = \"" + spec.mode + "\" must be \"pipeline\" or \"switch\"");
    }
  }
  if (root.contains("policy")) {
    spec.policy = text_of(root["policy"], "\"policy\"");
    if (spec.policy != "oldest" && spec.policy != "priority" && spec.policy != "plan") {
      throw InputError(origin + ": \"policy\" = \"" + spec.policy + "\" must be \"oldest\", \"priority\" or \"plan\"");
    }
  }
  if (!root.contains("networks") || !root["networks"].is_array() || root["networks"].empty()) {
    throw InputError(origin + ": \"networks\" must be a non-empty array of networks");
  }
  static const std::set<std::string> kKeys = {"name",  "graph", "model",  "image_size", "order",   "split",
                                              "input", "frames", "rate", "priority",   "batch"};
  std::set<std::string> names;
  const nlohmann::json& nets = root["networks"];
  for (size_t i = 0; i < nets.size(); ++i) {
    const nlohmann::json& n = nets[i];
    const std::string at = origin + ": \"networks\"[" + std::to_string(i) + "]";
    if (!n.is_object()) throw InputError(at + " is not an object");
    if (!n.contains("name")) throw InputError(at + " has no \"name\"");
    WorkloadNetworkSpec net;
    net.name = text_of(n["name"], "\"networks\"[" + std::to_string(i) + "].\"name\"");
    if (!valid_name(net.name)) {
      throw InputError(at + ": name '" + net.name + "' must be 1-64 letters, digits, '_' or '-'");
    }
    const std::string who = origin + ": network '" + net.name + "'";
    if (!names.insert(net.name).second) throw InputError(who + ": name used twice; give each network its own name");
    for (const auto& [key, value] : n.items()) {
      if (!kKeys.count(key)) {
        throw InputError(who + ": unknown field \"" + key +
                         "\" (known: name, graph, model, image_size, order, split, input, frames, rate, priority, batch)");
      }
    }
    const auto field = [&](const char* key) { return std::string("\"") + key + "\""; };
    if (n.contains("graph")) net.graph = text_of(n["graph"], "network '" + net.name + "' " + field("graph"));
    if (n.contains("model")) net.model = text_of(n["model"], "network '" + net.name + "' " + field("model"));
    if (net.graph.empty() == net.model.empty()) {
      throw InputError(who + ": give exactly one of \"graph\" (a zoo name) and \"model\" (an ONNX file)");
    }
    if (n.contains("image_size")) {
      if (!net.model.empty()) throw InputError(who + ": \"image_size\" applies to zoo graphs only");
      net.image_size = json_integer(n["image_size"], who + ": " + field("image_size"), 1, 8192);
    }
    if (n.contains("order")) {
      net.order = text_of(n["order"], "network '" + net.name + "' " + field("order"));
      if (net.order.empty()) throw InputError(who + ": \"order\" is empty; give one processor letter per layer");
    } else if (orders_required) {
      throw InputError(who + ": no \"order\"; give one processor letter per layer (co_up plan --workload writes them)");
    }
    if (n.contains("split")) net.split = text_of(n["split"], "network '" + net.name + "' " + field("split"));
    if (n.contains("input")) net.input = text_of(n["input"], "network '" + net.name + "' " + field("input"));
    if (n.contains("frames")) net.frames = json_integer(n["frames"], who + ": " + field("frames"), 1, 1'000'000'000);
    if (n.contains("rate")) {
      const nlohmann::json& r = n["rate"];
      if (!r.is_number()) throw InputError(who + ": \"rate\" = " + json_shown(r) + " is not a number");
      const double v = r.get<double>();
      if (!(v > 0) || v > 1e6) {
        throw InputError(who + ": \"rate\" = " + json_shown(r) + " must be > 0 and at most 1000000 (requests per second)");
      }
      net.rate = v;
    }
    if (n.contains("priority")) net.priority = json_integer(n["priority"], who + ": " + field("priority"), -1000000, 1000000);
    if (n.contains("batch")) net.batch = json_integer(n["batch"], who + ": " + field("batch"), 1, 4096);
    spec.networks.push_back(std::move(net));
  }
  return spec;
}

WorkloadSpec read_workload(const std::filesystem::path& path, bool orders_required) {
  const std::string origin = "workload '" + path.string() + "'";
  return parse_workload(io::read_input_file(path, "workload", io::kMaxConfigBytes), origin, orders_required);
}

std::string workload_json(const WorkloadSpec& spec) {
  nlohmann::ordered_json root;
  root["mode"] = spec.mode;
  root["policy"] = spec.policy;
  root["networks"] = nlohmann::ordered_json::array();
  for (const WorkloadNetworkSpec& n : spec.networks) {
    nlohmann::ordered_json o;
    o["name"] = n.name;
    if (!n.graph.empty()) o["graph"] = n.graph;
    if (!n.model.empty()) o["model"] = n.model;
    if (n.image_size > 0) o["image_size"] = n.image_size;
    o["order"] = n.order;
    if (!n.split.empty()) o["split"] = n.split;
    if (!n.input.empty()) o["input"] = n.input;
    o["frames"] = n.frames;
    if (n.rate) o["rate"] = *n.rate;
    o["priority"] = n.priority;
    o["batch"] = n.batch;
    root["networks"].push_back(std::move(o));
  }
  return root.dump(2) + "\n";
}

}  // namespace co_up::planner
