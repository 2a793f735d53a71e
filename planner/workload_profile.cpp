#include "planner/workload_profile.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/error.h"
#include "core/io/input_file.h"
#include "core/json_input.h"
#include "core/message_text.h"
#include "planner/cost_model.h"

namespace co_up::planner {
namespace {

constexpr const char* kFormat = "co_up-workload-profile";
constexpr int kVersion = 1;

}  // namespace

const WorkloadProfileNetwork* WorkloadProfile::find(const std::string& name) const {
  for (const WorkloadProfileNetwork& n : networks) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

ContentionFeatures features_of(const WorkloadProfileNetwork& n, char processor) {
  const LayerTimes* t = n.profile.find_layer_times(processor, 0);
  if (t == nullptr) return {};
  double us = 0;
  for (double v : t->median_us) us += std::isnan(v) ? 0.0 : v;
  if (us <= 0) return {};
  return {static_cast<double>(n.weight_bytes + 2 * n.activation_bytes) / us, static_cast<double>(n.macs) / us};
}

WorkloadProfile parse_workload_profile(const std::string& text, const std::string& origin) {
  const nlohmann::json root = parse_json(text, origin);
  const auto need = [&](const nlohmann::json& o, const std::string& key, const std::string& where) -> const nlohmann::json& {
    if (!o.is_object() || !o.contains(key)) throw InputError(origin + ": " + where + " lacks key \"" + key + "\"");
    return o.at(key);
  };
  const auto text_of = [&](const nlohmann::json& v, const std::string& where) {
    if (!v.is_string()) throw InputError(origin + ": " + where + " is not a string");
    return v.get<std::string>();
  };
  if (!root.is_object() || !root.contains("format") || root["format"] != kFormat) {
    throw InputError(origin + " is not a workload profile (\"format\" must be \"" + kFormat +
                     "\"; write one with co_up profile --workload=FILE)");
  }
  if (json_integer(need(root, "version", "the file"), origin + ": \"version\"", 1, 1000) != kVersion) {
    throw InputError(origin + ": version " + root["version"].dump() + " is not supported (this co_up reads 1)");
  }
  WorkloadProfile p;
  p.platform_name = text_of(need(root, "platform", "the file"), "\"platform\"");
  p.processors = text_of(need(root, "processors", "the file"), "\"processors\"");
  const nlohmann::json& nets = need(root, "networks", "the file");
  if (!nets.is_array() || nets.empty()) throw InputError(origin + ": \"networks\" must be a non-empty array");
  for (size_t i = 0; i < nets.size(); ++i) {
    const std::string where = "\"networks\"[" + std::to_string(i) + "]";
    const nlohmann::json& n = nets[i];
    WorkloadProfileNetwork w;
    w.name = text_of(need(n, "name", where), where + ".\"name\"");
    w.graph = text_of(need(n, "graph", where), where + ".\"graph\"");
    w.model = text_of(need(n, "model", where), where + ".\"model\"");
    w.split = text_of(need(n, "split", where), where + ".\"split\"");
    w.image_size = json_integer(need(n, "image_size", where), origin + ": " + where + ".\"image_size\"", 0, 8192);
    w.weight_bytes = json_integer(need(n, "weight_bytes", where), origin + ": " + where + ".\"weight_bytes\"", 0, INT64_MAX / 4);
    w.activation_bytes = json_integer(need(n, "activation_bytes", where), origin + ": " + where + ".\"activation_bytes\"", 0, INT64_MAX / 4);
    w.macs = json_integer(need(n, "macs", where), origin + ": " + where + ".\"macs\"", 0, INT64_MAX / 4);
    w.profile = parse_layer_profile(need(n, "profile", where).dump(), origin + " " + where + ".\"profile\"");
    if (n.contains("batch_times")) {
      const nlohmann::json& bt = n["batch_times"];
      const std::string at = origin + ": " + where + ".\"batch_times\"";
      if (!bt.is_object()) throw InputError(at + " must be an object of processor letters");
      for (const auto& [letter, points] : bt.items()) {
        if (letter.size() != 1) throw InputError(at + ": key '" + letter + "' is not one processor letter");
        if (!points.is_array()) throw InputError(at + ".\"" + letter + "\" must be an array");
        std::vector<BatchTime>& out = w.batch_times[letter[0]];
        for (size_t j = 0; j < points.size(); ++j) {
          const std::string pw = where + ".\"batch_times\".\"" + letter + "\"[" + std::to_string(j) + "]";
          BatchTime t;
          t.batch = static_cast<uint32_t>(
              json_integer(need(points[j], "batch", pw), origin + ": " + pw + ".\"batch\"", 1, 4096));
          t.frame_us = json_number(need(points[j], "frame_us", pw), origin + ": " + pw + ".\"frame_us\"", 0, 1e12);
          out.push_back(t);
        }
      }
    }
    if (p.find(w.name) != nullptr) throw InputError(origin + ": network '" + w.name + "' appears twice");
    p.networks.push_back(std::move(w));
  }
  if (root.contains("contention") && !root["contention"].is_null()) {
    p.contention = ContentionModel::from_json(root["contention"], origin);
  }
  if (root.contains("coruns")) p.coruns = samples_from_json(root["coruns"], origin);
  if (root.contains("held_out_coruns")) {
    const nlohmann::json& h = root["held_out_coruns"];
    if (!h.is_array()) throw InputError(origin + ": \"held_out_coruns\" must be an array");
    for (size_t i = 0; i < h.size(); ++i) {
      p.held_out_coruns.push_back(static_cast<int>(json_integer(h[i], origin + ": \"held_out_coruns\"[" + std::to_string(i) + "]", 0, 1000000)));
    }
  }
  const auto read_error = [&](const char* name, HeldOutError& out) {
    if (!root.contains(name) || !root[name].is_object()) return;
    const nlohmann::json& e = root[name];
    const std::string where = std::string("\"") + name + "\"";
    const auto number = [&](const char* key) {
      return json_number(need(e, key, where), origin + ": " + where + ".\"" + key + "\"", 0, 1e12);
    };
    out.samples = static_cast<size_t>(number("samples"));
    out.mean_abs_points = number("mean_abs_points");
    out.max_abs_points = number("max_abs_points");
    out.mean_abs_time_pct = number("mean_abs_time_pct");
  };
  read_error("held_out_error", p.held_out_error);
  read_error("held_out_error_pair_mean", p.held_out_pair_mean);
  return p;
}

WorkloadProfile read_workload_profile(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw InputError("workload profile '" + path.string() +
                     "' cannot be read (no such file; write one with co_up profile --workload=FILE --profile-out=...)");
  }
  return parse_workload_profile(io::read_input_file(path, "profile", io::kMaxConfigBytes),
                                "workload profile '" + path.string() + "'");
}

std::string workload_profile_json(const WorkloadProfile& p) {
  nlohmann::ordered_json root;
  root["format"] = kFormat;
  root["version"] = kVersion;
  root["platform"] = p.platform_name;
  root["processors"] = p.processors;
  root["networks"] = nlohmann::ordered_json::array();
  for (const WorkloadProfileNetwork& n : p.networks) {
    nlohmann::ordered_json o;
    o["name"] = n.name;
    o["graph"] = n.graph;
    o["model"] = n.model;
    o["image_size"] = n.image_size;
    o["split"] = n.split;
    o["weight_bytes"] = n.weight_bytes;
    o["activation_bytes"] = n.activation_bytes;
    o["macs"] = n.macs;
    o["profile"] = nlohmann::ordered_json::parse(layer_profile_json(n.profile));
    if (!n.batch_times.empty()) {
      nlohmann::ordered_json bt = nlohmann::ordered_json::object();
      for (const auto& [letter, points] : n.batch_times) {
        nlohmann::ordered_json a = nlohmann::ordered_json::array();
        for (const BatchTime& t : points) a.push_back({{"batch", t.batch}, {"frame_us", t.frame_us}});
        bt[std::string(1, letter)] = std::move(a);
      }
      o["batch_times"] = std::move(bt);
    }
    root["networks"].push_back(std::move(o));
  }
  root["contention"] = p.contention ? nlohmann::ordered_json(p.contention->to_json()) : nlohmann::ordered_json();
  root["coruns"] = samples_to_json(p.coruns);
  root["held_out_coruns"] = p.held_out_coruns;
  const auto error_json = [](const HeldOutError& e) {
    return nlohmann::ordered_json{{"samples", e.samples},
                                  {"mean_abs_points", e.mean_abs_points},
                                  {"max_abs_points", e.max_abs_points},
                                  {"mean_abs_time_pct", e.mean_abs_time_pct}};
  };
  root["held_out_error"] = error_json(p.held_out_error);
  root["held_out_error_pair_mean"] = error_json(p.held_out_pair_mean);
  return root.dump(1) + "\n";
}

namespace {

// The co-runs' solo frame times of `network` on `letter`: whole-network runs, one after another,
// as the runtime runs them.
std::vector<double> solo_runs_us(const std::vector<CoRunSample>& coruns, const std::string& network, char letter) {
  std::vector<double> us;
  for (const CoRunSample& s : coruns) {
    if (s.victim == network && s.victim_processor == letter && s.solo_us > 0) us.push_back(s.solo_us);
  }
  return us;
}

// The batch of one network (batch_time.h) and its costs made per request. Chosen only where nothing
// waits for a batch to fill (no rate: every request is there at the start), the user left "batch"
// at 1 (a batch the user gave is kept, its costs made per request too), the graph is the zoo's (an
// ONNX model's batch is its input shape) and the profile has batch times on every processor of the
// problem.
uint32_t plan_batch(const WorkloadProfileNetwork& profiled, const WorkloadNetwork& spec, const std::string& letters,
                    NetworkCosts& costs, std::vector<std::string>& notes) {
  if (spec.rate || !spec.model.empty() || profiled.batch_times.empty()) return spec.batch;
  std::vector<AffineBatchTime> fits;
  std::vector<uint32_t> candidates;
  for (char letter : letters) {
    const auto points = profiled.batch_times.find(letter);
    if (points == profiled.batch_times.end()) return spec.batch;
    try {
      fits.push_back(fit_affine_batch_time(points->second));
    } catch (const std::invalid_argument&) {
      return spec.batch;
    }
    if (!(fits.back().frame_us(1) > 0)) return spec.batch;  // no line through positive times
    for (const BatchTime& t : points->second) candidates.push_back(t.batch);
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  const uint32_t batch = spec.batch != 1 ? spec.batch : choose_batch(fits, candidates, spec.frames);
  if (batch == 1) return 1;
  // The line is a fit over the profiled batches: past the largest it is a guess, and a falling
  // line reaches zero. Either way the network keeps one request's time t(1) per request.
  const auto refuse = [&](const std::string& why) {
    notes.push_back("batch " + std::to_string(batch) + " for " + spec.name + ": " + why +
                    "; planned at one request's time per request (profile larger batches to plan it)");
    return spec.batch;
  };
  if (batch > candidates.back()) {
    return refuse("larger than the largest profiled batch (" + std::to_string(candidates.back()) + ")");
  }
  for (const AffineBatchTime& fit : fits) {
    if (!(fit.frame_us(batch) > 0)) return refuse("the affine batch time is not positive there");
  }
  std::string fitted;
  for (size_t k = 0; k < letters.size(); ++k) {
    // Per request, a frame of `batch` takes t(batch) / batch where one request alone takes t(1).
    const double scale = fits[k].frame_us(batch) / (batch * fits[k].frame_us(1));
    for (double& t : costs.layer_us[k]) t *= scale;
    fitted += (fitted.empty() ? "" : ", ") + std::string(1, letters[k]) + " t(b) = " +
              format_number("%.2f", fits[k].fixed_us / 1e3) + " + " +
              format_number("%.2f", fits[k].per_request_us / 1e3) + " b ms (per request " +
              format_number("%+.0f %%", 100 * (scale - 1)) + ")";
  }
  notes.push_back("batch " + std::to_string(batch) + " for " + spec.name +
                  (spec.batch != 1 ? " (as given" : " (as fast as possible") + "; affine batch time " + fitted + ")");
  return batch;
}

}  // namespace

void scale_to_whole_runs(std::vector<double>& layer_us, double input_us, std::vector<double> solo_us) {
  if (solo_us.empty()) return;
  std::sort(solo_us.begin(), solo_us.end());
  const size_t m = solo_us.size() / 2;
  const double whole = solo_us.size() % 2 == 1 ? solo_us[m] : 0.5 * (solo_us[m - 1] + solo_us[m]);
  double sum = 0;
  for (double t : layer_us) sum += t;
  if (sum <= 0 || whole - input_us <= 0) return;
  const double scale = (whole - input_us) / sum;
  for (double& t : layer_us) t *= scale;
}

WorkloadProblem workload_problem(const WorkloadProfile& profile, const Workload& spec,
                                 std::vector<std::string>& notes) {
  WorkloadProblem problem;
  std::vector<const WorkloadProfileNetwork*> matched;
  for (const WorkloadNetwork& s : spec.networks) {
    const WorkloadProfileNetwork* n = profile.find(s.name);
    const std::string who = "workload network '" + s.name + "'";
    if (n == nullptr) {
      throw InputError(who + ": not in the profile; profile this workload with co_up profile --workload=FILE");
    }
    const auto differs = [&](const std::string& field, const std::string& want, const std::string& have) {
      if (want != have) {
        throw InputError(who + ": \"" + field + "\" is '" + want + "' but the profile measured '" + have +
                         "'; profile the workload again");
      }
    };
    differs("graph", s.graph, n->graph);
    differs("model", s.model, n->model);
    differs("split", s.split, n->split);
    differs("image_size", std::to_string(s.image_size), std::to_string(n->image_size));
    matched.push_back(n);
  }
  // Processors every network was measured on, in the profile's order.
  for (char c : profile.processors) {
    const bool everywhere = std::all_of(matched.begin(), matched.end(), [&](const WorkloadProfileNetwork* n) {
      return n->profile.find_layer_times(c, 0) != nullptr;
    });
    if (everywhere) problem.letters += c;
  }
  if (problem.letters.empty()) throw InputError("the workload profile has no processor measured for every network");
  // The plugin behind each stage (the same for every network: one platform): stages with the same
  // one compute the same bits, so a network may run on either (replicas).
  for (char letter : problem.letters) {
    std::string backend;
    for (const WorkloadProfileNetwork* n : matched) {
      const ProfileProcessor* p = n->profile.find_processor(letter);
      const std::string b = p != nullptr ? p->backend : "";
      if (n == matched.front()) backend = b;
      else if (b != backend) backend.clear();  // measured on different plugins: never interchangeable
    }
    problem.backends.push_back(backend);
  }
  for (size_t i = 0; i < matched.size(); ++i) {
    const CostModel model(matched[i]->profile);
    NetworkCosts c;
    c.name = spec.networks[i].name;
    const uint32_t layers = model.layer_count();
    for (char letter : problem.letters) {
      const size_t p = model.index_of(letter);
      std::vector<double> times(layers);
      for (uint32_t l = 0; l < layers; ++l) times[l] = model.layer_us(l, p, {});
      scale_to_whole_runs(times, model.input_us(p), solo_runs_us(profile.coruns, matched[i]->name, letter));
      std::vector<double> send(layers > 0 ? layers - 1 : 0, 0.0), receive(send.size(), 0.0);
      // Peer-independent cut costs (the paper's T^c): the mean over the other processors.
      int peers = 0;
      for (char other : problem.letters) {
        if (other == letter) continue;
        const size_t q = model.index_of(other);
        for (uint32_t b = 0; b + 1 < layers; ++b) {
          send[b] += model.send_us(b, p, q, Mode::kPipeline);
          receive[b] += model.receive_us(b, q, p, Mode::kPipeline);
        }
        ++peers;
      }
      for (uint32_t b = 0; peers > 0 && b + 1 < layers; ++b) {
        send[b] /= peers;
        receive[b] /= peers;
      }
      c.layer_us.push_back(std::move(times));
      c.send_us.push_back(std::move(send));
      c.receive_us.push_back(std::move(receive));
      c.input_us.push_back(model.input_us(p));
    }
    problem.batches.push_back(plan_batch(*matched[i], spec.networks[i], problem.letters, c, notes));
    problem.networks.push_back(std::move(c));
  }
  const size_t n = matched.size(), k = problem.letters.size();
  if (!profile.contention) {
    notes.push_back("no contention model in the profile: co-running slices are predicted not to slow each other");
    return problem;
  }
  problem.interference = Interference(n, k);
  // The regression earns its place only where it predicted the held-out co-runs better than each
  // processor pair's mean slowdown; otherwise the pair's mean over every co-run is the model.
  const bool pair_mean = profile.held_out_pair_mean.samples > 0 &&
                         profile.held_out_pair_mean.mean_abs_points < profile.held_out_error.mean_abs_points;
  const std::map<std::pair<char, char>, double> means = pair_mean_slowdowns(profile.coruns);
  if (pair_mean) {
    notes.push_back("contention: each processor pair's mean slowdown over its co-runs (held-out error " +
                    format_number("%.1f", profile.held_out_pair_mean.mean_abs_points) + " points, the regression's " +
                    format_number("%.1f", profile.held_out_error.mean_abs_points) + ")");
  }
  std::string missing;
  for (size_t ka = 0; ka < k; ++ka) {
    for (size_t kb = 0; kb < k; ++kb) {
      if (ka == kb) continue;
      const char pa = problem.letters[ka], pb = problem.letters[kb];
      const auto mean = means.find({pa, pb});
      if (pair_mean ? mean == means.end() : !profile.contention->has_pair(pa, pb)) {
        missing += (missing.empty() ? "" : ", ") + std::string{pa, '|', pb};
        continue;
      }
      for (size_t a = 0; a < n; ++a) {
        for (size_t b = 0; b < n; ++b) {
          // Clamped at 0 (the model's contract): a co-run is not predicted faster than alone.
          problem.interference.set(a, ka, b, kb,
                                   std::max(0.0, pair_mean ? mean->second
                                                           : profile.contention->predict(pa, pb, features_of(*matched[a], pa),
                                                                                         features_of(*matched[b], pb))));
        }
      }
    }
  }
  if (!missing.empty()) notes.push_back("no co-runs measured for " + missing + ": slowdown 0 assumed there");
  return problem;
}

}  // namespace co_up::planner
