#include "workloads/model/Model.hpp"

#include <filesystem>

#include "workloads/json/Numbers.hpp"
#include "workloads/model/ModelPresets.hpp"

namespace placesim {

LayerParams layer_params(const ModelSpec& m) {
  const std::int64_t h = m.hidden, f = m.ffn, kv = m.kv_heads * m.head_dim();
  LayerParams p;
  std::int64_t attention = 2 * h * h + 2 * h * kv;  // Q, O and K, V
  std::int64_t mlp = (m.gated_mlp ? 3 : 2) * h * f;
  p.matmul = attention + mlp;
  p.tp_sharded = p.matmul;
  p.tp_replicated = m.bias ? 4 * h : 2 * h;  // two norms (weight, and bias when present)
  if (m.bias) {
    p.tp_sharded += h + 2 * kv + f;  // QKV and first MLP biases are column-parallel
    p.tp_replicated += 2 * h;        // output-projection biases are row-parallel
  }
  return p;
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
  return static_cast<double>(m.layers * layer_params(m).total() + word_embedding_params(m) +
                             position_embedding_params(m) + final_norm_params(m) + output_head_params(m));
}

double layer_forward_flops_per_token(const ModelSpec& m) {
  return 2.0 * static_cast<double>(layer_params(m).matmul) + attention_core_flops_per_token(m);
}

double attention_core_flops_per_token(const ModelSpec& m) {
  // Q·K^T and scores·V: 2·s·h FLOPs each per token (full, non-causal count as in Megatron-LM).
  return 4.0 * static_cast<double>(m.seq_len) * static_cast<double>(m.hidden);
}

double op_sac_recompute_flops_per_token(const ModelSpec& m) {
  const double h = static_cast<double>(m.hidden), kv = static_cast<double>(m.kv_heads * m.head_dim());
  const double f = static_cast<double>(m.ffn);
  return 2.0 * (h * kv + h * h + f * h);
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

// A spelling get_choice accepted.
ModelFamily parse_family(const std::string& name) {
  return name == "llama" ? ModelFamily::Llama : name == "neox" ? ModelFamily::Neox : ModelFamily::Gpt;
}

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
  if (r.has(key) && v > kMaxModelDim)
    throw InputError(r.field(key) + "=" + std::to_string(v) +
                     " is above the largest model dimension placesim accepts (" + std::to_string(kMaxModelDim) + ")");
  return v;
}

// The parameter count, computed in long double (exact for these sizes) before any 64-bit product is formed, must stay
// within kMaxCountedElems; the refusal names the shape fields that make it.
void check_parameter_count(const ModelSpec& m, const ObjectReader& r) {
  using L = long double;
  const L h = m.hidden, f = m.ffn, kv = L(m.kv_heads) * L(m.hidden / m.heads);
  const L layer = 2 * h * h + 2 * h * kv + (m.gated_mlp ? 3 : 2) * h * f + 8 * h + 2 * kv + f;
  const L positions = m.learned_positions ? L(m.max_positions > 0 ? m.max_positions : m.seq_len) * h : 0;
  const L total = L(m.layers) * layer + 2 * L(m.vocab) * h + positions + 2 * h;
  if (layer > L(kMaxCountedElems) || total > L(kMaxCountedElems))
    throw InputError("the model shape " + r.field("layers") + "=" + std::to_string(m.layers) + ", " +
                     r.field("hidden") + "=" + std::to_string(m.hidden) + ", " + r.field("ffn") + "=" +
                     std::to_string(m.ffn) + ", " + r.field("vocab") + "=" + std::to_string(m.vocab) + " gives about " +
                     format_significant(static_cast<double>(total), 3) +
                     " parameters, more than the 2^50 (1.1e15) placesim counts exactly");
}

ModelSpec read_model_object(const Json& object, const std::string& path) {
  ObjectReader r(object, path);
  ModelSpec m;
  m.name = r.get_string("name", "custom");
  r.skip("preset");
  r.skip("hf_config");
  if (r.has("parameters")) {
    m.opaque_parameters = r.get_positive("parameters", 0);
    if (m.opaque_parameters > static_cast<double>(kMaxCountedElems))
      throw InputError(r.field("parameters") + "=" + format_significant(m.opaque_parameters, 3) +
                       " is more than the 2^50 (1.1e15) parameters placesim counts exactly");
    // An opaque model may say how many layers it has (the units ZeRO-3 gathers), nothing else.
    m.opaque_layers = get_dim(r, "layers", 0);
    r.finish();
    return m;
  }
  m.family = parse_family(r.get_choice("family", {"gpt", "llama", "neox"}, "gpt"));
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
  r.finish();
  if (m.learned_positions && m.max_positions > 0 && m.seq_len > m.max_positions)
    throw InputError(r.field("seq_len") + "=" + std::to_string(m.seq_len) + " is longer than " +
                     r.field("max_positions") + "=" + std::to_string(m.max_positions) +
                     ": a learned position embedding has no rows for the extra positions");
  if (m.hidden % m.heads != 0)
    throw InputError(r.field("hidden") + "=" + std::to_string(m.hidden) + " is not divisible by " + r.field("heads") +
                     "=" + std::to_string(m.heads));
  if (m.heads % m.kv_heads != 0)
    throw InputError(r.field("heads") + "=" + std::to_string(m.heads) + " is not divisible by " + r.field("kv_heads") +
                     "=" + std::to_string(m.kv_heads));
  check_parameter_count(m, r);
  return m;
}

}  // namespace

ModelSpec parse_model(const Json& value, const std::string& base_dir) {
  if (value.is_string()) return read_model_object(model_preset(value.get<std::string>(), "model"), "model");
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
  ModelSpec m = read_model_object(merged, "model");
  if (value.contains("hf_config") && !value.contains("seq_len") && !m.opaque())
    m.seq_len_source = "Hugging Face import default min(" + std::to_string(kHfDefaultSeqLen) + ", " + hf_positions_key +
                       " " + std::to_string(hf_positions) + "); set model.seq_len";
  return m;
}

std::string to_string(ModelFamily f) {
  switch (f) {
    case ModelFamily::Gpt:
      return "gpt";
    case ModelFamily::Llama:
      return "llama";
    case ModelFamily::Neox:
      return "neox";
  }
  return "?";
}

}  // namespace placesim
