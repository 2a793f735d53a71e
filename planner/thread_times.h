// Intra-op thread counts in the cost model.
//
// A CPU cluster of several cores runs a stage with one to all of its cores' threads (its backend's
// pool). `co_up profile` measures a multi-core cluster's layers at every thread count 1..cores
// (LayerProfile::thread_times); a plan then says which count each such processor runs with:
// the whole cluster's threads for one stage (latency), or fewer where the cluster is split between
// stages (`--split-cluster`: each half runs with half of the cores; its times are approximated by
// the whole cluster's at that thread count). with_thread_counts() makes the profile the cost model
// reads for that choice, so the cost model itself needs no notion of threads.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/layer_profile.h"

namespace co_up::planner {

// nullptr when the profile has no times of `processor` at `threads`.
const ThreadLayerTimes* find_thread_times(const LayerProfile& profile, char processor, int threads);
// Thread counts measured for `processor`, ascending (empty: none).
std::vector<int> measured_thread_counts(const LayerProfile& profile, char processor);

// `profile` with each named processor's layer times as measured at its thread count: level 0 (DVFS
// as found) takes the measured medians and MADs; a DVFS level l > 0 is scaled per layer by
// t(threads) / t(level 0) (the intra-op speed-up taken to be the same at every clock). Processors
// not named keep their times (those of the platform's thread count when profiled), and so does a
// one-core cluster asked for one thread. Throws
// InputError (one line) for a processor the profile lacks or a thread count it has no times for.
LayerProfile with_thread_counts(const LayerProfile& profile, const std::map<char, int>& threads);

// The profile file's "thread_layer_times" (planner/layer_profile.cpp reads and writes it through
// these): a list of {"processor", "threads", "median_us", "mad_us"}. read_ throws InputError naming
// `origin` and the key for a wrong type, length, an unknown processor or a repeated entry.
void read_thread_layer_times(const nlohmann::json& root, const std::string& origin, LayerProfile& profile);
nlohmann::ordered_json thread_layer_times_json(const LayerProfile& profile);

}  // namespace co_up::planner
