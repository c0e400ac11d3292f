#include "strategies/pipeline/PipelineTimeline.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>

namespace placesim {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One slot per op: forwards, backwards and weight gradients by (virtual stage, micro-batch), Applies and Averages by
// (stage, micro-batch).
class OpSlots {
 public:
  explicit OpSlots(const PipelineSchedule& s)
      : stages_(s.stages()),
        chunks_(s.shape.chunks),
        total_(s.shape.total_microbatches()),
        forward_(slots(s.virtual_stages())),
        backward_(slots(s.virtual_stages())),
        weight_(slots(s.virtual_stages())),
        apply_(slots(stages_)),
        average_(slots(stages_)) {}

  /// The slot of a record, or nullptr when the record is no op of a pipeline schedule.
  OpInterval* of(const TaskRecord& t) {
    if (t.stage < 0 || t.microbatch < 0) return nullptr;
    // A pass is its layers' compute and the tensor-parallel collectives it issues (those name their chunk): a
    // layer's exposed collectives follow its compute, so the pass ends when its last one does. The all-gather of a
    // scatter-gather pipeline receive names none: it is the transfer before the pass.
    const bool tensor_parallel =
        t.kind == TaskKind::Collective && t.comm_class == CommClass::TpCollective && t.chunk >= 0;
    // A backward pass begins with its activations' recompute.
    const bool compute = t.kind == TaskKind::Forward || t.kind == TaskKind::Backward || t.kind == TaskKind::Recompute ||
                         t.kind == TaskKind::WeightGrad || tensor_parallel;
    const bool average = t.kind == TaskKind::Collective && t.comm_class == CommClass::DpGradSync;
    // The optimizer step is a device kernel, or a host task when the optimizer state is offloaded (ZeRO-Offload).
    const bool apply = t.kind == TaskKind::Optimizer || t.kind == TaskKind::HostCompute;
    if (!compute && !average && !apply) return nullptr;
    const int chunk = compute ? std::max(t.chunk, 0) : 0;
    if (t.stage >= stages_ || t.microbatch >= total_ || chunk >= chunks_)
      throw std::invalid_argument("record task " + std::to_string(t.task) + " ('" + t.name + "') names stage " +
                                  std::to_string(t.stage) + " micro-batch " + std::to_string(t.microbatch) + " chunk " +
                                  std::to_string(chunk) + ", which the pipeline schedule does not have");
    const bool forward = t.kind == TaskKind::Forward || (tensor_parallel && !t.backward);
    if (forward) return &at(forward_, chunk * stages_ + t.stage, t.microbatch);
    if (t.kind == TaskKind::WeightGrad) return &at(weight_, chunk * stages_ + t.stage, t.microbatch);
    if (compute) return &at(backward_, chunk * stages_ + t.stage, t.microbatch);
    return &at(average ? average_ : apply_, t.stage, t.microbatch);
  }

  OpInterval& of(const PipeOp& op) {
    switch (op.kind) {
      case PipeOpKind::Forward:
        return at(forward_, op.virtual_stage(stages_), op.microbatch);
      case PipeOpKind::Backward:
        return at(backward_, op.virtual_stage(stages_), op.microbatch);
      case PipeOpKind::Weight:
        return at(weight_, op.virtual_stage(stages_), op.microbatch);
      case PipeOpKind::Apply:
        return at(apply_, op.stage, op.microbatch);
      case PipeOpKind::Average:
        return at(average_, op.stage, op.microbatch);
    }
    throw std::logic_error("unknown pipeline op kind");
  }

 private:
  std::vector<OpInterval> slots(int rows) const {
    return std::vector<OpInterval>(static_cast<std::size_t>(rows) * static_cast<std::size_t>(total_), {kInf, -kInf});
  }
  OpInterval& at(std::vector<OpInterval>& table, int row, int microbatch) {
    return table[static_cast<std::size_t>(row) * static_cast<std::size_t>(total_) +
                 static_cast<std::size_t>(microbatch)];
  }

  int stages_, chunks_, total_;
  std::vector<OpInterval> forward_, backward_, weight_, apply_, average_;
};

}  // namespace

namespace {

// The ops of a DualPipe pair that overlapped (their parts alternate on the compute stream, expand_pair) as one
// interval split in proportion to their compute seconds.
void split_pairs(const PipelineSchedule& schedule, OpSlots& slots, const std::map<const OpInterval*, double>& work,
                 PipelineTimeline& timeline) {
  for (std::size_t s = 0; s < schedule.order.size(); ++s) {
    const auto& order = schedule.order[s];
    for (std::size_t i = 0; i + 1 < order.size(); ++i) {
      if (!order[i].pairs_next || order[i].kind != PipeOpKind::Forward || order[i + 1].kind != PipeOpKind::Backward)
        continue;
      OpInterval &f = timeline[s][i], &b = timeline[s][i + 1];
      if (b.start_s >= f.end_s) continue;  // one after the other
      const auto seconds = [&](const PipeOp& op) {
        auto it = work.find(&slots.of(op));
        return it == work.end() ? 0.0 : it->second;
      };
      const double wf = seconds(order[i]), wb = seconds(order[i + 1]);
      const double from = std::min(f.start_s, b.start_s), to = std::max(f.end_s, b.end_s);
      const double split = wf + wb > 0 ? from + (to - from) * wf / (wf + wb) : from;
      f = {from, split};
      b = {split, to};
    }
  }
}

}  // namespace

PipelineTimeline pipeline_timeline(const PipelineSchedule& schedule, const SimulationRecord& record) {
  OpSlots slots(schedule);
  // Compute seconds per op, which only split_pairs reads.
  const bool pairs = std::any_of(schedule.order.begin(), schedule.order.end(), [](const std::vector<PipeOp>& ops) {
    return std::any_of(ops.begin(), ops.end(), [](const PipeOp& op) { return op.pairs_next; });
  });
  std::map<const OpInterval*, double> work;
  for (const TaskRecord& t : record.tasks) {
    if (OpInterval* slot = slots.of(t)) {
      slot->start_s = std::min(slot->start_s, t.start_s);
      slot->end_s = std::max(slot->end_s, t.end_s);
      if (pairs && t.stream == Stream::Compute) work[slot] += t.end_s - t.start_s;
    }
  }
  PipelineTimeline timeline(schedule.order.size());
  for (std::size_t s = 0; s < schedule.order.size(); ++s) {
    for (const PipeOp& op : schedule.order[s]) {
      const OpInterval& slot = slots.of(op);
      if (slot.start_s == kInf)
        throw std::invalid_argument("the record has no task for the " + std::string(to_string(op.kind)) + " of stage " +
                                    std::to_string(op.stage) + " after micro-batch " + std::to_string(op.microbatch) +
                                    (op.chunk >= 0 ? " chunk " + std::to_string(op.chunk) : std::string()));
      timeline[s].push_back(slot);
    }
  }
  if (pairs) split_pairs(schedule, slots, work, timeline);
  return timeline;
}

std::vector<OpId> completion_order(const PipelineSchedule& schedule, const PipelineTimeline& timeline) {
  std::vector<OpId> ids;
  for (std::size_t s = 0; s < schedule.order.size(); ++s)
    for (std::size_t i = 0; i < schedule.order[s].size(); ++i)
      ids.push_back({static_cast<int>(s), static_cast<int>(i)});
  auto end = [&](const OpId& id) {
    return timeline[static_cast<std::size_t>(id.stage)][static_cast<std::size_t>(id.index)].end_s;
  };
  std::sort(ids.begin(), ids.end(), [&](const OpId& a, const OpId& b) {
    return std::make_tuple(end(a), a.stage, a.index) < std::make_tuple(end(b), b.stage, b.index);
  });
  return ids;
}

UpdateLog update_log(const PipelineSchedule& schedule, const PipelineTimeline& timeline) {
  const auto stages = static_cast<std::size_t>(schedule.stages());
  // versions_read of every micro-batch, one row per micro-batch; all chunks of a stage read one version (under dualpipe
  // a micro-batch passes one chunk of each stage, of its direction).
  std::vector<int> read(static_cast<std::size_t>(schedule.shape.total_microbatches()) * stages, -1);
  for (const auto& ops : schedule.order)
    for (const PipeOp& op : ops)
      if (op.kind == PipeOpKind::Forward && (op.chunk == 0 || schedule.shape.passes_per_stage() == 1))
        read[static_cast<std::size_t>(op.microbatch) * stages + static_cast<std::size_t>(op.stage)] = op.weight_version;
  UpdateLog trace;
  trace.stages = schedule.stages();
  trace.replicas = schedule.shape.replicas;
  // Backwards of each (stage, micro-batch) seen: a stage's gradient for a micro-batch is complete when the backwards
  // of all its passes are (interleaved, zb-v), so its one event stands at the last of them.
  std::vector<int> backwards(static_cast<std::size_t>(schedule.shape.total_microbatches()) * stages, 0);
  for (const OpId& id : completion_order(schedule, timeline)) {
    const PipeOp& op = schedule.order[static_cast<std::size_t>(id.stage)][static_cast<std::size_t>(id.index)];
    // A split backward's gradient is computed by its B and W; its event stands at B (both read the same version).
    if (op.kind == PipeOpKind::Forward || op.kind == PipeOpKind::Weight) continue;
    if (op.kind == PipeOpKind::Backward &&
        ++backwards[static_cast<std::size_t>(op.microbatch) * stages + static_cast<std::size_t>(op.stage)] <
            schedule.shape.passes_per_stage())
      continue;
    TrainEvent e;
    e.stage = op.stage;
    e.replica = std::max(op.replica, 0);
    e.time_s = timeline[static_cast<std::size_t>(id.stage)][static_cast<std::size_t>(id.index)].end_s;
    if (op.kind == PipeOpKind::Backward) {
      e.kind = TrainEvent::Kind::Backward;
      e.microbatch = op.microbatch;
      auto row = read.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(op.microbatch) * stages);
      e.versions_read.assign(row, row + static_cast<std::ptrdiff_t>(stages));
    } else {
      e.kind = op.kind == PipeOpKind::Apply ? TrainEvent::Kind::Apply : TrainEvent::Kind::Average;
    }
    trace.events.push_back(std::move(e));
  }
  return trace;
}

}  // namespace placesim
