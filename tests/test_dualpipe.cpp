// DualPipe (deepseek-ai/DualPipe @ 3da1bbe, dualpipe/dualpipe.py, DualPipe.step; DeepSeek-V3 report, arXiv
// 2412.19437, Table 2): two pipelines in opposite directions over the same stages, on abstract pipelines only.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "strategies/pipeline/AbstractPipeline.hpp"
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

TEST_CASE("DualPipe on a model experiment is refused naming strategy.schedule") {
  std::string out;
  CHECK(test::run_placesim("check " + std::string(PLACESIM_SOURCE_DIR) +
                               "/examples/verify/pipedream-s4.json --set strategy.schedule=dualpipe "
                               "--set strategy.p2p=async --set strategy.preset=zero1 --set strategy.dp=2",
                           &out) != 0);
  CHECK_THAT(out, Catch::Contains("strategy.schedule=dualpipe runs on abstract pipelines only"));
  // A modelling limit, not a verdict on the strategy (it trains the same model): verify says it cannot run it.
  CHECK_THAT(out, !Catch::Contains("invalid strategy"));
  CHECK(test::run_placesim("verify " + std::string(PLACESIM_SOURCE_DIR) +
                               "/examples/verify/pipedream-s4.json --set strategy.schedule=dualpipe "
                               "--set strategy.p2p=async --set strategy.preset=zero1 --set strategy.dp=2",
                           &out) != 0);
  CHECK_THAT(out, Catch::Contains("runs on abstract pipelines only") && !Catch::Contains("out of memory"));
  CHECK_THAT(out, Catch::Contains("use dualpipev"));
}
