// co_up_bench_api: what the public API costs over the Executor it wraps (a program, not a test).
//
// Part 1, per-frame overhead: one frame at a time, Session::run(tensor) against Executor::run()
// of a one-frame RunRequest on the same network, order and platform (every layer on B), the two
// interleaved in each repetition so machine noise hits both; medians, and their difference in µs.
// Part 2, streaming throughput of a three-stage pipeline (B, L, B): the API (submit + callback,
// drain) against the Executor running a RunRequest of the same frames (what the co_up command
// line's Session does inside), against the Executor streaming with the API's window, and against
// the co_up binary itself, a Session client end to end (its profile's throughput). Every
// throughput is the steady state the profile measures (profiler::summarize); the API's wall-clock
// rate from the first submit to the last result is printed too. Each repetition runs the four
// paths back to back, in an order that rotates from one repetition to the next; a ratio is taken
// within a repetition, and the table gives the median, quartiles and range of those ratios, with
// the CPU time and context switches per frame that explain a difference.
//
// Options: --network=NAME (squeezenet) --image-size=N (32) --reps=R (30) --frames=N (300)
//          --platform=FILE (platforms/host-2core.json with cpu-reference; see below)
//          --backend=cpu-reference|cpu-xnnpack --plugins=DIR --co_up=BINARY --quick --help
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "bench/bench_options.h"
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
  uint32_t queue_capacity = 0;  // the API's streaming window; 0: the Session's default
  // Part 1 runs a tiny model, so that the per-frame cost is the runtime's, not the network's.
  std::string overhead_model = CO_UP_SOURCE_DIR "/tests/fixtures/onnx/op_classifier.onnx";
};

double median(std::vector<double> v) { return co_up::profiler::median(std::move(v)); }

// The Executor streaming on its own, admitting frames as the API does (at most `window` in flight,
// the producer waiting for completions): what the API's streaming costs is measured against this.
class WindowStream final : public co_up::FrameStream {
 public:
  WindowStream(const std::vector<float>& input, uint64_t frames, uint64_t window)
      : input_(input), frames_(frames), window_(window) {}
  uint64_t admitted() const override { return admitted_.load(std::memory_order_acquire); }
  bool closed() const override { return closed_.load(std::memory_order_acquire); }
  const float* input(uint64_t, uint32_t) override { return input_.data(); }
  void output(uint64_t, uint32_t, std::span<const float>) override {}
  void frames_completed(uint64_t completed) override {
    {
      std::lock_guard lock(mutex_);
      completed_ = completed;
    }
    changed_.notify_all();
  }
  // The producer: admits frame by frame while the window has room, then closes.
  void produce(co_up::Executor& executor) {
    for (uint64_t f = 0; f < frames_; ++f) {
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return f - completed_ < window_; });
      }
      admitted_.store(f + 1, std::memory_order_release);
      executor.notify_stream();
    }
    closed_.store(true, std::memory_order_release);
    executor.notify_stream();
  }

 private:
  const std::vector<float>& input_;
  uint64_t frames_, window_;
  std::atomic<uint64_t> admitted_{0};
  std::atomic<bool> closed_{false};
  std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t completed_ = 0;
};

// CPU seconds this process used so far (all threads, user + system).
double cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct Usage {
  double cpu_s = 0;
  double switches = 0;
};

// CPU seconds and context switches of this process (children: of its finished child processes).
Usage usage(bool children) {
  rusage u{};
  getrusage(children ? RUSAGE_CHILDREN : RUSAGE_SELF, &u);
  return {static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
              static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6,
          static_cast<double>(u.ru_nvcsw + u.ru_nivcsw)};
}

struct Spread {
  double median = 0, p25 = 0, p75 = 0, min = 0, max = 0;
};

// Nearest-rank quartiles: a few repetitions give a spread, not a fitted distribution.
Spread quartiles(std::vector<double> v) {
  Spread q;
  if (v.empty()) return q;
  std::sort(v.begin(), v.end());
  const auto at = [&](double p) { return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5)]; };
  q.median = median(v);
  q.p25 = at(0.25);
  q.p75 = at(0.75);
  q.min = v.front();
  q.max = v.back();
  return q;
}

std::string spread(const std::vector<double>& v, const char* format) {
  const Spread q = quartiles(v);
  return fmt(format, q.median) + " [" + fmt(format, q.p25) + "-" + fmt(format, q.p75) + "]";
}

std::string order_of(size_t layers, bool three_stages) {
  std::string order(layers, 'B');
  if (three_stages) {
    for (size_t i = layers / 3; i < 2 * layers / 3; ++i) order[i] = 'L';
  }
  return order;
}

}  // namespace

static int run_api(int argc, char** argv) {
  Args a;
  for (const co_up::bench::BenchOption& o : co_up::bench::read_options(argc, argv)) {
    if (o.is("network")) a.network = o.string();
    else if (o.is("image-size")) a.image_size = o.integer(1, 100000);
    else if (o.is("reps")) a.reps = static_cast<int>(o.integer(1, 100000));
    else if (o.is("frames")) a.frames = static_cast<uint64_t>(o.integer(1, 100000000));
    else if (o.is("backend")) a.backend = o.string();
    else if (o.is("plugins")) a.plugins = o.string();
    else if (o.is("co_up")) a.co_up = o.string();
    else if (o.is("overhead-model")) a.overhead_model = o.string();
    else if (o.is("queue-capacity")) a.queue_capacity = static_cast<uint32_t>(o.integer(1, 1000000));
    else if (o.is("quick")) { a.reps = 5; a.frames = 60; }
    else if (o.is("help")) {
      std::cout << "usage: co_up_bench_api [--network=NAME] [--image-size=N] [--reps=R] [--frames=N] "
                   "[--backend=B] [--plugins=DIR] [--co_up=BINARY] [--overhead-model=ONNX] "
                   "[--queue-capacity=N] [--quick]\n";
      return 0;
    } else {
      o.unknown();
    }
  }
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
        .set_image_size(a.image_size).set_order(order).set_queue_capacity(a.queue_capacity);
    return o;
  };
  const std::vector<float> input = co_up::seeded_inputs(graph, 1).at(0);
  co_up::Tensor tensor(graph.tensor(graph.inputs().at(0)).desc.shape, input);

  // ---- part 1: per-frame overhead ----
  {
    co_up::NetworkSpec spec;
    spec.model = a.overhead_model;
    const co_up::graph::Graph tiny = co_up::build_network(spec);
    const std::string order(tiny.layer_count(), 'B');
    co_up::ExecutorOptions eo;
    co_up::Executor executor(tiny, co_up::Partition::create(tiny, order), platform, registry, eo);
    co_up::SessionOptions so;
    so.set_platform_file(platform_file.string()).set_plugins_dir((scratch / "plugins").string()).set_order(order);
    co_up::Session session = co_up::Session::open_model(a.overhead_model, so);
    const std::vector<float> tiny_input = co_up::seeded_inputs(tiny, 1).at(0);
    const co_up::Tensor tiny_tensor(tiny.tensor(tiny.inputs().at(0)).desc.shape, tiny_input);
    co_up::RunRequest request;
    request.frames = 1;
    request.input_sets = {{tiny_input}};
    std::vector<double> exec_us, api_us, exec_cpu_us, api_cpu_us;
    const int reps = a.reps * 50;
    for (int r = 0; r < reps + 10; ++r) {  // 10 warm-up rounds
      // Alternating which goes first, so neither always runs on caches the other warmed.
      double exec_s = 0, api_s = 0, exec_cpu = 0, api_cpu = 0;
      co_up::RunResult result;
      std::vector<co_up::Tensor> outputs;
      for (int k = 0; k < 2; ++k) {
        const double c0 = cpu_s();
        const double t0 = now_s();
        if ((k == 0) == (r % 2 == 0)) {
          result = executor.run(request);
          exec_s = now_s() - t0;
          exec_cpu = cpu_s() - c0;
        } else {
          outputs = session.run(tiny_tensor);
          api_s = now_s() - t0;
          api_cpu = cpu_s() - c0;
        }
      }
      if (r < 10) continue;
      exec_us.push_back(exec_s * 1e6);
      api_us.push_back(api_s * 1e6);
      exec_cpu_us.push_back(exec_cpu * 1e6);
      api_cpu_us.push_back(api_cpu * 1e6);
      if (outputs.at(0).size() != result.last_outputs.at(0).size()) throw std::runtime_error("output sizes differ");
    }
    const double e = median(exec_us), p = median(api_us);
    std::printf("## per-frame overhead (%s, order %s, %s, %d frames each, alternating)\n\n",
                std::filesystem::path(a.overhead_model).filename().c_str(), order.c_str(), a.backend.c_str(), reps);
    std::printf("| path | median µs/frame | mean CPU µs/frame (all threads) |\n|---|---|---|\n");
    auto mean = [](const std::vector<double>& v) {
      double sum = 0;
      for (double x : v) sum += x;
      return sum / static_cast<double>(v.size());
    };
    std::printf("| Executor::run (1 frame) | %s | %s |\n", fmt("%.1f", e).c_str(), fmt("%.1f", mean(exec_cpu_us)).c_str());
    std::printf("| Session::run (C++ API) | %s | %s |\n", fmt("%.1f", p).c_str(), fmt("%.1f", mean(api_cpu_us)).c_str());
    std::printf("| overhead | %s | %s |\n\n", fmt("%.1f", p - e).c_str(),
                fmt("%.1f", mean(api_cpu_us) - mean(exec_cpu_us)).c_str());
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
    // Paths, run in a rotating order within each repetition so that load drifts hit all alike.
    // kSmall: the API with the former default window, twice the sub-graphs (6 here), to show
    // what the window alone costs; kCli last, so that it can be left out.
    enum Path { kRun, kWindow, kApi, kSmall, kCli, kPaths };
    co_up::SessionOptions small_window = options(order);
    small_window.set_queue_capacity(static_cast<uint32_t>(
        2 * co_up::Partition::create(graph, order).subgraphs().size()));
    co_up::Session small = co_up::Session::open_zoo(a.network, small_window);
    small.set_result_callback([&](co_up::Result) { delivered.fetch_add(1); });
    std::vector<double> fps[kPaths], cpu_ms[kPaths], switches[kPaths];
    std::vector<double> api_wall_fps, ratio_run, ratio_window, ratio_small, ratio_cli;
    const std::string profile_file = (scratch / "cli_profile.json").string();
    const std::string cli = a.co_up + " --graph=" + a.network + " --image-size=" + std::to_string(a.image_size) +
                            " --platform=" + platform_file.string() + " --plugins=" + (scratch / "plugins").string() +
                            " --order=" + order + " --n=" + std::to_string(a.frames) +
                            " --profile-out=" + profile_file + " > /dev/null";
    const int paths = a.co_up.empty() ? kCli : kPaths;
    for (int r = 0; r < a.reps; ++r) {
      double rate[kPaths] = {0, 0, 0, 0, 0};
      for (int k = 0; k < paths; ++k) {
        const int which = (k + r) % paths;
        // CPU time and context switches (voluntary + involuntary) per frame, all threads; the
        // co_up binary's from its finished child process.
        const Usage before = usage(which == kCli);
        if (which == kRun) {
          rate[kRun] = co_up::profiler::summarize(executor.run(request).profile).throughput_fps;
        } else if (which == kWindow) {
          WindowStream stream(input, a.frames, session.queue_capacity());
          std::thread producer([&] { stream.produce(executor); });
          rate[kWindow] = co_up::profiler::summarize(executor.run_stream(stream).profile).throughput_fps;
          producer.join();
        } else if (which == kApi) {
          const double t0 = now_s();
          for (uint64_t f = 0; f < a.frames; ++f) session.submit(co_up::Tensor(tensor));
          session.drain();
          api_wall_fps.push_back(static_cast<double>(a.frames) / (now_s() - t0));
          rate[kApi] = session.profile().throughput_fps;
        } else if (which == kSmall) {
          for (uint64_t f = 0; f < a.frames; ++f) small.submit(co_up::Tensor(tensor));
          small.drain();
          rate[kSmall] = small.profile().throughput_fps;
        } else if (std::system(cli.c_str()) == 0) {
          std::ifstream in(profile_file);
          rate[kCli] = nlohmann::json::parse(in)["summary"]["throughput_fps"].get<double>();
        } else {
          throw std::runtime_error("the co_up binary failed: " + cli);
        }
        const Usage after = usage(which == kCli);
        const double n = static_cast<double>(a.frames);
        cpu_ms[which].push_back((after.cpu_s - before.cpu_s) * 1e3 / n);
        switches[which].push_back((after.switches - before.switches) / n);
        fps[which].push_back(rate[which]);
      }
      ratio_run.push_back(rate[kApi] / rate[kRun]);
      ratio_window.push_back(rate[kApi] / rate[kWindow]);
      ratio_small.push_back(rate[kApi] / rate[kSmall]);
      if (paths == kPaths) ratio_cli.push_back(rate[kApi] / rate[kCli]);
    }
    if (delivered.load() != 2 * a.frames * static_cast<uint64_t>(a.reps)) throw std::runtime_error("results lost");
    std::printf("## streaming throughput (order %s, %llu frames, %d repetitions, paths in rotating order)\n\n",
                order.c_str(), static_cast<unsigned long long>(a.frames), a.reps);
    std::printf("| path | frames/s: median [p25-p75] | CPU ms/frame (median) | context switches/frame (median) |\n"
                "|---|---|---|---|\n");
    const char* const labels[kPaths] = {
        "Executor::run of one request (the CLI's inner path, in process)",
        "Executor::run_stream, same window as the API",
        "API submit/callback (profile)",
        "API submit/callback, window of twice the sub-graphs (the former default)",
        "co_up binary, end to end through its Session (its profile)"};
    for (int p = 0; p < paths; ++p) {
      std::printf("| %s | %s | %s | %s |\n", labels[p], spread(fps[p], "%.1f").c_str(),
                  fmt("%.2f", median(cpu_ms[p])).c_str(), fmt("%.2f", median(switches[p])).c_str());
    }
    std::printf("| API submit/callback (wall clock, first submit to last result) | %s | | |\n\n",
                spread(api_wall_fps, "%.1f").c_str());
    std::printf("window: %zu frames in flight (the API's queue_capacity(); run_stream uses the same); the former default, 2 x sub-graphs: %zu\n\n",
                session.queue_capacity(), small.queue_capacity());
    std::printf("| ratio, per repetition (paths of one repetition run back to back) | median | p25-p75 | min-max |\n"
                "|---|---|---|---|\n");
    auto ratio_row = [](const char* label, const std::vector<double>& v) {
      const Spread q = quartiles(v);
      std::printf("| %s | %s | %s-%s | %s-%s |\n", label, fmt("%.3f", q.median).c_str(), fmt("%.3f", q.p25).c_str(),
                  fmt("%.3f", q.p75).c_str(), fmt("%.3f", q.min).c_str(), fmt("%.3f", q.max).c_str());
    };
    ratio_row("API / co_up binary (target >= 0.98)", ratio_cli.empty() ? std::vector<double>{0} : ratio_cli);
    ratio_row("API / Executor::run", ratio_run);
    ratio_row("API / Executor::run_stream, same window", ratio_window);
    ratio_row("API / API with the former window", ratio_small);
  }
  std::filesystem::remove_all(scratch);
  return 0;
}

int main(int argc, char** argv) {
  return co_up::bench::bench_main("co_up_bench_api", [&] { return run_api(argc, argv); });
}
