#include "strategies/pipeline/PipelineEval.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <tuple>

namespace placesim {

namespace {

constexpr double kPending = -1;  // end time of an op not evaluated yet; real times are >= 0

// End times of forwards and backwards by (virtual stage, micro-batch).
class EndTable {
 public:
  explicit EndTable(const PipelineSchedule& s)
      : total_(static_cast<std::size_t>(s.shape.total_microbatches())),
        forward_(static_cast<std::size_t>(s.virtual_stages()) * total_, kPending),
        backward_(forward_) {}
  double& at(PipeOpKind kind, int virtual_stage, int microbatch) {
    auto& table = kind == PipeOpKind::Forward ? forward_ : backward_;
    return table[static_cast<std::size_t>(virtual_stage) * total_ + static_cast<std::size_t>(microbatch)];
  }

 private:
  std::size_t total_;
  std::vector<double> forward_, backward_;
};

class Evaluator {
 public:
  Evaluator(const PipelineSchedule& schedule, const PipelineTimes& times);
  /// Evaluates every op; throws std::logic_error if the orders deadlock.
  PipelineTimeline run();

 private:
  bool advance(int stage);
  double inputs_ready(const PipeOp& op);
  double duration(const PipeOp& op) const;

  const PipelineSchedule& schedule_;
  const PipelineTimes& times_;
  const int stages_;
  std::vector<std::size_t> next_;  // per stage: position of its next op
  std::vector<double> free_;       // per stage: when its compute stream is free
  EndTable ends_;
  PipelineTimeline timeline_;
};

Evaluator::Evaluator(const PipelineSchedule& schedule, const PipelineTimes& times)
    : schedule_(schedule),
      times_(times),
      stages_(schedule.stages()),
      next_(static_cast<std::size_t>(stages_), 0),
      free_(static_cast<std::size_t>(stages_), 0.0),
      ends_(schedule) {
  for (const auto& ops : schedule.order) timeline_.emplace_back(ops.size());
}

double Evaluator::duration(const PipeOp& op) const {
  const double v = schedule_.shape.passes_per_stage();
  const auto k = static_cast<std::size_t>(schedule_.virtual_stage(op));
  switch (op.kind) {
    case PipeOpKind::Forward:
      return times_.forward_by_virtual_stage.empty() ? times_.forward_s / v : times_.forward_by_virtual_stage.at(k);
    case PipeOpKind::Backward:
    case PipeOpKind::Weight: {
      const double whole =
          times_.backward_by_virtual_stage.empty() ? times_.backward_s / v : times_.backward_by_virtual_stage.at(k);
      const double weight = times_.backward_s > 0 ? whole * times_.weight_s / times_.backward_s : 0;
      if (op.kind == PipeOpKind::Weight) return weight;
      return op.split ? whole - weight : whole;
    }
    case PipeOpKind::Apply:
      return times_.apply_s;
    case PipeOpKind::Average:
      return times_.average_s;
  }
  return 0;
}

// The time the op's data dependencies are met, or kPending while one is missing.
double Evaluator::inputs_ready(const PipeOp& op) {
  double ready = 0;
  if (op.kind == PipeOpKind::Backward || op.kind == PipeOpKind::Weight) {
    // A backward needs its forward; a weight gradient its input gradient (the output gradient it multiplies).
    const PipeOpKind needs = op.kind == PipeOpKind::Backward ? PipeOpKind::Forward : PipeOpKind::Backward;
    ready = ends_.at(needs, schedule_.virtual_stage(op), op.microbatch);
    if (ready == kPending) return kPending;
  }
  const Upstream up = upstream_of(op, schedule_);
  if (up.virtual_stage < 0) return ready;
  const double produced = ends_.at(up.kind, up.virtual_stage, op.microbatch);
  if (produced == kPending) return kPending;
  const bool transfer = schedule_.stage_of(up.virtual_stage) != op.stage;
  return std::max(ready, produced + (transfer ? times_.p2p_s : 0));
}

bool Evaluator::advance(int stage) {
  const auto s = static_cast<std::size_t>(stage);
  const auto& ops = schedule_.order[s];
  bool progressed = false;
  while (next_[s] < ops.size()) {
    const PipeOp& op = ops[next_[s]];
    double ready = inputs_ready(op);
    // An overlapped pair starts when the inputs of both its passes are there.
    if (ready != kPending && op.pairs_next && next_[s] + 1 < ops.size()) {
      const double partner = inputs_ready(ops[next_[s] + 1]);
      ready = partner == kPending ? kPending : std::max(ready, partner);
    }
    if (ready == kPending) break;
    OpInterval& x = timeline_[s][next_[s]];
    x.start_s = std::max(free_[s], ready);
    x.end_s = x.start_s + duration(op);
    free_[s] = x.end_s;
    if (op.kind == PipeOpKind::Forward || op.kind == PipeOpKind::Backward)
      ends_.at(op.kind, schedule_.virtual_stage(op), op.microbatch) = x.end_s;
    ++next_[s];
    progressed = true;
  }
  return progressed;
}

PipelineTimeline Evaluator::run() {
  // Worklist: a stage blocks on an input from a neighbour (stages S-1 and 0 are neighbours between interleaved
  // chunks), so only the neighbours of a stage that advanced can advance next. O(ops) in total.
  std::vector<int> work;
  std::vector<char> queued(static_cast<std::size_t>(stages_), 1);
  for (int s = stages_ - 1; s >= 0; --s) work.push_back(s);
  while (!work.empty()) {
    const int s = work.back();
    work.pop_back();
    queued[static_cast<std::size_t>(s)] = 0;
    if (!advance(s)) continue;
    for (int n : {(s + 1) % stages_, (s + stages_ - 1) % stages_}) {
      if (queued[static_cast<std::size_t>(n)]) continue;
      queued[static_cast<std::size_t>(n)] = 1;
      work.push_back(n);
    }
  }
  for (int s = 0; s < stages_; ++s) {
    const auto& ops = schedule_.order[static_cast<std::size_t>(s)];
    const std::size_t at = next_[static_cast<std::size_t>(s)];
    if (at < ops.size())
      throw std::logic_error("pipeline schedule deadlocks: stage " + std::to_string(s) + " waits forever at its " +
                             to_string(ops[at].kind) + " of micro-batch " + std::to_string(ops[at].microbatch));
  }
  return std::move(timeline_);
}

const char* short_name(PipeOpKind k) {
  switch (k) {
    case PipeOpKind::Forward:
      return "fwd";
    case PipeOpKind::Backward:
      return "bwd";
    case PipeOpKind::Weight:
      return "wgrad";
    case PipeOpKind::Apply:
      return "apply";
    case PipeOpKind::Average:
      return "average";
  }
  return "?";
}

TaskKind task_kind(PipeOpKind k) {
  switch (k) {
    case PipeOpKind::Forward:
      return TaskKind::Forward;
    case PipeOpKind::Backward:
      return TaskKind::Backward;
    case PipeOpKind::Weight:
      return TaskKind::WeightGrad;
    case PipeOpKind::Apply:
      return TaskKind::Optimizer;
    case PipeOpKind::Average:
      return TaskKind::Collective;
  }
  return TaskKind::Forward;
}

std::string op_name(const PipeOp& op) {
  std::string name = std::string(op.split ? "igrad" : short_name(op.kind)) + " s" + std::to_string(op.stage);
  if (op.kind == PipeOpKind::Average) return name + " after mb" + std::to_string(op.microbatch);
  if (op.kind != PipeOpKind::Apply) name += " mb" + std::to_string(op.microbatch) + " c" + std::to_string(op.chunk);
  if (op.replica > 0) name += " r" + std::to_string(op.replica);
  return name + " v" + std::to_string(op.weight_version);
}

TaskRecord compute_record(const PipeOp& op, std::uint64_t id, const OpInterval& x) {
  TaskRecord t;
  t.task = id;
  t.device = op.stage;
  t.stream = Stream::Compute;
  t.kind = task_kind(op.kind);
  t.start_s = x.start_s;
  t.end_s = x.end_s;
  t.name = op_name(op);
  t.microbatch = op.microbatch;
  t.stage = op.stage;
  t.chunk = op.chunk;
  t.weight_version = op.weight_version;
  if (op.kind == PipeOpKind::Average) t.algorithm = "average";
  return t;
}

// The transfer feeding `consumer` from `from`, as the sender's record.
TaskRecord send_record(const PipeOp& consumer, int from, std::uint64_t id, double start_s, double p2p_s) {
  TaskRecord t;
  t.task = id;
  t.device = from;
  t.stream = Stream::PpSend;
  t.kind = TaskKind::P2P;
  t.start_s = start_s;
  t.end_s = start_s + p2p_s;
  t.name = std::string(consumer.kind == PipeOpKind::Forward ? "act" : "grad") + " mb" +
           std::to_string(consumer.microbatch) + " s" + std::to_string(from) + "->s" + std::to_string(consumer.stage);
  t.microbatch = consumer.microbatch;
  t.stage = from;
  t.chunk = consumer.chunk;
  t.comm_class = CommClass::PpP2P;
  t.peer = consumer.stage;
  t.algorithm = "direct";
  return t;
}

// Sorts by (end, device, stream, task id). Sorting compact keys and moving each record once is several times faster
// than sorting the records themselves.
void sort_by_completion(std::vector<TaskRecord>& tasks) {
  struct Key {
    double end_s;
    int device;
    Stream stream;
    std::uint64_t task;
    std::size_t index;
  };
  std::vector<Key> keys;
  keys.reserve(tasks.size());
  for (std::size_t i = 0; i < tasks.size(); ++i)
    keys.push_back({tasks[i].end_s, tasks[i].device, tasks[i].stream, tasks[i].task, i});
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    return std::tie(a.end_s, a.device, a.stream, a.task) < std::tie(b.end_s, b.device, b.stream, b.task);
  });
  std::vector<TaskRecord> sorted;
  sorted.reserve(tasks.size());
  for (const Key& k : keys) sorted.push_back(std::move(tasks[k.index]));
  tasks = std::move(sorted);
}

// Appends the send and receive records of every transfer, in consumer order.
void push_transfers(const PipelineSchedule& schedule, const PipelineTimeline& timeline, double p2p_s, std::uint64_t id,
                    std::vector<TaskRecord>& tasks) {
  EndTable ends(schedule);
  for (std::size_t s = 0; s < schedule.order.size(); ++s)
    for (std::size_t i = 0; i < schedule.order[s].size(); ++i) {
      const PipeOp& op = schedule.order[s][i];
      if (op.kind == PipeOpKind::Forward || op.kind == PipeOpKind::Backward)
        ends.at(op.kind, schedule.virtual_stage(op), op.microbatch) = timeline[s][i].end_s;
    }
  for (const auto& ops : schedule.order)
    for (const PipeOp& op : ops) {
      const Upstream up = upstream_of(op, schedule);
      if (up.virtual_stage < 0 || schedule.stage_of(up.virtual_stage) == op.stage) continue;
      const int from = schedule.stage_of(up.virtual_stage);
      tasks.push_back(send_record(op, from, id++, ends.at(up.kind, up.virtual_stage, op.microbatch), p2p_s));
      TaskRecord receive = tasks.back();
      receive.device = op.stage;
      receive.stream = Stream::PpRecv;
      receive.peer = from;
      tasks.push_back(std::move(receive));
    }
}

}  // namespace

PipelineTimeline evaluate_pipeline(const PipelineSchedule& schedule, const PipelineTimes& times) {
  return Evaluator(schedule, times).run();
}

SimulationRecord pipeline_record(const PipelineSchedule& schedule, const PipelineTimeline& timeline,
                                 const PipelineTimes& times) {
  SimulationRecord record;
  for (int s = 0; s < schedule.stages(); ++s) {
    DeviceInfo d;
    d.node = s;
    d.pp = s;
    record.devices.push_back(d);
  }
  std::size_t ops = 0;
  for (const auto& stage_ops : schedule.order) ops += stage_ops.size();
  record.tasks.reserve(3 * ops);  // each op, and at most one transfer (two records) into each forward and backward
  std::uint64_t id = 0;
  double makespan = 0;
  for (std::size_t s = 0; s < schedule.order.size(); ++s)
    for (std::size_t i = 0; i < schedule.order[s].size(); ++i, ++id) {
      record.tasks.push_back(compute_record(schedule.order[s][i], id, timeline[s][i]));
      makespan = std::max(makespan, timeline[s][i].end_s);
    }
  push_transfers(schedule, timeline, times.p2p_s, id, record.tasks);
  sort_by_completion(record.tasks);
  record.step_time_s = makespan / schedule.shape.steps;
  return record;
}

TimelineIdle timeline_idle(const PipelineTimeline& timeline) {
  double first = std::numeric_limits<double>::infinity(), last = -first;
  for (const auto& ops : timeline)
    for (const OpInterval& x : ops) {
      first = std::min(first, x.start_s);
      last = std::max(last, x.end_s);
    }
  TimelineIdle out;
  out.span_s = last > first ? last - first : 0;
  for (const auto& ops : timeline) {
    double busy = 0;
    for (const OpInterval& x : ops) busy += x.end_s - x.start_s;
    out.idle_s.push_back(out.span_s - busy);
  }
  return out;
}

}  // namespace placesim
