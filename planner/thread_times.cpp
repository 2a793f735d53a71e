#include "planner/thread_times.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/json_input.h"

namespace co_up::planner {
namespace {

constexpr const char* kKey = "thread_layer_times";
constexpr int kMaxThreads = 1024;

std::string counts_text(const std::vector<int>& counts) {
  std::string s;
  for (int c : counts) s += (s.empty() ? "" : ", ") + std::to_string(c);
  return s.empty() ? "none" : s;
}

// `key`: "profile 'F': key 'thread_layer_times[0].median_us" (the closing quote is added here).
std::vector<double> read_times(const nlohmann::json& v, const std::string& key, uint32_t layers) {
  if (!v.is_array() || v.size() != layers) {
    throw InputError(key + "' must be an array of " + std::to_string(layers) +
                     " times (network.layer_count)");
  }
  std::vector<double> out;
  out.reserve(layers);
  for (size_t i = 0; i < v.size(); ++i) out.push_back(json_number(v[i], json_index(key, i) + "'", 0));
  return out;
}

}  // namespace

const ThreadLayerTimes* find_thread_times(const LayerProfile& profile, char processor, int threads) {
  for (const ThreadLayerTimes& t : profile.thread_times) {
    if (t.processor == processor && t.threads == threads) return &t;
  }
  return nullptr;
}

std::vector<int> measured_thread_counts(const LayerProfile& profile, char processor) {
  std::vector<int> counts;
  for (const ThreadLayerTimes& t : profile.thread_times) {
    if (t.processor == processor) counts.push_back(t.threads);
  }
  std::sort(counts.begin(), counts.end());
  return counts;
}

LayerProfile with_thread_counts(const LayerProfile& profile, const std::map<char, int>& threads) {
  LayerProfile out = profile;
  for (const auto& [letter, count] : threads) {
    if (profile.find_processor(letter) == nullptr) {
      throw InputError("intra-op threads for '" + std::string(1, letter) +
                       "', but the profile has no processor '" + std::string(1, letter) +
                       "' (it has " + profile.letters() + ")");
    }
    const ThreadLayerTimes* measured = find_thread_times(profile, letter, count);
    const ProfileProcessor& p = *profile.find_processor(letter);
    if (measured == nullptr && count == 1 && p.host_cores.size() == 1 && p.host == letter) {
      continue;  // a one-core cluster: its layer times are the one-thread times
    }
    if (measured == nullptr) {
      throw InputError("the profile has no layer times of '" + std::string(1, letter) + "' at " +
                       std::to_string(count) + " thread(s) (measured: " +
                       counts_text(measured_thread_counts(profile, letter)) +
                       "); co_up profile measures 1..cores threads of a cluster of several cores");
    }
    const LayerTimes* base = profile.find_layer_times(letter, 0);
    for (LayerTimes& t : out.layer_times) {
      if (t.processor != letter) continue;
      for (size_t i = 0; i < t.median_us.size() && i < measured->median_us.size(); ++i) {
        if (std::isnan(t.median_us[i])) continue;  // declined stays declined
        if (t.level == 0) {
          t.median_us[i] = measured->median_us[i];
          if (i < t.mad_us.size() && i < measured->mad_us.size()) t.mad_us[i] = measured->mad_us[i];
        } else if (base != nullptr && i < base->median_us.size() && base->median_us[i] > 0) {
          const double ratio = measured->median_us[i] / base->median_us[i];
          t.median_us[i] *= ratio;
          if (i < t.mad_us.size()) t.mad_us[i] *= ratio;
        }
      }
    }
  }
  return out;
}

void read_thread_layer_times(const nlohmann::json& root, const std::string& origin, LayerProfile& profile) {
  const auto it = root.find(kKey);
  if (it == root.end() || it->is_null()) return;
  const std::string here = "profile '" + origin + "': key '" + std::string(kKey);
  if (!it->is_array()) throw InputError(here + "' must be an array");
  const uint32_t layers = profile.network.layer_count;
  for (size_t i = 0; i < it->size(); ++i) {
    const nlohmann::json& v = (*it)[i];
    const std::string key = here + "[" + std::to_string(i) + "]";
    if (!v.is_object() || !v.contains("processor") || !v.contains("threads") || !v.contains("median_us")) {
      throw InputError(key + "' must be an object with \"processor\", \"threads\" and \"median_us\"");
    }
    ThreadLayerTimes t;
    const nlohmann::json& letter = v["processor"];
    if (!letter.is_string() || letter.get<std::string>().size() != 1 ||
        profile.find_processor(letter.get<std::string>()[0]) == nullptr) {
      throw InputError(key + ".processor' is " + json_shown(letter) +
                       ", not a processor of the profile (" + profile.letters() + ")");
    }
    t.processor = letter.get<std::string>()[0];
    t.threads = static_cast<int>(json_integer(v["threads"], key + ".threads'", 1, kMaxThreads));
    if (find_thread_times(profile, t.processor, t.threads) != nullptr) {
      throw InputError(key + "' repeats processor '" + std::string(1, t.processor) + "' at " +
                       std::to_string(t.threads) + " thread(s)");
    }
    t.median_us = read_times(v["median_us"], key + ".median_us", layers);
    t.mad_us = v.contains("mad_us") ? read_times(v["mad_us"], key + ".mad_us", layers)
                                    : std::vector<double>(layers, 0.0);
    profile.thread_times.push_back(std::move(t));
  }
}

nlohmann::ordered_json thread_layer_times_json(const LayerProfile& profile) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const ThreadLayerTimes& t : profile.thread_times) {
    list.push_back(nlohmann::ordered_json{{"processor", std::string(1, t.processor)},
                                          {"threads", t.threads},
                                          {"median_us", t.median_us},
                                          {"mad_us", t.mad_us}});
  }
  return list;
}

}  // namespace co_up::planner
