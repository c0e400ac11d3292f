#pragma once
#include <string>
#include <vector>

#include "strategies/placement/Strategy.hpp"

namespace placesim {

/// What one op on a stage's compute stream does.
enum class PipeOpKind {
  Forward,   ///< forward of one micro-batch through one model chunk of the stage
  Backward,  ///< backward of one micro-batch through one model chunk of the stage; with `split`, its input gradient
             ///< only (B), the weight gradient following as a Weight op
  Weight,    ///< the weight gradient (W) of a split backward: needs that backward, ends the micro-batch on the stage
  Apply,     ///< the stage's weight update: applies the gradients accumulated since its previous Apply
  Average,   ///< LocalSGD round end: the stage's block of every replica is replaced by the replicas' average
};
const char* to_string(PipeOpKind k);

/// Every pipeline schedule, in the order the CLI lists them.
const std::vector<Schedule>& all_schedules();
/// The schedule whose to_string is `name`; throws std::invalid_argument for any other name (callers check names first).
Schedule schedule_named(const std::string& name);

/// One op of a stage's compute stream.
struct PipeOp {
  PipeOpKind kind = PipeOpKind::Forward;
  int stage = 0;
  int microbatch = 0;      ///< F/B: micro-batch index over the whole run. Apply: the micro-batch of the backward it
                           ///< follows. Average: the last micro-batch of the round.
  int chunk = 0;           ///< interleaved model chunk, 0..chunks-1; -1 for Apply and Average (all chunks)
  int replica = 0;         ///< LocalSGD model replica (micro-batch mod replicas); -1 for Average (all replicas)
  int weight_version = 0;  ///< version of (stage, replica) weights the op read: the number of Applies on that block
                           ///< before the version was made. Apply: the version it replaces. Average: -1.
  bool split = false;      ///< Backward: input gradient only; a Weight op of the same micro-batch and chunk follows
  /// An overlapped pair (a forward and the next op, a backward: DualPipe's, or Megatron-Core's combined 1F1B step):
  /// the op starts only when the next op's inputs are there too, as _forward_backward_chunk and the combined step
  /// receive both before running either.
  bool pairs_next = false;

  /// Position of the op's model chunk in the whole model: chunk * stages + stage (Megatron's virtual stage). A V-shaped
  /// schedule (zb-v) places its chunks otherwise: use PipelineSchedule::virtual_stage.
  int virtual_stage(int stages) const { return chunk * stages + stage; }
};

/// The numbers that define a pipeline run. A step is `microbatches` micro-batches; a run is `steps` steps.
///
/// - gpipe, 1f1b, interleaved: each step ends with a flush and one Apply per stage.
/// - pipedream: no flush; an Apply after every backward; the step only groups micro-batches.
/// - pipedream-2bw: no flush; a new weight version per step of `microbatches` (>= stages) micro-batches.
/// - localsgd: micro-batch i belongs to replica i mod replicas; rounds of replicas * local_steps micro-batches
///   (the last one may be shorter) end with a drain and one Average per stage.
/// - zb-h1, zb-h2: as 1f1b, each backward split into B and W (see make_schedule).
/// - zb-v: two chunks per stage in a V (stage s holds virtual stages s and 2S - 1 - s), backwards split.
/// - dualpipe: two pipelines in opposite directions, chunk 0 of stage s = virtual stage s (micro-batches 0..M/2-1,
///   entering at stage 0), chunk 1 = virtual stage 2S - 1 - s (micro-batches M/2..M-1, entering at stage S - 1);
///   each chunk is a whole stage of its direction's copy of the model.
struct PipelineShape {
  Schedule schedule = Schedule::OneFOneB;
  int stages = 1;        ///< S: devices of the pipeline
  int microbatches = 1;  ///< M: micro-batches per step
  int steps = 1;
  int chunks = 1;  ///< interleaved: model chunks v per device
  /// interleaved: N, micro-batches run through a chunk before the next chunk (groups of N; the last group of a step
  /// may be smaller); 0 = stages (Megatron-LM)
  int microbatch_group = 0;
  int noam = 1;         ///< pipedream, pipedream-2bw: at most this many micro-batches admitted by stage 0 at once
  int replicas = 1;     ///< localsgd: model replicas sharing the pipeline
  int local_steps = 1;  ///< localsgd: H micro-batches per replica between averagings
  /// 1f1b, interleaved: Megatron-Core's combined 1F1B (strategy.ep_overlap): one more warm-up forward, each
  /// steady-state forward paired with the backward after it (PipeOp::pairs_next).
  bool combined = false;

  int total_microbatches() const { return microbatches * steps; }
  /// Passes of one micro-batch through a stage, each 1/passes of the stage's forward_s and backward_s: chunks, but 1
  /// under dualpipe, where a micro-batch passes only its direction's chunk, a whole stage.
  int passes_per_stage() const { return bidirectional(schedule) ? 1 : chunks; }
};

/// Names of the shape's fields in error messages: "strategy.pp" or "pipeline.stages".
struct ShapeFields {
  std::string schedule, stages, microbatches, steps, chunks, noam, replicas, local_steps, microbatch_group;
};
/// Field names of an experiment's "strategy" section (stages = strategy.pp).
ShapeFields strategy_shape_fields();
/// Field names of an abstract experiment's "pipeline" section.
ShapeFields abstract_shape_fields();

/// The shape of one pipeline of a resolved strategy, run for `steps` steps. Throws InputError if a count does not
/// fit an int.
PipelineShape shape_of(const StrategySpec& strategy, int steps);

/// Every op of every stage in the order its compute stream runs them.
///
/// Besides stream order, the only dependencies are data dependencies: F of micro-batch i at virtual stage k needs F
/// of i at k-1 (plus a transfer when they sit on different stages); B at k needs F at k and B at k+1 (plus a
/// transfer). Every other constraint (flushes, NOAM admission, LocalSGD's wait for the replica's previous backward,
/// drains before averaging) is expressed by the per-stage order itself, so none is listed separately.
struct PipelineSchedule {
  PipelineShape shape;
  std::vector<std::vector<PipeOp>> order;  ///< order[stage]: that stage's ops, first to last

  int stages() const { return shape.stages; }
  int virtual_stages() const { return shape.stages * shape.chunks; }
  /// Chunks placed in a V (zb-v): chunk 0 of stage s is virtual stage s, chunk 1 is 2S - 1 - s, so the last stage
  /// feeds its own second chunk and the first stage holds the model's end. Otherwise chunk c of stage s is c S + s.
  int virtual_stage(int chunk, int stage) const { return virtual_stage_of(shape.schedule, shape.stages, chunk, stage); }
  int virtual_stage(const PipeOp& op) const { return virtual_stage(op.chunk, op.stage); }
  int stage_of(int virtual_stage) const { return stage_of_virtual(shape.schedule, shape.stages, virtual_stage); }
};

/// The other-virtual-stage input of an op: the forward at virtual stage k-1 feeds a forward at k, the backward at
/// k+1 feeds a backward at k. The first forward, the last backward, Apply and Average have none; under dualpipe each
/// direction has its own first and last (virtual stages 0 and S - 1, S and 2S - 1). (A backward also needs the
/// forward at its own virtual stage, on its own stage.)
struct Upstream {
  PipeOpKind kind = PipeOpKind::Forward;
  int virtual_stage = -1;  ///< -1: the op has no such input
};
Upstream upstream_of(const PipeOp& op, const PipelineSchedule& schedule);

/// The k-th forward (or backward) of a stage under the interleaved schedule with `count` micro-batches in a step,
/// `chunks` model chunks and groups of `group` micro-batches: micro-batches go through the chunks group by group
/// (chunk-major inside a group, the last group holding count mod group when that is not 0). Returns the micro-batch
/// offset in the step and the chunk (forward order; a backward visits chunks - 1 - chunk).
struct InterleavedSlot {
  int microbatch = 0, chunk = 0;
};
InterleavedSlot interleaved_slot(int k, int count, int chunks, int group);
/// Forwards a stage of the interleaved schedule runs before its first backward: 2 (S - s - 1) + (v - 1) N (at most
/// every forward of the step; S - s - 1 with one chunk), as Megatron-Core's get_pp_rank_microbatches.
int interleaved_warmup(int stage, int stages, int count, int chunks, int group);

/// The checks make_schedule applies (see there), without building anything.
void check_shape(const PipelineShape& shape, const ShapeFields& fields);
/// The interleaved schedule's group checks alone: N (microbatch_group, default stages) at least the stages and at
/// most the micro-batches, and a last group of a step, when smaller, still at least the stages.
void check_interleaved_group(const PipelineShape& shape, const ShapeFields& fields);

/// Builds the schedule (pure). Throws InputError naming `fields` when the shape is invalid: a count below 1, an
/// interleaved run whose micro-batches are not a multiple of the stages (or with fewer than 2 stages), a
/// pipedream-2bw run with fewer micro-batches per version than stages, or replicas that do not divide the
/// micro-batches.
///
///   1f1b, S=3, M=4 (F/B of micro-batch i, A = Apply):
///     stage 0: F0 F1 F2 B0 F3 B1 B2 B3 A
///     stage 1: F0 F1 B0 F2 B1 F3 B2 B3 A
///     stage 2: F0 B0 F1 B1 F2 B2 F3 B3 A
///
/// zb-v follows PyTorch's ScheduleZBVZeroBubble (torch/distributed/pipelining/schedules.py,
/// _calculate_single_rank_operations; the order sail-sg's zbv.py finds for equal F, B and W): with n = max(2S - 1, M)
/// and ops of micro-batches >= M left out, stage s runs 2(S - s) - 1 forwards of chunk 0; s times a forward of chunk 1
/// and one of chunk 0; S - s times F, B and W of chunk 1; then, while chunk 1 has forwards left or chunk 0 has, a
/// forward of chunk 0 (while any is left), its B and W, and F, B and W of chunk 1; then s times B of chunk 0 and of
/// chunk 1, S - s times B and W of chunk 0, and the W left of chunk 1 and of chunk 0.
///
/// dualpipev follows DualPipeV.step (deepseek-ai/DualPipe, dualpipe/dualpipev.py, steps 1 to 8) on the same V, with
/// M >= 2S: 2(S - s - 1) forwards of chunk 0; s + 1 times F of chunk 0 and of chunk 1; S - s - 1 times a split B of
/// chunk 1, the oldest pending W and F of chunk 1; M - 2S + s + 1 times the pairs (F of chunk 0, B of chunk 1) and
/// (F of chunk 1, B of chunk 0); S - s - 1 times B of chunk 1 and the pair (F of chunk 1, B of chunk 0); s + 1 times
/// B of chunk 1 and of chunk 0, split from the middle one on; S - s - 1 times the oldest W and a split B of chunk 0;
/// the W left. A pair's two passes run one after the other here (no communication to hide in an abstract pipeline).
///
/// dualpipe follows DualPipe.step (same file set, dualpipe/dualpipe.py, steps 1 to 8) with S and M even, M >= 2S and
/// n = M/2 micro-batches per direction. On stage s, with h = min(s, S - 1 - s) and P = S/2, phase 0 is the direction
/// entering at the nearer end (chunk 0 for s < P, chunk 1 otherwise) and phase 1 the other: 2(P - h - 1) forwards of
/// phase 0; h + 1 times F of phase 0 and of phase 1; P - h - 1 times a split B of phase 1, the oldest W and F of
/// phase 1; n - S + h + 1 times the pairs (F of phase 0, B of phase 1) and (F of phase 1, B of phase 0), the first
/// pair one pass after the other on the middle stages (s = P - 1, P); P - h - 1 times B of phase 1 and the pair
/// (F of phase 1, B of phase 0); h + 1 times B of phase 1 and of phase 0, split from the middle one on; P - h - 1
/// times the oldest W and a split B of phase 0; the W left. S=4, M=8 ("F5.1" micro-batch 5 through chunk 1, "+" an
/// overlapped pair with the next op, BW a backward that computes its weight gradient too):
///     stage 0: F0.0 F1.0 F2.0 F4.1 B4.1 W4.1 F5.1 F3.0+ BW5.1 F6.1+ BW0.0 BW6.1 F7.1+ BW1.0 BW7.1 B2.0 W2.0 B3.0 W3.0
///     stage 3: F4.1 F5.1 F6.1 F0.0 B0.0 W0.0 F1.0 F7.1+ BW1.0 F2.0+ BW4.1 BW2.0 F3.0+ BW5.1 BW3.0 B6.1 W6.1 B7.1 W7.1
///
/// zb-h1 and zb-h2 are the handcrafted schedules of Qi et al. (arXiv 2401.10241; sail-sg/zero-bubble-pipeline-
/// parallelism, branch arxiv, megatron/core/pipeline_parallel/efficiency.py get_hand_schedule, warm-up factor c = 1
/// and 2): stage s runs c (S - s - 1) warm-up forwards, then for each micro-batch k a forward (while any is left),
/// B of k, and W of the oldest micro-batch whose W is pending, except in the first c s rounds; the c s deferred W run
/// at the end, where 1F1B's drain idles. S=3, M=4, zb-h1 (W = weight gradient):
///     stage 0: F0 F1 F2 B0 W0 F3 B1 W1 B2 W2 B3 W3 A
///     stage 1: F0 F1 B0 F2 B1 W0 F3 B2 W1 B3 W2 W3 A
///     stage 2: F0 B0 F1 B1 F2 B2 W0 F3 B3 W1 W2 W3 A
PipelineSchedule make_schedule(const PipelineShape& shape, const ShapeFields& fields);
/// One stage's order of make_schedule (weight versions left at 0), after the same checks: for walking one stage
/// without building the others.
std::vector<PipeOp> stage_order(const PipelineShape& shape, const ShapeFields& fields, int stage);

}  // namespace placesim
