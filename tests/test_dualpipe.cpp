// DualPipe (deepseek-ai/DualPipe @ 3da1bbe, dualpipe/dualpipe.py, DualPipe.step; DeepSeek-V3 report, arXiv
// 2412.19437, Table 2): two pipelines in opposite directions over the same stages, on abstract pipelines and on
// models (two copies of the layers, gradients summed with the mirror rank's).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "strategies/analytic/Analytic.hpp"
#include "strategies/pipeline/AbstractPipeline.hpp"
#include "strategies/placement/Layout.hpp"
#include "tests/FileHelpers.hpp"
#include "tests/Helpers.hpp"
#include "tests/PipelineHelpers.hpp"

using namespace placesim;

namespace {

// Its two chunks on every stage, one per direction.
PipelineShape dualpipe_shape(int stages, int microbatches) {
  PipelineShape sh = test::pipeline_shape(Schedule::DualPipe, stages, microbatches);
  sh.chunks = 2;
  return sh;
}

std::string error_of(int stages, int microbatches) {
  try {
    simulate_abstract_pipeline(Json{{"schedule", "dualpipe"},
                                    {"stages", stages},
                                    {"microbatches", microbatches},
                                    {"forward_s", 1},
                                    {"backward_s", 2}},
                               nullptr, nullptr);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

// The order DualPipe.step runs for 4 ranks and 8 micro-batches, derived from that function apart from placesim
// (research notes, zb-schedules.md section 4), written here with direction 0's micro-batches 0..3 on chunk 0 and
// direction 1's 4..7 on chunk 1. The middle stages (1 and 2) run their first pair one pass after the other.
TEST_CASE("DualPipe runs DeepSeek's op order in two directions") {
  const PipelineSchedule d = make_schedule(dualpipe_shape(4, 8), abstract_shape_fields());
  const char* const expected[] = {
      "F0.0 F1.0 F2.0 F4.1 B4.1 W4.1 F5.1 F3.0+ BW5.1 F6.1+ BW0.0 BW6.1 F7.1+ BW1.0 BW7.1 B2.0 W2.0 B3.0 W3.0 A",
      "F0.0 F4.1 F1.0 F5.1 F2.0 BW4.1 F6.1+ BW0.0 F3.0+ BW5.1 F7.1+ BW1.0 BW6.1 BW2.0 B7.1 B3.0 W7.1 W3.0 A",
      "F4.1 F0.0 F5.1 F1.0 F6.1 BW0.0 F2.0+ BW4.1 F7.1+ BW1.0 F3.0+ BW5.1 BW2.0 BW6.1 B3.0 B7.1 W3.0 W7.1 A",
      "F4.1 F5.1 F6.1 F0.0 B0.0 W0.0 F1.0 F7.1+ BW1.0 F2.0+ BW4.1 BW2.0 F3.0+ BW5.1 BW3.0 B6.1 W6.1 B7.1 W7.1 A",
  };
  for (std::size_t s = 0; s < 4; ++s) {
    INFO("stage " << s);
    CHECK(test::render_paired(d.order[s]) == expected[s]);
  }
  // Chunk 1 of stage s is virtual stage 7 - s; each direction is a pipeline of its own: 0..3 and 4..7.
  CHECK(d.virtual_stage(1, 0) == 7);
  CHECK(d.stage_of(4) == 3);
  const auto up = [&](PipeOpKind kind, int stage, int microbatch, int chunk) {
    PipeOp op;
    op.kind = kind;
    op.stage = stage;
    op.microbatch = microbatch;
    op.chunk = chunk;
    return upstream_of(op, d).virtual_stage;
  };
  CHECK(up(PipeOpKind::Forward, 0, 0, 0) == -1);   // direction 0 enters at stage 0
  CHECK(up(PipeOpKind::Forward, 3, 4, 1) == -1);   // direction 1 enters at stage 3
  CHECK(up(PipeOpKind::Forward, 2, 4, 1) == 4);    // ... and goes on to stage 2
  CHECK(up(PipeOpKind::Backward, 3, 0, 0) == -1);  // direction 0's loss on stage 3
  CHECK(up(PipeOpKind::Backward, 0, 4, 1) == -1);  // direction 1's loss on stage 0
  CHECK(up(PipeOpKind::Backward, 2, 0, 0) == 3);
  CHECK(up(PipeOpKind::Backward, 1, 4, 1) == 7);
}

// DeepSeek-V3 Table 2: a bubble of (PP/2 - 1)(F&B + B - 3W) with B the whole backward and F&B an overlapped pair
// (here F + B: an abstract pipeline has no communication to hide), and PP + 1 activations of a stage per device. With
// F = B_input = W = 1 (forward_s 1, backward_s 2, weight_s 1; each chunk is a whole stage): (p/2 - 1)(3 + 2 - 3) =
// p - 2 per stage, exact for equal costs (the notes' unit simulation), and a span of 3m + p - 2.
TEST_CASE("DualPipe leaves the bubble and holds the activations of the DeepSeek-V3 report's Table 2") {
  for (int p : {2, 4, 6, 8})
    for (int m : {2 * p, 2 * p + 2, 4 * p}) {
      INFO("p " << p << " m " << m);
      PipelineTimes times = test::pipeline_times(1, 2);
      times.weight_s = 1;
      const test::PipelineRun d = test::run_pipeline(dualpipe_shape(p, m), times);
      const double bubble = (p / 2 - 1) * (3.0 + 2.0 - 3 * 1.0);
      CHECK(d.metrics.span_s == Approx(m * 3.0 + bubble));
      for (int s = 0; s < p; ++s) {
        CHECK(d.metrics.idle_s[static_cast<std::size_t>(s)] == Approx(bubble).margin(1e-9));
        CHECK(d.metrics.inflight_microbatches_peak[static_cast<std::size_t>(s)] == p + 1);
      }
    }
}

TEST_CASE("Error: DualPipe needs even stages, even micro-batches and at least twice as many as stages") {
  CHECK_THAT(error_of(3, 12), Catch::Contains("pipeline.stages=3 is odd: pipeline.schedule=dualpipe"));
  CHECK_THAT(error_of(4, 9), Catch::Contains("pipeline.microbatches=9 is odd: pipeline.schedule=dualpipe"));
  CHECK_THAT(error_of(4, 6), Catch::Contains("pipeline.microbatches=6 is fewer than 2 x pipeline.stages=8"));
  CHECK(error_of(4, 8) == "no error");
  CHECK(error_of(2, 4) == "no error");
}

// pipeline-sweep evaluates a row per stage count without deadlock; its makespan is the span above (one step).
TEST_CASE("pipeline-sweep runs DualPipe at 2, 4, 6 and 8 stages") {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("placesim-" + std::to_string(getpid()) + "-dualpipe-sweep.csv"))
          .string();
  for (int p : {2, 4, 6, 8})
    for (int m : {2 * p, 2 * p + 2, 4 * p}) {
      INFO("p " << p << " m " << m);
      std::string out;
      REQUIRE(test::run_placesim("pipeline-sweep --schedules dualpipe --stages " + std::to_string(p) +
                                     " --microbatches " + std::to_string(m) +
                                     " --steps 1 --forward-s 1 --backward-s 2 --out " + path,
                                 &out) == 0);
      const std::vector<std::string> lines = test::file_lines(path);
      REQUIRE(lines.size() == 2);
      const std::string makespan = std::to_string(3 * m + p - 2) + ".0";
      CHECK(lines[1].rfind("dualpipe," + std::to_string(p) + "," + std::to_string(m) + ",1,", 0) == 0);
      CHECK(lines[1].find("," + makespan + ",") != std::string::npos);
    }
  std::filesystem::remove(path);
  // Without --schedules an odd stage count leaves DualPipe's row out instead of refusing the sweep.
  std::string out;
  CHECK(test::run_placesim("pipeline-sweep --stages 3 --steps 1 --out " + path, &out) == 0);
  CHECK_THAT(out, Catch::Contains("left out dualpipe at --stages 3: pipeline.stages=3 is odd"));
  for (const std::string& line : test::file_lines(path)) CHECK(line.rfind("dualpipe,", 0) == std::string::npos);
  std::filesystem::remove(path);
  CHECK(test::run_placesim("pipeline-sweep --stages 3 --schedules dualpipe", &out) != 0);
  CHECK_THAT(out, Catch::Contains("--schedules dualpipe at --stages 3: pipeline.stages=3 is odd"));
}

namespace {

// Llama layers on four stages, ZeRO-1 over two data-parallel ranks, 16 micro-batches a rank.
std::string model_experiment(const std::string& schedule, int layers) {
  return R"({"model": {"family": "llama", "layers": )" + std::to_string(layers) +
         R"(, "hidden": 512, "heads": 8, "vocab": 1024, "seq_len": 256, "ffn": 1024, "tied_embeddings": false},
    "training": {"global_batch": 32, "micro_batch": 1, "recompute": "none"},
    "strategy": {"preset": "zero1", "dp": 2, "pp": 4, "p2p": "async", "schedule": ")" +
         schedule + R"("}, "cluster": {"preset": "dgx-a100", "nodes": 1}})";
}

double stage_class(const Json& r, int stage, const char* cls) {
  return r["communication"]["per_stage"][stage]["by_class"][cls].get<double>();
}

}  // namespace

// DeepSeek's example (deepseek-ai/DualPipe examples/example_dualpipe.py) gives rank r the modules of stage r and of
// stage S - 1 - r: a whole copy of the model per direction, so each rank holds two stages' layers (the DeepSeek-V3
// report's Table 2: parameters 2x) and the embedding and output layer sit on both end ranks.
TEST_CASE("DualPipe on a model places stage s and stage p - 1 - s of two copies on rank s") {
  const Experiment e = test::experiment(model_experiment("dualpipe", 8));
  const std::vector<StageLayout> layouts = stage_layouts(e);
  const std::vector<StageLayout> one = stage_layouts(test::experiment(model_experiment("1f1b", 8)));
  REQUIRE(layouts.size() == 4);
  for (int s = 0; s < 4; ++s) {
    INFO("stage " << s);
    const StageLayout& st = layouts[static_cast<std::size_t>(s)];
    CHECK(st.chunk_first == std::vector<std::int64_t>{2 * s, 2 * (3 - s)});
    CHECK(st.chunk_layers == std::vector<std::int64_t>{2, 2});
    const bool end = s == 0 || s == 3;
    CHECK((st.embed_elems > 0) == end);
    CHECK((st.head_elems > 0) == end);
    // Twice the layers of 1F1B's stage s; the end ranks hold both the embedding and the output layer.
    CHECK(st.n_layers == 2 * one[static_cast<std::size_t>(s)].n_layers);
    if (end) CHECK(st.elems() == one[0].elems() + one[3].elems());
  }
}

TEST_CASE("DualPipe on a model: analysis equals simulation, exchanges as 1F1B, gradients summed with the mirror") {
  const Json d = test::simulate_report(model_experiment("dualpipe", 8));
  const Json h1 = test::simulate_report(model_experiment("zb-h1", 8));
  for (const Json& row : d["validation"]) {
    INFO(row["figure"].get<std::string>());
    CHECK(row["difference"].get<double>() == 0);
  }
  // Each direction is a 4-stage pipeline running half the micro-batches: every boundary is crossed by every
  // micro-batch once each way, as under ZB-H1 (stage 0 and 3 one boundary, stages 1 and 2 two).
  for (int s = 0; s < 4; ++s) CHECK(stage_class(d, s, "pp_p2p") == stage_class(h1, s, "pp_p2p"));
  // ZeRO-1 over dp = 2 reduce-scatters a stage's gradients (half of them sent) and the optimizer updates half. A
  // middle rank holds twice ZB-H1's layers: it reduce-scatters twice as much, then all-reduces its half with its
  // mirror's (two ranks: half sent twice over, i.e. once): 2 + 2 = 4 times ZB-H1's bytes.
  CHECK(stage_class(d, 1, "dp_grad_sync") == Approx(4 * stage_class(h1, 1, "dp_grad_sync")).epsilon(1e-6));
}

// Each rank computes two stages' layers for half the micro-batches each: a middle rank the FLOPs of ZB-H1's middle
// stage, an end rank half of ZB-H1's first and last stages together (the output layer for half the micro-batches).
TEST_CASE("DualPipe on a model runs each copy's layers for half the micro-batches") {
  const Analysis d = analyze(test::experiment(model_experiment("dualpipe", 8)));
  const Analysis h1 = analyze(test::experiment(model_experiment("zb-h1", 8)));
  const auto flops = [](const Analysis& a, int s) { return a.stages[static_cast<std::size_t>(s)].hardware_flops; };
  CHECK(flops(d, 1) == Approx(flops(h1, 1)).epsilon(1e-12));
  CHECK(flops(d, 0) == Approx((flops(h1, 0) + flops(h1, 3)) / 2).epsilon(1e-12));
  CHECK(flops(d, 3) == Approx(flops(d, 0)).epsilon(1e-12));
}

// One layer per stage and direction: the peak holds PP + 1 = 5 passes of a one-layer chunk (the DeepSeek-V3
// report's Table 2), one layer more than ZB-H1's p = 4 micro-batches of a one-layer stage; ZB-H2's 2p - 1 = 7
// micro-batches give the size of a layer.
TEST_CASE("DualPipe on a model holds PP + 1 chunk passes of activations") {
  const Json d = test::simulate_report(model_experiment("dualpipe", 4));
  const Json h1 = test::simulate_report(model_experiment("zb-h1", 4));
  const Json h2 = test::simulate_report(model_experiment("zb-h2", 4));
  auto act = [](const Json& r) { return r["memory"]["activations_bytes"].get<double>(); };
  const double layer = (act(h2) - act(h1)) / 3;
  CHECK(act(d) - act(h1) == Approx(layer).epsilon(1e-12));
}

TEST_CASE("DualPipe on a model is refused where its two copies are not modelled, naming the field") {
  std::string out;
  const std::string base = "check " + std::string(PLACESIM_SOURCE_DIR) +
                           "/examples/verify/pipedream-s4.json --set strategy.schedule=dualpipe "
                           "--set strategy.p2p=async --set strategy.preset=zero1 --set strategy.dp=2";
  CHECK(test::run_placesim(base + " --set model.tied_embeddings=true", &out) != 0);
  CHECK_THAT(out, Catch::Contains("model.tied_embeddings=true") && Catch::Contains("use dualpipev"));
  CHECK_THAT(out, !Catch::Contains("invalid strategy"));
  CHECK(test::run_placesim(base + " --set strategy.pp=3", &out) != 0);
  CHECK_THAT(out, Catch::Contains("strategy.pp=3 is odd"));
}
