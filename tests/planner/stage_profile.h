// A synthetic per-op layer profile of the trained multi-exit fixture for `co_up plan` with a
// stage plan (tests of the planner's command line).
#pragma once

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace co_up::test {

inline const std::filesystem::path kMncDir = CO_UP_MNC_FIXTURES;
constexpr int kMncUnits = 12;  // the fixture with --units=ops: 3 stages x (3 convolutions + 1 exit)

// Three processors with two DVFS levels: B fast and hungry, L slow and frugal, G in between.
inline std::filesystem::path write_stage_profile(const std::filesystem::path& dir) {
  nlohmann::json p;
  p["format"] = "co_up-layer-profile";
  p["version"] = 2;
  p["network"] = {{"graph", ""}, {"model", (kMncDir / "multi_exit.onnx").string()}, {"units", "ops"},
                  {"image_size", 0}, {"layer_count", kMncUnits}};
  p["repetitions"] = 5;
  nlohmann::json processors = nlohmann::json::array(), times = nlohmann::json::array(),
                 power = nlohmann::json::array(), transfers = nlohmann::json::array();
  const std::string letters = "BLG";
  const double speed[] = {4, 1, 2}, watts[] = {3, 0.5, 1.5};
  for (size_t i = 0; i < letters.size(); ++i) {
    const std::string l(1, letters[i]);
    processors.push_back({{"letter", l}, {"name", "cpu " + l}, {"kind", "cpu"}, {"backend", "cpu-reference"},
                          {"host", l}, {"host_cores", {static_cast<int>(i)}}, {"dvfs_domain", l},
                          {"levels_khz", {1000000, 2000000}}});
    for (int level : {1, 2}) {
      std::vector<double> us;
      for (int u = 0; u < kMncUnits; ++u) us.push_back((u % 4 == 3 ? 2.0 : 40.0 + 10 * (u / 4)) / (speed[i] * level));
      times.push_back({{"processor", l}, {"level", level}, {"median_us", us}, {"mad_us", std::vector<double>(kMncUnits, 0)}});
      power.push_back({{"processor", l}, {"level", level}, {"busy_w", watts[i] * level * level}, {"idle_w", 0.1}});
    }
    for (size_t j = 0; j < letters.size(); ++j) {
      if (i == j) continue;
      transfers.push_back({{"from", l}, {"to", std::string(1, letters[j])},
                           {"send_us", std::vector<double>(kMncUnits - 1, 3)}, {"receive_us", std::vector<double>(kMncUnits - 1, 2)}});
    }
  }
  p["platform"] = {{"name", "synthetic"}, {"processors", processors}};
  p["layer_times"] = times;
  p["transfers"] = transfers;
  p["power_w"] = power;
  p["completed"] = nlohmann::json::array();
  const std::filesystem::path file = dir / "profile.json";
  std::ofstream(file) << p.dump(1);
  return file;
}

}  // namespace co_up::test
