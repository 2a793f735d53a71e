#include "power/dvfs_schedule.h"

#include <algorithm>
#include <set>

#include "core/error.h"

namespace co_up::power {
namespace {

std::string range_text(const DvfsSpec& d) {
  return "1.." + std::to_string(d.max_level() + 1) + ", " +
         std::to_string(d.frequencies_khz.front() / 1000) + ".." +
         std::to_string(d.frequencies_khz.back() / 1000) + " MHz";
}

std::string mhz(int64_t khz) { return std::to_string((khz + 500) / 1000) + " MHz"; }

// A setting as asked (processor, level, where) and the domain setting it becomes.
struct Asked {
  DvfsSetting setting;  // domain = the first letter of the processor's DVFS domain
  char processor = 0;
  int level = 0;        // in the processor's own table
  int64_t khz = 0;
  std::string why;
};

// Processors sharing a clock are one domain, named by its first letter (Platform::dvfs_domain);
// the level moves to that processor's table by frequency.
Asked to_domain(const Platform& platform, char processor, int level, const std::string& why) {
  Asked a;
  a.processor = processor;
  a.level = level;
  a.why = why;
  const DvfsSpec& own = platform.find(processor)->dvfs;
  a.khz = own.frequencies_khz.at(static_cast<size_t>(level));
  const std::string domain = platform.dvfs_domain(processor);
  a.setting = {domain.front(), level};
  if (domain.front() != processor) {
    const DvfsSpec& d = platform.find(domain.front())->dvfs;
    const auto it = std::find(d.frequencies_khz.begin(), d.frequencies_khz.end(), a.khz);
    if (it == d.frequencies_khz.end()) {
      throw InputError("--frequency: " + why + " asks " + mhz(a.khz) + " for '" +
                       std::string(1, processor) + "', which shares its DVFS domain with '" +
                       std::string(1, domain.front()) + "', whose table has no such level");
    }
    a.setting.level = static_cast<int>(it - d.frequencies_khz.begin());
  }
  return a;
}

// Two settings of one domain in force at once must agree; a shared domain names both processors.
void check_agree(const Asked& first, const Asked& second, const Platform& platform,
                 const std::string& remedy) {
  if (first.setting.domain != second.setting.domain || first.setting.level == second.setting.level) {
    return;
  }
  if (first.processor == second.processor) {
    throw InputError("--frequency: in pipeline mode a processor runs at one level, but '" +
                     std::string(1, first.processor) + "' gets level " +
                     std::to_string(first.level + 1) + " from " + first.why + " and level " +
                     std::to_string(second.level + 1) + " from " + second.why + remedy);
  }
  throw InputError("--frequency: '" + std::string(1, first.processor) + "' and '" +
                   std::string(1, second.processor) + "' share one DVFS domain (" +
                   platform.find(first.processor)->dvfs.driver + " " +
                   platform.find(first.processor)->dvfs.nodes.front() +
                   ") but get different levels at once: '" + std::string(1, first.processor) +
                   "' level " + std::to_string(first.level + 1) + " (" + mhz(first.khz) + ") from " +
                   first.why + ", '" + std::string(1, second.processor) + "' level " +
                   std::to_string(second.level + 1) + " (" + mhz(second.khz) + ") from " +
                   second.why + "; give both the same level" + remedy);
}

// Settings in force together: one per domain, conflicts are errors.
std::vector<DvfsSetting> merge_at_once(const std::vector<Asked>& asked, const Platform& platform,
                                       const std::string& remedy) {
  std::vector<DvfsSetting> settings;
  std::vector<const Asked*> first_of_domain;
  for (const Asked& a : asked) {
    const auto it = std::find_if(first_of_domain.begin(), first_of_domain.end(), [&](const Asked* f) {
      return f->setting.domain == a.setting.domain;
    });
    if (it != first_of_domain.end()) {
      check_agree(**it, a, platform, remedy);
      continue;
    }
    first_of_domain.push_back(&a);
    settings.push_back(a.setting);
  }
  return settings;
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
    const bool min = plan.scope == FrequencyPlan::Scope::kMin;
    std::vector<Asked> asked;
    for (const ProcessorSpec& p : platform.processors) {
      if (!p.dvfs.present()) continue;
      asked.push_back(to_domain(platform, p.letter, min ? 0 : p.dvfs.max_level(), min ? "min" : "max"));
    }
    schedule.at_setup = merge_at_once(asked, platform, "");
    if (schedule.at_setup.empty()) {
      usable(platform.processors.front().letter, plan.scope == FrequencyPlan::Scope::kMin ? "min" : "max");
    }
    return schedule;
  }
  if (plan.scope == FrequencyPlan::Scope::kWholeRun) {
    const char domains[3] = {'L', 'B', 'G'};
    std::vector<Asked> asked;
    for (size_t i = 0; i < 3; ++i) {
      const std::string why = "{{l-b-g}} level " + std::to_string(i + 1);
      if (!usable(domains[i], why)) continue;
      asked.push_back(to_domain(platform, domains[i], check(domains[i], plan.tokens[i].level, why), why));
    }
    schedule.at_setup = merge_at_once(asked, platform, "");
    return schedule;
  }

  // Per layer or per sub-graph: settings per layer.
  const bool per_subgraph = plan.scope == FrequencyPlan::Scope::kPerSubGraph;
  std::vector<std::vector<Asked>> asked(order.size());
  for (size_t layer = 0; layer < order.size(); ++layer) {
    const size_t t = per_subgraph ? subgraph_of_layer.at(layer) : layer;
    const FrequencyToken& token = plan.tokens.at(t);
    const std::string why = "token " + std::to_string(t + 1) + (per_subgraph ? " (sub-graph " : " (layer ") +
                            std::to_string(per_subgraph ? t : layer) + ", '" +
                            std::string(1, order[layer]) + "')";
    const ProcessorSpec* p = platform.find(order[layer]);
    if (p == nullptr) throw InputError("--frequency: no processor '" + std::string(1, order[layer]) + "'");
    auto ask = [&](char domain, int level, const std::string& where) {
      asked[layer].push_back(to_domain(platform, domain, check(domain, level, where), where));
    };
    if (p->is_cpu()) {
      if (usable(p->letter, why)) ask(p->letter, token.level, why);
    } else if (p->kind == "gpu") {
      if (usable(p->letter, why)) ask(p->letter, token.level, why);
      if (token.host_level && usable(p->host, why + " host")) ask(p->host, *token.host_level, why + " host");
    } else if (usable(p->host, why + " host")) {
      ask(p->host, token.level, why + " host");
    }
  }
  if (!pipeline) {
    // Switch mode: one layer runs at a time; what one layer asks is in force at once.
    for (const std::vector<Asked>& layer : asked) {
      schedule.per_layer.push_back(merge_at_once(layer, platform, ""));
    }
    return schedule;
  }
  // Pipeline: stages overlap, so a domain has one level for the whole run.
  std::vector<Asked> all;
  for (const std::vector<Asked>& layer : asked) all.insert(all.end(), layer.begin(), layer.end());
  schedule.at_setup = merge_at_once(all, platform, " (use --mode=switch for per-layer DVFS)");
  std::sort(schedule.at_setup.begin(), schedule.at_setup.end(),
            [](const DvfsSetting& a, const DvfsSetting& b) { return a.domain < b.domain; });
  return schedule;
}

}  // namespace co_up::power
