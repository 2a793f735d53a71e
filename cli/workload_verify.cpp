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
  out << padded("plan", 15) << "  predicted fps  measured fps  measured/predicted  requests\n";
  out.flush();
  // Per plan: the processor threads' on-CPU share of their runs, and the prediction scaled by it.
  std::string on_cpu_line, adjusted_line;
  for (const PlannedWorkload& plan : plans) {
    const WorkloadRun run = run_workload(options, plan.spec, nullptr);
    const profiler::WorkloadSummary summary = profiler::summarize_workload(run.profile);
    if (run.completed != run.requested) {
      throw RuntimeError("--verify: plan '" + plan.planner + "' completed " + std::to_string(run.completed) + " of " +
                         std::to_string(run.requested) + " requests");
    }
    const double measured = summary.aggregate_fps;
    const std::string ratio = plan.predicted_fps > 0 ? format("%18.3f", measured / plan.predicted_fps)
                                                     : std::string(15, ' ') + "n/a";
    out << padded(plan.planner, 15) << format("  %13.2f", plan.predicted_fps) << format("  %12.2f", measured) << "  "
        << ratio << "  " << run.completed << "/" << run.requested << "\n";
    out.flush();
    double wall = 0, cpu = 0;
    for (const profiler::ProcessorSummary& p : summary.processors) {
      wall += p.run_wall_ms;
      cpu += p.run_cpu_ms;
    }
    if (wall > 0) {
      const double share = cpu / wall;
      on_cpu_line += (on_cpu_line.empty() ? "" : ", ") + plan.planner + " " + format("%.1f %%", 100 * share);
      if (plan.predicted_fps > 0 && share > 0) {
        adjusted_line += (adjusted_line.empty() ? "" : ", ") + plan.planner + " " +
                         format("%.3f", measured / (plan.predicted_fps * share));
      }
    }
  }
  // The model predicts a machine whose processors run only co_up; a shared host takes some of
  // their time, which the on-CPU share measures. The adjusted ratio is the model's own error.
  if (!on_cpu_line.empty()) {
    out << "on CPU (processor threads' CPU time / wall time of their sub-graph runs): " << on_cpu_line << "\n";
  }
  if (!adjusted_line.empty()) {
    out << "measured / (predicted x on CPU), the model's error without the time other processes took: "
        << adjusted_line << "\n";
  }
  return 0;
}

}  // namespace co_up::cli
