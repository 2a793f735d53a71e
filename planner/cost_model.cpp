#include "planner/cost_model.h"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <numeric>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/message_text.h"

namespace co_up::planner {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Frequency of a 1-based level; level 0 ("as found") counts as the highest (see the header).
double level_khz(const ProfileProcessor& p, int level) {
  if (p.levels_khz.empty()) return 0;
  return static_cast<double>(level == 0 ? p.levels_khz.back() : p.levels_khz[static_cast<size_t>(level - 1)]);
}

}  // namespace


CostModel::CostModel(const LayerProfile& profile) : profile_(profile), layers_(profile.network.layer_count) {
  // Profiles from read_layer_profile are checked; these guard ones built in code.
  if (layers_ == 0) throw InputError("the profile has no layers (network.layer_count is 0)");
  for (const LayerTimes& t : profile_.layer_times) {
    if (t.median_us.size() != layers_) {
      throw InputError(std::string("the profile's layer times of ") + t.processor + " level " +
                       std::to_string(t.level) + " have " + std::to_string(t.median_us.size()) +
                       " entries, network.layer_count is " + std::to_string(layers_));
    }
  }
  for (const TransferTimes& t : profile_.transfers) {
    if (t.send_us.size() != layers_ - 1 || t.receive_us.size() != layers_ - 1) {
      throw InputError(std::string("the profile's transfers ") + t.from + "->" + t.to + " need " +
                       std::to_string(layers_ - 1) + " entries each (one per layer boundary)");
    }
  }
  std::vector<const ProfileProcessor*> procs;
  for (const ProfileProcessor& p : profile_.processors) {
    const bool timed = std::any_of(profile_.layer_times.begin(), profile_.layer_times.end(),
                                   [&](const LayerTimes& t) { return t.processor == p.letter; });
    if (!timed) continue;
    procs.push_back(&p);
    letters_ += p.letter;
  }
  if (procs.empty()) {
    throw InputError("the profile has no layer times for any processor (was co_up profile interrupted "
                     "before its first step? resume it)");
  }
  const size_t n_proc = procs.size();
  index_of_.fill(static_cast<uint8_t>(n_proc));
  for (size_t p = n_proc; p-- > 0;) index_of_[static_cast<unsigned char>(letters_[p])] = static_cast<uint8_t>(p);

  // DVFS domains of the usable processors.
  for (const ProfileProcessor* p : procs) {
    int d = -1;
    if (!p->dvfs_domain.empty() && !p->levels_khz.empty()) {
      auto it = std::find(domains_.begin(), domains_.end(), p->dvfs_domain);
      if (it == domains_.end()) {
        domains_.push_back(p->dvfs_domain);
        level_count_.push_back(static_cast<int>(p->levels_khz.size()));
        domain_profiled_.push_back(false);
        it = domains_.end() - 1;
      }
      d = static_cast<int>(it - domains_.begin());
      for (const LayerTimes& t : profile_.layer_times) {
        if (t.processor == p->letter && t.level > 0) domain_profiled_[static_cast<size_t>(d)] = true;
      }
    }
    domain_of_.push_back(d);
  }

  // Layer times per level, scaling from the measured level of nearest frequency when needed.
  time_.resize(n_proc);
  std::string unmeasured_as_found;
  for (size_t p = 0; p < n_proc; ++p) {
    const ProfileProcessor& proc = *procs[p];
    const int levels = static_cast<int>(proc.levels_khz.size());
    std::vector<int> scaled;
    for (int lv = 0; lv <= levels; ++lv) {
      if (const LayerTimes* t = profile_.find_layer_times(proc.letter, lv)) {
        time_[p].push_back(t->median_us);
        continue;
      }
      const LayerTimes* best = nullptr;
      for (const LayerTimes& t : profile_.layer_times) {
        if (t.processor != proc.letter || t.level < 0 || t.level > levels) continue;
        const double gap = std::abs(level_khz(proc, t.level) - level_khz(proc, lv));
        if (best == nullptr || gap < std::abs(level_khz(proc, best->level) - level_khz(proc, lv)) ||
            (gap == std::abs(level_khz(proc, best->level) - level_khz(proc, lv)) && best->level == 0)) {
          best = &t;
        }
      }
      if (best == nullptr) {
        throw InputError(std::string("the profile's layer times of ") + proc.letter +
                         " are at levels outside its table of " + std::to_string(levels) + " levels");
      }
      const double ratio = level_khz(proc, best->level) / level_khz(proc, lv);
      std::vector<double> row(best->median_us);
      for (double& us : row) us *= ratio;
      time_[p].push_back(std::move(row));
      if (lv > 0) scaled.push_back(lv);
    }
    if (!scaled.empty()) {
      std::string list;
      for (int lv : scaled) {
        if (!list.empty()) list += ',';
        list += std::to_string(lv);
      }
      warnings_.push_back(std::string("processor ") + proc.letter + ": levels " + list +
                          " not measured, scaled from the nearest measured level (time ~ 1/f)");
    }
    if (!profile_.find_layer_times(proc.letter, 0) && levels > 0) unmeasured_as_found += proc.letter;
  }
  if (!unmeasured_as_found.empty()) {
    warnings_.push_back("level 0 (as found: the level of a domain the command does not set) not measured on " +
                        unmeasured_as_found + ": taken as the highest level");
  }
  // Layers a processor declined: a prohibitive time, so that no search places them there (and
  // plan() drops any candidate that still does), while every sum stays finite.
  runs_.assign(n_proc, std::vector<bool>(layers_, true));
  for (size_t p = 0; p < n_proc; ++p) {
    std::string list;
    for (const LayerTimes& t : profile_.layer_times) {
      if (t.processor != letters_[p]) continue;
      for (const auto& [layer, why] : t.declined) {
        if (layer >= layers_ || !runs_[p][layer]) continue;
        runs_[p][layer] = false;
        list += (list.empty() ? "" : ", ") + std::to_string(layer);
      }
    }
    for (std::vector<double>& row : time_[p]) {
      for (uint32_t i = 0; i < layers_; ++i) {
        if (!runs_[p][i] || std::isnan(row[i])) {
          runs_[p][i] = false;
          row[i] = kDeclinedUs;
        }
      }
    }
    if (!list.empty()) {
      warnings_.push_back(std::string("processor ") + letters_[p] + " declined layer(s) " + list +
                          " (see the profile's \"declined\"): plans keep them off " + letters_[p]);
    }
  }

  // Transfers between every ordered pair; a pair not measured costs 0 (and says so).
  const std::vector<double> zeros(layers_ > 0 ? layers_ - 1 : 0, 0.0);
  send_.assign(n_proc, std::vector<std::vector<double>>(n_proc, zeros));
  receive_ = send_;
  for (size_t a = 0; a < n_proc; ++a) {
    for (size_t b = 0; b < n_proc; ++b) {
      if (a == b) continue;
      if (const TransferTimes* t = profile_.find_transfer(letters_[a], letters_[b])) {
        send_[a][b] = t->send_us;
        receive_[a][b] = t->receive_us;
      } else {
        warnings_.push_back(std::string("no transfer measured ") + letters_[a] + "->" + letters_[b] +
                            ": counted as 0 us");
      }
    }
  }
  handoff_.assign(n_proc, std::vector<double>(n_proc, 0.0));
  for (size_t a = 0; a < n_proc; ++a) {
    for (size_t b = a + 1; b < n_proc; ++b) {
      if (const HandoffTime* h = profile_.find_handoff(letters_[a], letters_[b])) {
        handoff_[a][b] = handoff_[b][a] = h->us;
      } else if (profile_.find_transfer(letters_[a], letters_[b]) != nullptr) {
        warnings_.push_back(std::string("no hand-off measured between ") + letters_[a] + " and " +
                            letters_[b] + ": counted as 0 us (profile it: co_up profile resumes "
                            "the file and measures only that)");
      }
    }
  }
  input_.assign(n_proc, 0.0);
  for (size_t p = 0; p < n_proc; ++p) {
    if (auto it = profile_.input_transfer_us.find(letters_[p]); it != profile_.input_transfer_us.end()) {
      input_[p] = it->second;
    }
  }

  // Resources: processors with overlapping host cores, transitively (union-find).
  std::vector<size_t> parent(n_proc);
  std::iota(parent.begin(), parent.end(), size_t{0});
  auto root = [&](size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (size_t a = 0; a < n_proc; ++a) {
    for (size_t b = a + 1; b < n_proc; ++b) {
      const auto& ca = procs[a]->host_cores;
      const auto& cb = procs[b]->host_cores;
      const bool overlap = std::any_of(ca.begin(), ca.end(), [&](int c) {
        return std::find(cb.begin(), cb.end(), c) != cb.end();
      });
      if (overlap) parent[root(a)] = root(b);
    }
  }
  std::vector<size_t> id_of_root(n_proc, SIZE_MAX);
  resource_of_.resize(n_proc);
  for (size_t p = 0; p < n_proc; ++p) {
    size_t& id = id_of_root[root(p)];
    if (id == SIZE_MAX) id = resource_count_++;
    resource_of_[p] = id;
  }

  // Power per (processor, level): measured, else the power model, else unknown.
  busy_w_.resize(n_proc);
  idle_w_.resize(n_proc);
  for (size_t p = 0; p < n_proc; ++p) {
    const ProfileProcessor& proc = *procs[p];
    for (int lv = 0; lv <= static_cast<int>(proc.levels_khz.size()); ++lv) {
      double busy = kNaN, idle = kNaN;
      if (const PowerPoint* pp = profile_.find_power(proc.letter, lv)) {
        busy = pp->busy_w;
        idle = pp->idle_w;
      } else if (proc.power_model && !proc.levels_khz.empty()) {
        const double ghz = level_khz(proc, lv) / 1e6;
        const size_t vi = lv == 0 ? proc.levels_khz.size() - 1 : static_cast<size_t>(lv - 1);
        const double volts = proc.voltages_mv.empty() ? 1.0 : proc.voltages_mv[vi] / 1000.0;
        busy = proc.power_model->alpha * volts * volts * ghz + proc.power_model->beta * volts;
        idle = proc.power_model->beta * volts;
      }
      busy_w_[p].push_back(busy);
      idle_w_[p].push_back(idle);
    }
    // Level 0 (as found) without data: the highest level's, as for layer times.
    if (std::isnan(busy_w_[p][0]) && busy_w_[p].size() > 1) {
      busy_w_[p][0] = busy_w_[p].back();
      idle_w_[p][0] = idle_w_[p].back();
    }
    // Searches use levels 1..n of a domain profiled at table levels, else level 0 only.
    const bool profiled = domain_of_[p] >= 0 && domain_profiled_[static_cast<size_t>(domain_of_[p])];
    for (size_t lv = profiled ? 1 : 0; lv < (profiled ? busy_w_[p].size() : 1); ++lv) {
      if (std::isnan(busy_w_[p][lv]) && energy_gap_.empty()) {
        energy_gap_ = std::string("processor ") + proc.letter + " level " + std::to_string(lv) +
                      " has no power_w entry and no power_model";
      }
    }
  }
}

Mapping CostModel::normalized(Mapping m) const {
  if (m.levels.empty()) return m;
  std::vector<bool> set(domains_.size(), false);
  auto mark = [&](char letter) {
    const ProfileProcessor* p = profile_.find_processor(letter);
    if (p == nullptr) return;
    const auto it = std::find(domains_.begin(), domains_.end(), p->dvfs_domain);
    if (it != domains_.end()) set[static_cast<size_t>(it - domains_.begin())] = true;
  };
  // The domains the command's --frequency sets (see frequency_argument).
  for (char letter : m.order) {
    const ProfileProcessor* p = profile_.find_processor(letter);
    if (p == nullptr) continue;
    if (p->kind == "gpu") {
      mark(letter);
      mark(p->host);
    } else if (p->kind == "cpu" || p->kind.empty()) {
      mark(letter);
    } else {
      mark(p->host);
    }
  }
  // Once the command has a --frequency, every domain it sets gets a table level: level 0 there
  // is written as the highest level (frequency_argument), so predict it as that.
  bool any = false;
  for (size_t d = 0; d < m.levels.size() && d < set.size(); ++d) any = any || (set[d] && m.levels[d] > 0);
  for (size_t d = 0; d < m.levels.size() && d < set.size(); ++d) {
    if (!set[d]) {
      m.levels[d] = 0;
    } else if (any && m.levels[d] == 0) {
      m.levels[d] = level_count_[d];
    }
  }
  return m;
}

double CostModel::layer_us(uint32_t layer, size_t p, const std::vector<int>& levels) const {
  return time_[p][static_cast<size_t>(level_of(p, levels))][layer];
}
double CostModel::send_us(uint32_t boundary, size_t from, size_t to, Mode mode) const {
  if (from == to) return 0.0;
  return send_[from][to][boundary] + (mode == Mode::kPipeline ? handoff_[from][to] : 0.0);
}
double CostModel::receive_us(uint32_t boundary, size_t from, size_t to, Mode mode) const {
  if (from == to) return 0.0;
  return receive_[from][to][boundary] + (mode == Mode::kPipeline ? handoff_[from][to] : 0.0);
}

CostModel CostModel::with_handoff(char a, char b, double us) const {
  const size_t i = index_of(a), j = index_of(b);
  if (i == letters_.size() || j == letters_.size() || i == j || !(us >= 0)) {
    throw InputError(std::string("hand-off between '") + a + "' and '" + b + "' of " + std::to_string(us) +
                     " us: needs two processors of the profile (" + letters_ + ") and a time >= 0");
  }
  CostModel copy = *this;
  copy.profile_.set_handoff(a, b, us);
  copy.handoff_[i][j] = copy.handoff_[j][i] = us;
  return copy;
}
CostModel CostModel::with_layer_scale(char p, double scale) const {
  if (index_of(p) == letters_.size() || !(scale > 0) || !std::isfinite(scale)) {
    throw InputError(std::string("layer times of '") + p + "' scaled by " + std::to_string(scale) +
                     ": needs a processor of the profile (" + letters_ + ") and a positive factor");
  }
  LayerProfile scaled = profile_;
  for (LayerTimes& t : scaled.layer_times) {
    if (t.processor != p) continue;
    for (double& us : t.median_us) us *= scale;  // a declined layer's NaN stays NaN
    for (double& us : t.mad_us) us *= scale;
  }
  return CostModel(scaled);
}

double CostModel::input_us(size_t p) const { return input_[p]; }

std::vector<int> CostModel::fastest_levels() const {
  std::vector<int> levels(domains_.size(), 0);
  for (size_t d = 0; d < domains_.size(); ++d) {
    if (!domain_profiled_[d]) continue;
    double best = std::numeric_limits<double>::infinity();
    for (int lv = 1; lv <= level_count_[d]; ++lv) {
      double total = 0;
      for (size_t p = 0; p < letters_.size(); ++p) {
        if (domain_of_[p] != static_cast<int>(d)) continue;
        for (double us : time_[p][static_cast<size_t>(lv)]) total += us;
      }
      if (total < best) {
        best = total;
        levels[d] = lv;
      }
    }
  }
  return levels;
}

bool CostModel::runs(const std::string& order) const {
  for (uint32_t i = 0; i < order.size() && i < layers_; ++i) {
    const size_t p = index_of(order[i]);
    if (p < letters_.size() && !runs_[p][i]) return false;
  }
  return true;
}

void CostModel::check(const Mapping& m) const {
  if (m.order.size() != layers_) {
    throw InputError("order " + order_for_message(m.order) + " has " + std::to_string(m.order.size()) +
                     " letters, the profiled network has " + std::to_string(layers_) + " layer units");
  }
  for (size_t i = 0; i < m.order.size(); ++i) {
    if (index_of(m.order[i]) == letters_.size()) {
      throw InputError("order " + order_for_message(m.order) + " has letter '" + std::string(1, m.order[i]) +
                       "' at position " + std::to_string(i + 1) + ", but the profile has layer times for " +
                       letters_ + " only");
    }
  }
  if (!m.levels.empty() && m.levels.size() != domains_.size()) {
    throw InputError("mapping has " + std::to_string(m.levels.size()) + " DVFS levels, the profile has " +
                     std::to_string(domains_.size()) + " DVFS domains");
  }
  for (size_t d = 0; d < m.levels.size(); ++d) {
    if (m.levels[d] < 0 || m.levels[d] > level_count_[d]) {
      throw InputError("level " + std::to_string(m.levels[d]) + " for DVFS domain '" + domains_[d] +
                       "' is outside 0.." + std::to_string(level_count_[d]));
    }
  }
}

Prediction CostModel::predict(const Mapping& m) const {
  check(m);
  const size_t n_proc = letters_.size();
  std::vector<double> busy(n_proc, 0.0);
  std::vector<bool> used(n_proc, false);
  double path_us = 0;
  size_t prev = SIZE_MAX;
  for (uint32_t i = 0; i < layers_; ++i) {
    const size_t p = index_of(m.order[i]);
    used[p] = true;
    if (i == 0) {
      busy[p] += input_[p];
      path_us += input_[p];
    } else if (prev != p) {
      const double s = send_us(i - 1, prev, p, m.mode);
      const double r = receive_us(i - 1, prev, p, m.mode);
      busy[prev] += s;
      busy[p] += r;
      path_us += s + r;
    }
    const double t = layer_us(i, p, m.levels);
    busy[p] += t;
    path_us += t;
    prev = p;
  }

  Prediction out;
  out.resources.resize(resource_count_);
  for (size_t p = 0; p < n_proc; ++p) {
    out.resources[resource_of_[p]].processors += letters_[p];
    out.resources[resource_of_[p]].busy_us += busy[p];
  }
  double bottleneck = 0;
  for (const ResourceTime& r : out.resources) bottleneck = std::max(bottleneck, r.busy_us);
  out.period_us = m.mode == Mode::kPipeline ? bottleneck : path_us;
  out.throughput_fps = out.period_us > 0 ? 1e6 / out.period_us : std::numeric_limits<double>::infinity();
  out.latency_ms = path_us / 1000.0;

  out.energy_mj_per_frame = energy_mj(busy, used, out.period_us, m.levels);
  return out;
}

double CostModel::energy_mj(const std::vector<double>& busy, const std::vector<bool>& used,
                            double period_us, const std::vector<int>& levels) const {
  double energy_uj = 0;
  for (size_t p = 0; p < letters_.size(); ++p) {
    const size_t lv = static_cast<size_t>(level_of(p, levels));
    const double bw = busy_w_[p][lv], iw = idle_w_[p][lv];
    if (std::isnan(bw)) {
      if (used[p]) return kNaN;
      continue;
    }
    energy_uj += bw * busy[p] + iw * std::max(0.0, period_us - busy[p]);
  }
  return energy_uj / 1000.0;
}

Prediction predict(const LayerProfile& profile, const Mapping& mapping) {
  return CostModel(profile).predict(mapping);
}

namespace {

// A sub-graph token's level for the processor with letter `letter`'s domain: the mapping's level,
// else (level 0 beside set levels) the table's highest, else "1" for a domain with no table.
std::string token_level(const CostModel& model, const Mapping& m, char letter, bool& best_effort) {
  const ProfileProcessor* p = model.profile().find_processor(letter);
  if (p == nullptr || p->levels_khz.empty() || p->dvfs_domain.empty()) {
    best_effort = true;
    return "1";
  }
  const auto& domains = model.domains();
  const auto it = std::find(domains.begin(), domains.end(), p->dvfs_domain);
  int level = 0;
  if (it != domains.end() && !m.levels.empty()) level = m.levels[static_cast<size_t>(it - domains.begin())];
  // A domain the profile never set (no table levels measured) may not be settable here.
  if (it == domains.end() || !model.domain_profiled(static_cast<size_t>(it - domains.begin()))) best_effort = true;
  return std::to_string(level > 0 ? level : static_cast<int>(p->levels_khz.size()));
}

std::string frequency_text(const CostModel& model, const Mapping& m, bool& best_effort) {
  best_effort = false;
  if (std::all_of(m.levels.begin(), m.levels.end(), [](int l) { return l == 0; })) return "";
  std::string out = "{";
  for (size_t i = 0; i < m.order.size(); ++i) {
    if (i > 0 && m.order[i] == m.order[i - 1]) continue;
    const char letter = m.order[i];
    const ProfileProcessor* p = model.profile().find_processor(letter);
    const char host = p != nullptr && p->host != 0 ? p->host : letter;
    std::string token;
    if (p != nullptr && p->kind == "gpu") {
      token.append("[").append(token_level(model, m, letter, best_effort));
      token.append(",").append(token_level(model, m, host, best_effort)).append("]");
    } else if (p == nullptr || p->kind == "cpu" || p->kind.empty()) {
      token = token_level(model, m, letter, best_effort);
    } else {
      token = token_level(model, m, host, best_effort);  // NPU/DSP: its host's clock
    }
    out += (out.size() > 1 ? "-" : "") + token;
  }
  return out + "}";
}

}  // namespace

std::string frequency_argument(const CostModel& model, const Mapping& mapping) {
  bool best_effort = false;
  return frequency_text(model, mapping, best_effort);
}

bool needs_best_effort(const CostModel& model, const Mapping& mapping) {
  bool best_effort = false;
  frequency_text(model, mapping, best_effort);
  return best_effort;
}

std::string command_line(const CostModel& model, const Mapping& mapping) {
  const ProfileNetwork& net = model.profile().network;
  std::ostringstream s;
  s << "co_up " << (net.graph.empty() ? "--model=" + shell_quote(net.model) : "--graph=" + shell_quote(net.graph));
  if (net.units != "layers") s << " --units=" << net.units;
  if (!net.split.empty()) s << " --split=" << net.split;
  if (net.image_size > 0) s << " --image-size=" << net.image_size;
  s << " --order=" << mapping.order << " --mode=" << mode_name(mapping.mode);
  bool best_effort = false;
  const std::string freq = frequency_text(model, mapping, best_effort);
  if (!freq.empty()) {
    s << " --frequency=" << shell_quote(freq);
    if (best_effort) s << " --dvfs=best-effort";
  }
  return s.str();
}

}  // namespace co_up::planner
