#pragma once
#include <cstdint>
#include <vector>

#include "strategies/placement/Experiment.hpp"

namespace placesim {

/// Shares of the token-expert assignments each routed expert takes under training.routing (sum 1, each at most
/// 1 / top_k: an expert takes a token at most once). Deterministic given the seed.
std::vector<double> expert_shares(const ModelSpec& m, const RoutingSpec& r);

/// Tokens one rank routes per MoE layer and micro-batch: its sequence-parallel share of the micro-batch,
/// seq_len / cp x micro_batch / tp (the experts are not tensor-parallel, so each tp rank routes its own tokens).
std::int64_t moe_tokens_per_rank(const Experiment& e);

/// How one MoE layer's tokens spread over the ep ranks of an expert group, per micro-batch.
struct ExpertRouting {
  /// Tokens every rank sends to ep rank j (its experts are j x experts/ep ... (j+1) x experts/ep - 1, contiguous as
  /// Megatron-Core's local_expert_indices): the rank's tokens x top_k assignments split by the experts' shares, each
  /// expert capped at its capacity (capacity_factor) or padded to it, rounded to whole tokens by largest remainder.
  std::vector<std::int64_t> tokens_to;
  std::int64_t assignments = 0;  ///< tokens x top_k one rank routes (before drops)
  /// Token-expert pairs ep rank j computes: ep x tokens_to[j] (every rank routes alike).
  std::int64_t computed(int j) const {
    return static_cast<std::int64_t>(tokens_to.size()) * tokens_to[static_cast<std::size_t>(j)];
  }
  /// The most pairs any ep rank computes, and the pairs of all ep ranks together.
  std::int64_t busiest() const;
  std::int64_t total() const;
  /// The busiest rank's pairs over the mean rank's: the straggler factor (1 when every rank computes alike).
  double imbalance() const;
  std::int64_t dropped = 0;  ///< assignments one rank drops per layer (capacity_factor), 0 when dropless
};

ExpertRouting expert_routing(const Experiment& e);

}  // namespace placesim
