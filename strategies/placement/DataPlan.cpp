#include "strategies/placement/DataPlan.hpp"

#include "workloads/json/EnumNames.hpp"

namespace placesim {

namespace {

constexpr EnumName<DataWhen> kDataWhenNames[] = {
    {DataWhen::Forward, "per micro-batch, before the forward"},
    {DataWhen::Backward, "per micro-batch, in the backward"},
    {DataWhen::Step, "per step, before the optimizer"},
    {DataWhen::AfterStep, "per step, after the optimizer"},
    {DataWhen::FirstForward, "per step, before the unit's first forward"},
    {DataWhen::LastBackward, "per step, after the chunk's last backward"},
    {DataWhen::AfterBackward, "per micro-batch, before the chunk's first op and each op after a backward"}};

}  // namespace

const char* to_string(DataWhen w) {
  return name_of(kDataWhenNames, w);
}

namespace {

// The axes of `axes` whose degree exceeds 1: collectives over the others are no-ops.
AxisSet live(const StrategySpec& s, AxisSet axes) {
  AxisSet out = kNoAxes;
  if ((axes & kShardAxis) != 0 && s.degree(kShardAxis) > 1) out |= kShardAxis;
  if ((axes & kReplicateAxis) != 0 && s.dp_replicate > 1) out |= kReplicateAxis;
  return out;
}

AxisSet axes_where(const Placement& p, State state, Mode mode) {
  AxisSet out = kNoAxes;
  for (AxisSet axis : {kShardAxis, kReplicateAxis})
    if (p.mode(state, axis) == mode) out |= axis;
  return out;
}

}  // namespace

std::vector<DataCollective> data_plan(const StrategySpec& s) {
  const Placement& p = s.placement;
  std::vector<DataCollective> out;
  auto add = [&](State state, CollectiveOp op, CommClass cls, AxisSet group, AxisSet divided, DataWhen when,
                 const char* purpose) {
    group = live(s, group);
    if (group != kNoAxes) out.push_back({state, op, cls, group, live(s, divided), when, purpose});
  };
  // Offloaded parameters are sharded over every data axis in host memory (ZeRO-Infinity): each rank fetches its
  // shard of a unit over PCIe and the group all-gathers the unit.
  const AxisSet gathered =
      axes_where(p, State::Parameters, Mode::ShardedWithGather) | axes_where(p, State::Parameters, Mode::Offloaded);
  const bool once = s.gathers_once_per_step(), regather = s.regathers_after_backward();
  add(State::Parameters, CollectiveOp::AllGather, CommClass::ZeroGather, gathered, kNoAxes,
      once       ? DataWhen::FirstForward
      : regather ? DataWhen::AfterBackward
                 : DataWhen::Forward,
      once       ? "parameter all-gather (first forward of the step)"
      : regather ? "parameter all-gather (the chunk's first op and each op after a backward)"
                 : "parameter all-gather (forward)");
  // reshard_after_forward=false: the forward's gathered units stay for the backward.
  if (s.reshard_after_forward)
    add(State::Parameters, CollectiveOp::AllGather, CommClass::ZeroGather,
        p.secondary ? gathered & kShardAxis : gathered, kNoAxes, DataWhen::Backward,
        p.secondary ? "parameter all-gather (backward, from the secondary shard)" : "parameter all-gather (backward)");
  const AxisSet grad_sharded = p.sharded_axes(State::Gradients);
  const AxisSet opt_sharded = p.sharded_axes(State::Optimizer);
  const bool deferred = s.defers_grad_sync();
  add(State::Gradients, CollectiveOp::ReduceScatter, CommClass::DpGradSync, grad_sharded, kNoAxes,
      deferred ? DataWhen::LastBackward : DataWhen::Backward,
      deferred ? "accumulated gradient reduce-scatter (after the last backward)" : "gradient reduce-scatter");
  const AxisSet accumulated = kDataAxes & ~grad_sharded;
  if (s.grad_allreduce) {  // DeepSpeed's BF16_Optimizer: all of them all-reduced, each rank stepping its shard
    add(State::Gradients, CollectiveOp::AllReduce, CommClass::DpGradSync, accumulated, grad_sharded, DataWhen::Step,
        "accumulated gradient all-reduce (the optimizer steps its shard)");
  } else {
    add(State::Gradients, CollectiveOp::ReduceScatter, CommClass::DpGradSync, accumulated & opt_sharded, grad_sharded,
        DataWhen::Step, "accumulated gradient reduce-scatter");
    add(State::Gradients, CollectiveOp::AllReduce, CommClass::DpGradSync, accumulated & ~opt_sharded,
        grad_sharded | (accumulated & opt_sharded), DataWhen::Step, "accumulated gradient all-reduce");
  }
  add(State::Parameters, CollectiveOp::AllGather, CommClass::ZeroGather,
      axes_where(p, State::Parameters, Mode::Replicated) & opt_sharded, gathered, DataWhen::AfterStep,
      s.param_gather_overlap ? "updated parameter all-gather (in the next step's first forward)"
                             : "updated parameter all-gather");
  return out;
}

StrategySpec expert_view(const StrategySpec& s) {
  StrategySpec v = s;
  v.dp_shard = v.dp = s.edp();
  v.dp_replicate = 1;
  v.cp = v.tp = v.ep = 1;
  v.placement.replicate = {s.placement.parameters, s.placement.gradients, s.placement.optimizer};
  v.placement.secondary = false;
  return v;
}

std::vector<DataCollective> expert_plan(const StrategySpec& s) {
  std::vector<DataCollective> plan = data_plan(expert_view(s));
  for (DataCollective& c : plan) c.cls = CommClass::ExpertDataSync;
  return plan;
}

bool holds_unit_buffer(const StrategySpec& s, State state) {
  const Placement& p = s.placement;
  if (p.mode(state, kShardAxis) == Mode::Offloaded) return true;
  AxisSet axes = kNoAxes;
  for (AxisSet axis : {kShardAxis, kReplicateAxis}) {
    Mode m = p.mode(state, axis);
    if (m == Mode::ShardedWithGather || (state == State::Gradients && m == Mode::Sharded)) axes |= axis;
  }
  return s.degree(axes) > 1;
}

double data_collective_elems_sent(const StrategySpec& s, const DataCollective& c, double padded) {
  const double k = static_cast<double>(s.degree(c.group));
  const double buffer = padded / static_cast<double>(s.degree(c.divided));
  const double sent = (k - 1) * (buffer / k);  // exact: the buffer is a multiple of the group
  return c.op == CollectiveOp::AllReduce ? 2 * sent : sent;
}

}  // namespace placesim
