#pragma once
#include <string>
#include <vector>

#include "strategies/placement/Collective.hpp"
#include "strategies/placement/Placement.hpp"
#include "strategies/placement/Strategy.hpp"

namespace placesim {

/// When a data-parallel collective runs: per micro-batch before a unit's forward or after its backward, or once per
/// step before or after the optimizer; FirstForward and LastBackward: once per step per unit, before its first
/// forward and after the last backward of its chunk (FSDP under a pipeline, StrategySpec::gathers_once_per_step).
/// AfterBackward: before the chunk's first op and before each op that follows one of its backwards
/// (StrategySpec::regathers_after_backward): m times per step, as each of the chunk's m backwards but the last is
/// followed by another op of the chunk.
enum class DataWhen { Forward, Backward, Step, AfterStep, FirstForward, LastBackward, AfterBackward };
/// Whether `w` runs once per micro-batch (Forward, Backward, AfterBackward) rather than once per step.
inline bool per_microbatch(DataWhen w) {
  return w == DataWhen::Forward || w == DataWhen::Backward || w == DataWhen::AfterBackward;
}
const char* to_string(DataWhen w);

/// One collective the placement implies along the data-parallel axes, for every gather unit (layer, embedding,
/// head, or bucket of an opaque model) of a stage.
struct DataCollective {
  State state = State::Gradients;  ///< Parameters (gathers) or Gradients (synchronisation)
  CollectiveOp op = CollectiveOp::AllReduce;
  CommClass cls = CommClass::DpGradSync;
  AxisSet group = kNoAxes;  ///< its group: the ranks that differ only along these axes
  /// The axes its buffer is already divided over: a unit's buffer is the unit padded to a multiple of dp, divided by
  /// the degree of these axes.
  AxisSet divided = kNoAxes;
  DataWhen when = DataWhen::Step;
  const char* purpose = "";  ///< e.g. "gradient reduce-scatter" (a literal: analyze() runs millions of times)
};

/// The collectives of the placement along dp_shard and dp_replicate, in the order they run for a unit, skipping
/// axes of degree 1. The rules, per data axis:
/// - parameters sharded-with-gather along axes A: all-gathered over A before each forward and each backward (with
///   hpZ's secondary shard the backward gathers over dp_shard only; with strategy.reshard_after_forward=false only
///   before the forward: the units stay gathered for the backward; with it under a pipeline (pp > 1) only before
///   the step's first forward of the unit: the units stay gathered for the whole step, FirstForward);
/// - gradients sharded (or offloaded) along axes G: reduce-scattered over G after each backward (with
///   reshard_after_forward=false under a pipeline: accumulated unsharded and reduce-scattered once, after the last
///   backward of the unit's chunk, LastBackward); along the other
///   axes they accumulate over the micro-batches and are synchronised once per step: reduce-scattered over those
///   where the optimizer is sharded, then all-reduced over those where it is replicated (DDP, HSDP's replicas);
/// - parameters replicated where the optimizer is sharded: the updated shards are all-gathered after the step.
/// Offloaded states are sharded along both axes (one host shard per rank); offloaded parameters are gathered as
/// sharded-with-gather ones are, each rank first fetching its shard of the unit over PCIe (ZeRO-Infinity,
/// Rajbhandari et al., arXiv 2104.07857, §5).
std::vector<DataCollective> data_plan(const StrategySpec& s);

/// The routed experts' view of the strategy: their data-parallel group is the expert-data-parallel group (edp ranks
/// of a stage holding the same experts), taken as the dp_shard axis and placed as the strategy places states along
/// dp_shard (a split data axis is not split for the experts).
StrategySpec expert_view(const StrategySpec& s);
/// The routed experts' collectives along their expert-data-parallel group: data_plan(expert_view(s)), class
/// expert_data_sync. Empty with edp 1.
std::vector<DataCollective> expert_plan(const StrategySpec& s);

/// Whether a device holds transient full units of `state` (Parameters or Gradients): parameters gathered for compute
/// (sharded-with-gather along an axis of degree > 1, or fetched from the host), gradients produced whole before
/// they are reduce-scattered or copied out (sharded along an axis of degree > 1, or offloaded).
bool holds_unit_buffer(const StrategySpec& s, State state);

/// Elements one rank sends in `c` for a stage whose units, each padded to a multiple of dp, add up to `padded`.
double data_collective_elems_sent(const StrategySpec& s, const DataCollective& c, double padded);

}  // namespace placesim
