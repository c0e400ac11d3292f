#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "strategies/placement/Placement.hpp"
#include "workloads/json/JsonReader.hpp"

namespace placesim {

/// Pipeline schedules. ZbH1 and ZbH2 split each backward into its input-gradient part (B) and its weight-gradient
/// part (W), and run W later to fill the pipeline's bubble (Qi et al., "Zero Bubble Pipeline Parallelism", arXiv
/// 2401.10241, handcrafted schedules ZB-H1 and ZB-H2); ZbV does so on two model chunks per stage placed in a V
/// (Qi et al., arXiv 2405.15362: stage s holds virtual stages s and 2S - 1 - s).
/// DualPipeV (deepseek-ai/DualPipe, dualpipev.py; the V-shaped DualPipe of the DeepSeek-V3 report, arXiv 2412.19437)
/// uses the same V and pairs one chunk's forward with the other's backward in its steady state. InterleavedZb is
/// PyTorch's interleaved zero bubble (torch.distributed.pipelining ScheduleInterleavedZeroBubble, "ZB1P"): Megatron's
/// interleaved chunks, each backward split into B and W. DualPipe (deepseek-ai/DualPipe, dualpipe.py; DeepSeek-V3
/// report, arXiv 2412.19437) runs two pipelines in opposite directions over the same stages (stage s holds stage s of
/// one and stage S - 1 - s of the other: two copies of the parameters) and pairs them as DualPipeV; abstract
/// pipelines only.
enum class Schedule {
  GPipe,
  OneFOneB,
  Interleaved,
  PipeDream,
  PipeDream2BW,
  LocalSGD,
  ZbH1,
  ZbH2,
  ZbV,
  DualPipeV,
  InterleavedZb,
  DualPipe
};

/// How pipeline stages exchange activations and gradients.
/// - Async: each boundary is sent as soon as its op ends and overlaps the sender's next op; every TP rank sends the
///   whole activation (without sp).
/// - Megatron: as Megatron-LM's schedules (megatron/schedules.py, p2p_communication.py): after each op (in the
///   interleaved steady state after each forward-backward pair) one blocking batched call sends the outputs and
///   receives the inputs of the next ops; a transfer starts when both sides have posted it and the device goes on
///   when all transfers of the call are done. Without sp each TP rank sends 1/tp of the activation and the receiving
///   TP group all-gathers it over its links (scatter_gather_tensors_in_pipeline).
/// - DeepSpeed: as DeepSpeed's pipeline engine (deepspeed/runtime/pipe/engine.py, schedule.py TrainSchedule, v0.7):
/// 1F1B
///   in lockstep slots whose sends and receives are separate blocking calls, one at a time and never beside compute:
///   between two ops a stage sends its pending output, then receives the next op's input, except between a backward
///   and a forward, where it receives first (the forward slot's RecvActivation before SendGrad). With tp > 1 each rank
///   sends 1/tp of the tensor and the receiving TP group all-gathers it (PartitionedTensor), and before each backward
///   of a stage that sent its output the stage all-gathers that output again over its TP group (_exec_backward_pass).
enum class PipelineP2P { Async, Megatron, DeepSpeed };

/// How a data-parallel collective runs: one ring over the group, or Hierarchical (intra-node reduce-scatter,
/// inter-node ring, intra-node all-gather) when every node holds the same number (> 1) of its members.
enum class CollectiveScheme { Ring, Hierarchical };

/// How context parallelism exchanges keys and values (Megatron-Core's cp_comm_type):
/// - Ring ("p2p", ring attention): K/V blocks pass around the cp ring in cp - 1 steps, each transfer overlapping the
///   attention block of the step before; the backward passes K/V and their gradients the same way.
/// - AllGather (the Llama 3 paper, arXiv 2407.21783 §3.3.2): K and V are all-gathered before attention (and again in
///   the backward), their gradients reduce-scattered; exposed, small with GQA.
enum class CpComm { Ring, AllGather };

/// Whose context parallelism runs the attention (strategy.cp_impl):
/// - TransformerEngine (Megatron-Core, NeMo): fused attention kernels per block that merge their partial results
///   in-kernel; K/V at the key-value head count (GQA); the exchange as CpComm says.
/// - PyTorch (torch.distributed.tensor.experimental.context_parallel, torchtitan): each block is an SDPA kernel on
///   the model's own K/V -- torchtitan repeats them to the query heads before SDPA (repeat_kv) -- whose outputs are
///   merged in fp32 by element-wise kernels (_SDPAMerger); the backward accumulates the gradients in fp32 and passes
///   the K/V gradients around the ring in fp32 (an all-to-all rotater, cp sends). The K/V themselves: all-gathered
///   once beside the first (local) block (CpComm::AllGather, torchtitan's default rotate method 'allgather'), or
///   rotated around the ring (CpComm::Ring, rotate method 'alltoall').
enum class CpImpl { TransformerEngine, PyTorch };

/// A device mesh (dp_replicate x dp_shard x cp x tp x pp; dp = dp_replicate x dp_shard) plus the placement of each
/// state along each data-parallel axis, the pipeline schedule and the knobs of the collectives. Ranks follow
/// Megatron-LM's order with the data axis split: tp fastest, then cp, dp_shard, dp_replicate, pp.
struct StrategySpec {
  std::string preset = "custom";
  std::int64_t dp = 1, tp = 1, pp = 1;
  /// Context parallelism: every micro-batch's sequence is split over cp ranks (2 cp chunks, rank i holding chunks i
  /// and 2cp-1-i, so causal attention is balanced). They share the micro-batches of one data-parallel rank, so the
  /// batch arithmetic uses dp alone. Model states take their dp_shard placement along cp (Megatron-LM's data-parallel
  /// group with cp, torchtitan's dp_shard_cp mesh): gradients are synchronised over dp x cp.
  std::int64_t cp = 1;
  CpComm cp_comm = CpComm::Ring;
  CpImpl cp_impl = CpImpl::TransformerEngine;   ///< the stack's (PyTorch for torchtitan's) unless written
  std::int64_t dp_replicate = 1, dp_shard = 1;  ///< the data-parallel axes (strategy.mesh); dp is their product
  /// Expert parallelism (mixture-of-experts models): the routed experts of every MoE layer are split over ep ranks.
  /// The ep groups reshape the tp x cp x dp ranks of each pipeline stage (Megatron-Core's expert generator with
  /// expert-tensor-parallel size 1): consecutive ranks of a stage form an ep group, and the ranks that hold the same
  /// experts form the expert-data-parallel group of edp = tp x cp x dp / ep ranks, over which expert gradients are
  /// synchronised (dense gradients over dp x cp as before). ep must divide tp x cp x dp.
  std::int64_t ep = 1;
  bool sp = false;  ///< sequence parallelism over the tp group (Korthikanti et al.)
  /// Megatron-LM overlaps the TP collectives of the backward pass with its weight-gradient GEMMs (since 2021-08,
  /// measured by Korthikanti et al.); false: they run exposed, after the backward compute of their layer, as in the
  /// April 2021 code of Narayanan et al. (arXiv 2104.04473)
  bool tp_overlap = true;
  /// Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm, megatron/core/pipeline_parallel/
  /// combined_1f1b.py): one more warm-up forward, then each steady-state forward and the backward after it run as one
  /// step whose layers alternate, so that one micro-batch's expert all-to-all runs beside the other's compute. MoE
  /// models with ep > 1; interleaved when pp > 1, 1f1b when pp = 1.
  bool ep_overlap = false;
  /// Megatron-Core's --overlap-param-gather with the distributed optimizer (NVIDIA/Megatron-LM core_v0.14.0
  /// megatron/core/optimizer/distrib_optimizer.py step_with_ready_grads, distributed/param_and_grad_buffer.py
  /// finish_param_sync), as NeMo's recipes run it (and NeMo 1.0's distributed Adam, overlap_param_sync): the updated
  /// shards are not all-gathered after the step but bucket by bucket during the next step's first forward, each
  /// bucket's gather launched when the one before it is waited for and waited for by the forward pre-hook of its first
  /// layer. Costed in one step as the gathers at its start, each layer group's first forward after its bucket's
  /// gather. No effect without an after-step gather (the optimizer sharded, the parameters replicated).
  bool param_gather_overlap = false;
  /// DeepSpeed's BF16_Optimizer (bf16 with ZeRO stage 0 or 1) under its pipeline engine (microsoft/DeepSpeed v0.7.0
  /// deepspeed/runtime/pipe/engine.py _exec_reduce_grads -> _bf16_reduce_grads -> engine.py
  /// buffered_allreduce_fallback: dist.all_reduce of the fp32 gradients): the accumulated gradients are all-reduced
  /// over the data-parallel group although the optimizer is sharded (each rank then steps its shard and the updated
  /// parameters are all-gathered), twice the bytes of the reduce-scatter the placement needs. Refused where the
  /// placement reduce-scatters nothing at the step (gradients sharded, or the optimizer replicated).
  bool grad_allreduce = false;
  /// PyTorch's DTensor TP on batch-first activations ([batch, seq, hidden], sequence parallel as Shard(1): torchtitan):
  /// funcol's all_gather_tensor(gather_dim=1) gathers along dim 0 and then copies the gathered buffer into place
  /// (torch.cat of its chunks), reduce_scatter_tensor(scatter_dim=1) copies its input into rank order first; each copy
  /// reads and writes the full buffer on the compute stream. Costed only with sp and without tp_overlap: async TP's
  /// fused all-gather-matmul and matmul-reduce-scatter (torch/_inductor/fx_passes/micro_pipeline_tp.py matches the
  /// all-gather with its split + cat) absorb them. Megatron's [seq, batch, hidden] gathers along dim 0: no copies.
  bool tp_copies = false;
  /// torchao's Float8 TP plan (torchao/float8/float8_tensor_parallel.py: Float8ColwiseParallel, Float8RowwiseParallel,
  /// PrepareFloat8ModuleInput; torchtitan applies it with tensorwise Float8 and TP): the linear layers' inputs are cast
  /// to FP8 before their sequence-parallel all-gather, and the output gradients before theirs (the backward's
  /// all-gathers), so every per-layer all-gather moves 1 byte an element (and its copy, tp_copies, too); the
  /// reduce-scatters stay in the activations' dtype. Not given by anyone: on with training.fp8, fp8_scaling
  /// tensorwise, sp and tp_copies (PyTorch's DTensor TP), as torchtitan runs it.
  bool tp_fp8_gather = false;
  Schedule schedule = Schedule::OneFOneB;
  PipelineP2P p2p = PipelineP2P::Megatron;
  std::int64_t microbatches = 0;  ///< per step per pipeline; 0 = global_batch / (micro_batch * dp)
  std::int64_t chunks = 1;        ///< interleaved: model chunks v per device
  /// interleaved: micro-batches that pass through one chunk before the stage moves to its next chunk (the Llama 3
  /// paper's tunable N, Megatron-Core's microbatch_group_size_per_vp_stage); 0 = pp (Megatron-LM's schedule)
  std::int64_t microbatch_group = 0;
  /// Layers of each virtual stage in model order (pp x chunks entries; pp without interleaving); empty = the rule of
  /// stage_layer_counts (even, or the end stages one layer lighter).
  std::vector<std::int64_t> layers_per_stage;
  std::int64_t noam = 0;         ///< pipedream: micro-batches admitted at once; 0 = pp
  std::int64_t replicas = 1;     ///< localsgd: model copies M sharing the pipeline
  std::int64_t local_steps = 1;  ///< localsgd: H steps between averaging
  double bucket_bytes = 25e6;    ///< DDP/FSDP gradient bucket size
  /// Parameters gathered per unit (sharded-with-gather: FSDP2, ZeRO-3), as FSDP2 runs them
  /// (torch/distributed/fsdp/_fully_shard): reshard_after_forward=false keeps each unit's gathered parameters from
  /// its forward to its backward (no backward all-gather; the Llama 3 paper's variant, torchtitan with pp);
  /// prefetch_forward / prefetch_backward units are gathered ahead of the one computing (FSDP2's default: 1 each;
  /// 0 = no overlap); gather_copies: the copy-out of each gathered unit (split_with_sizes_copy, 2 bytes moved per
  /// byte) and the copy-in of its gradients for the reduce-scatter (chunk_cat, cast to the reduce dtype) run on the
  /// compute stream.
  bool reshard_after_forward = true;
  /// FSDP under a pipeline (reshard_after_forward=false, pp > 1) as torch.distributed.pipelining ran it before its
  /// stage called set_reshard_after_backward(False) (the torch of torchtitan's December 2024 benchmarks): each unit
  /// resharded after every backward and gathered again before the chunk's next op, m gathers per step instead of one;
  /// gradients still accumulated unsharded and reduce-scattered after the chunk's last backward. false: gathered once.
  bool reshard_after_backward = false;
  std::int64_t prefetch_forward = 1, prefetch_backward = 1;
  bool gather_copies = true;
  /// FSDP1's FlatParameter (torch.distributed.fsdp.FullyShardedDataParallel: llm-foundry, fms-fsdp): a unit is
  /// all-gathered into one flat buffer whose views are its parameters (_flat_param.py, _use_unsharded_flat_param), so
  /// there is no copy-out; in the backward autograd's split backward concatenates the parameters' gradients into the
  /// flat gradient (read and written in the parameters' dtype), then casts it to the reduce dtype when that differs.
  /// Changes only what gather_copies costs.
  bool flat_params = false;
  CollectiveScheme collective = CollectiveScheme::Ring;
  Placement placement;

  std::int64_t devices() const { return dp * cp * tp * pp; }
  /// tp_copies as costed: sequence-parallel collectives not fused into async TP's matmuls.
  bool costs_tp_copies() const { return tp_copies && sp && tp > 1 && !tp_overlap; }
  /// Pipeline boundaries sent as 1/tp pieces that the receiving TP group all-gathers (Megatron-LM's scatter-gather
  /// without sp, DeepSpeed's PartitionedTensor).
  bool scatter_gather() const { return p2p != PipelineP2P::Async && !sp && tp > 1; }
  /// FSDP under a pipeline schedule as torch.distributed.pipelining runs it (torchtitan's default with pp > 1:
  /// reshard_after_forward=false; the stage calls set_reshard_after_backward(False) and
  /// set_requires_gradient_sync(False) for every backward and reduces after the last): each gathered unit is
  /// all-gathered before the step's first forward and kept until its chunk's last backward, its gradients accumulate
  /// unsharded and are reduce-scattered once, after that backward.
  bool gathers_once_per_step() const { return defers_grad_sync() && !reshard_after_backward; }
  /// The same with reshard_after_backward=true: gathered before the chunk's first op and before each op that follows
  /// one of its backwards (m gathers per step), resharded after every backward.
  bool regathers_after_backward() const { return defers_grad_sync() && reshard_after_backward; }
  /// FSDP under a pipeline, either way: gradients accumulated unsharded, reduce-scattered after the last backward.
  bool defers_grad_sync() const { return !reshard_after_forward && pp > 1; }
  /// The placement gathers updated parameter shards after the step (optimizer sharded, parameters replicated along
  /// some data axis): what param_gather_overlap moves.
  bool gathers_after_step() const {
    return placement.sharded_axes(State::Optimizer) != kNoAxes &&
           (placement.mode(State::Parameters, kShardAxis) == Mode::Replicated ||
            placement.mode(State::Parameters, kReplicateAxis) == Mode::Replicated);
  }
  /// The placement reduce-scatters accumulated gradients at the step (replicated gradients, a sharded optimizer):
  /// what grad_allreduce turns into an all-reduce.
  bool reduce_scatters_at_step() const {
    return placement.sharded_axes(State::Gradients) == kNoAxes && placement.sharded_axes(State::Optimizer) != kNoAxes;
  }
  /// The interleaved schedule's micro-batch group N: microbatch_group, or pp when it is not given.
  std::int64_t interleave_group() const { return microbatch_group > 0 ? microbatch_group : pp; }
  /// The ranks over which data-parallel states are placed: dp x cp (cp counts with dp_shard).
  std::int64_t data_ranks() const { return dp * cp; }
  /// Expert-data-parallel ranks: the stage's ranks that hold the same experts.
  std::int64_t edp() const { return tp * cp * dp / ep; }
  /// Equal in every field, the preset's name included (compare with the names set equal to ask whether two
  /// presets resolve to the same strategy).
  bool operator==(const StrategySpec&) const = default;
  /// The number of ranks spanned by data axes `axes`; dp_shard includes cp.
  std::int64_t degree(AxisSet axes) const {
    return ((axes & kShardAxis) != 0 ? dp_shard * cp : 1) * ((axes & kReplicateAxis) != 0 ? dp_replicate : 1);
  }
};

/// The largest mesh accepted (2^31 - 1 devices): larger products of degrees are refused, never wrapped.
inline constexpr std::int64_t kMaxDevices = 2147483647;
/// Most micro-batches per step per pipeline placesim accepts (the schedules index them with products of chunks and
/// stages).
inline constexpr std::int64_t kMaxMicrobatches = 2147483647;

/// A strategy preset's placement table: per state, its mode along each mesh axis (dp_shard, dp_replicate, tp, pp).
struct PresetTable {
  std::string name, description;
  /// rows: parameters, gradients, optimizer, activations; columns: dp_shard, dp_replicate, tp, pp
  std::vector<std::vector<std::string>> modes;
};
std::vector<PresetTable> strategy_preset_tables();

/// Parses the "strategy" field: a preset name or an object that may name a "preset" and override its fields
/// (placement field by field). With `errors`, field errors are collected there (see ObjectReader).
StrategySpec parse_strategy(const Json& value, ErrorList* errors = nullptr);

/// The name of data axes for reports: axes_name(), or "dp" when the data axis is not split (dp_replicate = 1).
std::string axes_label(const StrategySpec& s, AxisSet axes);
/// "dp 8 x tp 4 x pp 2", or with a split data axis "dp 64 (dp_replicate 8 x dp_shard 8) x tp 1 x pp 1".
std::string mesh_string(const StrategySpec& s);
std::string to_string(Schedule s);
std::string to_string(PipelineP2P p);
std::string to_string(CollectiveScheme c);
std::string to_string(CpComm c);
std::string to_string(CpImpl c);
std::vector<std::pair<std::string, std::string>> strategy_preset_list();

/// True for the schedules that make one synchronous SGD step per step (gpipe, 1f1b, interleaved and the zero-bubble
/// ones).
bool synchronous_schedule(Schedule schedule);
/// Weight updates of a stage per step of s.microbatches micro-batches: one per micro-batch under PipeDream, one
/// under every other schedule (PipeDream-2BW's version per step, LocalSGD's rounds aside).
std::int64_t updates_per_step(const StrategySpec& s);
/// True for the schedules that run a backward as two ops, input gradient then weight gradient (zb-h1, zb-h2, zb-v,
/// dualpipev, interleaved-zb, dualpipe).
bool splits_backward(Schedule schedule);
/// True for DualPipe's schedules (dualpipev, dualpipe), which run a forward and the next backward as one pair, their
/// layers overlapping (one's all-to-all beside the other's compute).
bool overlaps_pairs(Schedule schedule);
/// True for the schedules that place exactly two model chunks on every stage in a V (zb-v, dualpipev).
bool v_shaped(Schedule schedule);
/// True for DualPipe: two pipelines in opposite directions, micro-batches 0..M/2-1 entering at stage 0 and the others
/// at stage S - 1; chunk 0 of stage s is virtual stage s, chunk 1 virtual stage 2S - 1 - s, as in a V, but a
/// micro-batch passes virtual stages 0..S-1 or S..2S-1 only.
bool bidirectional(Schedule schedule);
/// True for the schedules that place strategy.chunks model chunks on every stage, chunk c of stage s at virtual stage
/// c x pp + s (interleaved, interleaved-zb).
bool interleaves_chunks(Schedule schedule);
/// Model chunks on every pipeline stage: strategy.chunks under the interleaved schedule, two in a V and under
/// dualpipe (one per direction), else one.
std::int64_t chunks_per_stage(const StrategySpec& s);
/// The virtual stages one micro-batch passes, in model order: pp x chunks_per_stage, or pp under dualpipe (each
/// direction is one copy of the whole model on pp stages).
std::int64_t model_stages(const StrategySpec& s);
/// Does a micro-batch's pass through the model start (end) at virtual stage `vstage` of `stages` pipeline stages
/// with `vstages` virtual stages? Virtual stage 0 (the last), or under dualpipe each direction's first, 0 and S
/// (last, S - 1 and 2S - 1).
bool starts_model(Schedule schedule, int stages, int vstage);
bool ends_model(Schedule schedule, int stages, int vstages, int vstage);
/// The position of virtual stage `vstage` in its copy of the model: vstage, or vstage mod stages under dualpipe.
int model_position(Schedule schedule, int stages, int vstage);
/// The position in the model (virtual stage) of chunk `chunk` of stage `stage` of `stages`: chunk x stages + stage
/// (Megatron-LM's interleaving), except in a V, where stage s holds virtual stages s and 2 stages - 1 - s (Qi et al.,
/// arXiv 2405.15362; DualPipeV): the last stage feeds its own second chunk and the first stage holds the model's end.
/// DualPipe numbers its two directions the same way (see bidirectional).
int virtual_stage_of(Schedule schedule, int stages, int chunk, int stage);
/// The stage holding virtual stage `vstage` (the inverse of virtual_stage_of over stages).
int stage_of_virtual(Schedule schedule, int stages, int vstage);
/// The stage holding the model's last layers, its output layer and the loss: the last stage, or the first in a V.
/// Under dualpipe the last stage holds the first direction's; the first stage the second's (holds_head).
std::int64_t head_stage(const StrategySpec& s);
/// Does stage `stage` run an output layer and loss (head_stage, and stage 0 under dualpipe) or an embedding
/// (stage 0, and the last stage under dualpipe)?
bool holds_head(const StrategySpec& s, std::int64_t stage);
bool holds_embedding(const StrategySpec& s, std::int64_t stage);
/// The share of a step's micro-batches each model chunk of a stage runs: 1, or 1/2 under dualpipe (each direction
/// takes half).
double chunk_microbatch_share(const StrategySpec& s);

}  // namespace placesim
