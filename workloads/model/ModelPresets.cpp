#include "workloads/model/ModelPresets.hpp"

#include <map>

#include "workloads/model/Model.hpp"

namespace placesim {

namespace {

struct Preset {
  const char* description;
  const char* fields;  // JSON object text
};

// Sources: GPT-3 and the weak-scaling GPT family from Narayanan et al. (arXiv 2104.04473, Table 1: vocabulary 51,200,
// sequence 2,048); the 22B model from Korthikanti et al. (arXiv 2205.05198, Table 3); Llama 2 and Llama 3 shapes from
// their published config.json files (Touvron et al. 2023; Llama 3 herd of models, 2024).
// The mixture-of-experts presets copy their Hugging Face config.json shapes (mistralai/Mixtral-8x7B-v0.1,
// mistralai/Mixtral-8x22B-v0.1 with its vocabulary of 32768, deepseek-ai/DeepSeek-V3, Qwen/Qwen3-30B-A3B). Their
// seq_len is 4096, the length of the MoE validation runs (DeepSeek-V3's pre-training, Megatron-Core's Mixtral 8x7B and
// NeMo's DeepSeek-V3 benchmarks), not the context the models support. Not modelled, as too small to matter:
// DeepSeek-V3's per-expert routing correction bias (256 per MoE layer, 14,848 in all) and Qwen3's per-head
// q_norm/k_norm (2 x 128 per layer, 12,288 in all: 0.00004 % of 30.5B). DeepSeek-V3's multi-token-prediction module
// (11.5B) is not part of the 671B main model and is left out. A dense ffn is still given where every layer is MoE
// (Mixtral: the expert size; Qwen3-30B-A3B: intermediate_size 6144, which only layers in mlp_only_layers would use):
// the parameter and FLOP formulas do not read it for MoE layers.
const std::map<std::string, Preset>& presets() {
  static const std::map<std::string, Preset> table = {
      {"gpt3-175b",
       {"GPT-3 175B (96 layers, h 12288, 96 heads)",
        R"({"name":"gpt3-175b","family":"gpt","layers":96,"hidden":12288,"heads":96,"vocab":51200,"seq_len":2048})"}},
      {"gpt-1.7b",
       {"Megatron weak-scaling GPT 1.7B (24 layers, h 2304)",
        R"({"name":"gpt-1.7b","family":"gpt","layers":24,"hidden":2304,"heads":24,"vocab":51200,"seq_len":2048})"}},
      {"gpt-3.6b",
       {"Megatron weak-scaling GPT 3.6B (30 layers, h 3072)",
        R"({"name":"gpt-3.6b","family":"gpt","layers":30,"hidden":3072,"heads":32,"vocab":51200,"seq_len":2048})"}},
      {"gpt-7.5b",
       {"Megatron weak-scaling GPT 7.5B (36 layers, h 4096)",
        R"({"name":"gpt-7.5b","family":"gpt","layers":36,"hidden":4096,"heads":32,"vocab":51200,"seq_len":2048})"}},
      {"gpt-18b",
       {"Megatron weak-scaling GPT 18.4B (40 layers, h 6144)",
        R"({"name":"gpt-18b","family":"gpt","layers":40,"hidden":6144,"heads":48,"vocab":51200,"seq_len":2048})"}},
      {"gpt-22b",
       {"Korthikanti et al. 22B (48 layers, h 6144, 64 heads)",
        R"({"name":"gpt-22b","family":"gpt","layers":48,"hidden":6144,"heads":64,"vocab":51200,"seq_len":2048})"}},
      {"gpt-39b",
       {"Megatron weak-scaling GPT 39.1B (48 layers, h 8192)",
        R"({"name":"gpt-39b","family":"gpt","layers":48,"hidden":8192,"heads":64,"vocab":51200,"seq_len":2048})"}},
      {"gpt-76b",
       {"Megatron weak-scaling GPT 76.1B (60 layers, h 10240)",
        R"({"name":"gpt-76b","family":"gpt","layers":60,"hidden":10240,"heads":80,"vocab":51200,"seq_len":2048})"}},
      {"gpt-145b",
       {"Megatron weak-scaling GPT 145.6B (80 layers, h 12288)",
        R"({"name":"gpt-145b","family":"gpt","layers":80,"hidden":12288,"heads":96,"vocab":51200,"seq_len":2048})"}},
      {"gpt-310b",
       {"Megatron weak-scaling GPT 310.1B (96 layers, h 16384)",
        R"({"name":"gpt-310b","family":"gpt","layers":96,"hidden":16384,"heads":128,"vocab":51200,"seq_len":2048})"}},
      {"gpt-530b",
       {"Megatron weak-scaling GPT 529.6B (105 layers, h 20480)",
        R"({"name":"gpt-530b","family":"gpt","layers":105,"hidden":20480,"heads":128,"vocab":51200,"seq_len":2048})"}},
      {"gpt-1t",
       {"Megatron weak-scaling GPT 1008B (128 layers, h 25600)",
        R"({"name":"gpt-1t","family":"gpt","layers":128,"hidden":25600,"heads":160,"vocab":51200,"seq_len":2048})"}},
      {"llama2-7b",
       {"Llama 2 7B (32 layers, h 4096, ffn 11008)",
        R"({"name":"llama2-7b","family":"llama","layers":32,"hidden":4096,"heads":32,"kv_heads":32,"ffn":11008,"vocab":32000,"seq_len":4096})"}},
      {"llama2-13b",
       {"Llama 2 13B (40 layers, h 5120, ffn 13824)",
        R"({"name":"llama2-13b","family":"llama","layers":40,"hidden":5120,"heads":40,"kv_heads":40,"ffn":13824,"vocab":32000,"seq_len":4096})"}},
      {"llama2-70b",
       {"Llama 2 70B (80 layers, h 8192, GQA 8 kv heads)",
        R"({"name":"llama2-70b","family":"llama","layers":80,"hidden":8192,"heads":64,"kv_heads":8,"ffn":28672,"vocab":32000,"seq_len":4096})"}},
      {"llama3-8b",
       {"Llama 3 8B (32 layers, h 4096, GQA 8 kv heads)",
        R"({"name":"llama3-8b","family":"llama","layers":32,"hidden":4096,"heads":32,"kv_heads":8,"ffn":14336,"vocab":128256,"seq_len":8192})"}},
      {"llama3-70b",
       {"Llama 3 70B (80 layers, h 8192, GQA 8 kv heads)",
        R"({"name":"llama3-70b","family":"llama","layers":80,"hidden":8192,"heads":64,"kv_heads":8,"ffn":28672,"vocab":128256,"seq_len":8192})"}},
      {"llama3-405b",
       {"Llama 3 405B (126 layers, h 16384, GQA 8 kv heads)",
        R"({"name":"llama3-405b","family":"llama","layers":126,"hidden":16384,"heads":128,"kv_heads":8,"ffn":53248,"vocab":128256,"seq_len":8192})"}},
      {"mixtral-8x7b",
       {"Mixtral 8x7B: 8 experts top-2, 46.7B / 12.9B active (Mixtral-8x7B-v0.1 config; seq 4096 of the "
        "validation runs)",
        R"({"name":"mixtral-8x7b","family":"llama","layers":32,"hidden":4096,"heads":32,"kv_heads":8,"ffn":14336,"vocab":32000,"seq_len":4096,"experts":8,"top_k":2,"moe_ffn":14336})"}},
      {"mixtral-8x22b",
       {"Mixtral 8x22B: 8 experts top-2, 141B / 39B active (Mixtral-8x22B-v0.1 config, vocab 32768; seq 4096 of the "
        "validation runs)",
        R"({"name":"mixtral-8x22b","family":"llama","layers":56,"hidden":6144,"heads":48,"kv_heads":8,"ffn":16384,"vocab":32768,"seq_len":4096,"experts":8,"top_k":2,"moe_ffn":16384})"}},
      {"deepseek-v3",
       {"DeepSeek-V3 671B without MTP: MLA, 256 experts top-8 + 1 shared (DeepSeek-V3 config; seq 4096 of the "
        "validation runs)",
        R"({"name":"deepseek-v3","family":"llama","layers":61,"hidden":7168,"heads":128,"kv_heads":128,"ffn":18432,"vocab":129280,"seq_len":4096,"head_dim":128,"q_lora_rank":1536,"kv_lora_rank":512,"qk_rope_head_dim":64,"v_head_dim":128,"experts":256,"top_k":8,"moe_ffn":2048,"shared_experts":1,"shared_ffn":2048,"first_dense_layers":3})"}},
      {"qwen3-30b-a3b",
       {"Qwen3-30B-A3B: head_dim 128, 128 experts top-8, 30.5B / 3.3B active (Qwen3-30B-A3B config; seq 4096 of the "
        "validation runs)",
        R"({"name":"qwen3-30b-a3b","family":"llama","layers":48,"hidden":2048,"heads":32,"kv_heads":4,"head_dim":128,"ffn":6144,"vocab":151936,"seq_len":4096,"experts":128,"top_k":8,"moe_ffn":768})"}},
  };
  return table;
}

}  // namespace

Json model_preset(const std::string& name, const std::string& field) {
  const auto& table = presets();
  auto it = table.find(name);
  if (it == table.end()) {
    std::vector<std::string> names;
    for (const auto& [n, p] : table) names.push_back(n);
    std::string guess = nearest(name, names);
    throw InputError(field + "=" + name + " is not a model preset" +
                     (guess.empty() ? std::string(" (see `placesim presets`)") : " (did you mean '" + guess + "'?)"));
  }
  return Json::parse(it->second.fields);
}

std::vector<std::pair<std::string, std::string>> model_preset_list() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, p] : presets()) out.emplace_back(name, p.description);
  return out;
}

}  // namespace placesim
