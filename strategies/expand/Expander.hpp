#pragma once
// Internal to expand(): the state of one expansion. Not part of the public API.
#include <array>
#include <map>
#include <tuple>
#include <vector>

#include "strategies/analytic/Costs.hpp"
#include "strategies/expand/Expand.hpp"
#include "strategies/pipeline/PipelineSchedule.hpp"
#include "strategies/placement/DataPlan.hpp"
#include "strategies/placement/Layout.hpp"
#include "strategies/placement/Routing.hpp"

namespace placesim::detail {

inline constexpr TaskId kNoTask = ~TaskId(0);

/// One pipeline operation of a stage, in the order the stage's compute stream runs them.
struct StageOp {
  bool forward = true;
  int microbatch = 0;
  int chunk = 0;
  int weight_version = 0;
  /// A split backward (zero-bubble schedules): `split` marks its input-gradient op B, `weight` its weight-gradient
  /// op W (forward false in both).
  bool split = false, weight = false;
  /// DualPipe's overlapped pair (PipeOp::pairs_next): the input the next op receives, (virtual stage, micro-batch,
  /// forward), which this op waits for too; pair_vstage -1 when there is none.
  int pair_vstage = -1, pair_microbatch = 0;
  bool pair_forward = false;
};

/// A contiguous run of layers processed by one compute task, with the units (layers, embedding, head) it holds.
struct LayerGroup {
  int first_layer = 0, layers = 0;
  std::int64_t elems = 0;           ///< parameters on one device (after tp)
  std::vector<std::int64_t> units;  ///< element counts of the units (each padded on its own when sharded)
  bool has_embedding = false, has_head = false;
  /// Its layers are recomputed under a full recompute (false: training.recompute_layers leaves them out, and they
  /// keep every activation).
  bool recomputed = true;
};

/// The pipeline schedule of one step of `e` (strategies/pipeline/PipelineSchedule).
PipelineSchedule step_schedule(const Experiment& e);

class Expander {
 public:
  Expander(const Experiment& e, const ClusterSpec& c, const ExpandOptions& o);
  TaskGraph run();

 private:
  // mesh and groups
  int rank(int d, int t, int s) const;
  /// Does the expansion hold device x's tasks (all devices unless the step is folded)?
  bool expanded(int x) const { return (x / tp_) % dp_ < dl_; }
  /// The first data index of the group of d over `axes` (d with its coordinates along `axes` zeroed).
  int data_index_base(int d, AxisSet axes) const;
  bool in_group(int d, int base, AxisSet axes) const;
  /// The data-parallel group over `axes` of TP rank t on stage s that holds data index `base` (its first member).
  int data_group(int t, int s, int base, AxisSet axes);
  int tp_group(int d, int s);
  // stream bookkeeping: the task goes after the device's previous task on the stream
  TaskId add_single(TaskBody body, int stage, int device, Stream stream);
  TaskId add_collective(Collective c, int stage);
  /// A collective of `op` over the TP group of (d, s) on the TP stream, `elems` padded to a multiple of tp.
  Collective tp_group_collective(int d, int s, CollectiveOp op, std::int64_t elems, int elem_bytes);
  /// The tasks a collective over a data-parallel group became: one ring, or with strategy.collective=hierarchical
  /// three phases (intra-node reduce-scatter, inter-node ring, intra-node all-gather) of one collective per
  /// sub-group. Dependencies go into `first`, successors follow `last`.
  struct Phases {
    std::vector<TaskId> first, last;
  };
  Phases add_dp_collective(Collective c, int stage);
  /// One group of a data-parallel collective: its data indices and its tasks.
  struct DataCoset {
    std::vector<int> members;
    Phases tasks;
  };
  /// `c` over every group of `axes` for TP rank t of stage s, in the order of their first members.
  std::vector<DataCoset> add_data_collectives(Collective c, AxisSet axes, int t, int s);
  /// Elements of state `state` a device holds of group lg (held_share), hpZ's secondary shard excluded.
  double held(State state, const LayerGroup& lg) const;
  /// Double buffering: `window` lists, in allocation order, the tasks that release buffers of one kind on a lane;
  /// `task`, which allocates the next, waits for the release `ahead` + 1 back, so at most `ahead` + 1 are live.
  void after_window(const std::vector<TaskId>& window, TaskId task, std::size_t ahead = 1);
  /// Gives each task of `tasks` the deltas of its own members (at its start or its end).
  void set_member_memory(const std::vector<TaskId>& tasks, const std::vector<MemDelta>& deltas, bool at_start);
  int subgroup(std::vector<int> members);
  /// The task of `tasks` whose group holds `device`.
  TaskId task_of_member(const std::vector<TaskId>& tasks, int device) const;
  // the pipeline
  void expand_stage(int s);
  /// The tasks of op i of the stage's order, group by group; leaves op_tail_ at the op's end.
  StageOp expand_op(int s, int i, const PipeOp& pop);
  /// One op being expanded: its StageOp, its chunk's layer groups, whether it completes the chunk's gradients, and
  /// the change of stashed weights at its end.
  struct OpRun {
    StageOp op;
    int groups = 0;
    bool grads_done = false;
    double stash = 0;
  };
  /// Sets up op i (its flags, an empty frontier) and returns it.
  OpRun start_op(int s, int i, const PipeOp& pop);
  /// The k-th group of the op in its pass's order, whole or one phase of it.
  void expand_part(const OpRun& run, int s, int k, int phase);
  /// The op's deferred gradient synchronisation.
  void finish_op(const OpRun& run, int s);
  /// Are op i and op i + 1 a DualPipe pair expanded as one (expand_pair)?
  bool pairs_interleave(const std::vector<PipeOp>& order, int i) const;
  /// Ops i and i + 1 as one overlapped pair, with their sends; leaves op_tail_ at both ends.
  void expand_pair(int s, int i);
  /// Group g of op, whole (kWholeGroup) or one of its group_phases (a DualPipe pair interleaves its two ops' phases).
  static constexpr int kWholeGroup = -1;
  /// Does group phase `phase` (or the whole group) run part `p`?
  static bool runs_part(int phase, int p) { return phase == kWholeGroup || phase == p; }
  void expand_group(int s, const StageOp& op, int g, bool last_of_op, double stash_delta, int phase = kWholeGroup);
  int group_phases(int s, const StageOp& op, int g) const;
  void forward_group(int s, const StageOp& op, int g, double stash_delta, int phase);
  void backward_group(int s, const StageOp& op, int g, double stash_delta, int phase);
  void expert_phase(int s, const StageOp& op, int g, TaskKind kind, int phase, int first);
  void weight_group(int s, const StageOp& op, int g);
  /// The compute tasks of `part` of group g on every (d, t) lane. The task that `closes` the group's pass (its last
  /// compute) carries the group's memory changes and releases its gathered parameters.
  void compute_tasks(int s, const StageOp& op, int g, TaskKind kind, ModelPart part, bool closes, double stash_delta);
  void compute_memory(const StageOp& op, const LayerGroup& lg, std::size_t lane, int x, TaskKind kind, ModelPart part,
                      bool closes, double stash_delta, std::vector<MemDelta>& on_start,
                      std::vector<MemDelta>& on_end) const;
  /// The tasks the next task of the op on `lane` follows: the op's frontier, or at the op's start the previous op's.
  const std::vector<TaskId>& preceding(std::size_t lane, const std::vector<TaskId>& frontier) const;
  void apply_inline(int s, const PipeOp& op);
  /// training.host_time_*: on every device of stage s, `seconds` of host time after the device's last compute and
  /// before its next (microbatch -1: the step's own).
  void host_wait(int s, double seconds, int microbatch);
  double stash_change(int s, const PipeOp& op);
  /// A TP collective of `ops` per layer over each (d, s) TP group, `gathers` of them all-gathers (which move FP8 under
  /// strategy.tp_fp8_gather); `hidden` ones run beside the compute that follows the current frontier instead of after
  /// it (Megatron overlaps them with weight-gradient GEMMs).
  void tp_collective(int s, const StageOp& op, int g, int ops, int gathers, bool hidden);
  /// Context parallelism: the attention of group g after its other work (`body`, per lane), as cp ring steps (a
  /// compute step and a K/V transfer to the ring's next rank each) or all-gathered K/V (and reduce-scattered
  /// gradients in the backward). The last attention compute of each lane closes the group with `on_end`.
  void cp_attention(int s, const StageOp& op, int g, TaskKind kind, const std::vector<TaskId>& body,
                    std::vector<std::vector<MemDelta>>& on_end, bool closes);
  /// One group's context-parallel attention being expanded: its pass, the cost of its attention, and per lane the
  /// first and last attention task and the tasks the op's next task follows.
  struct CpPass {
    int s, g;
    const StageOp& op;
    TaskKind kind;
    bool backward;
    double attention;  ///< seconds of the group's attention on one rank
    double kv_bytes;   ///< the group's K/V block of one rank
    const std::vector<TaskId>& body;
    std::vector<TaskId> first, last;
    std::vector<std::vector<TaskId>> tail;
  };
  int cp_pred(int d) const;
  int cp_succ(int d) const;
  TaskId cp_attention_task(const CpPass& p, int d, int t, double seconds);
  TaskId cp_ring_send(const CpPass& p, int d, int t, double bytes);
  Collective cp_kv_gather(const CpPass& p, int d, int t);
  void cp_close_ring(CpPass& p, const std::vector<TaskId>& computed, const std::vector<TaskId>& returned);
  void cp_ring(CpPass& p);
  void cp_pytorch(CpPass& p);
  void cp_gathered(CpPass& p);
  /// The cp group of data lane d (its cp ranks) for TP rank t on stage s.
  int cp_group(int d, int t, int s);
  /// Megatron-LM's TP collective around the vocabulary-parallel embedding or output layer of group g (one per op).
  void vocab_collective(int s, const StageOp& op, int g, CollectiveOp kind, bool hidden);
  void add_tp_collective(int s, const StageOp& op, int g, CollectiveOp kind, int repeat, bool per_layer, bool hidden,
                         int elem_bytes);
  void gather_params(int s, const StageOp& op, int g);
  /// Seconds of FSDP2's copy-out of group lg's gathered parameters and (backward) copy-in of its gradients for the
  /// reduce-scatter, added to the group's layer compute (strategy.gather_copies).
  double gather_copy_s(const LayerGroup& lg, bool forward) const;
  /// Are group g's activations offloaded (strategy.placement.activations=offloaded, every group of a chunk but its
  /// last)?
  bool offloads_activations(int s, int chunk, int g) const;
  void store_activations(int s, const StageOp& op, int g);
  void fetch_activations(int s, const StageOp& op, int g);
  void sync_gradients(int s, const StageOp& op, int g, bool last_backward);
  // Mixture of experts (ExpandExperts.cpp)
  /// Is group g of the chunk an MoE layer (groups are single layers for MoE models)?
  bool moe_group(const LayerGroup& lg) const { return lg.layers == 1 && is_moe_layer(e_.model, lg.first_layer); }
  /// The routed experts of MoE group g in `kind`'s pass: per ep group of the stage, an all-to-all dispatch, each
  /// rank's expert compute on the tokens routed to it, an all-to-all combine (backward: the combine's gradient
  /// travels as a dispatch, the dispatch's as a combine). Follows and replaces the lanes' frontier. `phase`: all of
  /// it, or one of the three for every ep group (expert_in_ and expert_computes_ carry the rest between them).
  enum class ExpertPhase { All, In, Compute, Out };
  void expert_block(int s, const StageOp& op, int g, TaskKind kind, ExpertPhase phase = ExpertPhase::All);
  /// The first all-to-all of the ep group from lane `first`, after the lanes' frontier (and the op's inputs when it
  /// is the op's first task).
  TaskId expert_dispatch(int s, const StageOp& op, int g, int first, bool first_of_op);
  /// The experts of the ep group from lane `first` after its all-to-all `in`, one task per member.
  std::vector<TaskId> expert_compute(int s, const StageOp& op, int g, TaskKind kind, int first, TaskId in);
  /// The routed experts' weight-gradient GEMMs of MoE group g in a split backward's W op, per lane.
  void expert_weights(int s, const StageOp& op, int g);
  /// The all-to-all over ep group `first_lane / ep` of stage s after `deps` (per member), as dispatch or combine.
  TaskId ep_alltoall(int s, const StageOp& op, const LayerGroup& lg, int first_lane, bool combine, bool backward);
  int ep_group(int s, int first_lane);
  /// The expert-data-parallel group of ep rank j on stage s: every lane of the stage with lane % ep = j.
  int edp_group(int s, int j);
  /// The routed experts' step collectives over their expert-data-parallel groups (expert_plan), before and after
  /// the optimizer; `updated` are the optimizer tasks per lane.
  void expert_step_sync(int s);
  /// The last backward of MoE layer group (chunk, g) is expanded: its experts' gradients join the stage's bucket.
  void expert_grads_ready(int s, int chunk, int g);
  void reduce_expert_bucket(int s, int j);
  Collective expert_collective(const DataCollective& dc, int s, int j, std::int64_t padded, Stream stream,
                               int elem_bytes);
  void expert_regather(int s, const std::vector<TaskId>& updated);
  /// Elements of `state` of the routed experts a device of stage s holds.
  double held_experts(int s, State state) const;
  void flush_bucket(int t, int s);
  /// The collective `dc` of the data plan for the units of `lg` (each padded to a multiple of dp); its group is
  /// filled in per coset by add_data_collectives.
  Collective data_collective(const DataCollective& dc, Stream stream, const LayerGroup& lg, int elem_bytes,
                             int microbatch) const;
  /// The plan's collective of `state` that runs `when`, or null.
  const DataCollective* planned(State state, DataWhen when) const;
  /// The op's parameter all-gather and gradient reduce-scatter of a unit, or null: per micro-batch, or once per step
  /// in the chunk's first forward and last backward (gathers_once_per_step).
  const DataCollective* param_gather(bool forward) const;
  const DataCollective* grad_reduce() const;
  /// The transfers of op's output to the next virtual stage, one per (d, t) lane (kNoTask where none), after the
  /// lane's frontier.
  std::vector<TaskId> send_boundary(int s, const StageOp& op);
  using BoundaryKey = std::tuple<int, int, int, int, bool>;  ///< (d, t, receiving virtual stage, micro-batch, forward)
  void link_boundary(int d, int t, int vstage, int mb, bool forward, TaskId task, bool is_producer);
  /// The receiver has posted the transfer once `tail` is done (strategy.p2p=megatron: a transfer needs both sides).
  void post_boundary(const BoundaryKey& key, const std::vector<TaskId>& tail);
  /// The first tasks of an op link to its own input and to every input its call received.
  void link_op_inputs(int d, int t, int vstage, int mb, bool forward, TaskId task);
  /// The input of `op` on stage s, if it has one (its virtual stage receives from a neighbour).
  bool has_input(int s, const PipeOp& op) const;
  /// f(lane, device) for every (d, t) lane of stage s, lane = d x tp + t.
  template <class F>
  void for_each_lane(int s, F&& f) {
    for (int d = 0; d < dl_; ++d)
      for (int t = 0; t < tp_; ++t) f(static_cast<std::size_t>(d * tp_ + t), rank(d, t, s));
  }
  /// Layer group g of op's chunk on stage s.
  const LayerGroup& group_of(int s, const StageOp& op, int g) const {
    return groups_[static_cast<std::size_t>(s)][static_cast<std::size_t>(op.chunk)][static_cast<std::size_t>(g)];
  }
  /// The position in the model of chunk `chunk` of stage s (virtual_stage_of: interleaved or in a V).
  int virtual_stage(int chunk, int s) const { return virtual_stage_of(e_.strategy.schedule, pp_, chunk, s); }
  /// Does a micro-batch's pass through the model start (end) at virtual stage `vstage` (each direction's ends under
  /// dualpipe)?
  bool starts_model(int vstage) const { return placesim::starts_model(e_.strategy.schedule, pp_, vstage); }
  bool ends_model(int vstage) const { return placesim::ends_model(e_.strategy.schedule, pp_, pp_ * v_, vstage); }
  /// Scatter-gather (strategy.p2p=megatron without sp): each TP group all-gathers the pieces of op's input its ranks
  /// received. Adds the all-gathers to op_tail_, so what follows waits for them.
  void receive_gather(int s, const PipeOp& op);
  /// strategy.p2p=megatron: does a blocking exchange follow op i of the stage's order?
  bool ends_call(const std::vector<PipeOp>& order, int i) const;
  /// The exchange after op i: the sends of `unsent`, and the receives of the ops up to the next exchange.
  void p2p_call(int s, const std::vector<PipeOp>& order, int i, std::vector<StageOp>& unsent);
  /// The sends of `unsent` (per lane), which it empties.
  std::vector<std::vector<TaskId>> send_unsent(int s, std::vector<StageOp>& unsent);
  /// strategy.p2p=deepspeed: p2p_call as DeepSpeed's slots order it (one blocking call at a time).
  void deepspeed_exchange(int s, const std::vector<PipeOp>& order, int i, std::vector<StageOp>& unsent);
  /// strategy.p2p=deepspeed with tp > 1: the TP all-gather of the output a backward's stage sent, before that backward.
  void regather_output(int s, const PipeOp& op);
  /// Posts the receives of the ops from `first` up to the next exchange; `gather`: and their scatter-gather.
  void post_receives(int s, const std::vector<PipeOp>& order, int first, bool gather = true);
  void finish_step(int s);
  /// strategy.param_gather_overlap: the after-step gathers of stage s issued at the step's start, each bucket feeding
  /// the first forward of its layer groups (param_sync_).
  void issue_param_sync(int s);
  void issue_expert_param_sync(int s, int chunk, int g);
  Collective regather_collective(const DataCollective& regather, std::int64_t bucket) const;
  /// A gradient all-reduce of `elems` between devices a and b (no stage), on the data-parallel stream.
  TaskId add_pair_allreduce(int a, int b, CommClass cls, std::int64_t elems);
  void embedding_sync();
  /// dualpipe: each device's gradients summed with its mirror's (mirror_grad_elems) before the optimizer.
  void mirror_sync();
  void sequence_parallel_grad_sync(int s);
  void set_resident_memory();
  // layout helpers
  std::vector<LayerGroup> chunk_groups(int s, int chunk) const;
  double activation_bytes(const LayerGroup& g) const;
  /// The same on lane `lane` (an MoE layer's routed activations depend on the lane's ep rank).
  double activation_bytes(const LayerGroup& g, std::size_t lane) const;
  std::int64_t padded(std::int64_t elems) const;  ///< a unit list padded to a multiple of dp

  const Experiment& e_;
  const ClusterSpec& c_;
  int dp_, tp_, pp_, v_, m_;
  int dl_;  ///< data lanes expanded: the first dl_ of dp_ (ExpandOptions::folded_lanes)
  int group_size_;
  std::vector<StageLayout> layouts_;
  std::vector<StageCosts> costs_;
  PipelineSchedule schedule_;
  bool synchronous_ = true;            ///< one Apply per stage at the step's end (flush)
  std::vector<int> apply_microbatch_;  ///< per stage: the micro-batch tag of the end-of-step Apply
  // PipeDream weight stashing: per version of the current stage, the forwards still waiting for their backward.
  std::map<int, int> version_refs_;
  int current_version_ = 0;
  std::vector<std::vector<std::vector<LayerGroup>>> groups_;  ///< [stage][chunk] -> layer groups
  TaskGraph g_;
  std::vector<std::array<TaskId, kStreams>> last_;
  std::map<std::pair<int, int>, int> tp_groups_;
  std::map<std::tuple<int, int, int>, int> cp_groups_;
  int cp_ = 1;  ///< context parallel degree: data lanes d = c + cp x (data-parallel index)
  double loss_saved_ = 0, loss_transient_ = 0;  ///< the loss's bytes on a head rank (loss_saved_bytes)
  std::map<std::tuple<int, int, int, AxisSet>, int> data_groups_;
  std::vector<DataCollective> plan_;  ///< the placement's collectives along the data axes (data_plan)
  std::map<std::vector<int>, int> subgroups_;
  // per (d, t) of the stage being expanded: the task a group's successor must follow
  std::vector<std::vector<TaskId>> frontier_;        // per (d, t): the tasks the next one of the op must follow
  std::vector<std::vector<TaskId>> before_compute_;  // per (d, t): the frontier the last compute task followed
  // per (d, t): the frontier the previous op of the stage ended with. Megatron-LM waits for an op's TP collectives
  // (the forward's all-reduces, the backward's asynchronous ones) before it returns, so the next op follows them.
  std::vector<std::vector<TaskId>> op_tail_;
  std::vector<TaskId> compute_of_group_;              // last compute task per (d, t) of the current group
  std::vector<std::vector<TaskId>> gather_window_;    // per (d, t): compute tasks of gathered groups, for the limit
  std::vector<std::vector<TaskId>> gather_of_group_;  // per (d, t): the gather tasks feeding the current group
  /// strategy.param_gather_overlap, per (lane, chunk, group) of the stage being expanded: the gathers of the updated
  /// parameters its first forward waits for.
  std::map<std::tuple<std::size_t, int, int>, std::vector<TaskId>> param_sync_;
  std::vector<std::vector<TaskId>> grad_window_;  // per (d, t): tasks releasing unsharded gradient buffers
  // NCCL runs one collective at a time per communicator (NVIDIA/nccl#574), and FSDP issues a unit's gather and the
  // gradient reduce-scatters on one process group. Per (d, t): the reduce-scatters of the current op in the order
  // they were created (the backward's last unit first), their first and last task of the member; and the last one
  // created before the op.
  struct IssuedReduce {
    TaskId first = kNoTask, last = kNoTask;
  };
  std::vector<std::vector<IssuedReduce>> op_reduces_;
  std::vector<IssuedReduce> reduce_before_op_;
  /// Orders the gather of lane (d, t) (its first and last task) after the reduce-scatter FSDP issued just before it
  /// and before the one it issued just after, when both run on the same group.
  void order_gather(std::size_t lane, TaskId gather_first, TaskId gather_last, bool forward, std::size_t depth);
  // per (d, t): the tasks that free offloaded activations (copy out, or backward), in the order they were allocated
  std::vector<std::vector<TaskId>> activation_window_;
  std::map<std::tuple<int, int, int, int>, TaskId> activation_copies_;  // (lane, micro-batch, chunk, group) -> D2H
  struct Boundary {
    std::vector<TaskId> producers;  ///< a transfer, or a V's turn on its stage: the tasks ending the sending op
    std::vector<TaskId> consumers, posters;
  };
  std::map<BoundaryKey, Boundary> boundaries_;
  bool blocking_p2p_ = false;                         // strategy.p2p=megatron on a flush schedule
  bool all_warmup_ = false;                           // the stage being expanded runs every forward first
  bool scatter_gather_ = false;                       // strategy.p2p=megatron or deepspeed without sp, tp > 1
  bool deepspeed_p2p_ = false;                        // strategy.p2p=deepspeed: one blocking call at a time
  std::vector<std::vector<BoundaryKey>> call_recvs_;  // per (d, t): the inputs the last exchange received
  // DP gradient buckets per (t, s)
  struct Bucket {
    std::int64_t elems = 0;                      ///< padded elements
    std::vector<std::vector<TaskId>> producers;  ///< per data index
  };
  std::map<std::pair<int, int>, Bucket> buckets_;
  std::vector<std::vector<TaskId>> step_end_deps_;         // per device: tasks the optimizer step waits for
  std::vector<TaskId> first_backward_;                     // per device: the last stage-0 group backward (embedding)
  std::vector<int> last_backward_op_;                      // per chunk of the stage: index of its last backward op
  std::vector<int> first_forward_op_, first_backward_op_;  // per chunk of the stage: index of its first of each
  // The op being expanded: its chunk's first forward, first backward, last backward (FSDP under a pipeline uses
  // them: gathers_once_per_step's gather before the first forward, defers_grad_sync's unsharded gradients from the
  // first backward and reduce-scatter after the last backward); defer_sync_: the last backward's reduce-scatters wait
  // for the chunk's whole backward.
  bool op_first_forward_ = false, op_first_backward_ = false, op_last_backward_ = false, defer_sync_ = false;
  bool op_regather_ = false;           // reshard_after_backward: this op gathers its chunk's units again
  std::vector<bool> chunk_resharded_;  // per chunk of the stage: resharded (no op yet, or its last op a backward)
  int ep_ = 1;
  ExpertRouting routing_;                          ///< how each rank's tokens spread over its ep group
  int dispatch_split_ = -1;                        ///< TaskGraph::a2a_tokens entry of the routing
  std::map<std::pair<int, int>, int> ep_groups_;   ///< (stage, first lane) -> group
  std::map<std::pair<int, int>, int> edp_groups_;  ///< (stage, ep rank) -> group
  std::vector<std::vector<TaskId>> expert_last_;   ///< per stage, per lane: the last expert backward of the step
  /// Per (stage, lane, chunk, group): the expert backward (or W) of the chunk's last backward op, after which the
  /// group's expert gradients are complete.
  std::map<std::tuple<int, std::size_t, int, int>, TaskId> expert_ready_;
  /// Per (stage, ep group): the experts' gradient bucket being filled in the backward (expert_grads_ready).
  struct ExpertBucket {
    std::int64_t elems = 0;
    std::vector<TaskId> ready;   ///< the backwards that complete its layers' gradients
    std::vector<TaskId> before;  ///< the bucket reduced before it
  };
  std::map<std::pair<int, int>, ExpertBucket> expert_buckets_;
  // per ep group of the stage, of the op's MoE group being expanded: its first all-to-all and its expert tasks
  std::vector<TaskId> expert_in_;
  std::vector<std::vector<TaskId>> expert_computes_;
  /// What belongs to the op being expanded (the members of the same names), which a DualPipe pair swaps between its
  /// two ops.
  struct OpState {
    std::vector<std::vector<TaskId>> frontier, before_compute, gather_of_group;
    std::vector<TaskId> compute_of_group;
    std::vector<std::vector<IssuedReduce>> op_reduces;
    std::vector<TaskId> expert_in;
    std::vector<std::vector<TaskId>> expert_computes;
    bool first_forward = false, first_backward = false, last_backward = false, defer_sync = false, regather = false;
  };
  void swap_op_state(OpState& o);
};

}  // namespace placesim::detail
