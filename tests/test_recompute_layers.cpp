// training.recompute_layers: full recompute of the first N layers of each model chunk (Megatron-LM's
// --recompute-method block --recompute-num-layers N), the others keeping every activation. Hand-computed on the 22B
// model of Korthikanti et al. (s = 2048, h = 6144, micro-batch 4, t = 8 with sequence parallelism), whose layer keeps
// 2sbh/t under a full recompute and 34sbh/t without one (fused attention, no scores).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "strategies/analytic/Analytic.hpp"
#include "strategies/placement/Layout.hpp"
#include "tests/Helpers.hpp"
#include "traces/report/Report.hpp"
#include "workloads/json/Error.hpp"
#include "workloads/json/JsonReader.hpp"

using namespace placesim;

namespace {

// 48 layers over pp 4, 12 a stage; 8 micro-batches of 4 (global batch 32, dp 1) under 1F1B.
Experiment korthikanti_22b(const std::string& recompute) {
  return test::experiment(R"({"model": "gpt-22b", "training": {"micro_batch": 4, "global_batch": 32, )" + recompute +
                          R"(}, "strategy": {"tp": 8, "sp": true, "pp": 4, "schedule": "1f1b"}})");
}

const double sbh_t = 2048.0 * 4 * 6144 / 8;  // 6,291,456 elements per rank

}  // namespace

TEST_CASE("recompute_layers: each stage keeps the input of its recomputed layers and every activation of the rest") {
  Experiment e = korthikanti_22b(R"("recompute": "full", "recompute_layers": 5)");
  const std::vector<StageLayout> layouts = stage_layouts(e);
  REQUIRE(layouts[0].n_layers == 12);
  REQUIRE(layouts[3].n_layers == 12);
  CHECK(stage_recomputed_layers(e, layouts[0]) == 5);
  // One micro-batch of a stage: 5 layers x 2sbh/t + 7 layers x 34sbh/t = 248 sbh/t = 1,560,281,088 bytes.
  CHECK(chunk_layers_activation_bytes(e, 12) == 1560281088.0);
  CHECK(248 * sbh_t == 1560281088.0);
  // 1F1B: stage 0 holds min(m, p) = 4 micro-batches in flight, stage 3 one.
  CHECK(stage_activation_bytes(e, layouts[0]) == 4 * 1560281088.0);
  CHECK(stage_activation_bytes(e, layouts[3]) == 1560281088.0);
  // More layers than a chunk has: every layer is recomputed, as with recompute full alone.
  Experiment all = korthikanti_22b(R"("recompute": "full", "recompute_layers": 12)");
  Experiment full = korthikanti_22b(R"("recompute": "full")");
  CHECK(stage_activation_bytes(all, stage_layouts(all)[0]) == 4 * 12 * 2 * sbh_t);
  CHECK(stage_activation_bytes(full, stage_layouts(full)[0]) == 4 * 12 * 2 * sbh_t);
}

TEST_CASE("recompute_layers: only the recomputed layers send their forward's TP collectives and FLOPs again") {
  const Analysis none = analyze(korthikanti_22b(R"("recompute": "none")"));
  const Analysis part = analyze(korthikanti_22b(R"("recompute": "full", "recompute_layers": 5)"));
  const Analysis full = analyze(korthikanti_22b(R"("recompute": "full")"));
  // A recomputed layer's forward repeats its 2 all-gathers and 2 reduce-scatters over sp (7/8 of s b h = 44,040,192
  // elements each, 2 bytes): per stage and step 8 micro-batches x 5 layers x 4 x 44,040,192 x 2 = 14,092,861,440
  // bytes more than without recompute; the full recompute 12 layers' worth, 33,822,867,456.
  const auto tp = [](const Analysis& a) {
    return a.stages[0].comm.by_class[static_cast<std::size_t>(CommClass::TpCollective)];
  };
  CHECK(tp(part) - tp(none) == 14092861440.0);
  CHECK(tp(full) - tp(none) == 33822867456.0);
  // FLOPs: 5 of the stage's 12 layers run their forward again.
  const double extra = full.stages[1].hardware_flops - none.stages[1].hardware_flops;
  CHECK(part.stages[1].hardware_flops - none.stages[1].hardware_flops == Approx(extra * 5 / 12).epsilon(1e-12));
  // The bubble's basis counts the recomputed share: backward 2 + 5/12.
  Experiment e = korthikanti_22b(R"("recompute": "full", "recompute_layers": 5)");
  CHECK_THAT(analysis_table(e, part), Catch::Contains("backward 2.417 (recompute of 41.67 % of the layers included)") &&
                                          Catch::Contains("recompute full of the first 5 layers of each model chunk"));
}

TEST_CASE("recompute_layers: refused without a full recompute and where it is not modelled") {
  auto refused = [](const std::string& training, const std::string& strategy, const std::string& model = "gpt-22b") {
    try {
      test::experiment(R"({"model": ")" + model + R"(", "training": {)" + training + R"(}, "strategy": )" + strategy +
                       "}");
    } catch (const InputError& err) {
      return std::string(err.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(refused(R"("recompute": "selective", "recompute_layers": 4)", R"({"tp": 8})"),
             Catch::Contains("training.recompute_layers=4 needs training.recompute=full (it is selective)"));
  CHECK_THAT(refused(R"("recompute_layers": 4)", R"({"preset": "fsdp", "dp": 8})"),
             Catch::Contains("training.recompute_layers=4 needs training.recompute=full"));
  CHECK_THAT(refused(R"("recompute": "full", "recompute_layers": 0)", R"({"tp": 8})"),
             Catch::Contains("training.recompute_layers"));
  CHECK_THAT(refused(R"("recompute": "full", "recompute_layers": 2, "global_batch": 8)",
                     R"({"preset": "megatron-3d", "tp": 1, "cp": 2})", "llama3-8b"),
             Catch::Contains("training.recompute_layers=2 with strategy.cp=2 is not modelled"));
  // The megatron-3d preset's materialized activations make the recompute full: accepted without it written.
  CHECK(refused(R"("recompute_layers": 4)", R"({"preset": "megatron-3d", "tp": 8})") == "accepted");
}

TEST_CASE("recompute_layers: the simulation agrees with the analytic figures, 1F1B and uneven interleaving") {
  for (const char* strategy : {R"({"preset": "megatron-3d", "pp": 2, "dp": 4, "schedule": "1f1b"})",
                               R"({"preset": "megatron-3d", "pp": 2, "dp": 4, "schedule": "interleaved", "chunks": 3})",
                               R"({"preset": "fsdp", "dp": 8})"}) {
    INFO(strategy);
    const Json report = test::simulate_exact(
        "recompute-layers",
        std::string(R"({"model": {"layers": 10, "hidden": 512, "heads": 8, "vocab": 1000, "seq_len": 256}, )") +
            R"("training": {"global_batch": 16, "micro_batch": 1, "recompute": "full", "recompute_layers": 1}, )" +
            R"("strategy": )" + strategy + R"(, "cluster": {"preset": "dgx-h100", "nodes": 1}})");
    CHECK(report["training"]["recompute_layers"] == 1);
  }
}
