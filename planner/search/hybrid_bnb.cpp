// Hybrid para/pipe branch-and-bound (planner/hybrid_search.h) and its registration as "hybrid".
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/error.h"
#include "planner/hybrid_search.h"
#include "planner/search/search_support.h"
#include "planner/search_algorithm.h"

namespace co_up::planner {
namespace {

constexpr char kFree = '?';

class BranchAndBound {
 public:
  BranchAndBound(const DagCostModel& model, const HybridSearchOptions& options, std::vector<int> levels,
                 std::vector<std::vector<uint32_t>> genes)
      : model_(model), options_(options), levels_(std::move(levels)), genes_(std::move(genes)) {
    const CostModel& m = model.model();
    letters_ = m.letters();
    for (uint32_t u = 0; u < m.layer_count(); ++u) {
      double fastest = kInf;
      for (size_t p = 0; p < letters_.size(); ++p) fastest = std::min(fastest, m.layer_us(u, p, levels_));
      fastest_.push_back(fastest);
      // A switch frame's latency is bounded by the work of the units that feed its outputs only.
      counted_.push_back(options_.mode != Mode::kSwitch || model.feeds_output(u));
    }
  }

  double objective(const std::string& order) const {
    const Mapping m{order, options_.mode, levels_};
    return options_.mode == Mode::kSwitch ? model_.switch_latency_us(m) : model_.pipeline_period_us(m);
  }

  // Genes moved together by the descent: each region's branches with its fork and join (a branch
  // alone gains nothing when its sub-graph would still wait for its neighbour's).
  void set_blocks(const std::vector<graph::DagRegion>& regions) {
    std::vector<size_t> gene_of(model_.model().layer_count(), 0);
    for (size_t g = 0; g < genes_.size(); ++g) {
      for (uint32_t u : genes_[g]) gene_of[u] = g;
    }
    for (const graph::DagRegion& r : regions) {
      std::vector<size_t> block{gene_of[r.fork]};
      if (r.join != graph::kDagExit) block.push_back(gene_of[r.join]);
      for (const auto& branch : r.branches) {
        for (uint32_t u : branch) block.push_back(gene_of[u]);
      }
      std::sort(block.begin(), block.end());
      block.erase(std::unique(block.begin(), block.end()), block.end());
      if (std::pow(static_cast<double>(letters_.size()), static_cast<double>(block.size())) <= 4096) {
        blocks_.push_back(std::move(block));
      }
    }
  }

  // Every letter combination of one block's genes; keeps the best (strict gains only).
  bool improve_block(std::string& order, double& value, const std::vector<size_t>& block) {
    std::vector<char> was;
    for (size_t g : block) was.push_back(order[genes_[g].front()]);
    std::vector<char> best = was;
    const size_t k = letters_.size();
    size_t combos = 1;
    for (size_t i = 0; i < block.size(); ++i) combos *= k;
    for (size_t code = 0; code < combos; ++code) {
      size_t c = code;
      for (size_t i = 0; i < block.size(); ++i, c /= k) set(order, block[i], letters_[c % k]);
      const double v = objective(order);
      if (v < value) {
        value = v;
        for (size_t i = 0; i < block.size(); ++i) best[i] = order[genes_[block[i]].front()];
      }
    }
    for (size_t i = 0; i < block.size(); ++i) set(order, block[i], best[i]);
    return best != was;
  }

  // Coordinate descent from `order`: each gene tries every letter, then each block every
  // combination; strict gains only.
  std::string descend(std::string order, std::mt19937_64& random) {
    double value = objective(order);
    std::vector<size_t> visit(genes_.size());
    std::iota(visit.begin(), visit.end(), size_t{0});
    for (int round = 0; round < 50; ++round) {
      std::shuffle(visit.begin(), visit.end(), random);
      bool improved = false;
      for (const std::vector<size_t>& block : blocks_) {
        if (improve_block(order, value, block)) {
          improved = true;
          offer(order, value);
        }
      }
      for (size_t g : visit) {
        const char was = order[genes_[g].front()];
        char best_letter = was;
        for (char letter : letters_) {
          if (letter == was) continue;
          set(order, g, letter);
          const double v = objective(order);
          if (v < value) {
            value = v;
            best_letter = letter;
          }
        }
        set(order, g, best_letter);
        if (best_letter != was) {
          improved = true;
          offer(order, value);
        }
      }
      if (!improved) break;
    }
    offer(order, value);
    return order;
  }

  void offer(const std::string& order, double value) {
    if (value < best_value_) {
      best_value_ = value;
      best_ = order;
      improvements_.push_back(order);
    }
  }

  // Returns whether it finished within the budget.
  bool search() {
    std::string order(model_.model().layer_count(), kFree);
    free_fastest_total_ = 0;
    for (size_t u = 0; u < fastest_.size(); ++u) free_fastest_total_ += counted_[u] ? fastest_[u] : 0.0;
    return dfs(order, 0, 0.0);
  }

  const std::string& best() const { return best_; }
  double best_value() const { return best_value_; }
  uint64_t nodes() const { return nodes_; }
  std::vector<std::string>& improvements() { return improvements_; }

 private:
  void set(std::string& order, size_t gene, char letter) const {
    for (uint32_t u : genes_[gene]) order[u] = letter;
  }

  double bound(const std::string& order, double placed_total) const {
    const double spread_over =
        static_cast<double>(options_.mode == Mode::kSwitch ? letters_.size() : model_.model().resource_count());
    const double average = (placed_total + free_fastest_total_) / std::max(1.0, spread_over);
    return std::max(average, model_.period_lower_bound_us(order, levels_, options_.mode));
  }

  bool dfs(std::string& order, size_t gene, double placed_total) {
    if (++nodes_ > options_.node_budget) return false;
    if (gene == genes_.size()) {
      const double v = objective(order);
      offer(order, v);
      return true;
    }
    std::string tries;
    if (!best_.empty()) tries += best_[genes_[gene].front()];
    for (char letter : letters_) {
      if (tries.find(letter) == std::string::npos) tries += letter;
    }
    double gene_fastest = 0;
    for (uint32_t u : genes_[gene]) gene_fastest += counted_[u] ? fastest_[u] : 0.0;
    free_fastest_total_ -= gene_fastest;
    bool finished = true;
    for (char letter : tries) {
      const size_t p = model_.model().index_of(letter);
      double gene_time = 0;
      for (uint32_t u : genes_[gene]) gene_time += counted_[u] ? model_.model().layer_us(u, p, levels_) : 0.0;
      set(order, gene, letter);
      if (bound(order, placed_total + gene_time) < best_value_) {
        finished = dfs(order, gene + 1, placed_total + gene_time) && finished;
        if (!finished) break;
      }
    }
    set(order, gene, kFree);
    free_fastest_total_ += gene_fastest;
    return finished;
  }

  const DagCostModel& model_;
  const HybridSearchOptions& options_;
  std::vector<int> levels_;
  std::vector<std::vector<uint32_t>> genes_;
  std::string letters_;
  std::vector<double> fastest_;
  std::vector<bool> counted_;  // per unit: part of the bound's work (above)
  double free_fastest_total_ = 0;
  std::string best_;
  double best_value_ = kInf;
  uint64_t nodes_ = 0;
  std::vector<std::string> improvements_;
  std::vector<std::vector<size_t>> blocks_;
};

}  // namespace

graph::UnitDag chain_dag(uint32_t units) {
  graph::UnitDag dag;
  dag.predecessors.resize(units);
  for (uint32_t u = 1; u < units; ++u) dag.predecessors[u] = {u - 1};
  dag.outputs.assign(units, false);
  dag.inputs.assign(units, false);
  if (units > 0) {
    dag.outputs.back() = true;
    dag.inputs.front() = true;
  }
  return dag;
}

std::vector<std::vector<uint32_t>> hybrid_genes(const graph::UnitDag& dag, size_t letters,
                                                double exhaustive_limit) {
  const auto units = static_cast<uint32_t>(dag.predecessors.size());
  std::vector<std::vector<uint32_t>> genes;
  if (std::pow(static_cast<double>(letters), static_cast<double>(units)) <= exhaustive_limit) {
    for (uint32_t u = 0; u < units; ++u) genes.push_back({u});
    return genes;
  }
  std::vector<std::vector<uint32_t>> branches;
  for (const graph::DagRegion& r : graph::find_unit_regions(dag)) {
    for (const std::vector<uint32_t>& b : r.branches) branches.push_back(b);
  }
  std::stable_sort(branches.begin(), branches.end(),
                   [](const auto& a, const auto& b) { return a.size() < b.size(); });
  std::vector<size_t> gene_of(units, SIZE_MAX);
  for (const std::vector<uint32_t>& b : branches) {
    std::vector<uint32_t> gene;
    for (uint32_t u : b) {
      if (gene_of[u] == SIZE_MAX) gene.push_back(u);
    }
    if (gene.empty()) continue;
    for (uint32_t u : gene) gene_of[u] = genes.size();
    genes.push_back(std::move(gene));
  }
  for (uint32_t u = 0; u < units; ++u) {
    if (gene_of[u] == SIZE_MAX) genes.push_back({u});
  }
  std::sort(genes.begin(), genes.end(), [](const auto& a, const auto& b) { return a.front() < b.front(); });
  return genes;
}

HybridSearchResult hybrid_search(const DagCostModel& model, const HybridSearchOptions& options) {
  const CostModel& m = model.model();
  std::vector<int> levels = resolve_levels(m, options.levels);
  std::vector<std::vector<uint32_t>> genes = hybrid_genes(model.dag(), m.letters().size(), options.exhaustive_limit);
  HybridSearchResult result;
  result.every_order = genes.size() == m.layer_count() &&
                       std::pow(static_cast<double>(m.letters().size()), static_cast<double>(m.layer_count())) <=
                           options.exhaustive_limit;
  BranchAndBound bnb(model, options, levels, genes);
  if (!result.every_order) bnb.set_blocks(graph::find_unit_regions(model.dag()));
  std::mt19937_64 random(options.seed);
  // Starts: the given orders (made gene-consistent: a gene takes its first unit's letter), then
  // every single processor.
  std::vector<std::string> starts;
  for (const Mapping& s : options.starts) {
    if (s.order.size() != m.layer_count()) {
      throw InputError("hybrid search: a start order has " + std::to_string(s.order.size()) + " letters, the network " +
                       std::to_string(m.layer_count()));
    }
    std::string order = s.order;
    for (const auto& g : genes) {
      for (uint32_t u : g) order[u] = s.order[g.front()];
    }
    starts.push_back(order);
  }
  for (char letter : m.letters()) starts.emplace_back(m.layer_count(), letter);
  // A list-scheduling start (Para-Pipe's balanced branches): every unit on its fastest processor,
  // then each region's branches, longest first, each to the processor that finishes it first.
  {
    std::string order(m.layer_count(), m.letters()[0]);
    for (uint32_t u = 0; u < m.layer_count(); ++u) {
      size_t best = 0;
      for (size_t p = 1; p < m.letters().size(); ++p) {
        if (m.layer_us(u, p, levels) < m.layer_us(u, best, levels)) best = p;
      }
      order[u] = m.letters()[best];
    }
    for (const graph::DagRegion& r : graph::find_unit_regions(model.dag())) {
      std::vector<std::pair<double, size_t>> by_time;
      for (size_t b = 0; b < r.branches.size(); ++b) {
        double fastest = 0;
        for (uint32_t u : r.branches[b]) fastest += m.layer_us(u, m.index_of(order[u]), levels);
        by_time.emplace_back(-fastest, b);
      }
      std::sort(by_time.begin(), by_time.end());
      std::vector<double> load(m.letters().size(), 0.0);
      for (const auto& [negative, b] : by_time) {
        size_t best = 0;
        double best_end = kInf;
        for (size_t p = 0; p < m.letters().size(); ++p) {
          double t = load[p];
          for (uint32_t u : r.branches[b]) t += m.layer_us(u, p, levels);
          if (t < best_end) {
            best_end = t;
            best = p;
          }
        }
        load[best] = best_end;
        for (uint32_t u : r.branches[b]) order[u] = m.letters()[best];
      }
    }
    for (const auto& g : genes) {
      for (uint32_t u : g) order[u] = order[g.front()];
    }
    starts.push_back(order);
  }
  for (const std::string& s : starts) {
    if (!m.runs(s)) continue;  // a declined layer: the descent would start at 1000 s
    bnb.offer(s, bnb.objective(s));
  }
  for (const std::string& s : starts) {
    if (m.runs(s)) bnb.descend(s, random);
  }
  result.exact = bnb.search();
  result.nodes = bnb.nodes();
  if (bnb.best().empty()) throw InputError("hybrid search: no mapping runs every layer");
  const Mapping best{bnb.best(), options.mode, levels};
  result.best = make_candidate(m, best, result.exact ? "hybrid-bnb" : "hybrid-bnb (budget)");
  result.best.prediction = model.predict(result.best.mapping);
  for (const std::string& order : bnb.improvements()) result.improvements.push_back({order, options.mode, levels});
  return result;
}

std::unique_ptr<SearchAlgorithm> create_hybrid_search() {
  return std::make_unique<FunctionSearch>([](const SearchInput& input) {
    const graph::UnitDag dag = input.dag != nullptr ? *input.dag : chain_dag(input.model->layer_count());
    const DagCostModel dag_model(*input.model, dag);
    HybridSearchOptions options;
    options.mode = input.mode;
    options.levels = input.levels;
    options.seed = input.seed;
    for (const Candidate& c : input.starts) options.starts.push_back(c.mapping);
    HybridSearchResult r = hybrid_search(dag_model, options);
    return std::vector<Candidate>{r.best};
  });
}

}  // namespace co_up::planner
