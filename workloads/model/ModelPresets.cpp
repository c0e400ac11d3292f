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
