// The Map-and-Conquer performance model (../shared/papers/map-and-conquer.txt, Eq. 8-14): latency
// and energy of width-partitioned stages running concurrently on distinct processors.
//
// Indices are 0-based here (the paper's are 1-based). Stage i's sub-layer j runs on stage i's
// processor in tau[i][j] ms; a stage's sub-layers are its n layers followed by its exit
// classifier, which the model treats as one more layer (it reads the layer-n features).
//
//   Eq. 8   T[i][j] = tau[i][j] + max( T[i][j-1],
//                                      T[k][j-1] + u[k][i][j-1]  for k < i with reuse[k][j-1] = 1 )
//           with T[i][-1] = 0 (the input is available to every stage at time 0)
//   Eq. 9   T_S[i] = T[i][last]
//   Eq. 11  e[i][j] = tau[i][j] * P[i]   (P[i]: the power of stage i's processor at its DVFS
//   Eq. 12  E_S[i] = sum_j e[i][j]        level, Eq. 10: alpha + beta * level; in W, so ms * W = mJ)
//   Eq. 13  latency of a frame that runs stages 0..m = max_{i <= m} T_S[i]
//   Eq. 14  its energy = sum_{i <= m} E_S[i]
//
// u[k][i][j] is the time to move stage k's layer-j features to stage i's processor (0 when both
// stages share one). Pure functions; throw InputError for inconsistent shapes.
#pragma once

#include <vector>

namespace co_up::planner {

struct StageCosts {
  std::vector<std::vector<double>> tau;                  // [stage][sub-layer], ms
  std::vector<std::vector<int>> reuse;                   // I: [stage][sub-layer - 1 at least]
  std::vector<std::vector<std::vector<double>>> transfer;  // u: [from][to][sub-layer], ms; empty: 0
  std::vector<double> power_w;                           // [stage]; empty: energy not modelled
};

// Eq. 10: a processor's power at DVFS scaling factor `level`.
double stage_power_w(double alpha, double beta, double level);

// Eq. 8: T[i][j] for every stage and sub-layer.
std::vector<std::vector<double>> cumulative_latency(const StageCosts& costs);
// Eq. 9: T_S[i].
std::vector<double> stage_latency(const StageCosts& costs);
// Eq. 11-12: E_S[i] in mJ (needs power_w).
std::vector<double> stage_energy(const StageCosts& costs);

// Eq. 8-9 at the granularity of whole stages, as co_up's executor runs them: a stage is one
// sub-graph, which starts when every input it reads is there, so stage i waits for the end of
// every earlier stage k whose features it reads (any reuse[k][j] = 1), plus the transfers of
// those features:
//   T_S[i] = sum_j tau[i][j] + max(0, T_S[k] + sum_{j: reuse[k][j] = 1} u[k][i][j]  for such k)
std::vector<double> whole_stage_latency(const StageCosts& costs);

// Eq. 13-14 for frames that stop after stage m (0-based): latency (ms) and energy (mJ), with
// T_S from Eq. 8-9 (stage_latency) or, when `whole_stages`, from whole_stage_latency.
struct ExitCost {
  double latency_ms = 0;
  double energy_mj = 0;
};
std::vector<ExitCost> exit_costs(const StageCosts& costs, bool whole_stages = false);

}  // namespace co_up::planner
