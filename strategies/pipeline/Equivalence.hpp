#pragma once
#include <string>

#include "strategies/pipeline/PipelineMetrics.hpp"
#include "strategies/placement/Strategy.hpp"

namespace placesim {

/// Whether a valid strategy trains the same model as one device (DESIGN §2). Synchronous schedules (GPipe, 1F1B,
/// interleaved) do: every gradient of a step is taken at and applied to the weights of that step. Asynchronous ones
/// (pipedream, pipedream-2bw, localsgd) give that up on purpose, and `given_up` says what; `delay` is the staleness
/// they trade it for (for localsgd the bound is its local steps between averagings), measured on the strategy's own
/// pipeline shape with balanced stages (backward = 2 x forward,
/// free transfers, 4 steps; steady state) in block updates, as the pipeline report counts it.
struct Equivalence {
  bool equivalent = true;
  std::string given_up;  ///< empty when equivalent
  DelayStats delay;
};

Equivalence training_equivalence(const StrategySpec& strategy);

}  // namespace placesim
