// ExitPolicy: when a frame of a multi-exit network stops early (--exit=SPEC).
//
// A multi-exit network (graph::Graph::has_exits) ends each stage in an exit classifier; after each
// exit but the final one, the policy looks at that exit's output for the frame and says whether the
// frame stops there. Specs:
//   softmax-max>=T          stop when the largest class probability is at least T
//   entropy<=T              stop when the normalised entropy H(p) / ln(classes) is at most T
//   softmax-max>=T1,T2,...  one threshold per exit before the final (entropy<=T1,T2,... too);
//                           a threshold "off" never stops a frame at that exit
//   none                    never stop early: every frame runs every stage (the static network)
// Every T is in [0, 1]. An exit's output is read as probabilities when it already is a
// distribution (no negative value, sum within 1e-3 of 1, as after a Softmax node), else as logits
// (softmax applied here).
//
// Errors: InputError, one line naming the option and the spec (exit code 2 at the CLI).
// Thread-safe: a parsed policy is immutable.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace co_up {

class ExitPolicy {
 public:
  enum class Criterion { kNone, kSoftmaxMax, kEntropy };

  // A policy that never stops early (what a run without --exit uses).
  ExitPolicy() = default;
  // Parses SPEC as above; throws InputError ("--exit='...' ...") when it is not one.
  static ExitPolicy parse(const std::string& spec);

  Criterion criterion() const { return criterion_; }
  const std::vector<double>& thresholds() const { return thresholds_; }
  bool never_stops() const { return criterion_ == Criterion::kNone; }

  // Throws InputError unless the thresholds fit a network of `exit_count` exits (final included):
  // one for all, or one per exit before the final. A network without exits (0) accepts only none.
  void check_exit_count(size_t exit_count, const std::string& network) const;

  // Whether a frame whose exit `exit` (0-based; never the final one) produced `values` stops there.
  bool stops(uint32_t exit, std::span<const float> values) const;

  // The confidence the criterion compares: the largest probability, or the normalised entropy.
  double score(std::span<const float> values) const;

  // "softmax-max>=0.8,0.9", "entropy<=0.3", "none": the spec in its canonical spelling.
  std::string describe() const;

 private:
  Criterion criterion_ = Criterion::kNone;
  std::vector<double> thresholds_;
};

}  // namespace co_up
