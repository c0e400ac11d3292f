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
  std::int64_t experts = 0;        ///< routed experts per MoE layer (0: a dense model)

  bool opaque() const { return layers == 0; }
  bool moe() const { return experts > 0; }
  std::int64_t head_dim() const { return hidden / heads; }
};

/// Parameter counts of one transformer layer, split by how tensor parallelism treats them.
struct LayerParams {
  std::int64_t tp_sharded = 0;     ///< divided over the tp group (QKV, projections, MLP matrices)
  std::int64_t tp_replicated = 0;  ///< held whole by every tp rank (norms, row-parallel biases)
  std::int64_t matmul = 0;         ///< weights that take part in matrix multiplies (2 FLOP each per token)
  std::int64_t total() const { return tp_sharded + tp_replicated; }
};

LayerParams layer_params(const ModelSpec& m);
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
/// Output projection when not tied to the word embedding, else 0.
std::int64_t output_head_params(const ModelSpec& m);
/// Total parameters of the model (each tied weight counted once).
double total_parameters(const ModelSpec& m);

/// Forward FLOPs of one layer for one token (matrix multiplies and attention scores; Narayanan et al.).
double layer_forward_flops_per_token(const ModelSpec& m);
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
/// `base_dir` resolves a relative hf_config path.
ModelSpec parse_model(const Json& value, const std::string& base_dir);
/// The training sequence length a Hugging Face import takes when the experiment gives none: the model's
/// max_position_embeddings is its longest context, not what it is trained at (issue 14).
constexpr std::int64_t kHfDefaultSeqLen = 4096;
/// Maps a Hugging Face config.json (Llama, Mistral, GPT-2, GPT-NeoX families) to model fields as JSON; max_positions
/// is the config's max_position_embeddings (n_positions) and seq_len min(kHfDefaultSeqLen, max_positions).
Json hf_config_to_model_json(const Json& config, const std::string& origin);

/// "gpt" | "llama" | "neox", as the input spells them.
std::string to_string(ModelFamily f);

/// Names and one-line descriptions of the model presets.
std::vector<std::pair<std::string, std::string>> model_preset_list();

}  // namespace placesim
