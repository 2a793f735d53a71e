// Running a multi-exit network through the executor and collecting what it delivered, for the
// early-exit tests: every output of every frame as it arrived, how many deliveries there were and
// how many repeated one already delivered (a repeat is also a test failure where it happens).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/executor.h"
#include "core/exit_policy.h"
#include "tests/core/test_support.h"
#include "tests/exits/exit_network.h"

namespace co_up::test {

using InputSets = std::vector<std::vector<std::vector<float>>>;

// B and L of this host, and a third processor D hosted on B's cores: three processor threads,
// each with its own sub-graph. All on cpu-reference (the one CPU backend that lets two processors
// share a core), so every mapping computes the same bits.
inline Platform three_processors() {
  Platform platform = testing::host_platform();
  ProcessorSpec d;
  d.letter = 'D';
  d.name = "third processor (for tests)";
  d.kind = "dsp";
  d.host = 'B';
  platform.processors.push_back(d);
  for (char letter : {'B', 'L', 'D'}) platform.find(letter)->backends = {"cpu-reference"};
  return platform;
}

// One processor B on the host, cpu-reference.
inline Platform one_processor() {
  Platform platform = testing::host_platform();
  platform.find('B')->backends = {"cpu-reference"};
  return platform;
}

struct ExitRun {
  RunResult result;
  std::map<uint64_t, std::vector<std::vector<float>>> outputs;  // frame -> per graph output
  std::vector<uint64_t> exit0_arrival;                         // frames, as output 0 arrived
  int deliveries = 0;
  int repeated = 0;  // deliveries of a (frame, output) already delivered
};

struct ExitRunSpec {
  std::string order;
  Mode mode = Mode::kPipeline;
  uint64_t frames = 0;
  std::string policy = "none";  // ExitPolicy::parse syntax
  int profile_level = 1;
};

inline ExitRun run_with_exits(const graph::Graph& g, const Platform& platform, const ExitRunSpec& spec,
                              const InputSets& inputs) {
  ExecutorOptions options;
  options.mode = spec.mode;
  options.profile_level = spec.profile_level;
  options.exit_policy = ExitPolicy::parse(spec.policy);
  Executor executor(g, Partition::create(g, spec.order), platform, testing::build_plugins(), options);
  ExitRun r;
  std::mutex mutex;
  RunRequest request;
  request.frames = spec.frames;
  request.input_sets = inputs;
  request.on_output = [&](uint64_t frame, uint32_t output, std::span<const float> values) {
    std::lock_guard lock(mutex);
    ++r.deliveries;
    auto& per_output = r.outputs[frame];
    per_output.resize(g.outputs().size());
    if (!per_output[output].empty()) {
      ++r.repeated;
      ADD_FAILURE() << "frame " << frame << " output " << output << " delivered twice";
    }
    per_output[output].assign(values.begin(), values.end());
    if (output == 0) r.exit0_arrival.push_back(frame);
  };
  r.result = executor.run(request);
  return r;
}

inline bool equal_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Three inputs of `g` that stop at different exits: a confident one, a middling one and an unsure one.
inline InputSets confident_middling_unsure(const graph::Graph& g) {
  return {scaled_input(g, 21, kConfidentScale), scaled_input(g, 22, 1.0f), scaled_input(g, 23, kUnsureScale)};
}

// A softmax-max policy under which the three inputs above stop at exit 0, exit 1 and run to the
// end, from `reference`: a run of the static network with frame f reading input f. Empty (and a
// test failure) when the network cannot tell the inputs apart that way.
inline std::string mixed_exit_policy(const ExitRun& reference) {
  const ExitPolicy scorer = ExitPolicy::parse("softmax-max>=0");
  auto score = [&](uint64_t input, size_t exit) { return scorer.score(reference.outputs.at(input)[exit]); };
  const double t0 = std::max(score(1, 0), score(2, 0)) + 1e-6;
  const double t1 = score(1, 1) - 1e-6;
  if (score(0, 0) < t0 || score(2, 1) >= t1) {
    ADD_FAILURE() << "the inputs do not separate: exit 0 scores " << score(0, 0) << " vs " << t0
                  << ", exit 1 scores " << score(2, 1) << " vs " << t1;
    return {};
  }
  char policy[64];
  std::snprintf(policy, sizeof(policy), "softmax-max>=%.9f,%.9f", t0, t1);
  return policy;
}

}  // namespace co_up::test
