#include <algorithm>
#include <string>

#include "workloads/model/Model.hpp"

namespace placesim {

namespace {

std::int64_t hf_int(const Json& config, const char* key, const std::string& origin) {
  auto it = config.find(key);
  if (it == config.end() || !it->is_number_integer())
    throw InputError(origin + ": Hugging Face config field " + key + " is missing or not an integer");
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

}  // namespace

// Field names follow transformers' LlamaConfig / MistralConfig, GPT2Config and GPTNeoXConfig. The HF config's own
// extra keys are ignored: only the shape matters here.
Json hf_config_to_model_json(const Json& config, const std::string& origin) {
  if (!config.is_object()) throw InputError(origin + ": a Hugging Face config.json must be a JSON object");
  std::string type =
      config.contains("model_type") && config["model_type"].is_string() ? config["model_type"].get<std::string>() : "";
  Json m = Json::object();
  std::string name = config.contains("_name_or_path") && config["_name_or_path"].is_string()
                         ? config["_name_or_path"].get<std::string>()
                         : type;
  m["name"] = name.empty() ? std::string("hf-model") : name;
  if (type == "llama" || type == "mistral") {
    m["family"] = "llama";
    m["layers"] = hf_int(config, "num_hidden_layers", origin);
    m["hidden"] = hf_int(config, "hidden_size", origin);
    m["heads"] = hf_int(config, "num_attention_heads", origin);
    m["kv_heads"] = hf_int_or(config, "num_key_value_heads", m["heads"].get<std::int64_t>());
    m["ffn"] = hf_int(config, "intermediate_size", origin);
    m["vocab"] = hf_int(config, "vocab_size", origin);
    m["max_positions"] = hf_int(config, "max_position_embeddings", origin);
    m["tied_embeddings"] = hf_bool_or(config, "tie_word_embeddings", false);
  } else if (type == "gpt2") {
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
  } else if (type == "gpt_neox") {
    m["family"] = "neox";
    m["layers"] = hf_int(config, "num_hidden_layers", origin);
    m["hidden"] = hf_int(config, "hidden_size", origin);
    m["heads"] = hf_int(config, "num_attention_heads", origin);
    m["ffn"] = hf_int(config, "intermediate_size", origin);
    m["vocab"] = hf_int(config, "vocab_size", origin);
    m["max_positions"] = hf_int(config, "max_position_embeddings", origin);
    m["tied_embeddings"] = hf_bool_or(config, "tie_word_embeddings", false);
  } else {
    throw InputError(origin + ": model_type=" + (type.empty() ? std::string("(missing)") : type) +
                     " is not supported (supported: llama, mistral, gpt2, gpt_neox)");
  }
  m["seq_len"] = std::min(kHfDefaultSeqLen, m["max_positions"].get<std::int64_t>());
  return m;
}

}  // namespace placesim
