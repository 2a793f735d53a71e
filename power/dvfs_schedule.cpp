#include "power/dvfs_schedule.h"

#include <map>
#include <set>

#include "core/error.h"

namespace co_up::power {
namespace {

std::string range_text(const DvfsSpec& d) {
  return "1.." + std::to_string(d.max_level() + 1) + ", " +
         std::to_string(d.frequencies_khz.front() / 1000) + ".." +
         std::to_string(d.frequencies_khz.back() / 1000) + " MHz";
}

}  // namespace

DvfsSchedule resolve_schedule(const FrequencyPlan& plan, const Platform& platform,
                              const std::string& order,
                              const std::vector<uint32_t>& subgraph_of_layer, bool pipeline,
                              DvfsPolicy policy,
                              const std::function<void(const std::string&)>& warn) {
  DvfsSchedule schedule;
  if (plan.scope == FrequencyPlan::Scope::kNone) return schedule;
  std::set<char> warned;
  // Returns false when `domain` has no table (and warns or throws as the policy says).
  auto usable = [&](char domain, const std::string& why) {
    const ProcessorSpec* p = platform.find(domain);
    if (p != nullptr && p->dvfs.present()) return true;
    const std::string msg = "--frequency: " + why + " sets '" + std::string(1, domain) +
                            "', but platform '" + platform.name +
                            "' declares no DVFS table for it (see co_up --list-frequencies)";
    if (policy == DvfsPolicy::kStrict) {
      throw InputError(msg + "; --dvfs=best-effort skips it");
    }
    if (warned.insert(domain).second && warn) warn(msg + "; skipped (--dvfs=best-effort)");
    return false;
  };
  // Users write the paper's 1-based indices (Table 9: level 1 is the lowest frequency); the
  // schedule holds 0-based positions in the table. Returns the position.
  auto check = [&](char domain, int level, const std::string& why) {
    const DvfsSpec& d = platform.find(domain)->dvfs;
    if (level < 1 || level > d.max_level() + 1) {
      throw InputError("--frequency: " + why + " asks level " + std::to_string(level) +
                       " for '" + std::string(1, domain) + "' (" + platform.find(domain)->name +
                       "), which has levels " + range_text(d));
    }
    return level - 1;
  };

  if (plan.scope == FrequencyPlan::Scope::kMin || plan.scope == FrequencyPlan::Scope::kMax) {
    for (const ProcessorSpec& p : platform.processors) {
      if (!p.dvfs.present()) continue;
      schedule.at_setup.push_back(
          {p.letter, plan.scope == FrequencyPlan::Scope::kMin ? 0 : p.dvfs.max_level()});
    }
    if (schedule.at_setup.empty()) {
      usable(platform.processors.front().letter, plan.scope == FrequencyPlan::Scope::kMin ? "min" : "max");
    }
    return schedule;
  }
  if (plan.scope == FrequencyPlan::Scope::kWholeRun) {
    const char domains[3] = {'L', 'B', 'G'};
    for (size_t i = 0; i < 3; ++i) {
      const std::string why = "{{l-b-g}} level " + std::to_string(i + 1);
      if (!usable(domains[i], why)) continue;
      schedule.at_setup.push_back({domains[i], check(domains[i], plan.tokens[i].level, why)});
    }
    return schedule;
  }

  // Per layer or per sub-graph: settings per layer.
  const bool per_subgraph = plan.scope == FrequencyPlan::Scope::kPerSubGraph;
  std::vector<std::vector<DvfsSetting>> settings(order.size());
  std::vector<std::string> why_of(order.size());
  for (size_t layer = 0; layer < order.size(); ++layer) {
    const size_t t = per_subgraph ? subgraph_of_layer.at(layer) : layer;
    const FrequencyToken& token = plan.tokens.at(t);
    const std::string why = "token " + std::to_string(t + 1) + (per_subgraph ? " (sub-graph " : " (layer ") +
                            std::to_string(per_subgraph ? t : layer) + ", '" +
                            std::string(1, order[layer]) + "')";
    why_of[layer] = why;
    const ProcessorSpec* p = platform.find(order[layer]);
    if (p == nullptr) throw InputError("--frequency: no processor '" + std::string(1, order[layer]) + "'");
    if (p->is_cpu()) {
      if (usable(p->letter, why)) {
        settings[layer].push_back({p->letter, check(p->letter, token.level, why)});
      }
    } else if (p->kind == "gpu") {
      if (usable(p->letter, why)) {
        settings[layer].push_back({p->letter, check(p->letter, token.level, why)});
      }
      if (token.host_level && usable(p->host, why + " host")) {
        settings[layer].push_back({p->host, check(p->host, *token.host_level, why + " host")});
      }
    } else if (usable(p->host, why + " host")) {
      settings[layer].push_back({p->host, check(p->host, token.level, why + " host")});
    }
  }
  if (!pipeline) {
    schedule.per_layer = std::move(settings);
    return schedule;
  }
  // Pipeline: stages overlap, so a domain has one level for the whole run.
  std::map<char, std::pair<int, size_t>> chosen;  // domain -> level, first layer asking
  for (size_t layer = 0; layer < settings.size(); ++layer) {
    for (const DvfsSetting& s : settings[layer]) {
      auto [it, inserted] = chosen.emplace(s.domain, std::make_pair(s.level, layer));
      if (!inserted && it->second.first != s.level) {
        throw InputError("--frequency: in pipeline mode a processor runs at one level, but '" +
                         std::string(1, s.domain) + "' gets level " +
                         std::to_string(it->second.first + 1) + " from " + why_of[it->second.second] +
                         " and level " + std::to_string(s.level + 1) + " from " + why_of[layer] +
                         " (use --mode=switch for per-layer DVFS)");
      }
    }
  }
  for (const auto& [domain, v] : chosen) schedule.at_setup.push_back({domain, v.first});
  return schedule;
}

}  // namespace co_up::power
