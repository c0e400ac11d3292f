#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "strategies/placement/Collective.hpp"
#include "strategies/placement/DataPlan.hpp"
#include "strategies/placement/Experiment.hpp"
#include "strategies/placement/Layout.hpp"

namespace placesim {

/// Memory one device holds, in bytes.
struct MemoryBytes {
  double parameters = 0;  ///< resident parameters (including stashed weight versions of asynchronous pipelines)
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;  ///< peak stored activations under the schedule
  double buffers = 0;      ///< transient gather / gradient buffers of sharded or offloaded states
  double host = 0;         ///< bytes this device's offloaded states occupy in host memory
  double model_states() const { return parameters + gradients + optimizer; }
  double total() const { return model_states() + activations + buffers; }
};

/// Bytes one device sends per training step, per collective class, and over PCIe.
struct CommBytes {
  std::array<double, kCommClasses> by_class{};
  double h2d = 0;  ///< host to device (offload)
  double d2h = 0;  ///< device to host (offload)
  double total() const;
};

/// One collective of the placement along the data axes (DataPlan) with its bytes on one device of a stage.
struct DataCollectiveBytes {
  DataCollective plan;
  std::int64_t group_size = 1;  ///< ranks in its group
  double runs = 0;              ///< times per step (micro-batches, or 1)
  double bytes_per_run = 0;     ///< bytes one device sends per run, all units of the stage
  double bytes() const { return runs * bytes_per_run; }
};

/// The analytic figures of one pipeline stage (all devices of a stage are alike).
struct StageAnalysis {
  int stage = 0;
  MemoryBytes memory;
  CommBytes comm;
  std::vector<DataCollectiveBytes> data_collectives;  ///< their bytes add up to dp_grad_sync and zero_gather
  /// Mixture of experts: the routed experts' collectives over the expert-data-parallel group (expert_data_sync).
  std::vector<DataCollectiveBytes> expert_collectives;
  /// Per ep rank j: the all-to-all bytes it sends per step (comm's ep_all_to_all is their maximum); a skewed routing
  /// makes them differ. Empty without experts.
  std::vector<double> ep_rank_bytes;
  double hardware_flops = 0;  ///< FLOPs one device of this stage executes per step
  /// dualpipe: bytes one device sends per step summing its gradients with the mirror stage's copy (dp_grad_sync).
  double mirror_sync_bytes = 0;
};

struct Analysis {
  double parameters = 0;
  std::vector<StageAnalysis> stages;
  MemoryBytes memory;             ///< per field, the maximum over devices
  double model_states_bytes = 0;  ///< max over devices of parameters + gradients + optimizer
  double total_bytes = 0;         ///< max over devices of everything resident
  CommBytes comm;                 ///< per class, the maximum over devices
  double bytes_per_step = 0;      ///< network bytes sent by one device, maximum over devices
  double model_flops_per_step = 0;
  double hardware_flops_per_step = 0;
  double tokens_per_step = 0;
};

/// Memory, communication and FLOPs derived from the placement alone. Pure; no allocation beyond the stage list.
Analysis analyze(const Experiment& e);

/// Activation bytes one device of `stage` holds at its peak.
double stage_activation_bytes(const Experiment& e, const StageLayout& s);
/// Activation bytes one forward of each chunk of stage s holds on a device (its dense and MoE layers, or its recomputed
/// and kept layers under training.recompute_layers).
std::vector<double> chunk_activation_bytes(const Experiment& e, const StageLayout& s);

}  // namespace placesim
