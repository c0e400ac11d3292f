#include "workloads/model/Model.hpp"

#include <algorithm>
#include <filesystem>

#include "workloads/json/EnumNames.hpp"
#include "workloads/json/Numbers.hpp"
#include "workloads/model/ModelPresets.hpp"

namespace placesim {

LayerParams attention_params(const ModelSpec& m) {
  const std::int64_t h = m.hidden, n = m.heads;
  LayerParams p;
  if (m.mla()) {
    // DeepSeek-V3's MLA (modeling_deepseek.py): q_a (h -> q_lora_rank) with its norm and q_b (-> heads x qk dim), or
    // one q projection; kv_a (h -> kv_lora_rank + rope) with its norm, kv_b (-> heads x (nope + v)); o (heads x v ->
    // h). The down projections and their norms are replicated over tp (Megatron-Core's MLA), the rest tp-sharded.
    const std::int64_t qk = m.qk_head_dim(), r = m.kv_lora_rank;
    const std::int64_t q_down = m.q_lora_rank > 0 ? h * m.q_lora_rank : 0;
    const std::int64_t q_up = (m.q_lora_rank > 0 ? m.q_lora_rank : h) * n * qk;
    const std::int64_t kv_down = h * (r + m.qk_rope_head_dim), kv_up = r * n * (m.head_dim() + m.v_head_dim);
    const std::int64_t out = n * m.v_head_dim * h;
    p.matmul = q_down + q_up + kv_down + kv_up + out;
    p.tp_sharded = q_up + kv_up + out;
    p.tp_replicated = q_down + kv_down + m.q_lora_rank + r;
  } else {
    const std::int64_t q = n * m.head_dim(), kv = m.kv_heads * m.head_dim();
    p.matmul = 2 * h * q + 2 * h * kv;  // Q, O and K, V
    p.tp_sharded = p.matmul;
    if (m.bias) {
      p.tp_sharded += q + 2 * kv;  // QKV biases are column-parallel
      p.tp_replicated += h;        // the output projection's bias is row-parallel
    }
  }
  p.tp_replicated += m.bias ? 4 * h : 2 * h;  // two norms (weight, and bias when present)
  return p;
}

namespace {

// An MLP of inner size f with the model's gating (and biases).
LayerParams mlp_params(const ModelSpec& m, std::int64_t f) {
  const std::int64_t h = m.hidden;
  LayerParams p;
  p.matmul = (m.gated_mlp ? 3 : 2) * h * f;
  p.tp_sharded = p.matmul;
  if (m.bias) {
    p.tp_sharded += f;     // the first MLP bias is column-parallel
    p.tp_replicated += h;  // the second, row-parallel
  }
  return p;
}

LayerParams operator+(LayerParams a, const LayerParams& b) {
  a.tp_sharded += b.tp_sharded;
  a.tp_replicated += b.tp_replicated;
  a.matmul += b.matmul;
  return a;
}

}  // namespace

LayerParams layer_params(const ModelSpec& m) {
  return attention_params(m) + mlp_params(m, m.ffn);
}

bool is_moe_layer(const ModelSpec& m, std::int64_t layer) {
  if (!m.moe()) return false;
  if (!m.moe_layer_list.empty()) return std::binary_search(m.moe_layer_list.begin(), m.moe_layer_list.end(), layer);
  return layer >= m.first_dense_layers && (layer + 1) % m.moe_every == 0;
}

std::int64_t moe_layers_in(const ModelSpec& m, std::int64_t first, std::int64_t count) {
  if (!m.moe()) return 0;
  std::int64_t n = 0;
  for (std::int64_t i = first; i < first + count; ++i) n += is_moe_layer(m, i) ? 1 : 0;
  return n;
}

LayerParams moe_layer_params(const ModelSpec& m) {
  LayerParams p = attention_params(m);
  LayerParams router;
  router.matmul = m.experts * m.hidden;
  router.tp_replicated = router.matmul;
  p = p + router;
  for (std::int64_t i = 0; i < m.shared_experts; ++i)
    p = p + mlp_params(m, m.shared_ffn > 0 ? m.shared_ffn : m.moe_ffn);
  return p;
}

std::int64_t expert_params(const ModelSpec& m) {
  return m.moe() ? mlp_params(m, m.moe_ffn).total() : 0;
}

double active_parameters(const ModelSpec& m) {
  if (!m.moe()) return total_parameters(m);
  const double moe = static_cast<double>(moe_layers_in(m, 0, m.layers));
  return total_parameters(m) - moe * static_cast<double>(m.experts - m.top_k) * static_cast<double>(expert_params(m));
}

std::int64_t word_embedding_params(const ModelSpec& m) {
  return m.vocab * m.hidden;
}
std::int64_t position_embedding_params(const ModelSpec& m) {
  return m.learned_positions ? (m.max_positions > 0 ? m.max_positions : m.seq_len) * m.hidden : 0;
}
std::int64_t final_norm_params(const ModelSpec& m) {
  return (m.bias ? 2 : 1) * m.hidden;
}
std::int64_t output_head_params(const ModelSpec& m) {
  return m.tied_embeddings ? 0 : m.vocab * m.hidden;
}

double total_parameters(const ModelSpec& m) {
  if (m.opaque()) return m.opaque_parameters;
  const std::int64_t moe = moe_layers_in(m, 0, m.layers);
  return static_cast<double>(
      (m.layers - moe) * layer_params(m).total() + moe * (moe_layer_params(m).total() + m.experts * expert_params(m)) +
      word_embedding_params(m) + position_embedding_params(m) + final_norm_params(m) + output_head_params(m));
}

double layer_forward_flops_per_token(const ModelSpec& m) {
  return 2.0 * static_cast<double>(layer_params(m).matmul) + attention_core_flops_per_token(m);
}

double moe_dense_forward_flops_per_token(const ModelSpec& m) {
  return 2.0 * static_cast<double>(moe_layer_params(m).matmul) + attention_core_flops_per_token(m);
}

double expert_forward_flops_per_token(const ModelSpec& m) {
  return m.moe() ? 2.0 * static_cast<double>(mlp_params(m, m.moe_ffn).matmul) : 0;
}

double model_forward_flops_per_token(const ModelSpec& m) {
  const double moe = static_cast<double>(moe_layers_in(m, 0, m.layers)), layers = static_cast<double>(m.layers);
  return (layers - moe) * layer_forward_flops_per_token(m) +
         moe *
             (moe_dense_forward_flops_per_token(m) + static_cast<double>(m.top_k) * expert_forward_flops_per_token(m)) +
         logit_forward_flops_per_token(m);
}

double attention_core_flops_per_token(const ModelSpec& m) {
  // Q·K^T and scores·V: 2·s·heads·(qk dim) and 2·s·heads·(v dim) FLOPs per token (full, non-causal count as in
  // Megatron-LM): 4·s·h when heads x head_dim = hidden.
  return 2.0 * static_cast<double>(m.seq_len) * static_cast<double>(m.heads) *
         static_cast<double>(m.qk_head_dim() + m.v_dim());
}

double op_sac_recompute_flops_per_token(const ModelSpec& m) {
  const double h = static_cast<double>(m.hidden), kv = static_cast<double>(m.kv_heads * m.head_dim());
  const double q = static_cast<double>(m.heads * m.head_dim());
  const double f = static_cast<double>(m.ffn);
  return 2.0 * (h * kv + q * h + f * h);
}

double recompute_flops_per_token(const ModelSpec& m, Recompute r) {
  switch (r) {
    case Recompute::Full:
      return layer_forward_flops_per_token(m);
    case Recompute::Selective:
      return attention_core_flops_per_token(m);
    case Recompute::SelectiveOp:
      return op_sac_recompute_flops_per_token(m);
    case Recompute::None:
      break;
  }
  return 0;
}

double logit_forward_flops_per_token(const ModelSpec& m) {
  return 2.0 * static_cast<double>(m.hidden) * static_cast<double>(m.vocab);
}

namespace {

constexpr EnumName<ModelFamily> kModelFamilyNames[] = {
    {ModelFamily::Gpt, "gpt"}, {ModelFamily::Llama, "llama"}, {ModelFamily::Neox, "neox"}};

void apply_family_defaults(ModelSpec& m) {
  if (m.family == ModelFamily::Llama) {
    m.gated_mlp = true;
    m.bias = false;
    m.learned_positions = false;
    m.tied_embeddings = false;
    m.dropout = false;
  } else if (m.family == ModelFamily::Neox) {
    m.gated_mlp = false;
    m.bias = true;
    m.learned_positions = false;
    m.tied_embeddings = false;
    m.dropout = false;
  }
}

// A positive model dimension up to kMaxModelDim (a default is taken as given).
std::int64_t get_dim(ObjectReader& r, const char* key, std::int64_t fallback) {
  const std::int64_t v = r.get_positive_int(key, fallback);
  if (r.has(key) && v > kMaxModelDim) {
    r.refuse(key, r.field(key) + "=" + std::to_string(v) + " is above the largest model dimension placesim accepts (" +
                      std::to_string(kMaxModelDim) + ")");
    return fallback;
  }
  return v;
}

// The parameter count, computed in long double (exact for these sizes) before any 64-bit product is formed, must stay
// within kMaxCountedElems; the refusal names the shape fields that make it.
void check_parameter_count(const ModelSpec& m, const ObjectReader& r) {
  using L = long double;
  const L h = m.hidden, f = m.ffn, d = L(m.head_dim_size > 0 ? m.head_dim_size : m.hidden / m.heads);
  const L kv = L(m.kv_heads) * d, q = L(m.heads) * d;
  // A bound on one layer: attention (MLA's projections bounded by the same products of its ranks), the dense MLP,
  // every routed and shared expert, the router, norms and biases.
  const L mla = L(m.q_lora_rank + m.kv_lora_rank + m.qk_rope_head_dim + h) *
                (h + L(m.heads) * L(2 * d + m.qk_rope_head_dim + m.v_head_dim));
  const L experts = L(m.experts + m.shared_experts) *
                    (3 * h * L(std::max(m.moe_ffn, m.shared_ffn)) + h + L(std::max(m.moe_ffn, m.shared_ffn)));
  const L layer = 2 * h * q + 2 * h * kv + (m.gated_mlp ? 3 : 2) * h * f + 8 * h + 2 * kv + q + f + mla + experts +
                  L(m.experts) * h;
  const L positions = m.learned_positions ? L(m.max_positions > 0 ? m.max_positions : m.seq_len) * h : 0;
  const L total = L(m.layers) * layer + 2 * L(m.vocab) * h + positions + 2 * h;
  if (layer > L(kMaxCountedElems) || total > L(kMaxCountedElems))
    throw InputError("the model shape " + r.field("layers") + "=" + std::to_string(m.layers) + ", " +
                     r.field("hidden") + "=" + std::to_string(m.hidden) + ", " + r.field("ffn") + "=" +
                     std::to_string(m.ffn) + ", " + r.field("vocab") + "=" + std::to_string(m.vocab) + " gives about " +
                     format_significant(static_cast<double>(total), 3) +
                     " parameters, more than the 2^50 (1.1e15) placesim counts exactly");
}

// Multi-head latent attention: kv_lora_rank turns it on and needs qk_rope_head_dim, v_head_dim and head_dim (the
// non-rotary query/key dimension).
void read_mla(ObjectReader& r, ModelSpec& m) {
  m.q_lora_rank = get_dim(r, "q_lora_rank", 0);
  m.kv_lora_rank = get_dim(r, "kv_lora_rank", 0);
  m.qk_rope_head_dim = get_dim(r, "qk_rope_head_dim", 0);
  m.v_head_dim = get_dim(r, "v_head_dim", 0);
  if (!m.mla()) {
    for (const char* key : {"q_lora_rank", "qk_rope_head_dim", "v_head_dim"})
      if (r.has(key))
        throw InputError(r.field(key) + " belongs to multi-head latent attention, which " + r.field("kv_lora_rank") +
                         " (> 0) turns on; it is not given");
    return;
  }
  for (const char* key : {"v_head_dim", "head_dim"})
    if (!r.has(key))
      throw InputError(r.field(key) + " is required with multi-head latent attention (" + r.field("kv_lora_rank") +
                       "=" + std::to_string(m.kv_lora_rank) + "): head_dim is the non-rotary query/key dimension");
  if (m.kv_heads != m.heads)
    throw InputError(r.field("kv_heads") + "=" + std::to_string(m.kv_heads) +
                     ": multi-head latent attention has one key/value head per query head (" + r.field("heads") + "=" +
                     std::to_string(m.heads) + ")");
}

// "moe_layers": "all", an integer k (every k-th layer: (i + 1) % k == 0), or a list of 0-based layer indices.
void read_moe_layers(ObjectReader& r, ModelSpec& m) {
  if (!r.has("moe_layers")) return;
  const Json& v = *r.child("moe_layers");
  const std::string field = r.field("moe_layers");
  if (v.is_string() && v.get<std::string>() == "all") return;
  if (v.is_number_integer()) {
    const std::int64_t k = v.get<std::int64_t>();
    if (k < 1 || k > m.layers)
      throw InputError(field + "=" + show(v) + " must be \"all\", a step k from 1 to layers=" +
                       std::to_string(m.layers) + " (every k-th layer is MoE) or a list of layer indices");
    m.moe_every = k;
    return;
  }
  if (!v.is_array() || v.empty())
    throw InputError(field + "=" + show(v) +
                     " must be \"all\", a step k (every k-th layer is MoE) or a non-empty list of 0-based layer "
                     "indices");
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number_integer() || v[i].get<std::int64_t>() < 0 || v[i].get<std::int64_t>() >= m.layers)
      throw InputError(field + "[" + std::to_string(i) + "]=" + show(v[i]) + " must be a layer index from 0 to " +
                       std::to_string(m.layers - 1));
    m.moe_layer_list.push_back(v[i].get<std::int64_t>());
  }
  std::sort(m.moe_layer_list.begin(), m.moe_layer_list.end());
  if (std::adjacent_find(m.moe_layer_list.begin(), m.moe_layer_list.end()) != m.moe_layer_list.end())
    throw InputError(field + "=" + show(v) + " names a layer twice");
}

void read_moe(ObjectReader& r, ModelSpec& m) {
  m.experts = get_dim(r, "experts", 0);
  const char* moe_keys[] = {"top_k",      "shared_experts",     "moe_ffn",         "shared_ffn",
                            "moe_layers", "first_dense_layers", "capacity_factor", "pad_to_capacity"};
  if (m.experts == 0) {
    for (const char* key : moe_keys)
      if (r.has(key))
        throw InputError(r.field(key) + " belongs to a mixture-of-experts model, which " + r.field("experts") +
                         " (routed experts per MoE layer, > 0) makes; it is not given");
    return;
  }
  r.require("top_k");
  r.require("moe_ffn");
  m.top_k = get_dim(r, "top_k", 0);
  if (m.top_k > m.experts)
    throw InputError(r.field("top_k") + "=" + std::to_string(m.top_k) + " is more than " + r.field("experts") + "=" +
                     std::to_string(m.experts) + ": each token picks top_k distinct experts");
  m.moe_ffn = get_dim(r, "moe_ffn", 0);
  m.shared_experts = r.get_int("shared_experts", 0);
  if (m.shared_experts < 0 || m.shared_experts > 1024)
    throw InputError(r.field("shared_experts") + "=" + std::to_string(m.shared_experts) +
                     " must be from 0 to 1024 shared experts");
  m.shared_ffn = get_dim(r, "shared_ffn", m.moe_ffn);
  m.first_dense_layers = r.get_int("first_dense_layers", 0);
  if (m.first_dense_layers < 0 || m.first_dense_layers >= m.layers)
    throw InputError(r.field("first_dense_layers") + "=" + std::to_string(m.first_dense_layers) +
                     " must be from 0 to layers - 1 = " + std::to_string(m.layers - 1));
  read_moe_layers(r, m);
  if (!m.moe_layer_list.empty() && r.has("first_dense_layers"))
    throw InputError(r.field("first_dense_layers") + " and a list " + r.field("moe_layers") +
                     " both say which layers are MoE: give one");
  m.capacity_factor = r.get_number("capacity_factor", 0);
  if (!(m.capacity_factor == 0 || (m.capacity_factor > 0 && m.capacity_factor <= 1e6)))
    throw InputError(r.field("capacity_factor") + "=" + format_significant(m.capacity_factor, 4) +
                     " must be 0 (dropless) or a positive factor (e.g. 1.25)");
  m.pad_to_capacity = r.get_bool("pad_to_capacity", false);
  if (m.pad_to_capacity && m.capacity_factor == 0)
    throw InputError(r.field("pad_to_capacity") + "=true needs a " + r.field("capacity_factor") +
                     " > 0: a dropless router has no capacity to pad to");
  if (moe_layers_in(m, 0, m.layers) == 0)
    throw InputError(r.field("moe_layers") + " leaves no layer MoE among the " + std::to_string(m.layers) +
                     " layers (first_dense_layers=" + std::to_string(m.first_dense_layers) + ")");
}

// The checks across the fields of a model shape, each when the fields it reads parsed.
void check_shape(const ModelSpec& m, ObjectReader& r) {
  if (r.ok({"seq_len", "max_positions"}) && m.learned_positions && m.max_positions > 0 && m.seq_len > m.max_positions)
    r.refuse("seq_len", r.field("seq_len") + "=" + std::to_string(m.seq_len) + " is longer than " +
                            r.field("max_positions") + "=" + std::to_string(m.max_positions) +
                            ": a learned position embedding has no rows for the extra positions");
  if (r.ok({"hidden", "heads", "head_dim"}) && m.head_dim_size == 0 && m.hidden % m.heads != 0)
    r.refuse("hidden", r.field("hidden") + "=" + std::to_string(m.hidden) + " is not divisible by " + r.field("heads") +
                           "=" + std::to_string(m.heads) + " (give head_dim when heads x head_dim is not hidden)");
  if (r.ok({"heads", "kv_heads"}) && m.heads % m.kv_heads != 0)
    r.refuse("heads", r.field("heads") + "=" + std::to_string(m.heads) + " is not divisible by " + r.field("kv_heads") +
                          "=" + std::to_string(m.kv_heads));
  if (r.clean()) check_parameter_count(m, r);
}

ModelSpec read_model_object(const Json& object, const std::string& path, ErrorList* errors) {
  ObjectReader r(object, path, errors);
  ModelSpec m;
  m.name = r.get_string("name", "custom");
  r.skip("preset");
  r.skip("hf_config");
  if (r.has("parameters")) {
    m.opaque_parameters = r.get_positive("parameters", 0);
    if (m.opaque_parameters > static_cast<double>(kMaxCountedElems))
      r.refuse("parameters", r.field("parameters") + "=" + format_significant(m.opaque_parameters, 3) +
                                 " is more than the 2^50 (1.1e15) parameters placesim counts exactly");
    // An opaque model may say how many layers it has (the units ZeRO-3 gathers), nothing else.
    m.opaque_layers = get_dim(r, "layers", 0);
    r.finish();
    // An opaque model is its parameter count: without it no rule over the model may run.
    if (!r.ok({"parameters"})) r.abandon();
    return m;
  }
  m.family = get_enum(r, "family", kModelFamilyNames, ModelFamily::Gpt);
  apply_family_defaults(m);
  if (!r.has("layers") && !r.has("hidden"))
    throw InputError(path +
                     " needs either \"parameters\" (opaque model) or a transformer shape "
                     "(layers, hidden, heads, vocab, seq_len), or a \"preset\"");
  m.layers = get_dim(r, "layers", 0);
  m.hidden = get_dim(r, "hidden", 0);
  m.heads = get_dim(r, "heads", 0);
  for (const char* key : {"layers", "hidden", "heads", "vocab", "seq_len"}) r.require(key);
  m.kv_heads = get_dim(r, "kv_heads", m.heads);
  m.ffn = get_dim(r, "ffn", 4 * m.hidden);
  m.vocab = get_dim(r, "vocab", 0);
  m.seq_len = get_dim(r, "seq_len", 0);
  m.max_positions = get_dim(r, "max_positions", 0);
  m.gated_mlp = r.get_bool("gated_mlp", m.gated_mlp);
  m.bias = r.get_bool("bias", m.bias);
  m.learned_positions = r.get_bool("learned_positions", m.learned_positions);
  m.tied_embeddings = r.get_bool("tied_embeddings", m.tied_embeddings);
  m.dropout = r.get_bool("dropout", m.dropout);
  m.flash_attention = r.get_bool("flash_attention", m.flash_attention);
  m.head_dim_size = get_dim(r, "head_dim", 0);
  read_mla(r, m);
  read_moe(r, m);
  r.finish();
  // A model without layers reads as opaque (ModelSpec::opaque): no rule over it may run on that.
  if (!r.ok({"layers"})) r.abandon();
  check_shape(m, r);
  return m;
}

}  // namespace

ModelSpec parse_model(const Json& value, const std::string& base_dir, ErrorList* errors) {
  if (value.is_string()) return read_model_object(model_preset(value.get<std::string>(), "model"), "model", errors);
  if (!value.is_object()) throw InputError("model=" + show(value) + " must be a preset name or an object");
  Json merged = Json::object();
  if (value.contains("preset")) {
    const Json& preset = value["preset"];
    if (!preset.is_string()) throw InputError("model.preset=" + show(preset) + " must be a string");
    merged = model_preset(preset.get<std::string>(), "model.preset");
  }
  std::int64_t hf_positions = 0;
  std::string hf_positions_key;
  if (value.contains("hf_config")) {
    const Json& hf = value["hf_config"];
    if (!hf.is_string()) throw InputError("model.hf_config=" + show(hf) + " must be a path string");
    std::filesystem::path p(hf.get<std::string>());
    if (p.is_relative() && !base_dir.empty() && !std::filesystem::exists(p)) p = std::filesystem::path(base_dir) / p;
    const Json imported = hf_config_to_model_json(read_json_file(p.string()), p.string());
    hf_positions = imported["max_positions"].get<std::int64_t>();
    hf_positions_key = imported["family"] == "gpt" ? "n_positions" : "max_position_embeddings";
    merged.merge_patch(imported);
  }
  Json overrides = value;
  overrides.erase("preset");
  overrides.erase("hf_config");
  // A family given explicitly resets the shape flags before the explicit ones apply.
  merged.merge_patch(overrides);
  if (value.contains("preset")) merged["preset"] = value["preset"];
  ModelSpec m = read_model_object(merged, "model", errors);
  if (value.contains("hf_config") && !value.contains("seq_len") && !m.opaque())
    m.seq_len_source = "Hugging Face import default min(" + std::to_string(kHfDefaultSeqLen) + ", " + hf_positions_key +
                       " " + std::to_string(hf_positions) + "); set model.seq_len";
  return m;
}

std::string to_string(ModelFamily f) {
  return name_of(kModelFamilyNames, f);
}

}  // namespace placesim
