#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "workloads/model/Model.hpp"

namespace placesim {

namespace {

// An import lists the MoE layers one by one only when the config's rule is not one of placesim's (first_dense_layers,
// every k-th layer); it does so for at most this many layers, so that a hostile num_hidden_layers cannot make it build
// a list of billions (real models have fewer than 200 layers).
constexpr std::int64_t kMaxListedLayers = 100000;

// The model fields an import decides beyond the dense shape. Each starts null, so that merged over a preset the import
// removes the preset's (a DeepSeek preset's MLA ranks must not survive under an imported Mixtral).
constexpr const char* kImportedShapeKeys[] = {"head_dim",       "q_lora_rank", "kv_lora_rank", "qk_rope_head_dim",
                                              "v_head_dim",     "experts",     "top_k",        "moe_ffn",
                                              "shared_experts", "shared_ffn",  "moe_layers",   "first_dense_layers"};
constexpr const char* kMoeKeys[] = {"experts",    "top_k",      "moe_ffn",           "shared_experts",
                                    "shared_ffn", "moe_layers", "first_dense_layers"};

std::string hf_field(const std::string& origin, const char* key) {
  return origin + ": Hugging Face config field " + key;
}

std::int64_t hf_int(const Json& config, const char* key, const std::string& origin) {
  auto it = config.find(key);
  if (it == config.end() || !it->is_number_integer())
    throw InputError(hf_field(origin, key) + " is missing or not an integer");
  return it->get<std::int64_t>();
}

std::int64_t hf_int_or(const Json& config, const char* key, std::int64_t fallback) {
  auto it = config.find(key);
  return (it == config.end() || !it->is_number_integer()) ? fallback : it->get<std::int64_t>();
}

bool hf_bool_or(const Json& config, const char* key, bool fallback) {
  auto it = config.find(key);
  return (it == config.end() || !it->is_boolean()) ? fallback : it->get<bool>();
}

// A required field that may be null, read as 0: DeepSeek-V2-Lite's q_lora_rank (a full query projection), a dense
// DeepSeek's n_routed_experts, n_shared_experts without shared experts.
std::int64_t hf_int_or_null(const Json& config, const char* key, const std::string& origin) {
  auto it = config.find(key);
  if (it != config.end() && it->is_null()) return 0;
  if (it == config.end() || !it->is_number_integer())
    throw InputError(hf_field(origin, key) + " is missing or not an integer (or null)");
  return it->get<std::int64_t>();
}

// A step or count the import computes with before the model reader sees it; absent or null it is `fallback`
// (transformers' default) when there is one.
std::int64_t hf_int_at_least(const Json& config, const char* key, std::int64_t min, const std::string& origin,
                             std::optional<std::int64_t> fallback = std::nullopt) {
  auto it = config.find(key);
  const bool absent = it == config.end() || it->is_null();
  const std::int64_t v = absent && fallback ? *fallback : hf_int(config, key, origin);
  if (v < min)
    throw InputError(hf_field(origin, key) + "=" + std::to_string(v) + " must be at least " + std::to_string(min));
  return v;
}

// The decoder shape the Llama-style configs share (Llama, Mistral, Mixtral, Qwen3, DeepSeek): RMSNorm, SwiGLU, rotary
// positions, no biases, an untied head unless the config ties it.
void read_llama_shape(const Json& config, const std::string& origin, Json& m) {
  m["family"] = "llama";
  m["layers"] = hf_int(config, "num_hidden_layers", origin);
  m["hidden"] = hf_int(config, "hidden_size", origin);
  m["heads"] = hf_int(config, "num_attention_heads", origin);
  m["kv_heads"] = hf_int_or(config, "num_key_value_heads", m["heads"].get<std::int64_t>());
  m["vocab"] = hf_int(config, "vocab_size", origin);
  m["max_positions"] = hf_int(config, "max_position_embeddings", origin);
  m["tied_embeddings"] = hf_bool_or(config, "tie_word_embeddings", false);
}

// head_dim when it is not hidden / heads (Qwen3-30B-A3B: 128 with hidden 2048 and 32 heads; Mistral-Nemo: 128 with
// 5120 and 32). Equal to it, the model's default applies, so the import equals a preset that does not give head_dim.
void read_head_dim(const Json& config, const std::string& origin, Json& m, bool required) {
  auto it = config.find("head_dim");
  if ((it == config.end() || it->is_null()) && !required) return;
  const std::int64_t d = hf_int(config, "head_dim", origin);
  const std::int64_t hidden = m["hidden"].get<std::int64_t>(), heads = m["heads"].get<std::int64_t>();
  if (heads > 0 && hidden % heads == 0 && hidden / heads == d) return;
  m["head_dim"] = d;
}

// The MoE layers of a rule placesim's fields cannot state, listed; none makes the import a dense model.
void list_moe_layers(Json& m, const std::string& origin, const std::function<bool(std::int64_t)>& is_moe) {
  const std::int64_t layers = m["layers"].get<std::int64_t>();
  if (layers < 1 || layers > kMaxListedLayers)
    throw InputError(hf_field(origin, "num_hidden_layers") + "=" + std::to_string(layers) + " must be from 1 to " +
                     std::to_string(kMaxListedLayers) + " for its MoE layers to be listed");
  std::vector<std::int64_t> list;
  for (std::int64_t i = 0; i < layers; ++i)
    if (is_moe(i)) list.push_back(i);
  if (list.empty())
    for (const char* key : kMoeKeys) m[key] = nullptr;
  else
    m["moe_layers"] = list;
}

// A list of 0-based layer indices below `layers` (> 0); absent or null, an empty one.
std::vector<std::int64_t> read_layer_indices(const Json& config, const char* key, std::int64_t layers,
                                             const std::string& origin) {
  std::vector<std::int64_t> out;
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return out;
  if (!it->is_array()) throw InputError(hf_field(origin, key) + "=" + show(*it) + " must be a list of layer indices");
  for (std::size_t i = 0; i < it->size(); ++i) {
    const Json& v = (*it)[i];
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() >= layers)
      throw InputError(hf_field(origin, key) + "[" + std::to_string(i) + "]=" + show(v) +
                       " is not a layer index from 0 to num_hidden_layers - 1 = " + std::to_string(layers - 1));
    out.push_back(v.get<std::int64_t>());
  }
  return out;
}

// Mixtral (MixtralConfig): every layer is MoE, and intermediate_size is the expert's MLP. The model still needs a
// dense ffn; it is given the expert size, which no MoE layer reads.
void read_mixtral(const Json& config, const std::string& origin, Json& m) {
  read_llama_shape(config, origin, m);
  read_head_dim(config, origin, m, false);
  m["ffn"] = hf_int(config, "intermediate_size", origin);
  m["moe_ffn"] = m["ffn"];
  m["experts"] = hf_int(config, "num_local_experts", origin);
  m["top_k"] = hf_int(config, "num_experts_per_tok", origin);
}

// Qwen3-MoE (modeling_qwen3_moe.py): layer i is MoE unless it is in mlp_only_layers, when num_experts > 0 and
// (i + 1) % decoder_sparse_step == 0 (placesim's moe_layers = k rule); the other layers are dense MLPs of
// intermediate_size. Per-head q_norm/k_norm (2 x head_dim per layer) are not modelled.
void read_qwen3_moe(const Json& config, const std::string& origin, Json& m) {
  read_llama_shape(config, origin, m);
  read_head_dim(config, origin, m, true);
  m["ffn"] = hf_int(config, "intermediate_size", origin);
  const std::int64_t experts = hf_int(config, "num_experts", origin);
  if (experts == 0) return;
  m["experts"] = experts;
  m["top_k"] = hf_int(config, "num_experts_per_tok", origin);
  m["moe_ffn"] = hf_int(config, "moe_intermediate_size", origin);
  const std::int64_t step = hf_int_at_least(config, "decoder_sparse_step", 1, origin, 1);
  const std::int64_t layers = m["layers"].get<std::int64_t>();
  if (layers < 1) return;  // the model reader refuses it by name
  const std::vector<std::int64_t> dense = read_layer_indices(config, "mlp_only_layers", layers, origin);
  if (dense.empty() && step <= layers) {
    if (step > 1) m["moe_layers"] = step;
    return;
  }
  list_moe_layers(m, origin, [&](std::int64_t i) {
    return (i + 1) % step == 0 && std::find(dense.begin(), dense.end(), i) == dense.end();
  });
}

// DeepSeek-V2/V3 MoE (modeling_deepseek.py): layer i is MoE when n_routed_experts is not null, i >=
// first_k_dense_replace and i % moe_layer_freq == 0. With moe_layer_freq 1 that is placesim's first_dense_layers;
// otherwise the rule differs from placesim's (i + 1) % k and the layers are listed. The n_shared_experts shared experts
// are one MLP of n x moe_intermediate_size in DeepSeek's code: the same parameters and FLOPs as n experts.
void read_deepseek_moe(const Json& config, const std::string& origin, Json& m) {
  const std::int64_t experts = hf_int_or_null(config, "n_routed_experts", origin);
  if (experts == 0) return;
  m["experts"] = experts;
  m["top_k"] = hf_int(config, "num_experts_per_tok", origin);
  m["moe_ffn"] = hf_int(config, "moe_intermediate_size", origin);
  const std::int64_t shared = hf_int_or_null(config, "n_shared_experts", origin);
  if (shared != 0) {
    m["shared_experts"] = shared;
    m["shared_ffn"] = m["moe_ffn"];
  }
  const std::int64_t first = hf_int_at_least(config, "first_k_dense_replace", 0, origin);
  const std::int64_t freq = hf_int_at_least(config, "moe_layer_freq", 1, origin, 1);
  const std::int64_t layers = m["layers"].get<std::int64_t>();
  if (freq == 1 && first < std::max<std::int64_t>(layers, 1)) {
    if (first > 0) m["first_dense_layers"] = first;
    return;
  }
  list_moe_layers(m, origin, [&](std::int64_t i) { return i >= first && i % freq == 0; });
}

// DeepSeek-V2/V3 (DeepseekV3Config): multi-head latent attention, dense MLPs of intermediate_size in the first layers.
// The multi-token-prediction layers (num_nextn_predict_layers) are not part of the main model and are left out.
void read_deepseek(const Json& config, const std::string& origin, Json& m) {
  read_llama_shape(config, origin, m);
  // MLA has a key and a value head per query head; num_key_value_heads only repeats num_attention_heads.
  m["kv_heads"] = m["heads"];
  // placesim's head_dim is the non-rotary query/key dimension; the config's own head_dim, where transformers writes
  // one, is the rotary one.
  m["head_dim"] = hf_int(config, "qk_nope_head_dim", origin);
  const std::int64_t q_lora_rank = hf_int_or_null(config, "q_lora_rank", origin);
  if (q_lora_rank != 0) m["q_lora_rank"] = q_lora_rank;  // null (V2-Lite): one full query projection
  m["kv_lora_rank"] = hf_int(config, "kv_lora_rank", origin);
  m["qk_rope_head_dim"] = hf_int(config, "qk_rope_head_dim", origin);
  m["v_head_dim"] = hf_int(config, "v_head_dim", origin);
  m["ffn"] = hf_int(config, "intermediate_size", origin);
  read_deepseek_moe(config, origin, m);
}

void read_gpt2(const Json& config, const std::string& origin, Json& m) {
  m["family"] = "gpt";
  m["layers"] = hf_int(config, "n_layer", origin);
  m["hidden"] = hf_int(config, "n_embd", origin);
  m["heads"] = hf_int(config, "n_head", origin);
  // Without n_inner (null in GPT-2's own configs) the model's default 4 x hidden applies, computed only after the
  // model reader has bounded hidden (4 x an unchecked n_embd could overflow).
  // A null ffn removes any preset's when merged, so the default applies as the import intends.
  auto inner = config.find("n_inner");
  m["ffn"] = inner != config.end() && inner->is_number_integer() ? *inner : Json(nullptr);
  m["vocab"] = hf_int(config, "vocab_size", origin);
  m["max_positions"] = hf_int(config, "n_positions", origin);
  m["tied_embeddings"] = hf_bool_or(config, "tie_word_embeddings", true);
}

void read_neox(const Json& config, const std::string& origin, Json& m) {
  m["family"] = "neox";
  m["layers"] = hf_int(config, "num_hidden_layers", origin);
  m["hidden"] = hf_int(config, "hidden_size", origin);
  m["heads"] = hf_int(config, "num_attention_heads", origin);
  m["ffn"] = hf_int(config, "intermediate_size", origin);
  m["vocab"] = hf_int(config, "vocab_size", origin);
  m["max_positions"] = hf_int(config, "max_position_embeddings", origin);
  m["tied_embeddings"] = hf_bool_or(config, "tie_word_embeddings", false);
}

}  // namespace

// Field names follow transformers' LlamaConfig / MistralConfig / Qwen3Config, MixtralConfig, Qwen3MoeConfig,
// DeepseekV2Config / DeepseekV3Config, GPT2Config and GPTNeoXConfig. The HF config's own extra keys are ignored: only
// the shape matters here.
Json hf_config_to_model_json(const Json& config, const std::string& origin) {
  if (!config.is_object()) throw InputError(origin + ": a Hugging Face config.json must be a JSON object");
  std::string type =
      config.contains("model_type") && config["model_type"].is_string() ? config["model_type"].get<std::string>() : "";
  Json m = Json::object();
  std::string name = config.contains("_name_or_path") && config["_name_or_path"].is_string()
                         ? config["_name_or_path"].get<std::string>()
                         : type;
  m["name"] = name.empty() ? std::string("hf-model") : name;
  for (const char* key : kImportedShapeKeys) m[key] = nullptr;
  if (type == "llama" || type == "mistral" || type == "qwen3") {
    // Qwen3's per-head q_norm/k_norm (2 x head_dim per layer) are not modelled.
    read_llama_shape(config, origin, m);
    read_head_dim(config, origin, m, type == "qwen3");
    m["ffn"] = hf_int(config, "intermediate_size", origin);
  } else if (type == "mixtral") {
    read_mixtral(config, origin, m);
  } else if (type == "qwen3_moe") {
    read_qwen3_moe(config, origin, m);
  } else if (type == "deepseek_v2" || type == "deepseek_v3") {
    read_deepseek(config, origin, m);
  } else if (type == "gpt2") {
    read_gpt2(config, origin, m);
  } else if (type == "gpt_neox") {
    read_neox(config, origin, m);
  } else {
    throw InputError(origin + ": model_type=" + (type.empty() ? std::string("(missing)") : type) +
                     " is not supported (supported: llama, mistral, qwen3, mixtral, qwen3_moe, deepseek_v2, "
                     "deepseek_v3, gpt2, gpt_neox)");
  }
  m["seq_len"] = std::min(kHfDefaultSeqLen, m["max_positions"].get<std::int64_t>());
  return m;
}

}  // namespace placesim
