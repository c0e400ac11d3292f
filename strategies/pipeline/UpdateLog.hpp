#pragma once
#include <vector>

namespace placesim {

/// What a pipeline schedule did to the weights, in simulated completion order: the input of the stale-SGD
/// executor (sim/converge/StaleSgd) and of the staleness metrics. Produced from a simulated or evaluated schedule.
///
/// Weights are S blocks, one per stage, per model replica (LocalSGD runs several replicas through one pipeline).
/// Each block has a version: the number of Apply events on it so far (0 = initial weights).
struct TrainEvent {
  enum class Kind {
    Backward,  ///< the backward of `microbatch` on `stage` finished: it produced the gradient of block `stage`,
               ///< computed at the model whose block s had version versions_read[s] (what its forwards read)
    Apply,     ///< block `stage` of `replica` applied the gradients accumulated since its previous Apply
    Average,   ///< block `stage` of every replica was replaced by the replicas' average (LocalSGD round end)
  };
  Kind kind = Kind::Backward;
  int stage = 0;
  int replica = 0;
  int microbatch = -1;             ///< Backward only; also selects the micro-batch's data sample
  double time_s = 0;               ///< simulated completion time
  std::vector<int> versions_read;  ///< Backward only: one version per stage (of `replica`)
};

struct UpdateLog {
  int stages = 1;
  int replicas = 1;
  std::vector<TrainEvent> events;  ///< completion order; ties broken deterministically by the producer
};

}  // namespace placesim
