// The pipeline simulator on long runs (`plan --workload --verify` predicts whole runs of many
// requests): its time grows linearly with the run's length, and small runs give exactly the
// results the simulator has always given (golden values, bit for bit).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <random>

#include "planner/hetero2pipe.h"
#include "network_costs.h"

namespace co_up::planner {
namespace {

struct Problem {
  std::vector<NetworkCosts> networks;
  std::vector<StageCuts> cuts;
  std::vector<size_t> sequence;
  Interference interference;
};

// Three networks of 6 layers on 3 stages with random cuts, a sequence of 5 requests, and (when
// `contention`) random pairwise slowdowns. Network 2 runs on the last stage only, so it can run
// ahead of the others.
Problem random_problem(unsigned seed, bool contention) {
  std::mt19937 rng(seed);
  Problem p;
  const size_t stages = 3;
  for (int i = 0; i < 3; ++i) p.networks.push_back(random_costs(rng, "n" + std::to_string(i), 6, stages, false));
  std::uniform_int_distribution<uint32_t> cut(0, 6);
  for (int i = 0; i < 2; ++i) {
    uint32_t a = cut(rng), b = cut(rng);
    if (a > b) std::swap(a, b);
    p.cuts.push_back({0, a, b, 6});
  }
  p.cuts.push_back({0, 0, 0, 6});
  p.sequence = {0, 1, 0, 2, 1};
  if (contention) {
    p.interference = Interference(3, stages);
    std::uniform_real_distribution<double> s(0.0, 0.6);
    for (size_t a = 0; a < 3; ++a)
      for (size_t ka = 0; ka < stages; ++ka)
        for (size_t b = 0; b < 3; ++b)
          for (size_t kb = 0; kb < stages; ++kb) p.interference.set(a, ka, b, kb, s(rng));
  }
  return p;
}

double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

SimulationResult run(const Problem& p, int cycles, int in_flight, bool whole_run) {
  SimulationSettings s;
  s.cycles = cycles;
  s.in_flight = in_flight;
  s.whole_run = whole_run;
  return simulate(p.networks, p.cuts, p.sequence, p.interference, s);
}

TEST(SimulateScale, SmallRunsGiveTheSameResultsAsBefore) {
  // Printed by the simulator before its start scan was bounded (%a: every bit).
  struct Golden {
    unsigned seed;
    bool contention;
    int cycles, in_flight;
    bool whole_run;
    double fps, bubble;
  };
  const Golden golden[] = {
#include "simulate_scale_golden.inc"
  };
  for (const Golden& g : golden) {
    SCOPED_TRACE("seed " + std::to_string(g.seed) + " contention " + std::to_string(g.contention) + " cycles " +
                 std::to_string(g.cycles) + " in_flight " + std::to_string(g.in_flight) + " whole " +
                 std::to_string(g.whole_run));
    const SimulationResult r = run(random_problem(g.seed, g.contention), g.cycles, g.in_flight, g.whole_run);
    EXPECT_EQ(r.throughput_fps, g.fps);
    EXPECT_EQ(r.bubble_fraction, g.bubble);
  }
}

// Linear in the run's length: 8x the cycles take about 8x the time (a scan over every earlier
// request, as before the start scan was bounded, makes it 64x). The time is this thread's CPU
// time, fastest of three runs of each length, and the shorter run lasts milliseconds, so that
// other processes on the machine (or a sanitizer build) cannot decide the outcome: wall time read
// 2^11 cycles as 1.5 ms against 75 ms for 2^14 on a loaded host.
TEST(SimulateScale, LongRunsCostTimeLinearInTheirLength) {
  for (bool contention : {false, true}) {
    SCOPED_TRACE(contention ? "contention" : "no contention");
    const Problem p = random_problem(7, contention);
    auto fastest_seconds = [&](int cycles, SimulationResult* result) {
      double best = 1e300;
      for (int i = 0; i < 3; ++i) {
        const double start = thread_cpu_seconds();
        *result = run(p, cycles, 0, true);
        best = std::min(best, thread_cpu_seconds() - start);
      }
      return best;
    };
    SimulationResult shorter, longer;
    const double short_s = fastest_seconds(1 << 12, &shorter);
    const double long_s = fastest_seconds(1 << 15, &longer);
    EXPECT_LT(long_s, 24.0 * short_s) << "2^15 cycles " << long_s << " s, 2^12 cycles " << short_s << " s";
    // Fill and drain are negligible over 2^14 cycles: the steady state's rate.
    const SimulationResult steady = run(p, 24, 0, false);
    EXPECT_NEAR(longer.throughput_fps, steady.throughput_fps, 1e-3 * steady.throughput_fps);
  }
}

}  // namespace
}  // namespace co_up::planner
