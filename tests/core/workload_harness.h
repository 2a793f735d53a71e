// The harness of the several-networks tests: one group of networks run together by the
// WorkloadRunner on the host's processors, each network's outputs collected per frame, and the
// check that every frame came once, in order, with the bits of the network's run alone.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/executor.h"
#include "core/network.h"
#include "core/workload.h"
#include "core/workload_runner.h"
#include "tests/core/test_spin.h"
#include "tests/core/test_support.h"

namespace co_up::workload_harness {

using InputSets = std::vector<std::vector<std::vector<float>>>;

// Frame outputs (output 0) in delivery order.
struct Delivered {
  std::mutex mutex;
  std::vector<uint64_t> order;
  std::map<uint64_t, std::vector<float>> by_frame;
  void add(uint64_t frame, uint32_t output, std::span<const float> values) {
    if (output != 0) return;
    std::lock_guard lock(mutex);
    order.push_back(frame);
    by_frame[frame].assign(values.begin(), values.end());
  }
};

// The network alone: what each distinct input gives, on the same order.
inline std::map<uint64_t, std::vector<float>> run_alone(const graph::Graph& g, const std::string& order,
                                                 const InputSets& inputs) {
  ExecutorOptions options;
  options.spin_wait_in_frame_us = testing::kSpinWaitInFrameUs;
  Executor executor(g, Partition::create(g, order), testing::host_platform(), testing::build_plugins(), options);
  Delivered delivered;
  RunRequest request;
  request.frames = inputs.size();
  request.input_sets = inputs;
  request.on_output = [&](uint64_t f, uint32_t o, std::span<const float> v) { delivered.add(f, o, v); };
  executor.run(request);
  return delivered.by_frame;
}

struct Net {
  std::string name;
  graph::Graph graph;
  std::string order;
  InputSets inputs;
  std::vector<std::string> replicas;  // more orders over the network's one request stream
};

struct GroupRun {
  std::vector<std::unique_ptr<Executor>> executors;
  std::vector<Delivered> delivered;
  WorkloadRunResult result;
};

inline void run_group(const std::vector<Net>& nets, const std::vector<uint64_t>& frames,
               const std::vector<std::optional<double>>& rates, const std::vector<int>& priorities,
               GroupPolicy policy, GroupRun& out, const Workload* plan = nullptr) {
  const Platform platform = testing::host_platform();
  SharedDevices devices;
  auto share = make_executor_share();
  ExecutorOptions options;
  options.profile_level = 1;
  options.spin_wait_in_frame_us = testing::kSpinWaitInFrameUs;
  out.delivered = std::vector<Delivered>(nets.size());
  std::vector<WorkloadStreamSpec> specs;
  std::optional<PlanRanks> ranks;
  if (plan != nullptr) ranks.emplace(*plan);
  for (size_t i = 0; i < nets.size(); ++i) {
    out.executors.push_back(std::make_unique<Executor>(
        devices.place(nets[i].graph, nets[i].order, platform, testing::build_plugins()), options, share));
    WorkloadStreamSpec s;
    s.executor = out.executors.back().get();
    for (const std::string& r : nets[i].replicas) {
      out.executors.push_back(
          std::make_unique<Executor>(devices.place(nets[i].graph, r, platform, testing::build_plugins()), options, share));
      s.replicas.push_back(out.executors.back().get());
    }
    s.frames = frames[i];
    s.rate = rates[i];
    s.priority = priorities[i];
    s.input_sets = nets[i].inputs;
    Delivered* d = &out.delivered[i];
    s.on_output = [d](uint64_t f, uint32_t o, std::span<const float> v) { d->add(f, o, v); };
    if (ranks) s.plan_rank = [&ranks, i](uint64_t f) { return ranks->rank(i, f); };
    specs.push_back(std::move(s));
  }
  WorkloadRunner runner(std::move(specs), policy);
  out.result = runner.run();
}

// Every network delivered each of its `frames` once, in order, each the bits of its run alone.
inline void expect_every_frame_as_alone(const std::vector<Net>& nets, const GroupRun& got, uint64_t frames) {
  for (size_t n = 0; n < nets.size(); ++n) {
    SCOPED_TRACE(nets[n].name + " " + nets[n].order);
    const auto alone = run_alone(nets[n].graph, nets[n].order, nets[n].inputs);
    const Delivered& d = got.delivered[n];
    ASSERT_EQ(d.order.size(), frames) << "frames lost or duplicated";
    for (uint64_t f = 0; f < frames; ++f) ASSERT_EQ(d.order[f], f) << "frames reordered";
    for (uint64_t f = 0; f < frames; ++f) {
      const std::vector<float>& expected = alone.at(f % nets[n].inputs.size());
      const std::vector<float>& actual = d.by_frame.at(f);
      ASSERT_EQ(expected.size(), actual.size());
      ASSERT_EQ(std::memcmp(expected.data(), actual.data(), expected.size() * sizeof(float)), 0)
          << "frame " << f << " differs from the network's own run";
    }
    const profiler::RunProfile& p = got.result.streams[n].run.profile;
    EXPECT_EQ(p.frames_completed, frames);
    EXPECT_FALSE(p.interrupted);
    EXPECT_EQ(got.result.streams[n].arrival_ns.size(), frames);
  }
}

}  // namespace co_up::workload_harness
