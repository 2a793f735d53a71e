// co_up_bench_api: what the public API costs over the Executor it wraps (a program, not a test).
//
// Part 1, per-frame overhead: one frame at a time, Session::run(tensor) against Executor::run()
// of a one-frame RunRequest on the same network, order and platform (every layer on B), the two
// interleaved in each repetition so machine noise hits both; medians, and their difference in µs.
// Part 2, streaming throughput of a three-stage pipeline (B, L, B): the API (submit + callback,
// drain) against the Executor running a RunRequest of the same frames (what the co_up command
// line does) and against the co_up binary itself (its profile's throughput). Both throughputs are
// the steady state the profile measures (profiler::summarize), plus the API's wall-clock rate from
// the first submit to the last result. Ratios are medians over repetitions.
//
// Options: --network=NAME (squeezenet) --image-size=N (32) --reps=R (30) --frames=N (300)
//          --platform=FILE (platforms/host-2core.json with cpu-reference; see below)
//          --backend=cpu-reference|cpu-xnnpack --plugins=DIR --co_up=BINARY --quick --help
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/bench_text.h"
#include "co_up/co_up.hpp"
#include "core/executor.h"
#include "core/network.h"
#include "core/partition.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "profiler/report.h"

namespace {

using co_up::bench::fmt;
using co_up::bench::now_s;

struct Args {
  std::string network = "squeezenet";
  int64_t image_size = 32;
  int reps = 30;
  uint64_t frames = 300;
  std::string backend = "cpu-reference";
  std::string plugins = CO_UP_PLUGIN_DIR;
  std::string co_up = CO_UP_BINARY;
  std::string scratch;
};

double median(std::vector<double> v) { return co_up::profiler::median(std::move(v)); }

std::string order_of(size_t layers, bool three_stages) {
  std::string order(layers, 'B');
  if (three_stages) {
    for (size_t i = layers / 3; i < 2 * layers / 3; ++i) order[i] = 'L';
  }
  return order;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* name) -> const char* {
      const std::string prefix = std::string("--") + name + "=";
      return arg.rfind(prefix, 0) == 0 ? argv[i] + prefix.size() : nullptr;
    };
    if (const char* v = value("network")) a.network = v;
    else if (const char* v = value("image-size")) a.image_size = std::atoll(v);
    else if (const char* v = value("reps")) a.reps = std::atoi(v);
    else if (const char* v = value("frames")) a.frames = std::strtoull(v, nullptr, 10);
    else if (const char* v = value("backend")) a.backend = v;
    else if (const char* v = value("plugins")) a.plugins = v;
    else if (const char* v = value("co_up")) a.co_up = v;
    else if (arg == "--quick") { a.reps = 5; a.frames = 60; }
    else {
      std::cerr << "usage: co_up_bench_api [--network=NAME] [--image-size=N] [--reps=R] [--frames=N] "
                   "[--backend=B] [--plugins=DIR] [--co_up=BINARY] [--quick]\n";
      return arg == "--help" ? 0 : 2;
    }
  }
  try {
    // One plugin only and a two-core platform on it, written to a scratch directory.
    const std::filesystem::path scratch =
        std::filesystem::temp_directory_path() / ("co_up_bench_api_" + std::to_string(::getpid()));
    std::filesystem::create_directories(scratch / "plugins");
    const std::string plugin_file = a.backend == "cpu-xnnpack" ? "libco_up_cpu_xnnpack.so"
                                                                : "libco_up_cpu_reference.so";
    std::filesystem::copy_file(std::filesystem::path(a.plugins) / plugin_file, scratch / "plugins" / plugin_file);
    const std::filesystem::path platform_file = scratch / "platform.json";
    std::ofstream(platform_file) << "{\"name\": \"bench\", \"processors\": [\n"
                                    "  {\"letter\": \"B\", \"kind\": \"cpu\", \"backend\": \"" << a.backend
                                 << "\", \"cores\": [0], \"threads\": 1},\n"
                                    "  {\"letter\": \"L\", \"kind\": \"cpu\", \"backend\": \"" << a.backend
                                 << "\", \"cores\": [1], \"threads\": 1}]}\n";

    const co_up::graph::Graph graph = co_up::build_network({a.network, "layers", a.image_size, 1, ""});
    const co_up::Platform platform = co_up::load_platform(platform_file);
    const co_up::PluginRegistry registry = co_up::PluginRegistry::load_directory(scratch / "plugins");
    auto options = [&](const std::string& order) {
      co_up::SessionOptions o;
      o.set_platform_file(platform_file.string()).set_plugins_dir((scratch / "plugins").string())
          .set_image_size(a.image_size).set_order(order);
      return o;
    };
    const std::vector<float> input = co_up::seeded_inputs(graph, 1).at(0);
    co_up::Tensor tensor(graph.tensor(graph.inputs().at(0)).desc.shape, input);

    // ---- part 1: per-frame overhead ----
    {
      const std::string order = order_of(graph.layer_count(), false);
      co_up::ExecutorOptions eo;
      co_up::Executor executor(graph, co_up::Partition::create(graph, order), platform, registry, eo);
      co_up::Session session = co_up::Session::open_zoo(a.network, options(order));
      co_up::RunRequest request;
      request.frames = 1;
      request.input_sets = {{input}};
      std::vector<double> exec_us, api_us;
      const int reps = a.reps * 10;
      for (int r = 0; r < reps + 3; ++r) {  // 3 warm-up rounds
        double t0 = now_s();
        const co_up::RunResult result = executor.run(request);
        double t1 = now_s();
        const std::vector<co_up::Tensor> outputs = session.run(tensor);
        double t2 = now_s();
        if (r < 3) continue;
        exec_us.push_back((t1 - t0) * 1e6);
        api_us.push_back((t2 - t1) * 1e6);
        if (outputs.at(0).size() != result.last_outputs.at(0).size()) throw std::runtime_error("output sizes differ");
      }
      const double e = median(exec_us), p = median(api_us);
      std::printf("## per-frame overhead (%s at %lld, order %s, %s, %d frames each)\n\n", a.network.c_str(),
                  static_cast<long long>(a.image_size), order.c_str(), a.backend.c_str(), reps);
      std::printf("| path | median µs/frame |\n|---|---|\n");
      std::printf("| Executor::run (1 frame) | %s |\n", fmt("%.1f", e).c_str());
      std::printf("| Session::run (C++ API) | %s |\n", fmt("%.1f", p).c_str());
      std::printf("| overhead | %s |\n\n", fmt("%.1f", p - e).c_str());
    }

    // ---- part 2: streaming throughput ----
    {
      const std::string order = order_of(graph.layer_count(), true);
      co_up::ExecutorOptions eo;
      co_up::Executor executor(graph, co_up::Partition::create(graph, order), platform, registry, eo);
      co_up::Session session = co_up::Session::open_zoo(a.network, options(order));
      std::atomic<uint64_t> delivered{0};
      session.set_result_callback([&](co_up::Result) { delivered.fetch_add(1); });
      co_up::RunRequest request;
      request.frames = a.frames;
      request.input_sets = {{input}};
      std::vector<double> exec_fps, api_fps, api_wall_fps, cli_fps, ratio_exec, ratio_cli;
      const std::string profile_file = (scratch / "cli_profile.json").string();
      const std::string cli = a.co_up + " --graph=" + a.network + " --image-size=" + std::to_string(a.image_size) +
                              " --platform=" + platform_file.string() + " --plugins=" + (scratch / "plugins").string() +
                              " --order=" + order + " --n=" + std::to_string(a.frames) +
                              " --profile-out=" + profile_file + " > /dev/null";
      for (int r = 0; r < a.reps; ++r) {
        const double e = co_up::profiler::summarize(executor.run(request).profile).throughput_fps;
        const double t0 = now_s();
        for (uint64_t f = 0; f < a.frames; ++f) session.submit(co_up::Tensor(tensor));
        session.drain();
        const double wall = now_s() - t0;
        const double p = session.profile().throughput_fps;
        double c = 0;
        if (!a.co_up.empty() && std::system(cli.c_str()) == 0) {
          std::ifstream in(profile_file);
          c = nlohmann::json::parse(in)["summary"]["throughput_fps"].get<double>();
        }
        exec_fps.push_back(e);
        api_fps.push_back(p);
        api_wall_fps.push_back(static_cast<double>(a.frames) / wall);
        ratio_exec.push_back(p / e);
        if (c > 0) {
          cli_fps.push_back(c);
          ratio_cli.push_back(p / c);
        }
      }
      if (delivered.load() != a.frames * static_cast<uint64_t>(a.reps)) throw std::runtime_error("results lost");
      std::printf("## streaming throughput (order %s, %llu frames, %d repetitions)\n\n", order.c_str(),
                  static_cast<unsigned long long>(a.frames), a.reps);
      std::printf("| path | median frames/s |\n|---|---|\n");
      std::printf("| Executor::run (the CLI's path, in process) | %s |\n", fmt("%.1f", median(exec_fps)).c_str());
      if (!cli_fps.empty()) std::printf("| co_up binary (its profile) | %s |\n", fmt("%.1f", median(cli_fps)).c_str());
      std::printf("| API submit/callback (profile) | %s |\n", fmt("%.1f", median(api_fps)).c_str());
      std::printf("| API submit/callback (wall clock, first submit to last result) | %s |\n",
                  fmt("%.1f", median(api_wall_fps)).c_str());
      std::printf("| ratio API / Executor (median of per-repetition ratios) | %s |\n", fmt("%.3f", median(ratio_exec)).c_str());
      if (!ratio_cli.empty()) std::printf("| ratio API / co_up binary | %s |\n", fmt("%.3f", median(ratio_cli)).c_str());
    }
    std::filesystem::remove_all(scratch);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "co_up_bench_api: " << e.what() << "\n";
    return 1;
  }
}
