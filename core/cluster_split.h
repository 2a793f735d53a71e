// Splitting a CPU cluster between two processors: the throughput side of intra-op threads.
//
// A cluster of n cores serves either one stage with up to n intra-op threads (one processor,
// e.g. platforms/host-2core-cluster.json: B = cores 0-1, two threads: lowest latency), or two
// stages at once with half of the cores each (two processors: more frames per second). The
// second form is the first with the cluster split: `--split-cluster=B:C` keeps the first half of
// B's cores (rounded up) on B and gives the rest to a new CPU processor C. C copies B's backends,
// options and DVFS nodes (so B and C are one DVFS domain: one clock, Platform::dvfs_domain), its
// power model scaled by its share of the cores (B's too), and joins every sensor rail that feeds B.
// Each half keeps min(B's threads, its cores) threads. Accelerators hosted on B stay on B.
// The two halves never share a core: their host threads are pinned to their own halves, and
// their backend pools (cpu-xnnpack) pin workers to them and refuse a core held by another device.
#pragma once

#include <string>

#include "core/platform.h"

namespace co_up {

// Parses "B:C". Throws InputError naming `flag` for anything else.
ClusterSplit parse_cluster_split(const std::string& text, const std::string& flag);

// Splits as described above. Throws InputError (one line, naming `flag`) when `letter` is not a CPU
// cluster of the platform, has fewer than 2 cores, or `new_letter` is already a processor.
void split_cluster(Platform& platform, const ClusterSplit& split, const std::string& flag);

}  // namespace co_up
