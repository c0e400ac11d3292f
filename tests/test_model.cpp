// Parameter counts of the model presets and of imported Hugging Face configs.
#include <catch2/catch.hpp>

#include "tests/Helpers.hpp"
#include "workloads/model/Model.hpp"

using namespace placesim;

namespace {

ModelSpec preset(const std::string& name) {
  return parse_model(Json(name), "");
}

// Narayanan et al. (arXiv 2104.04473) eq. for a GPT stack: 12lh^2 (1 + 13/(12h) + (V+s)/(12lh)), i.e.
// 12lh^2 + 13lh + (V+s)h. The formula leaves out the final layer norm (2h parameters), which placesim counts.
double megatron_formula(double l, double h, double v, double s) {
  return 12 * l * h * h + 13 * l * h + (v + s) * h;
}

}  // namespace

TEST_CASE("GPT presets equal Megatron-LM's parameter formula plus the final layer norm") {
  struct Row {
    const char* name;
    double l, h;
  };
  for (Row r : {Row{"gpt3-175b", 96, 12288}, Row{"gpt-1.7b", 24, 2304}, Row{"gpt-3.6b", 30, 3072},
                Row{"gpt-7.5b", 36, 4096}, Row{"gpt-18b", 40, 6144}, Row{"gpt-22b", 48, 6144}, Row{"gpt-39b", 48, 8192},
                Row{"gpt-76b", 60, 10240}, Row{"gpt-145b", 80, 12288}, Row{"gpt-310b", 96, 16384},
                Row{"gpt-530b", 105, 20480}, Row{"gpt-1t", 128, 25600}}) {
    INFO(r.name);
    CHECK(total_parameters(preset(r.name)) == megatron_formula(r.l, r.h, 51200, 2048) + 2 * r.h);
  }
  // GPT-3 175B by hand: 12*96*12288^2 + 13*96*12288 + (51200+2048)*12288 + 2*12288 = 174,615,846,912.
  CHECK(total_parameters(preset("gpt3-175b")) == 174615846912.0);
}

TEST_CASE("Megatron weak-scaling presets round to the sizes printed in Narayanan et al. Table 1") {
  auto billions = [](const char* n) { return total_parameters(preset(n)) / 1e9; };
  CHECK(billions("gpt-1.7b") == Approx(1.7).margin(0.05));
  CHECK(billions("gpt-3.6b") == Approx(3.6).margin(0.05));
  CHECK(billions("gpt-7.5b") == Approx(7.5).margin(0.05));
  CHECK(billions("gpt-18b") == Approx(18.4).margin(0.05));
  CHECK(billions("gpt-39b") == Approx(39.1).margin(0.05));
  CHECK(billions("gpt-76b") == Approx(76.1).margin(0.05));
  CHECK(billions("gpt-145b") == Approx(145.6).margin(0.05));
  CHECK(billions("gpt-310b") == Approx(310.1).margin(0.05));
  CHECK(billions("gpt-530b") == Approx(529.6).margin(0.05));
  CHECK(billions("gpt-1t") == Approx(1008.0).margin(0.05));
}

TEST_CASE("Llama presets match their published parameter counts to 0.5 percent") {
  // Published counts of the released checkpoints (Meta's model cards / Hugging Face).
  struct Row {
    const char* name;
    double published;
  };
  for (Row r : {Row{"llama2-7b", 6738415616.0}, Row{"llama2-13b", 13015864320.0}, Row{"llama2-70b", 68976648192.0},
                Row{"llama3-8b", 8030261248.0}, Row{"llama3-70b", 70553706496.0}, Row{"llama3-405b", 405853388800.0}}) {
    INFO(r.name);
    double count = total_parameters(preset(r.name));
    CHECK(std::abs(count - r.published) / r.published < 0.005);
    CHECK(count == r.published);  // the shapes reproduce them exactly
  }
}

TEST_CASE("Hugging Face config.json import for the Llama GPT-2 and GPT-NeoX families") {
  auto hf = [](const char* file) {
    return parse_model(Json{{"hf_config", std::string(PLACESIM_SOURCE_DIR) + "/tests/data/" + file}}, "");
  };
  ModelSpec llama = hf("hf-llama-2-7b.json");
  CHECK(llama.family == ModelFamily::Llama);
  CHECK(llama.layers == 32);
  CHECK(llama.seq_len == 4096);
  CHECK(total_parameters(llama) == 6738415616.0);
  CHECK(total_parameters(hf("hf-gpt2.json")) == 124439808.0);         // GPT-2 small as published
  CHECK(total_parameters(hf("hf-pythia-160m.json")) == 162322944.0);  // Pythia-160M as published
  // Fields next to hf_config override the imported ones.
  ModelSpec shorter = parse_model(
      Json{{"hf_config", std::string(PLACESIM_SOURCE_DIR) + "/tests/data/hf-llama-2-7b.json"}, {"seq_len", 2048}}, "");
  CHECK(shorter.seq_len == 2048);
  CHECK(shorter.seq_len_source.empty());
}

// Max_position_embeddings is the longest context a model supports, not its training length; a
// Mistral config (32768) made a 32K-token run and a 2.36 TB/GPU table with exit 0.
TEST_CASE("A Hugging Face import trains at min(4096, max_position_embeddings) unless seq_len is given, and says so") {
  auto hf = [](const char* file, Json extra = Json::object()) {
    extra["hf_config"] = std::string(PLACESIM_SOURCE_DIR) + "/tests/data/" + file;
    return parse_model(extra, "");
  };
  ModelSpec mistral = hf("hf-mistral-7b.json");
  CHECK(mistral.seq_len == 4096);
  CHECK(mistral.max_positions == 32768);
  CHECK(mistral.seq_len_source ==
        "Hugging Face import default min(4096, max_position_embeddings 32768); set model.seq_len");
  // Mistral 7B v0.1 as published: 7,241,732,096 parameters (32 x 218,112,000 + 2 x 32000 x 4096 + 4096).
  CHECK(total_parameters(mistral) == 7241732096.0);
  CHECK(hf("hf-mistral-7b.json", {{"seq_len", 16384}}).seq_len == 16384);
  // GPT-2's learned position table has n_positions = 1024 rows whatever length it trains at.
  ModelSpec gpt2 = hf("hf-gpt2.json", {{"seq_len", 512}});
  CHECK(gpt2.seq_len == 512);
  CHECK(total_parameters(gpt2) == 124439808.0);
  CHECK(hf("hf-gpt2.json").seq_len == 1024);
  CHECK_THROWS_WITH(hf("hf-gpt2.json", {{"seq_len", 2048}}),
                    Catch::Contains("model.seq_len=2048 is longer than model.max_positions=1024"));
  // The summary prints the length and where it came from.
  std::string out;
  REQUIRE(test::run_placesim("analyze --table --model-hf " + std::string(PLACESIM_SOURCE_DIR) +
                                 "/tests/data/hf-mistral-7b.json --strategy fsdp --set strategy.dp=8",
                             &out) == 0);
  CHECK_THAT(out, Catch::Contains("seq 4096 (Hugging Face import default min(4096, max_position_embeddings 32768); "
                                  "set model.seq_len), fused attention"));
}

TEST_CASE("Model presets can be overridden field by field") {
  Experiment e = test::experiment(R"({"model": {"preset": "llama3-8b", "seq_len": 4096}, "strategy": "dp"})");
  CHECK(e.model.seq_len == 4096);
  CHECK(e.model.hidden == 4096);
  CHECK(e.model.kv_heads == 8);
}

TEST_CASE("Model errors name the field") {
  CHECK_THROWS_WITH(parse_model(Json("llama3-7b"), ""),
                    Catch::Contains("model=llama3-7b is not a model preset") && Catch::Contains("did you mean"));
  CHECK_THROWS_WITH(parse_model(Json::parse(R"({"layers": 2, "hidden": 64, "heads": 4, "vocab": 10})"), ""),
                    Catch::Contains("model.seq_len is required but missing"));
  CHECK_THROWS_WITH(
      parse_model(Json::parse(R"({"layers": 2, "hidden": 64, "heads": 5, "vocab": 10, "seq_len": 8})"), ""),
      Catch::Contains("model.hidden=64 is not divisible by model.heads=5"));
  CHECK_THROWS_WITH(parse_model(Json::parse(R"({"parameters": -3})"), ""),
                    Catch::Contains("model.parameters=-3 must be positive"));
  CHECK_THROWS_WITH(parse_model(Json::parse(R"({"preset": "gpt3-175b", "hiden": 3})"), ""),
                    Catch::Contains("unknown key model.hiden") && Catch::Contains("model.hidden"));
}
