#pragma once
#include <vector>

#include "strategies/graph/Record.hpp"
#include "workloads/json/JsonReader.hpp"

namespace placesim {

/// Simulated time of one transformer layer per pass on one pipeline stage, as Megatron-LM's per-layer timers measure it
/// (the figures of Korthikanti et al., arXiv 2205.05198, Table 4).
///
/// A pass of a layer group (one micro-batch) spans from the start of its first task to the end of its last: forward =
/// the forward compute and the TP collectives it leaves exposed; backward = the recompute (if any), the exposed TP
/// collectives, the backward compute and the TP collectives it hides (Megatron waits for those before the layer's
/// backward returns). Tasks are grouped by (device, first layer, micro-batch, pass); the embedding, the head and the
/// data-parallel and pipeline transfers are not part of a layer. Per stage, the spans are averaged over every group
/// and micro-batch of the stage's recorded devices and divided by the layers per group.
struct LayerPassTimes {
  int stage = 0;
  int samples = 0;  ///< (device, layer group, micro-batch) passes averaged
  double forward_s = 0, backward_s = 0;
};

/// Layer times per stage from a record, stages in increasing order; stages without layer tasks are left out.
std::vector<LayerPassTimes> measure_layer_times(const SimulationRecord& record);
Json layer_times_json(const std::vector<LayerPassTimes>& times);

}  // namespace placesim
