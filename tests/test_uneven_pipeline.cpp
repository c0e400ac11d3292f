// Uneven pipelines (strategy.layers_per_stage, the end-stages-lighter rule over virtual stages) and the interleaved
// schedule's micro-batch groups: layouts, activation peaks and bubbles counted by hand.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>

#include "strategies/analytic/Analytic.hpp"
#include "strategies/analytic/Validity.hpp"
#include "strategies/pipeline/StageMemory.hpp"
#include "strategies/pipeline/StagePlan.hpp"
#include "tests/Helpers.hpp"
#include "workloads/json/JsonReader.hpp"

using namespace placesim;

namespace {

const char* kTenLayers = R"({"layers": 10, "hidden": 512, "heads": 8, "vocab": 1000, "seq_len": 256})";

Experiment ten_layers(const std::string& strategy, int microbatches) {
  return test::experiment(std::string(R"({"model": )") + kTenLayers +
                          R"(, "training": {"micro_batch": 1, "global_batch": )" + std::to_string(microbatches) +
                          R"(}, "strategy": )" + strategy + "}");
}

std::vector<double> activation_layers(const Experiment& e) {
  std::vector<double> out;
  for (const StageLayout& st : stage_layouts(e)) out.push_back(activation_layer_equivalents(e, st));
  return out;
}

// Llama 3 405B (126 layers) on tp 8 x pp 16, interleaved with `chunks` model chunks per rank; checked valid.
Experiment llama3_405b_interleaved(int chunks, int global_batch) {
  const Experiment e = test::experiment(
      R"({"model": "llama3-405b", "training": {"micro_batch": 1, "global_batch": )" + std::to_string(global_batch) +
      R"(}, "strategy": {"tp": 8, "pp": 16, "schedule": "interleaved", "chunks": )" + std::to_string(chunks) + "}}");
  CHECK_NOTHROW(check_validity(e));
  return e;
}

std::string refusal(const std::string& text) {
  try {
    check_validity(test::experiment(text));
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("10 layers on 4 ranks with 2 chunks: the rule makes the end virtual stages lighter") {
  // 8 virtual stages, ceil(10/8) = 2 layers each less 6 surplus, taken from virtual stages 0, 7, 1, 6, 2, 5.
  const Experiment e = ten_layers(R"({"pp": 4, "schedule": "interleaved", "chunks": 2})", 4);
  CHECK(virtual_stage_layers(e) == std::vector<std::int64_t>{1, 1, 1, 2, 2, 1, 1, 1});
  const std::vector<StageLayout> st = stage_layouts(e);
  // stage s holds virtual stages s and s + 4
  CHECK(st[0].chunk_layers == std::vector<std::int64_t>{1, 2});
  CHECK(st[1].chunk_layers == std::vector<std::int64_t>{1, 1});
  CHECK(st[2].chunk_layers == std::vector<std::int64_t>{1, 1});
  CHECK(st[3].chunk_layers == std::vector<std::int64_t>{2, 1});
  CHECK(st[0].chunk_first == std::vector<std::int64_t>{0, 5});
  CHECK(st[3].chunk_first == std::vector<std::int64_t>{3, 9});
  CHECK(st[0].n_layers == 3);
  CHECK(st[3].n_layers == 3);
}

TEST_CASE("Uneven interleaving: activation peaks per stage walked by hand") {
  // Forwards of a stage in order, 4 micro-batches in a group: k = 0..3 chunk 0, 4..7 chunk 1, 8..11 chunk 0, ...
  // Warm-up 2(3 - s) + 4 forwards, then one forward and one backward (chunks reversed) in turn.
  SECTION("4 micro-batches") {
    // stage 0: all 8 forwards warm up: 4 x 1 + 4 x 2 = 12; stage 1 (warm-up 8) 8 x 1; stage 2: 6 warm-up + 1 = 7;
    // stage 3: 4 x 2 (chunk 0) then F(chunk 1) = 9, each backward of chunk 1 answered by a forward of chunk 1.
    const Experiment e = ten_layers(R"({"pp": 4, "schedule": "interleaved", "chunks": 2})", 4);
    CHECK(activation_layers(e) == std::vector<double>{12, 8, 7, 9});
  }
  SECTION("8 micro-batches") {
    // stage 0: warm-up 10 = 4 x 1 + 4 x 2 + 2 x 1 = 14, then F (chunk 0, +1) = 15 before the first backward (-2).
    // stage 3: warm-up 4 x 2 = 8, F(chunk 1) 9, B(chunk 1) 8, ... F(k = 8, chunk 0) 10 before B(k = 4, chunk 0).
    const Experiment e = ten_layers(R"({"pp": 4, "schedule": "interleaved", "chunks": 2})", 8);
    CHECK(activation_layers(e) == std::vector<double>{15, 9, 7, 10});
    const Analysis a = analyze(e);
    const double layer = layer_activation_bytes(e);
    CHECK(a.stages[0].memory.activations == 15 * layer);
    // The last stage also holds the loss over the head's logits from each head forward (chunk 1) to its backward,
    // and the backward's gradients while it runs. Its 10 layers are held at F(k = 8, chunk 0), when no loss is live
    // (chunk 1's forwards k = 4..7 have had their backwards); with a loss live the layers are 9 (8 + chunk 1's 1).
    const double saved = loss_saved_bytes(e), transient = loss_transient_bytes(e);
    CHECK(a.stages[3].memory.activations == std::max(10 * layer, 9 * layer + saved + transient));
    CHECK(a.stages[3].memory.activations < 10 * layer + saved + transient);  // the bound before this was walked
  }
}

TEST_CASE("Uneven interleaving: the bubble of every stage counted by hand") {
  // 10 layers as [1 1 1 2 | 2 1 1 1] on 4 stages, 2 chunks, forward 1 and backward 2 per layer, communication free.
  SECTION("4 micro-batches") {
    // Warm-ups 8, 8, 6, 4 forwards (2(3 - s) + 4, at most 8). Traced op by op (docs/changes.md): the step
    // ends at 45 on stage 0; stages 0 and 3 compute 4 x (1 + 2) + 4 x (2 + 4) = 36, stages 1 and 2 4 x 2 x 3 = 24.
    const Experiment e = ten_layers(R"({"pp": 4, "schedule": "interleaved", "chunks": 2})", 4);
    const std::vector<StagePlan> plan = stage_plan(e, StageWork{});
    REQUIRE(plan.size() == 4);
    CHECK(plan[0].bubble_s == 9);
    CHECK(plan[1].bubble_s == 21);
    CHECK(plan[2].bubble_s == 21);
    CHECK(plan[3].bubble_s == 9);
    CHECK(plan[0].bubble_fraction == Approx(9.0 / 45).epsilon(1e-15));
    CHECK(plan[1].bubble_fraction == Approx(21.0 / 45).epsilon(1e-15));
    CHECK(plan[0].inflight_passes == 8);
    CHECK(plan[3].inflight_passes == 5);  // 4 of chunk 0 and one of chunk 1
    CHECK(plan[3].activation_layers == 9);
  }
  SECTION("as 4 stages of 1F1B without interleaving: [3 2 2 3]") {
    // 1F1B, 4 micro-batches, F = layers, B = 2 x layers. Traced: stage 3 runs F0 [7,10] B0 [10,16] F1 [16,19]
    // B1 [19,25] F2 [25,28] B2 [28,34] F3 [34,37] B3 [37,43]; the backwards reach stage 0 as B0 [24,30], B1 [33,39],
    // B2 [42,48], B3 [51,57]: the step is 57, stages 0 and 3 busy 36, stages 1 and 2 busy 24.
    const Experiment e = ten_layers(R"({"pp": 4, "layers_per_stage": [3, 2, 2, 3]})", 4);
    const std::vector<StagePlan> plan = stage_plan(e, StageWork{});
    const double busy[] = {36, 24, 24, 36};
    for (int s = 0; s < 4; ++s) CHECK(plan[static_cast<std::size_t>(s)].bubble_s + busy[s] == 57);
  }
}

TEST_CASE("strategy.layers_per_stage places the layers of every virtual stage") {
  const Experiment e = ten_layers(
      R"({"pp": 4, "schedule": "interleaved", "chunks": 2, "layers_per_stage": [2, 1, 1, 1, 1, 1, 1, 2]})", 4);
  CHECK_NOTHROW(check_validity(e));
  const std::vector<StageLayout> st = stage_layouts(e);
  CHECK(st[0].chunk_layers == std::vector<std::int64_t>{2, 1});
  CHECK(st[3].chunk_layers == std::vector<std::int64_t>{1, 2});
  CHECK(st[3].chunk_first == std::vector<std::int64_t>{4, 8});
  // Without interleaving one entry per stage.
  const Experiment f = ten_layers(R"({"pp": 4, "layers_per_stage": [1, 4, 4, 1]})", 4);
  CHECK(stage_layouts(f)[1].n_layers == 4);
  CHECK(stage_layouts(f)[3].first_layer == 9);
}

TEST_CASE("Llama 3 405B: 126 layers on 16 ranks interleaved, first and last stage one layer lighter") {
  const Experiment e = llama3_405b_interleaved(2, 16);
  const std::vector<StageLayout> st = stage_layouts(e);
  CHECK(st[0].n_layers == 7);
  CHECK(st[15].n_layers == 7);
  for (int s = 1; s < 15; ++s) CHECK(st[static_cast<std::size_t>(s)].n_layers == 8);
  CHECK(st[0].chunk_layers == std::vector<std::int64_t>{3, 4});
  CHECK(st[15].chunk_layers == std::vector<std::int64_t>{4, 3});
}

TEST_CASE("Llama 3's ends: the first virtual stage holds the embedding alone, the last the output layer and loss") {
  // arXiv 2407.21783 section 3.3.2: one layer less on the first and the last stage, "the first model chunk on the
  // first stage has only the embedding, and the last model chunk on the last stage has only output projection and
  // loss calculation". 10 layers on 4 ranks with 3 chunks: 12 virtual stages, ceil(10/12) = 1 layer each less the
  // surplus of 2, taken from virtual stages 0 and 11.
  const Experiment e = ten_layers(R"({"pp": 4, "schedule": "interleaved", "chunks": 3})", 4);
  REQUIRE_NOTHROW(check_validity(e));
  CHECK(virtual_stage_layers(e) == std::vector<std::int64_t>{0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0});
  const std::vector<StageLayout> st = stage_layouts(e);
  CHECK(st[0].chunk_layers == std::vector<std::int64_t>{0, 1, 1});  // virtual stages 0, 4, 8
  CHECK(st[3].chunk_layers == std::vector<std::int64_t>{1, 1, 0});  // 3, 7, 11
  CHECK(st[0].chunk_first == std::vector<std::int64_t>{0, 3, 7});
  CHECK(st[3].chunk_first == std::vector<std::int64_t>{2, 6, 10});
  CHECK(st[0].n_layers == 2);
  CHECK(st[3].n_layers == 2);
  CHECK(st[0].embed_elems > 0);
  CHECK(st[3].head_elems > 0);
  // Activation peaks, 4 micro-batches in one group (12 chunk-forwards a stage; forwards k = 0..3 chunk 0, 4..7
  // chunk 1, 8..11 chunk 2; warm-up 2(3 - s) + 8). Stage 0: all 12 forwards warm up, chunk 0's hold nothing: 8.
  // Stage 1: 12 forwards of a layer each. Stage 2: warm-up 10, then F (11) before the first backward (chunk 2's).
  // Stage 3: warm-up 8 (chunks 0 and 1), then chunk 2's forwards and backwards hold nothing: 8.
  CHECK(activation_layers(e) == std::vector<double>{8, 12, 11, 8});
  // Given as a list, the same.
  const Experiment g = ten_layers(
      R"({"pp": 4, "schedule": "interleaved", "chunks": 3, "layers_per_stage": [0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0]})",
      4);
  REQUIRE_NOTHROW(check_validity(g));
  CHECK(activation_layers(g) == std::vector<double>{8, 12, 11, 8});
  // Offloaded activations: every chunk keeps its last layer on the device and sends the others to the host; a chunk
  // without layers keeps none. Stage 0 of [0, 3 | 3, 2 | 2, 0] on 2 ranks x 3 chunks holds chunks {0, 3, 2}: 0 + 2 +
  // 1 = 3 layers offloaded (its 5 layers less one per chunk would say 2).
  const Experiment o = ten_layers(
      R"({"pp": 2, "schedule": "interleaved", "chunks": 3, "layers_per_stage": [0, 3, 3, 2, 2, 0],
          "placement": {"activations": "offloaded"}})",
      4);
  REQUIRE_NOTHROW(check_validity(o));
  const std::vector<StageLayout> lo = stage_layouts(o);
  REQUIRE(lo[0].chunk_layers == std::vector<std::int64_t>{0, 3, 2});
  CHECK(offloaded_activation_layers(o, lo[0]) == 3);
  CHECK(offloaded_activation_layers(o, lo[1]) == 2 + 1 + 0);
}

TEST_CASE("Llama 3 405B as the paper ran it: 8 chunks of one layer, the ends without layers") {
  // 126 layers + the two missing ones = 128 = 16 ranks x 8 chunks of one layer.
  const Experiment e = llama3_405b_interleaved(8, 32);
  const std::vector<StageLayout> st = stage_layouts(e);
  CHECK(st[0].chunk_layers == std::vector<std::int64_t>{0, 1, 1, 1, 1, 1, 1, 1});
  CHECK(st[15].chunk_layers == std::vector<std::int64_t>{1, 1, 1, 1, 1, 1, 1, 0});
  for (int s = 1; s < 15; ++s) CHECK(st[static_cast<std::size_t>(s)].n_layers == 8);
  // Megatron's warm-up on rank r: 2(15 - r) + 7 x 16 chunk-forwards, plus the steady state's. Rank 0: 143, the
  // first group's 8 x 16 and 15 of the second group's chunk 0; chunk 0 holds no layer: 128 - 16 = 112, and each
  // later forward of chunk 1 comes with a backward. Rank 1: 141, a layer each.
  const std::vector<double> peak = activation_layers(e);
  CHECK(peak[0] == 112);
  CHECK(peak[1] == 141);
}

TEST_CASE("Refusals name strategy.layers_per_stage, microbatch_group and the interleaved shape") {
  const std::string model = std::string(R"({"model": )") + kTenLayers + R"(, "training": {"global_batch": 8}, )";
  CHECK(refusal(model + R"("strategy": {"pp": 4, "schedule": "interleaved", "layers_per_stage": [5, 5]}})") ==
        "invalid strategy: strategy.layers_per_stage has 2 entries but there are strategy.pp x strategy.chunks = 4 "
        "x 2 = 8 virtual stages (one entry per virtual stage, in model order)");
  CHECK(refusal(model + R"("strategy": {"pp": 2, "layers_per_stage": [5, 6]}})") ==
        "invalid strategy: strategy.layers_per_stage adds up to 11 layers but model.layers=10");
  CHECK(refusal(model + R"("strategy": {"pp": 2, "layers_per_stage": [10, -1]}})") ==
        "strategy.layers_per_stage[1]=-1 must be a non-negative integer number of layers (0 only for the first "
        "virtual stage, which then holds the embedding alone, or the last, the output layer and loss alone)");
  CHECK(refusal(model + R"("strategy": {"pp": 4, "layers_per_stage": [5, 0, 5, 0]}})") ==
        "invalid strategy: strategy.layers_per_stage[1]=0: only the first and the last virtual stage (which hold the "
        "embedding and the output layer) may go without layers");
  CHECK(refusal(model + R"("strategy": {"pp": 4, "schedule": "interleaved", "chunks": 4}})") ==
        "invalid strategy: model.layers=10 is fewer than the strategy.pp x strategy.chunks = 4 x 4 = 16 virtual "
        "stages less the two end ones: every virtual stage but the first and the last needs a layer");
  // One stage: no end may go without layers.
  CHECK(refusal(std::string(R"({"model": {"layers": 1, "hidden": 512, "heads": 8, "vocab": 1000, "seq_len": 256},
                                 "training": {"global_batch": 8}, "strategy": {"pp": 1, "layers_per_stage": [0]}})")) ==
        "invalid strategy: strategy.layers_per_stage[0]=0: only the first and the last virtual stage (which hold the "
        "embedding and the output layer) may go without layers");
  CHECK(refusal(model + R"("strategy": {"pp": 4, "microbatch_group": 4}})") ==
        "strategy.microbatch_group=4 is only meaningful with strategy.schedule=interleaved (got 1f1b)");
  CHECK(refusal(model + R"("strategy": {"pp": 4, "schedule": "interleaved", "microbatch_group": 2}})") ==
        "invalid strategy: strategy.microbatch_group=2 is below strategy.pp=4 (strategy.schedule=interleaved needs "
        "at least one micro-batch per stage in each group, or the first stage waits for a chunk no stage can run "
        "yet)");
  CHECK(refusal(model + R"("strategy": {"pp": 4, "schedule": "interleaved", "microbatch_group": 8}})") ==
        "invalid strategy: strategy.microbatch_group=8 above strategy.pp=4 needs strategy.p2p=async: with "
        "Megatron-LM's blocking exchanges (strategy.p2p=megatron) the last stage's send into the first stage's next "
        "chunk waits for forwards that wait for the last stage");
  // 8 micro-batches in groups of 5: a last group of 3 < 4 stages.
  CHECK(
      refusal(model + R"("strategy": {"pp": 4, "schedule": "interleaved", "microbatch_group": 5, "p2p": "async"}})") ==
      "invalid strategy: strategy.microbatches=8 leaves a last group of 3 micro-batches (groups of 5), fewer than "
      "strategy.pp=4 (strategy.schedule=interleaved cannot run a group smaller than the pipeline)");
}

TEST_CASE("Interleaved without chunks runs 2 chunks and reports the group it runs") {
  const Experiment e = ten_layers(R"({"pp": 2, "schedule": "interleaved"})", 4);
  CHECK(e.strategy.chunks == 2);
  CHECK(e.strategy.interleave_group() == 2);
  CHECK(strategy_to_json(e.strategy)["microbatch_group"] == 2);
}

TEST_CASE("The simulated activation peak of an uneven last stage equals the walked one, the loss included") {
  // Review finding: with chunks [2, 1] on the last stage its 10 layers peak when no loss is live; the analytic figure
  // added the loss to that peak, one layer's activations more than the simulation ever held (13 of 14 exact
  // figures). Walked with the loss, all 14 agree; likewise with a last chunk of no layers.
  for (const char* strategy :
       {R"({"preset": "megatron-3d", "pp": 4, "dp": 2, "schedule": "interleaved", "chunks": 2})",
        R"({"preset": "megatron-3d", "pp": 2, "dp": 4, "schedule": "interleaved", "chunks": 6})"}) {
    INFO(strategy);
    test::simulate_exact("uneven", std::string(R"({"model": )") + kTenLayers +
                                       R"(, "training": {"global_batch": 16, "micro_batch": 1}, "strategy": )" +
                                       strategy + R"(, "cluster": {"preset": "dgx-h100", "nodes": 1}})");
  }
}
