#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "strategies/placement/Experiment.hpp"

namespace placesim {

/// What one device of a pipeline stage holds, in units (layers, embedding, head) that are gathered, bucketed and
/// sharded whole. Element counts are per device after tensor parallelism.
///
///   stage 0            stage 1 ...        stage p-1
///   [embed][L0..Lk]    [Lk+1 .. L2k+1]    [.. L(n-1)][norm+head]
struct StageLayout {
  int stage = 0;
  std::int64_t first_layer = 0;  ///< global index of the stage's first layer (non-interleaved order)
  std::int64_t n_layers = 0;     ///< layers on one device of this stage (over all its chunks)
  /// Per model chunk of the stage (one without interleaving): its layers and the global index of its first layer.
  /// Chunk k of stage s is virtual stage k * pp + s.
  std::vector<std::int64_t> chunk_layers, chunk_first;
  std::int64_t layer_elems = 0;      ///< parameters of one layer on one device
  std::int64_t embed_elems = 0;      ///< word (vocab-parallel) and position embedding; stage 0 only
  std::int64_t head_elems = 0;       ///< final norm and output head, or the tied embedding's copy; last stage only
  std::int64_t tied_copy_elems = 0;  ///< part of embed/head that is one copy of a tied embedding split over stages
  /// Mixture of experts: the stage's MoE layers, the dense part of one (attention, router, shared experts) on one
  /// device (layer_elems is then a dense layer's), and the routed experts of one MoE layer one device holds
  /// (experts / ep whole experts), placed along the expert-data-parallel group.
  std::int64_t moe_layers = 0, moe_layer_elems = 0, expert_elems = 0;

  /// Dense parameters (every unit but the routed experts) on one device.
  std::int64_t elems() const {
    return (n_layers - moe_layers) * layer_elems + moe_layers * moe_layer_elems + embed_elems + head_elems;
  }
  /// Routed expert parameters on one device: one unit per MoE layer.
  std::int64_t expert_total() const { return moe_layers * expert_elems; }
  /// The experts' units, each padded to a multiple of edp, added up.
  std::int64_t expert_padded(std::int64_t edp) const;
  /// One MoE layer's experts, padded to a multiple of edp (expert_padded is moe_layers of them).
  std::int64_t expert_layer_padded(std::int64_t edp) const;
  /// Elements one device holds when every unit is sharded over `n` ranks (each unit padded to a multiple of n).
  std::int64_t sharded_elems(std::int64_t n) const;
  /// Opaque model without layers: the bucket it is gathered and reduced in (bucket_bytes of parameters, a multiple of
  /// dp); the stage's one unit is split into such buckets and a remainder. 0 otherwise.
  std::int64_t bucket_elems = 0;
  /// The largest gather unit (a layer with the embedding or head it carries), or the bucket of an opaque model
  /// without layers: one transient buffer.
  std::int64_t max_unit_elems() const;
  /// Elements of one state a device of the stage holds under the strategy's placement (held_share of its units).
  std::int64_t held_elems(const StrategySpec& s, State state) const;
  /// The stage's units, each padded to a multiple of `dp`, added up.
  std::int64_t padded_elems(std::int64_t dp) const { return sharded_elems(dp) * dp; }
};

/// Elements of one state held of units with `whole` elements in all, `padded` once each is padded to a multiple of
/// dp: all when the state is replicated along every data axis of degree > 1, else padded divided over the axes it is
/// sharded along (with or without gather); none when materialized or offloaded. Excludes hpZ's secondary shard.
std::int64_t held_share(const StrategySpec& s, State state, std::int64_t whole, std::int64_t padded);
/// hpZ's secondary parameter shard of such units: padded / dp_shard, or 0 without one.
std::int64_t secondary_share(const StrategySpec& s, std::int64_t padded);

/// Elements of one stashed weight version (PipeDream, PipeDream-2BW) on a device of the stage: the version is kept
/// as the device holds its parameters — whole when replicated, its shard when sharded (with or without gather),
/// nothing on the device when materialized or offloaded.
std::int64_t stashed_version_elems(const Experiment& e, const StageLayout& st);

/// Layers of each of `stages` stages. An even split when `stages` divides `layers`; otherwise every stage gets
/// ceil(layers / stages) except that the end stages, which also hold the embedding and the head, give up one layer
/// each, alternating first, last, second, second-to-last, ... (Llama 3 405B: 126 layers on 16 stages = 7, 8 x 14, 7).
std::vector<std::int64_t> stage_layer_counts(std::int64_t layers, std::int64_t stages);

/// Layers of each of the 2 x `stages` virtual stages of a V, in model order: every stage gets ceil(layers / stages)
/// except that the first stages, from stage 0 (which holds both the embedding and the head), give up one layer each;
/// a stage's layers split over its chunks with the odd one in the first.
std::vector<std::int64_t> v_stage_layer_counts(std::int64_t layers, std::int64_t stages);

/// Layers of each virtual stage in model order (pp x chunks entries with the interleaved schedule, 2 pp in a V, pp
/// otherwise): strategy.layers_per_stage when given, else stage_layer_counts over the virtual stages (in a V
/// v_stage_layer_counts). Empty for an opaque model.
std::vector<std::int64_t> virtual_stage_layers(const Experiment& e);

/// One entry per pipeline stage.
std::vector<StageLayout> stage_layouts(const Experiment& e);

/// Gradient elements of a stage that sequence parallelism leaves partial on each TP rank and Megatron-LM all-reduces
/// over the TP group once per step: the replicated norms and row-parallel biases of its layers, and the final norm on
/// the last stage.
std::int64_t sequence_parallel_grad_elems(const Experiment& e, const StageLayout& st);
/// Under dualpipe, the gradient elements a device sums with its mirror before the optimizer (the same data and TP
/// rank on stage pp - 1 - s, which holds the same layers for the other direction), as DeepSeek's example sums the two
/// copies' gradients (deepseek-ai/DualPipe examples/example_dualpipe.py): what its optimizer updates, routed experts
/// included. 0 under every other schedule.
std::int64_t mirror_grad_elems(const Experiment& e, const StageLayout& st);

/// Context parallelism: elements of K and V one rank holds of one layer and micro-batch, its tokens and its tp share
/// of the key-value heads (GQA: kv_heads, not heads): 2 x seq_len / cp x micro_batch x kv_heads x head_dim / tp.
/// PyTorch's CP (strategy.cp_impl) exchanges SDPA's inputs, repeated to the query heads by torchtitan: heads.
std::int64_t cp_kv_elems(const Experiment& e);
/// The attention output's elements on one rank, one layer and micro-batch: seq_len / cp x micro_batch x heads x
/// the value head dimension / tp.
std::int64_t cp_out_elems(const Experiment& e);
/// PyTorch's CP: bytes of one send of a layer's K/V gradient sum around the ring (fp32, 4 bytes a K/V element; cp
/// sends a backward pass).
double cp_grad_send_bytes(const Experiment& e);
/// Bytes one rank sends for context parallelism per layer and micro-batch, in one pass: forward (cp - 1) blocks of
/// K/V (ring steps, or its share of the all-gather); backward twice that (ring: K/V and their gradients; all-gather:
/// the re-gather and the gradients' reduce-scatter); a full recompute repeats the forward's. PyTorch's backward: the
/// K/V's cp - 1 blocks again and cp sends of the K/V gradients in fp32 (4 bytes an element).
double cp_layer_bytes(const Experiment& e, bool backward);

/// Context parallelism's transient K/V buffers during one layer's attention on a rank, per pass: the ring holds the
/// cp - 1 blocks it receives in the forward (TransformerEngine allocates one per step) and K/V with their gradients
/// double-buffered in the backward (4 blocks); the all-gather holds the gathered K/V (cp blocks) in the forward and
/// them and their gathered gradients (2 cp) in the backward. PyTorch: the gathered K/V (cp blocks; 2 rotated by
/// the all-to-all rotater) and its fp32 tensors: the merged and the block's output forward; the query's gradient,
/// the K/V gradients' sum, the received one and the one sent backward.
double cp_buffer_bytes(const Experiment& e, bool backward);

/// PyTorch's context parallelism (torch/distributed/tensor/experimental/_attention.py): the element-wise kernels
/// around one layer's block attention kernels on one rank and micro-batch, in one pass -- the K/V copies before each
/// exchange, the fp32 merge of each block's output (_SDPAMerger) forward, the fp32 accumulation of the query's and
/// K/V gradients backward -- as bytes read and written and kernels launched, averaged over the cp ranks (which
/// steps are partial depends on the rank). Zero for TransformerEngine's CP, whose kernels merge in-kernel.
struct CpMergeWork {
  double bytes = 0, kernels = 0;
};
CpMergeWork cp_merge_work(const Experiment& e, bool backward);

/// Activation bytes one layer stores for one micro-batch on one device (Korthikanti et al., arXiv 2205.05198,
/// generalised to GQA, gated MLPs, no dropout and flash attention). A dense layer.
double layer_activation_bytes(const Experiment& e);
/// The same for a layer that keeps every activation (recompute none): the layers training.recompute_layers leaves
/// out of a full recompute.
double kept_layer_activation_bytes(const Experiment& e);
/// training.recompute full of only the first recompute_layers layers of each model chunk (Megatron's block method).
bool partial_recompute(const Experiment& e);
/// Of a model chunk of `chunk_layers` layers, those fully recomputed: all under recompute full (with
/// training.recompute_layers, at most that many), none under the other modes.
std::int64_t recomputed_layers(const Experiment& e, std::int64_t chunk_layers);
/// The same summed over the stage's chunks.
std::int64_t stage_recomputed_layers(const Experiment& e, const StageLayout& st);
/// Activation bytes the layers of a dense model chunk of `chunk_layers` layers store for one micro-batch.
double chunk_layers_activation_bytes(const Experiment& e, std::int64_t chunk_layers);
/// The loss over the output head's logits, one micro-batch on a rank holding the head: its logits are
/// local sequence x micro-batch x vocab / tp (vocab-parallel). By training.loss_kernel (LossKernel), saved from the
/// forward to the backward: the fp32 softmax (vocab-parallel: Megatron's cross entropy keeps exp(logits) in fp32)
/// or log-softmax (pytorch: cross_entropy on logits cast to fp32, as torchtitan computes it), 4 bytes a logit; or
/// (fused) the 16-bit logits and an fp32 log-sum-exp per token. Added at the backward's peak: vocab-parallel the
/// 16-bit gradient cast from the fp32 one computed in place, 2 bytes; pytorch nll_loss's fp32 gradient and
/// log-softmax's, 8 bytes; fused the 16-bit gradient, 2 bytes. 0 for an opaque model.
double loss_saved_bytes(const Experiment& e);
double loss_transient_bytes(const Experiment& e);
/// The same for an MoE layer on a device whose experts compute `routed` token-expert pairs: the attention's, the
/// shared experts' (as an MLP of shared_experts x shared_ffn) and per pair the expert's input, its activation's
/// input(s) and its second matrix's input (the experts are not tensor-parallel).
double moe_layer_activation_bytes(const Experiment& e, std::int64_t routed);
/// Activation bytes the layers of a stage store for one micro-batch, per layer on average over its dense and MoE
/// layers, on its busiest expert rank; layer_activation_bytes for a dense model.
double stage_layer_activation_bytes(const Experiment& e, const StageLayout& st);

/// Offloaded activations (strategy.placement.activations=offloaded) move layer by layer: each layer's go to host
/// memory after its forward and come back before its backward, except the last layer of each model chunk, whose
/// backward follows at once (as Megatron-LM's CPU offloading, which offloads fewer layers than the model has).
/// Layers per micro-batch whose activations a device of the stage offloads: its layers less one per chunk.
double offloaded_activation_layers(const Experiment& e, const StageLayout& st);

}  // namespace placesim
