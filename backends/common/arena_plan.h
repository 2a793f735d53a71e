// Where each activation of a compiled sub-graph lives inside one arena, so that tensors whose
// lifetimes do not overlap share memory (ONNX Runtime's memory patterns, TFLite's arena
// planner). Why: a smaller footprint (an edge board's RAM is shared by every processor's
// sub-graphs), and a layer then writes into memory that an earlier layer of the same frame used
// moments ago, still in L2/L3, instead of memory untouched since the previous frame, whose
// lines must first come from DRAM (a write-allocate per 64 bytes).
#pragma once

#include <cstdint>
#include <vector>

namespace co_up::backends {

// One tensor's bytes (0: needs no memory) and the steps that use it, [first_step, last_step]
// inclusive: it is written at first_step and read last at last_step. A step's inputs and its
// output are live at that step together, so they never share memory.
struct TensorLifetime {
  int64_t bytes = 0;
  uint32_t first_step = 0;
  uint32_t last_step = 0;
};

struct ArenaPlan {
  std::vector<int64_t> offsets;  // per tensor, bytes from the arena's start; -1 where bytes == 0
  int64_t bytes = 0;             // the arena's size
};

// Greedy by size, as TFLite's arena planner: largest tensor first, each into the smallest gap
// (lowest offset on ties) between tensors already placed whose lifetimes overlap its own, else
// after the last of them. Offsets are multiples of `alignment` (a power of two). O(n^2), for the
// tens to hundreds of tensors of a sub-graph. Throws std::invalid_argument on a lifetime that
// ends before it starts or a bad alignment.
ArenaPlan plan_arena(const std::vector<TensorLifetime>& tensors, int64_t alignment = 64);

}  // namespace co_up::backends
