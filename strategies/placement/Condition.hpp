#pragma once
#include <string>
#include <vector>

#include "strategies/placement/Strategy.hpp"
#include "workloads/model/Training.hpp"

namespace placesim {

/// A condition written in a data file (a stack setting's "when", a strategy preset's "requires"): terms joined by
/// " and ", each a comparison of a mesh degree with a number ("tp > 1", "dp_replicate >= 2"; degrees dp, dp_shard,
/// dp_replicate, tp, pp, cp, ep; operators > >= < <= == !=) or one of the named predicates:
///   interleaved          strategy.schedule is interleaved
///   synchronous          the schedule makes one synchronous step per step (gpipe, 1f1b, interleaved)
///   gathered parameters  parameters sharded-with-gather along dp_shard, without a secondary (hpZ) shard
///   no weight copies     no offloaded parameters or optimizer state, no hpZ secondary shard, no stashed weight
///                        versions (pipedream, pipedream-2bw with pp > 1), 16-bit training
///   in-place optimizer   the optimizer steps fp32 parameters in place (fp32 training, or master weights as the
///                        parameters) with its own state size
///   fp8                  training.fp8
///   16-bit               training.dtype is bf16 or fp16
///   bf16                 training.dtype is bf16
///   sharded gradients    gradients sharded or offloaded along a data axis (ZeRO stage 2 and up)
///   replicated gradients gradients replicated along both data axes
///   1f1b                 strategy.schedule is 1f1b
///   ep overlap           strategy.ep_overlap (Megatron-Core's combined 1F1B)
///   full recompute       training.recompute is full
/// A predicate may follow "not " ("not interleaved").
/// Parsed once at load: an unknown term is refused naming `field`.
class Condition {
 public:
  Condition() = default;
  Condition(const std::string& text, const std::string& field);

  /// True when every term holds (an empty condition always holds).
  bool holds(const StrategySpec& s, const TrainingSpec& t) const;
  const std::string& text() const { return text_; }
  bool empty() const { return terms_.empty(); }

 private:
  struct Term {
    std::string name;  ///< a degree or a predicate
    std::string op;    ///< empty for a predicate, "not" for a negated one
    long long value = 0;
  };
  std::string text_;
  std::vector<Term> terms_;
};

/// The degree named `name` of the mesh (dp, dp_shard, dp_replicate, tp, pp, cp, ep), or -1 for another name.
long long mesh_degree(const StrategySpec& s, const std::string& name);

}  // namespace placesim
