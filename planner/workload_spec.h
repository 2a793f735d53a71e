// The workload file as the planner reads and writes it: several networks that share the
// processors, each with its own order string, requests and priority. The format is the one
// `co_up --workload=FILE.json` runs (docs/hetero2pipe_planning.md repeats it):
//
//   {"mode": "pipeline"|"switch", "policy": "oldest"|"priority"|"plan",
//    "networks": [{"name", "graph" | "model", "image_size", "order", "split", "input",
//                  "frames", "rate", "priority", "batch"}, ...]}
//
// The planner reads it with orders optional (it chooses them) and writes it with every order
// filled in, the networks listed in the planned request order, and policy "plan".
// Errors are InputError, one line naming the file, the network and the field:
//   workload 'w.json': network 'detector': "rate" = 0 must be > 0 (requests per second)
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace co_up::planner {

struct WorkloadNetworkSpec {
  std::string name;
  std::string graph;  // zoo name, or
  std::string model;  // ONNX path (exactly one of the two)
  int64_t image_size = 0;
  std::string order;  // "" when not given
  std::string split;
  std::string input;
  int64_t frames = 100;
  std::optional<double> rate;  // requests per second; absent: as fast as possible
  int64_t priority = 0;
  int64_t batch = 1;
};

struct WorkloadSpec {
  std::string mode = "pipeline";
  std::string policy = "oldest";
  std::vector<WorkloadNetworkSpec> networks;
};

// `orders_required`: every network must have an order (a runnable file); the planner passes false.
WorkloadSpec parse_workload(const std::string& json_text, const std::string& origin, bool orders_required);
// Reads a regular file (core/io/input_file.h rules); origin "workload 'PATH'".
WorkloadSpec read_workload(const std::filesystem::path& path, bool orders_required);
// The JSON text of a workload (keys in the documented order; defaults left out).
std::string workload_json(const WorkloadSpec& spec);

}  // namespace co_up::planner
