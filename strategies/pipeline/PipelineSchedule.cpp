#include "strategies/pipeline/PipelineSchedule.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <stdexcept>

#include "workloads/json/EnumNames.hpp"

namespace placesim {

namespace {

constexpr EnumName<PipeOpKind> kPipeOpKindNames[] = {{PipeOpKind::Forward, "forward"},
                                                     {PipeOpKind::Backward, "backward"},
                                                     {PipeOpKind::Weight, "weight"},
                                                     {PipeOpKind::Apply, "apply"},
                                                     {PipeOpKind::Average, "average"}};

}  // namespace

const char* to_string(PipeOpKind k) {
  return name_of(kPipeOpKindNames, k);
}

const std::vector<Schedule>& all_schedules() {
  static const std::vector<Schedule> schedules = {Schedule::GPipe,     Schedule::OneFOneB,      Schedule::Interleaved,
                                                  Schedule::PipeDream, Schedule::PipeDream2BW,  Schedule::LocalSGD,
                                                  Schedule::ZbH1,      Schedule::ZbH2,          Schedule::ZbV,
                                                  Schedule::DualPipeV, Schedule::InterleavedZb, Schedule::DualPipe};
  return schedules;
}

Schedule schedule_named(const std::string& name) {
  for (Schedule s : all_schedules())
    if (name == to_string(s)) return s;
  throw std::invalid_argument("no pipeline schedule is named '" + name + "'");
}

ShapeFields strategy_shape_fields() {
  return {"strategy.schedule",        "strategy.pp",   "strategy.microbatches", "steps",
          "strategy.chunks",          "strategy.noam", "strategy.replicas",     "strategy.local_steps",
          "strategy.microbatch_group"};
}

ShapeFields abstract_shape_fields() {
  return {"pipeline.schedule", "pipeline.stages",      "pipeline.microbatches",
          "pipeline.steps",    "pipeline.chunks",      "pipeline.noam",
          "pipeline.replicas", "pipeline.local_steps", "pipeline.microbatch_group"};
}

namespace {

// Keeps the op count (and so the memory of an evaluation) bounded.
constexpr std::int64_t kMaxOps = 50'000'000;

int narrow(std::int64_t v, const std::string& field) {
  if (v < INT_MIN || v > INT_MAX) throw InputError(field + "=" + std::to_string(v) + " is too large");
  return static_cast<int>(v);
}

int group_of(const PipelineShape& sh) {
  return sh.microbatch_group > 0 ? sh.microbatch_group : sh.stages;
}

void require_positive(int v, const std::string& field) {
  if (v < 1) throw InputError(field + "=" + std::to_string(v) + " must be a positive integer");
}

// DualPipe.step's asserts (deepseek-ai/DualPipe, dualpipe/dualpipe.py): num_ranks % 2 == 0, num_chunks % 2 == 0 and
// num_chunks >= num_ranks * 2.
void check_dualpipe(const PipelineShape& sh, const ShapeFields& f) {
  if (!bidirectional(sh.schedule)) return;
  const std::string schedule = f.schedule + "=" + to_string(sh.schedule);
  if (sh.stages % 2 != 0)
    throw InputError(f.stages + "=" + std::to_string(sh.stages) + " is odd: " + schedule +
                     " pairs stage s with stage S - 1 - s and needs an even number of stages (DualPipe.step asserts "
                     "num_ranks % 2 == 0); use " +
                     std::to_string(sh.stages + 1) + " stages, or dualpipev");
  if (sh.microbatches % 2 != 0)
    throw InputError(f.microbatches + "=" + std::to_string(sh.microbatches) + " is odd: " + schedule +
                     " sends half the micro-batches each way and needs an even number (DualPipe.step asserts "
                     "num_chunks % 2 == 0); use " +
                     std::to_string(sh.microbatches + 1));
  if (sh.microbatches < 2 * sh.stages)
    throw InputError(f.microbatches + "=" + std::to_string(sh.microbatches) + " is fewer than 2 x " + f.stages + "=" +
                     std::to_string(2 * sh.stages) + " (" + schedule +
                     " fills both directions: DualPipe.step asserts num_chunks >= num_ranks * 2)");
}

}  // namespace

void check_interleaved_group(const PipelineShape& sh, const ShapeFields& f) {
  if (sh.schedule != Schedule::Interleaved) return;
  const std::string schedule = f.schedule + "=" + to_string(sh.schedule);
  const int group = group_of(sh);
  if (group < sh.stages)
    throw InputError(f.microbatch_group + "=" + std::to_string(group) + " is below " + f.stages + "=" +
                     std::to_string(sh.stages) + " (" + schedule +
                     " needs at least one micro-batch per stage in each group, or the first stage waits for a "
                     "chunk no stage can run yet)");
  if (group > sh.microbatches && sh.microbatch_group == 0)
    throw InputError(f.microbatches + "=" + std::to_string(sh.microbatches) + " is fewer than " + f.stages + "=" +
                     std::to_string(sh.stages) + " (" + schedule +
                     " runs the micro-batches through each chunk in "
                     "groups of at least " +
                     f.stages + ")");
  if (group > sh.microbatches)
    throw InputError(f.microbatch_group + "=" + std::to_string(group) + " exceeds " + f.microbatches + "=" +
                     std::to_string(sh.microbatches) + " (" + schedule + " runs groups of " + f.microbatch_group +
                     " micro-batches through each chunk)");
  if (sh.microbatches % group != 0 && sh.microbatches % group < sh.stages)
    throw InputError(f.microbatches + "=" + std::to_string(sh.microbatches) + " leaves a last group of " +
                     std::to_string(sh.microbatches % group) + " micro-batches (groups of " + std::to_string(group) +
                     "), fewer than " + f.stages + "=" + std::to_string(sh.stages) + " (" + schedule +
                     " cannot run a group smaller than the pipeline)");
}

void check_shape(const PipelineShape& sh, const ShapeFields& f) {
  require_positive(sh.stages, f.stages);
  require_positive(sh.microbatches, f.microbatches);
  require_positive(sh.steps, f.steps);
  require_positive(sh.chunks, f.chunks);
  require_positive(sh.replicas, f.replicas);
  const std::string schedule = f.schedule + "=" + to_string(sh.schedule);
  const bool asynchronous = sh.schedule == Schedule::PipeDream || sh.schedule == Schedule::PipeDream2BW;
  if (asynchronous && sh.noam < 1)
    throw InputError(f.noam + "=" + std::to_string(sh.noam) + " must be at least 1 (micro-batches admitted at once)");
  if (sh.schedule == Schedule::LocalSGD && sh.local_steps < 1)
    throw InputError(f.local_steps + "=" + std::to_string(sh.local_steps) + " must be at least 1");
  if (sh.schedule == Schedule::DualPipeV && sh.microbatches < 2 * sh.stages)
    throw InputError(f.microbatches + "=" + std::to_string(sh.microbatches) + " is fewer than 2 x " + f.stages + "=" +
                     std::to_string(2 * sh.stages) + " (" + schedule +
                     " fills its V from both ends: DualPipeV.step asserts num_chunks >= num_ranks * 2)");
  check_dualpipe(sh, f);
  const bool two_chunks = v_shaped(sh.schedule) || bidirectional(sh.schedule);
  if (two_chunks && sh.chunks != 2)
    throw InputError(f.chunks + "=" + std::to_string(sh.chunks) + ": " + schedule +
                     " places exactly two chunks on every stage");
  if (sh.chunks != 1 && !interleaves_chunks(sh.schedule) && !two_chunks)
    throw InputError(f.chunks + "=" + std::to_string(sh.chunks) + " is only meaningful with " + f.schedule +
                     "=interleaved");
  if (interleaves_chunks(sh.schedule) && sh.stages < 2)
    throw InputError(schedule + " needs " + f.stages + " >= 2, got " + std::to_string(sh.stages));
  if (sh.microbatch_group != 0 && sh.schedule != Schedule::Interleaved)
    throw InputError(f.microbatch_group + "=" + std::to_string(sh.microbatch_group) + " is only meaningful with " +
                     f.schedule + "=interleaved");
  check_interleaved_group(sh, f);
  // ScheduleInterleavedZeroBubble runs rounds of m / max(1, m / S) micro-batches through each chunk and needs the
  // rounds to be whole; a round below S micro-batches would leave the first stage waiting for a chunk no stage runs.
  const int rounds = std::max(1, sh.microbatches / std::max(1, sh.stages));
  if (sh.schedule == Schedule::InterleavedZb && (sh.microbatches < sh.stages || sh.microbatches % rounds != 0))
    throw InputError(f.microbatches + "=" + std::to_string(sh.microbatches) + ": " + schedule + " needs at least " +
                     f.stages + "=" + std::to_string(sh.stages) +
                     " micro-batches, a multiple of its rounds max(1, m / S) = " + std::to_string(rounds) +
                     " (torch.distributed.pipelining ScheduleInterleavedZeroBubble)");
  if (sh.schedule == Schedule::PipeDream2BW && sh.microbatches < sh.stages)
    throw InputError(f.microbatches + "=" + std::to_string(sh.microbatches) + " must be at least " + f.stages + "=" +
                     std::to_string(sh.stages) + " (" + schedule + " keeps two weight versions only when a version " +
                     "lasts as many micro-batches as there are stages)");
  if (sh.schedule == Schedule::LocalSGD && sh.microbatches % sh.replicas != 0)
    throw InputError(f.replicas + "=" + std::to_string(sh.replicas) + " does not divide " + f.microbatches + "=" +
                     std::to_string(sh.microbatches));
  // Ops per forward pass: the forward and its backward, or its B and W when the schedule splits the backward.
  const int per_pass = splits_backward(sh.schedule) ? 3 : 2;
  const std::int64_t passes = std::int64_t{sh.stages} * sh.passes_per_stage() * sh.microbatches * sh.steps;
  if (std::int64_t{sh.microbatches} * sh.steps > INT_MAX || passes * per_pass > kMaxOps)
    throw InputError(f.stages + " x " + f.microbatches + " x " + f.steps + " x " + f.chunks + " = " +
                     std::to_string(passes) + " forward passes is more than the evaluator accepts for " +
                     to_string(sh.schedule) + " (" + std::to_string(kMaxOps / per_pass) + ")");
}

namespace {

using Ops = std::vector<PipeOp>;

PipeOp compute_op(PipeOpKind kind, int stage, int microbatch, int chunk) {
  PipeOp op;
  op.kind = kind;
  op.stage = stage;
  op.microbatch = microbatch;
  op.chunk = chunk;
  return op;
}

// GPipe: every forward of the segment, then every backward.
void push_gpipe(Ops& ops, int stage, int first, int count) {
  for (int i = 0; i < count; ++i) ops.push_back(compute_op(PipeOpKind::Forward, stage, first + i, 0));
  for (int i = 0; i < count; ++i) ops.push_back(compute_op(PipeOpKind::Backward, stage, first + i, 0));
}

// 1F1B with at most `cap` micro-batches in flight on the stage: cap-1 warm-up forwards, then a forward and a backward
// in turn, then the remaining backwards. `combined` (Megatron-Core's combined 1F1B, combined_1f1b.py): one more
// warm-up forward, and each steady-state forward runs as one pair with the backward after it.
void push_1f1b(Ops& ops, int stage, int first, int count, int cap, bool combined = false) {
  const int warm = std::min(cap - 1 + (combined ? 1 : 0), count);
  for (int i = 0; i < warm; ++i) ops.push_back(compute_op(PipeOpKind::Forward, stage, first + i, 0));
  for (int b = 0; b < count; ++b) {
    if (warm + b < count) {
      ops.push_back(compute_op(PipeOpKind::Forward, stage, first + warm + b, 0));
      ops.back().pairs_next = combined;
    }
    ops.push_back(compute_op(PipeOpKind::Backward, stage, first + b, 0));
  }
}

// Megatron-LM's interleaved 1F1B (forward_backward_pipelining_with_interleaving), generalised as Megatron-Core's
// schedule table (microbatch_group_size_per_vp_stage) and the Llama 3 paper's tunable N: micro-batches pass through
// the chunks in groups of N; backwards visit the chunks in reverse. Warm-up: 2 (S - s - 1) + (v - 1) N forwards,
// then one forward and one backward in turn. `combined` (Megatron-Core's combined 1F1B, get_pp_rank_microbatches and
// combined_1f1b_schedule_for_interleaved_pipelining): one more warm-up forward, so that each steady-state forward and
// the backward after it are independent and run as one pair.
void push_interleaved(Ops& ops, int stage, int stages, int first, int count, int chunks, int group,
                      bool combined = false) {
  const int total = count * chunks;
  auto op = [&](PipeOpKind kind, int k) {
    const InterleavedSlot x = interleaved_slot(k, count, chunks, group);
    return compute_op(kind, stage, first + x.microbatch, kind == PipeOpKind::Forward ? x.chunk : chunks - 1 - x.chunk);
  };
  const int warm = std::min(interleaved_warmup(stage, stages, count, chunks, group) + (combined ? 1 : 0), total);
  for (int k = 0; k < warm; ++k) ops.push_back(op(PipeOpKind::Forward, k));
  for (int k = 0; k < total; ++k) {
    if (warm + k < total) {
      ops.push_back(op(PipeOpKind::Forward, warm + k));
      ops.back().pairs_next = combined;
    }
    ops.push_back(op(PipeOpKind::Backward, k));
  }
}

// Zero-bubble ZB-H1 (c = 1) and ZB-H2 (c = 2), as get_hand_schedule in sail-sg/zero-bubble-pipeline-parallelism
// (branch arxiv, megatron/core/pipeline_parallel/efficiency.py): c (S - s - 1) warm-up forwards; then per micro-batch
// k a forward while any is left, the input gradient B of k, and the oldest pending weight gradient W unless k < c s;
// the deferred W last.
void push_zero_bubble(Ops& ops, int stage, int stages, int first, int count, int c) {
  const int warm = std::min(c * (stages - stage - 1), count);
  for (int i = 0; i < warm; ++i) ops.push_back(compute_op(PipeOpKind::Forward, stage, first + i, 0));
  int next_weight = 0;
  for (int k = 0; k < count; ++k) {
    if (warm + k < count) ops.push_back(compute_op(PipeOpKind::Forward, stage, first + warm + k, 0));
    PipeOp input = compute_op(PipeOpKind::Backward, stage, first + k, 0);
    input.split = true;
    ops.push_back(input);
    if (k >= c * stage) ops.push_back(compute_op(PipeOpKind::Weight, stage, first + next_weight++, 0));
  }
  while (next_weight < count) ops.push_back(compute_op(PipeOpKind::Weight, stage, first + next_weight++, 0));
}

// The weight-gradient op W of a split backward B.
PipeOp weight_of(PipeOp input) {
  input.kind = PipeOpKind::Weight;
  input.split = false;
  return input;
}

// PyTorch's interleaved zero bubble (torch.distributed.pipelining ScheduleInterleavedZeroBubble, "the ZB1P
// schedule"): chunk c of stage s is virtual stage c S + s; micro-batches pass the chunks in rounds of
// mpr = m / max(1, m / S) (Megatron's groups of N = mpr); (v - 1) mpr + S - s - 1 warm-up forwards; then a forward
// (while any is left) and an input gradient B in turn, each B from the (s + 1)-th on followed by the oldest pending
// weight gradient W; the deferred W last.
void push_interleaved_zb(Ops& ops, int stage, int stages, int first, int count, int chunks) {
  const int total = count * chunks, group = count / std::max(1, count / stages);
  auto op = [&](PipeOpKind kind, int k) {
    const InterleavedSlot x = interleaved_slot(k, count, chunks, group);
    return compute_op(kind, stage, first + x.microbatch, kind == PipeOpKind::Forward ? x.chunk : chunks - 1 - x.chunk);
  };
  const int warm = std::min((chunks - 1) * group + stages - stage - 1, total);
  for (int k = 0; k < warm; ++k) ops.push_back(op(PipeOpKind::Forward, k));
  std::vector<PipeOp> pending;
  for (int k = 0; k < total; ++k) {
    if (warm + k < total) ops.push_back(op(PipeOpKind::Forward, warm + k));
    PipeOp input = op(PipeOpKind::Backward, k);
    input.split = true;
    ops.push_back(input);
    pending.push_back(input);
    if (k < stage && warm + k < total) continue;  // the first s pairs of the steady state defer their W
    ops.push_back(weight_of(pending.front()));
    pending.erase(pending.begin());
  }
  for (const PipeOp& input : pending) ops.push_back(weight_of(input));
}

// ZB-V on stage `stage` (see make_schedule): counters per chunk of the forwards, input gradients and weight gradients
// issued; ops of micro-batches past the segment are left out.
class ZbvOrder {
 public:
  ZbvOrder(Ops& ops, int stage, int first, int count) : ops_(ops), stage_(stage), first_(first), count_(count) {}
  void f(int chunk) { push(PipeOpKind::Forward, chunk, next_[0][chunk]); }
  void b(int chunk) { push(PipeOpKind::Backward, chunk, next_[1][chunk]); }
  void w(int chunk) { push(PipeOpKind::Weight, chunk, next_[2][chunk]); }
  int forwards(int chunk) const { return next_[0][chunk]; }
  int weights(int chunk) const { return next_[2][chunk]; }

 private:
  void push(PipeOpKind kind, int chunk, int& k) {
    const int microbatch = k++;
    if (microbatch >= count_) return;
    PipeOp op = compute_op(kind, stage_, first_ + microbatch, chunk);
    op.split = kind == PipeOpKind::Backward;
    ops_.push_back(op);
  }
  Ops& ops_;
  int stage_, first_, count_;
  int next_[3][2] = {{0, 0}, {0, 0}, {0, 0}};
};

// DualPipeV and DualPipe on stage `stage` (see make_schedule): per chunk the next forward and backward, and the split
// backwards whose weight gradient is pending, oldest first over both chunks (DualPipe's WeightGradStore). Chunk 1's
// micro-batches start `second` after `first` (0 in the V; M/2 for DualPipe's second direction).
class DualPipeOrder {
 public:
  DualPipeOrder(Ops& ops, int stage, int first, int second = 0)
      : ops_(ops), stage_(stage), first_{first, first + second} {}
  void f(int chunk) {
    ops_.push_back(compute_op(PipeOpKind::Forward, stage_, first_[chunk] + forward_[chunk]++, chunk));
  }
  // A forward and a backward run as one overlapped pair.
  void pair(int forward, int backward) {
    f(forward);
    ops_.back().pairs_next = true;
    b(backward, false);
  }
  void b(int chunk, bool split) {
    PipeOp op = compute_op(PipeOpKind::Backward, stage_, first_[chunk] + backward_[chunk]++, chunk);
    op.split = split;
    ops_.push_back(op);
    if (split) pending_.push_back(op);
  }
  void w() {
    ops_.push_back(weight_of(pending_.front()));
    pending_.erase(pending_.begin());
  }

 private:
  Ops& ops_;
  int stage_, first_[2];
  int forward_[2] = {0, 0}, backward_[2] = {0, 0};
  std::vector<PipeOp> pending_;
};

// Steps 6 to 8 of DualPipe.step and DualPipeV.step: h + 1 times B of phase 1 (chunk c1) and of phase 0 (chunk c0),
// split from the middle one on; `rest` times the oldest W and a split B of phase 0; the W left.
void drain_dualpipe(DualPipeOrder& d, int h, int rest, int c0, int c1) {
  bool split = false;
  for (int i = 0; i < h + 1; ++i) {
    if (i == (h + 1) / 2 && h % 2 == 1) split = true;
    d.b(c1, split);
    if (i == (h + 1) / 2 && h % 2 == 0) split = true;
    d.b(c0, split);
  }
  for (int i = 0; i < rest; ++i) {
    d.w();
    d.b(c0, true);
  }
  for (int i = 0; i < h + 1; ++i) d.w();
}

void push_dualpipev(Ops& ops, int stage, int stages, int first, int count) {
  const int s = stage, p = stages;
  DualPipeOrder d(ops, stage, first);
  for (int i = 0; i < 2 * (p - s - 1); ++i) d.f(0);
  for (int i = 0; i < s + 1; ++i) {
    d.f(0);
    d.f(1);
  }
  for (int i = 0; i < p - s - 1; ++i) {
    d.b(1, true);
    d.w();
    d.f(1);
  }
  for (int i = 0; i < count - 2 * p + s + 1; ++i) {
    if (i == 0 && s == p - 1) {  // the last stage feeds its own chunk 1: its first pair runs one pass after the other
      d.f(0);
      d.b(1, false);
    } else {
      d.pair(0, 1);
    }
    d.pair(1, 0);
  }
  for (int i = 0; i < p - s - 1; ++i) {
    d.b(1, false);
    d.pair(1, 0);
  }
  drain_dualpipe(d, s, p - s - 1, 0, 1);
}

// DualPipe on stage `stage` (see make_schedule): as DualPipe.step, with phase 0 the direction entering at the nearer
// end (chunk `near`) and h the distance to that end.
void push_dualpipe(Ops& ops, int stage, int stages, int first, int count) {
  const int half = stages / 2, h = std::min(stage, stages - 1 - stage), n = count / 2;
  const int near = stage < half ? 0 : 1, far = 1 - near;
  DualPipeOrder d(ops, stage, first, n);
  for (int i = 0; i < 2 * (half - h - 1); ++i) d.f(near);
  for (int i = 0; i < h + 1; ++i) {
    d.f(near);
    d.f(far);
  }
  for (int i = 0; i < half - h - 1; ++i) {
    d.b(far, true);
    d.w();
    d.f(far);
  }
  for (int i = 0; i < n - stages + h + 1; ++i) {
    if (i == 0 && h == half - 1) {  // the middle stages do not overlap their first pair ("to reduce bubble size")
      d.f(near);
      d.b(far, false);
    } else {
      d.pair(near, far);
    }
    d.pair(far, near);
  }
  for (int i = 0; i < half - h - 1; ++i) {
    d.b(far, false);
    d.pair(far, near);
  }
  drain_dualpipe(d, h, half - h - 1, near, far);
}

void push_zbv(Ops& ops, int stage, int stages, int first, int count) {
  const int n = std::max(2 * stages - 1, count), s = stage, p = stages;
  ZbvOrder z(ops, stage, first, count);
  for (int i = 0; i < 2 * (p - s) - 1; ++i) z.f(0);
  for (int i = 0; i < s; ++i) {
    z.f(1);
    z.f(0);
  }
  for (int i = 0; i < p - s; ++i) {
    z.f(1);
    z.b(1);
    z.w(1);
  }
  while (z.forwards(1) < z.forwards(0) || z.forwards(0) < n) {
    if (z.forwards(0) < n) z.f(0);
    z.b(0);
    z.w(0);
    z.f(1);
    z.b(1);
    z.w(1);
  }
  for (int i = 0; i < s; ++i) {
    z.b(0);
    z.b(1);
  }
  for (int i = 0; i < p - s; ++i) {
    z.b(0);
    z.w(0);
  }
  while (z.weights(1) < n) z.w(1);
  while (z.weights(0) < n) z.w(0);
}

struct Segment {
  int first = 0, count = 0;
};

// Micro-batch ranges that end with a drain of the pipeline: steps of the synchronous schedules, LocalSGD rounds, the
// whole run of the asynchronous ones.
std::vector<Segment> segments(const PipelineShape& sh) {
  const int total = sh.total_microbatches();
  int length = sh.microbatches;
  if (sh.schedule == Schedule::PipeDream || sh.schedule == Schedule::PipeDream2BW) length = total;
  if (sh.schedule == Schedule::LocalSGD)
    length = static_cast<int>(std::min<std::int64_t>(total, std::int64_t{sh.replicas} * sh.local_steps));
  std::vector<Segment> out;
  for (int first = 0; first < total; first += length) out.push_back({first, std::min(length, total - first)});
  return out;
}

// The forwards and backwards of one segment on one stage.
Ops segment_compute(const PipelineShape& sh, int stage, Segment seg) {
  Ops ops;
  const int depth = sh.stages - stage;  // micro-batches a full 1F1B pipeline keeps in flight on this stage
  switch (sh.schedule) {
    case Schedule::GPipe:
      push_gpipe(ops, stage, seg.first, seg.count);
      break;
    case Schedule::OneFOneB:
      push_1f1b(ops, stage, seg.first, seg.count, depth, sh.combined);
      break;
    case Schedule::Interleaved:
      push_interleaved(ops, stage, sh.stages, seg.first, seg.count, sh.chunks, group_of(sh), sh.combined);
      break;
    case Schedule::PipeDream:
    case Schedule::PipeDream2BW:
      push_1f1b(ops, stage, seg.first, seg.count, std::min(sh.noam, depth));
      break;
    // One micro-batch per replica in flight: a replica's next forward waits for its previous backward.
    case Schedule::LocalSGD:
      push_1f1b(ops, stage, seg.first, seg.count, std::min(sh.replicas, depth));
      break;
    case Schedule::ZbH1:
    case Schedule::ZbH2:
      push_zero_bubble(ops, stage, sh.stages, seg.first, seg.count, sh.schedule == Schedule::ZbH1 ? 1 : 2);
      break;
    case Schedule::ZbV:
      push_zbv(ops, stage, sh.stages, seg.first, seg.count);
      break;
    case Schedule::DualPipeV:
      push_dualpipev(ops, stage, sh.stages, seg.first, seg.count);
      break;
    case Schedule::InterleavedZb:
      push_interleaved_zb(ops, stage, sh.stages, seg.first, seg.count, sh.chunks);
      break;
    case Schedule::DualPipe:
      push_dualpipe(ops, stage, sh.stages, seg.first, seg.count);
      break;
  }
  return ops;
}

// True when an Apply follows this backward directly: per micro-batch for PipeDream and LocalSGD, per weight version
// (the last micro-batch of a step) for PipeDream-2BW. The synchronous schedules apply once at the end of the step.
bool applies_after(const PipelineShape& sh, const PipeOp& backward) {
  switch (sh.schedule) {
    case Schedule::PipeDream:
    case Schedule::LocalSGD:
      return true;
    case Schedule::PipeDream2BW:
      return (backward.microbatch + 1) % sh.microbatches == 0;
    default:
      return false;
  }
}

PipeOp follow_up(PipeOpKind kind, const PipeOp& last_backward) {
  PipeOp op = last_backward;
  op.kind = kind;
  op.chunk = -1;
  op.split = false;
  if (kind == PipeOpKind::Average) op.replica = -1;
  return op;
}

Ops stage_ops(const PipelineShape& sh, int stage) {
  Ops ops;
  const bool synchronous = synchronous_schedule(sh.schedule);
  for (Segment seg : segments(sh)) {
    PipeOp last_backward;  // every segment has at least one micro-batch
    for (PipeOp& op : segment_compute(sh, stage, seg)) {
      op.replica = sh.schedule == Schedule::LocalSGD ? op.microbatch % sh.replicas : 0;
      ops.push_back(op);
      if (op.kind != PipeOpKind::Backward) continue;  // a split backward's W runs before the step's Apply
      last_backward = op;
      if (applies_after(sh, op)) ops.push_back(follow_up(PipeOpKind::Apply, op));
    }
    if (synchronous) ops.push_back(follow_up(PipeOpKind::Apply, last_backward));
    if (sh.schedule == Schedule::LocalSGD) ops.push_back(follow_up(PipeOpKind::Average, last_backward));
  }
  return ops;
}

// Fills weight_version: the number of Applies on (stage, replica) before the version the op reads. A forward reads the
// current version, except under PipeDream-2BW, where every micro-batch of step g reads version g-1 (the latest one
// when the step entered the pipeline); a backward reads the version its forward read (weight stashing).
void assign_versions(Ops& ops, const PipelineShape& sh) {
  std::vector<int> current(static_cast<std::size_t>(sh.replicas), 0);
  std::vector<int> read(static_cast<std::size_t>(sh.total_microbatches()) * static_cast<std::size_t>(sh.chunks), -1);
  for (PipeOp& op : ops) {
    auto slot = [&] {
      return static_cast<std::size_t>(op.microbatch) * static_cast<std::size_t>(sh.chunks) +
             static_cast<std::size_t>(op.chunk);
    };
    switch (op.kind) {
      case PipeOpKind::Forward: {
        int& now = current[static_cast<std::size_t>(op.replica)];
        op.weight_version = now;
        if (sh.schedule == Schedule::PipeDream2BW) op.weight_version = std::max(0, op.microbatch / sh.microbatches - 1);
        if (op.weight_version > now) throw std::logic_error("pipeline schedule reads a weight version not made yet");
        read[slot()] = op.weight_version;
        break;
      }
      case PipeOpKind::Backward:
      case PipeOpKind::Weight:
        op.weight_version = read[slot()];
        break;
      case PipeOpKind::Apply:
        op.weight_version = current[static_cast<std::size_t>(op.replica)]++;
        break;
      case PipeOpKind::Average:
        op.weight_version = -1;
        break;
    }
  }
}

}  // namespace

InterleavedSlot interleaved_slot(int k, int count, int chunks, int group) {
  const int full = count / group * group;  // micro-batches in full groups
  if (k < full * chunks) {
    const int in_group = k % (group * chunks);
    return {(k / (group * chunks)) * group + in_group % group, in_group / group};
  }
  const int rest = count - full, r = k - full * chunks;
  return {full + r % rest, r / rest};
}

// Megatron-Core (get_pp_rank_microbatches): a rank whose warm-up covers every forward runs them all first.
int interleaved_warmup(int stage, int stages, int count, int chunks, int group) {
  const int warm = chunks == 1 ? stages - stage - 1 : 2 * (stages - stage - 1) + (chunks - 1) * group;
  return std::min(warm, count * chunks);
}

PipelineShape shape_of(const StrategySpec& s, int steps) {
  PipelineShape sh;
  sh.schedule = s.schedule;
  sh.stages = narrow(s.pp, "strategy.pp");
  sh.microbatches = narrow(s.microbatches, "strategy.microbatches");
  sh.steps = steps;
  sh.chunks = narrow(s.chunks, "strategy.chunks");
  sh.microbatch_group = narrow(s.microbatch_group, "strategy.microbatch_group");
  sh.noam = narrow(s.noam == 0 ? s.pp : s.noam, "strategy.noam");
  sh.replicas = narrow(s.replicas, "strategy.replicas");
  sh.local_steps = narrow(s.local_steps, "strategy.local_steps");
  sh.combined = s.ep_overlap;
  return sh;
}

Upstream upstream_of(const PipeOp& op, const PipelineSchedule& schedule) {
  const int k = schedule.virtual_stage(op);
  // DualPipe's directions are two pipelines: virtual stages [0, S) and [S, 2S).
  const int length = bidirectional(schedule.shape.schedule) ? schedule.stages() : schedule.virtual_stages();
  const int begin = k / length * length, end = begin + length;
  if (op.kind == PipeOpKind::Forward && k > begin) return {PipeOpKind::Forward, k - 1};
  if (op.kind == PipeOpKind::Backward && k + 1 < end) return {PipeOpKind::Backward, k + 1};
  return {};
}

std::vector<PipeOp> stage_order(const PipelineShape& shape, const ShapeFields& fields, int stage) {
  check_shape(shape, fields);
  return stage_ops(shape, stage);
}

PipelineSchedule make_schedule(const PipelineShape& shape, const ShapeFields& fields) {
  check_shape(shape, fields);
  PipelineSchedule schedule;
  schedule.shape = shape;
  schedule.order.resize(static_cast<std::size_t>(shape.stages));
  for (int s = 0; s < shape.stages; ++s) {
    Ops& ops = schedule.order[static_cast<std::size_t>(s)];
    ops = stage_ops(shape, s);
    assign_versions(ops, shape);
  }
  return schedule;
}

}  // namespace placesim
