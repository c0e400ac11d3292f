#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "workloads/json/JsonReader.hpp"
#include "workloads/model/Training.hpp"

namespace placesim {

/// The layer shape a model's flags default to (see ModelSpec).
enum class ModelFamily { Gpt, Llama, Neox };

/// A transformer decoder stack, or an opaque model known only by its parameter count.
/// Families differ in the layer's shape: GPT (learned positions, LayerNorm with bias, 4h GeLU MLP, dropout,
/// tied embeddings) and Llama (rotary positions, RMSNorm, no biases, gated SiLU MLP, GQA, untied head).
struct ModelSpec {
  std::string name = "custom";
  ModelFamily family = ModelFamily::Gpt;  ///< sets the shape flags' defaults
  std::int64_t layers = 0;                ///< 0 with parameters > 0: an opaque model
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;  ///< key/value heads (GQA); defaults to heads
  std::int64_t ffn = 0;       ///< MLP inner size; defaults to 4 * hidden
  std::int64_t vocab = 0;
  std::int64_t seq_len = 0;        ///< training sequence length
  std::int64_t max_positions = 0;  ///< the context the model was built for (0: unknown); learned positions size to it
  std::string seq_len_source;      ///< how seq_len was chosen when the input did not give it (else empty)
  bool gated_mlp = false;          ///< three MLP matrices (SwiGLU) instead of two
  bool bias = true;                ///< linear layers and norms carry biases
  bool learned_positions = true;
  bool tied_embeddings = true;
  bool dropout = true;             ///< dropout masks are stored (Korthikanti's formulas assume so)
  bool flash_attention = true;     ///< fused attention (FlashAttention): scores never stored; every family's default
  double opaque_parameters = 0;    ///< parameter count of an opaque model
  std::int64_t opaque_layers = 0;  ///< optional layer count of an opaque model (equal-sized gather units)
  /// Per-head dimension (Hugging Face's head_dim, Megatron's kv_channels); 0: hidden / heads. Qwen3: 128 with
  /// hidden 2048 and 32 heads.
  std::int64_t head_dim_size = 0;
  // Multi-head latent attention (DeepSeek-V2/V3; arXiv 2412.19437 §2.1.1), on when kv_lora_rank > 0: queries through
  // a rank-q_lora_rank bottleneck (0: a full query projection), keys and values through a rank-kv_lora_rank
  // bottleneck, a rotary part of qk_rope_head_dim per head (shared by all heads for the keys); head_dim() is the
  // non-rotary query/key dimension, v_head_dim the value dimension.
  std::int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_rope_head_dim = 0, v_head_dim = 0;
  // Mixture of experts: every MoE layer replaces the dense MLP by a router (hidden x experts), `experts` routed
  // experts of which each token uses top_k, and `shared_experts` experts every token uses; an expert is an MLP of
  // moe_ffn (shared: shared_ffn) with the model's gating.
  std::int64_t experts = 0;  ///< routed experts per MoE layer (0: a dense model)
  std::int64_t top_k = 0, shared_experts = 0, moe_ffn = 0, shared_ffn = 0;
  /// Which layers are MoE: moe_layer_list when not empty (0-based), else layer i >= first_dense_layers with
  /// (i + 1) % moe_every == 0 (DeepSeek-V3: first_dense_layers 3; Switch-style every other layer: moe_every 2).
  std::int64_t first_dense_layers = 0, moe_every = 1;
  std::vector<std::int64_t> moe_layer_list;
  /// Expert capacity factor: each expert takes at most ceil(capacity_factor x tokens x top_k / experts) tokens of a
  /// source rank (Switch Transformer; Megatron-Core's get_capacity); the rest are dropped. 0: dropless (default).
  double capacity_factor = 0;
  bool pad_to_capacity = false;  ///< every expert receives exactly its capacity (Megatron's pad-expert-input)

  bool opaque() const { return layers == 0; }
  bool moe() const { return experts > 0; }
  std::int64_t head_dim() const { return head_dim_size > 0 ? head_dim_size : hidden / heads; }
  bool mla() const { return kv_lora_rank > 0; }
  /// Grouped-query attention: fewer key/value heads than query heads (MLA excluded), which eager attention copies to
  /// every query head (repeat_kv).
  bool grouped_kv() const { return kv_heads < heads && !mla(); }
  /// Query/key and value dimensions per head: head_dim() each, or with MLA head_dim() + qk_rope_head_dim and
  /// v_head_dim.
  std::int64_t qk_head_dim() const { return head_dim() + (mla() ? qk_rope_head_dim : 0); }
  std::int64_t v_dim() const { return mla() ? v_head_dim : head_dim(); }
};

/// Parameter counts of one transformer layer, split by how tensor parallelism treats them.
struct LayerParams {
  std::int64_t tp_sharded = 0;     ///< divided over the tp group (QKV, projections, MLP matrices)
  std::int64_t tp_replicated = 0;  ///< held whole by every tp rank (norms, row-parallel biases)
  std::int64_t matmul = 0;         ///< weights that take part in matrix multiplies (2 FLOP each per token)
  std::int64_t total() const { return tp_sharded + tp_replicated; }
};

/// A dense layer: attention, MLP of ffn, norms.
LayerParams layer_params(const ModelSpec& m);
/// The attention block's parameters of one layer (all layer kinds alike).
LayerParams attention_params(const ModelSpec& m);
/// Is layer i (0-based) a mixture-of-experts layer?
bool is_moe_layer(const ModelSpec& m, std::int64_t layer);
/// MoE layers among layers [first, first + count).
std::int64_t moe_layers_in(const ModelSpec& m, std::int64_t first, std::int64_t count);
/// The dense part of an MoE layer: attention, norms, the router (replicated over tp) and the shared experts. The
/// routed experts are apart (expert_params): they are placed along the ep axis.
LayerParams moe_layer_params(const ModelSpec& m);
/// One routed expert's parameters (its MLP of moe_ffn).
std::int64_t expert_params(const ModelSpec& m);
/// Parameters a token uses: the dense layers, the MoE layers' dense parts and top_k routed experts each, the
/// embedding and the head (Mistral's convention for Mixtral's 12.9B).
double active_parameters(const ModelSpec& m);
/// Largest model dimension (layers, hidden, heads, ffn, vocab, seq_len, max_positions) placesim accepts: 2^31 - 1.
inline constexpr std::int64_t kMaxModelDim = 2147483647;
/// Largest element count placesim derives (parameters of a model, elements of one micro-batch's activation tensor):
/// 2^50 (1.1e15). Below it every product of an element count with byte widths, degrees up to kMaxModelDim and the
/// small factors of the memory and traffic formulas stays inside 64-bit integers; above it no real model lies.
inline constexpr std::int64_t kMaxCountedElems = std::int64_t{1} << 50;
/// Word embedding (vocab-parallel over tp).
std::int64_t word_embedding_params(const ModelSpec& m);
/// Learned position embedding (replicated over tp), 0 for rotary models.
std::int64_t position_embedding_params(const ModelSpec& m);
/// Final norm (replicated over tp).
std::int64_t final_norm_params(const ModelSpec& m);
/// Eager kernels decompose the model's RMSNorm (the Llama family's) into fp32 element-wise kernels: training.kernels
/// eager without fused_norm.
inline bool decomposed_rms_norm(const ModelSpec& m, const TrainingSpec& t) {
  return t.kernels == Kernels::Eager && m.family == ModelFamily::Llama && !t.fused_norm;
}
/// Output projection when not tied to the word embedding, else 0.
std::int64_t output_head_params(const ModelSpec& m);
/// Total parameters of the model (each tied weight counted once).
double total_parameters(const ModelSpec& m);

/// Forward FLOPs of one dense layer for one token (matrix multiplies and attention scores; Narayanan et al.).
double layer_forward_flops_per_token(const ModelSpec& m);
/// Forward FLOPs per token of an MoE layer's dense part (attention, router, shared experts).
double moe_dense_forward_flops_per_token(const ModelSpec& m);
/// Forward FLOPs of one routed expert for one token routed to it (top_k of them per token).
double expert_forward_flops_per_token(const ModelSpec& m);
/// Forward FLOPs of the whole model per token: every layer by its kind (top_k experts per MoE layer) and the logits.
double model_forward_flops_per_token(const ModelSpec& m);
/// FLOPs of the attention score and value products alone, per token (what selective recompute repeats).
double attention_core_flops_per_token(const ModelSpec& m);
/// FLOPs per token torchtitan's op-level selective AC recomputes in a layer: the 2nd, 4th and 6th matmul of the forward
/// (q, k, v, o, then gated up, up, down or up, down): k, o and the second up projection (gated) or the down
/// projection; the recomputed element-wise ops count no FLOPs.
double op_sac_recompute_flops_per_token(const ModelSpec& m);
/// FLOPs per token a layer recomputes under `r`: the whole forward (full), the attention core (selective), the
/// matmuls of op-level selective AC (selective-op), none.
double recompute_flops_per_token(const ModelSpec& m, Recompute r);
/// Forward FLOPs of the output (logit) layer per token.
double logit_forward_flops_per_token(const ModelSpec& m);

/// Parses the "model" field: a preset name, or an object with an optional "preset"/"hf_config" to override.
/// `base_dir` resolves a relative hf_config path. With `errors`, field errors are collected there (see ObjectReader).
ModelSpec parse_model(const Json& value, const std::string& base_dir, ErrorList* errors = nullptr);
/// The training sequence length a Hugging Face import takes when the experiment gives none: the model's
/// max_position_embeddings is its longest context, not what it is trained at.
constexpr std::int64_t kHfDefaultSeqLen = 4096;
/// Maps a Hugging Face config.json (Llama, Mistral, GPT-2, GPT-NeoX families) to model fields as JSON; max_positions
/// is the config's max_position_embeddings (n_positions) and seq_len min(kHfDefaultSeqLen, max_positions).
Json hf_config_to_model_json(const Json& config, const std::string& origin);

/// "gpt" | "llama" | "neox", as the input spells them.
std::string to_string(ModelFamily f);

/// Names and one-line descriptions of the model presets.
std::vector<std::pair<std::string, std::string>> model_preset_list();

}  // namespace placesim
