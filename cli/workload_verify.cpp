#include "cli/workload_verify.h"

#include <cstdio>

#include "cli/workload_command.h"
#include "core/error.h"
#include "profiler/workload_report.h"

namespace co_up::cli {
namespace {

std::string format(const char* spec, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, spec, value);
  return buffer;
}

std::string padded(const std::string& s, size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

}  // namespace

int verify_workload_plans(const Options& options, const std::vector<PlannedWorkload>& plans, std::ostream& out) {
  out << "\nverify: each plan run by the multi-network runtime (as co_up --workload=FILE runs it), one after "
         "another, no warm-up; measured aggregate = every network's completed requests / wall time\n";
  if (!plans.empty()) {
    out << (plans.front().whole_run
                ? "predicted: the simulator over this run's frames (all requests at the start, fill and drain "
                  "included)\n"
                : "predicted: the simulator's steady state (rates, unequal frame counts or batches are not "
                  "modelled over a whole run)\n");
  }
  out << padded("plan", 15)
      << "  predicted requests/s  measured requests/s  measured/predicted  on CPU %  requests\n";
  out.flush();
  for (const PlannedWorkload& plan : plans) {
    const WorkloadRun run = run_workload(options, plan.spec, nullptr);
    const profiler::WorkloadSummary summary = profiler::summarize_workload(run.profile);
    if (run.completed != run.requested) {
      throw RuntimeError("--verify: plan '" + plan.planner + "' completed " + std::to_string(run.completed) + " of " +
                         std::to_string(run.requested) + " requests");
    }
    const double measured = summary.aggregate_fps;
    double wall = 0, cpu = 0;
    for (const profiler::ProcessorSummary& p : summary.processors) {
      wall += p.run_wall_ms;
      cpu += p.run_cpu_ms;
    }
    const std::string ratio = plan.predicted_fps > 0 ? format("%18.3f", measured / plan.predicted_fps)
                                                     : std::string(15, ' ') + "n/a";
    const std::string on_cpu = wall > 0 && cpu > 0 ? format("%8.1f", 100 * cpu / wall) : std::string(5, ' ') + "n/a";
    out << padded(plan.planner, 15) << format("  %20.2f", plan.predicted_fps) << format("  %19.2f", measured) << "  "
        << ratio << "  " << on_cpu << "  " << run.completed << "/" << run.requested << "\n";
    out.flush();
  }
  // The model predicts processors that run only co_up; on a shared host other processes take some
  // of their time, and the measured throughput is low by about that share.
  out << "on CPU % = the processor threads' CPU time / the wall time of their sub-graph runs; below 100 % other "
         "processes took the rest, so measured/predicted tests the model only where it is near 100 %\n";
  return 0;
}

}  // namespace co_up::cli
