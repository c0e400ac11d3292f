// What a sweep refuses when it loads, before any point runs: figures its rows could never carry (in either mode),
// axis values that can never be valid whatever the other axes hold, and a micro-batch count swept against a fixed
// global batch. Values only invalid together with others stay rows of the sweep.
#include <catch2/catch.hpp>
#include <filesystem>

#include "sim/cli/SweepCli.hpp"
#include "strategies/sweep/SweepFigures.hpp"
#include "tests/FileHelpers.hpp"
#include "tests/Helpers.hpp"
#include "tests/SweepHelpers.hpp"

using namespace placesim;
using test::lines_of;
using test::read;
using test::sweep_cli;
using test::sweep_error;
using test::TempDir;
using test::write;

namespace {

// A 2-layer model on one DGX H100 (8 GPUs): every point simulates in milliseconds.
constexpr const char* kTinyBase = R"("base": {"model": {"layers": 2, "hidden": 64, "heads": 4, "vocab": 128,
    "seq_len": 16}, "cluster": {"preset": "dgx-h100", "nodes": 1}, "training": {"global_batch": 16, "micro_batch": 1},
    "strategy": {"preset": "megatron-3d"}})";

std::string tiny_sweep(const std::string& rest) {
  return std::string("{") + kTinyBase + ", " + rest + "}";
}

// The message check_sweep_figures() refuses a sweep with (the built placesim simulating), or "(no error)".
std::string figures_error(const std::string& text) {
  return test::refusal_message([&] { check_sweep_figures(test::sweep(text), PLACESIM_BINARY); });
}

}  // namespace

TEST_CASE("A simulate-mode sweep refuses a misspelt figure at load, naming the nearest path") {
  TempDir dir;
  write(dir / "typo.json", tiny_sweep(R"("axes": {"strategy.dp,strategy.tp": [[8, 1], [4, 2]]}, "mode": "simulate",
      "fidelity": "analytic", "figures": ["simulation.step_tme_s", "memory.total_bytes"])"));
  std::string output;
  CHECK(sweep_cli(dir / "typo.json" + " --out " + dir / "r.jsonl --quiet", &output) == 2);
  CHECK_THAT(output, Catch::Contains("figures: simulation.step_tme_s is not a field of the simulate report (did you "
                                     "mean 'simulation.step_time_s'?)"));
  CHECK_FALSE(std::filesystem::exists(dir / "r.jsonl"));  // refused before the results file was opened
  CHECK(sweep_cli(dir / "typo.json --count", &output) == 2);
  CHECK_THAT(output, Catch::Contains("simulation.step_tme_s"));
}

TEST_CASE("Every unknown figure is listed at once, in either mode; paths of the real reports pass") {
  const std::string two = R"(["simulation.mfuu", "memory.per_stage.0.total_byte", "simulation.step_time_s"])";
  std::string simulate =
      figures_error(tiny_sweep(R"("axes": {"strategy.dp": [8]}, "mode": "simulate", "figures": )" + two));
  CHECK_THAT(simulate, Catch::StartsWith("figures: 2 paths are not fields of the simulate report:"));
  CHECK_THAT(simulate, Catch::Contains("\n  simulation.mfuu (did you mean 'simulation.mfu'?)"));
  CHECK_THAT(simulate, Catch::Contains("\n  memory.per_stage.0.total_byte (did you mean "
                                       "'memory.per_stage.0.total_bytes'?)"));
  // Analyze mode: a simulated figure needs simulate mode; a typo gets the nearest analyze path.
  CHECK_THAT(figures_error(tiny_sweep(R"("axes": {"strategy.dp": [8]}, "figures": ["simulation.step_time_s"])")),
             Catch::Contains("simulation.step_time_s is a simulated figure; it needs \"mode\": \"simulate\""));
  CHECK(figures_error(tiny_sweep(R"("axes": {"strategy.dp": [8]}, "figures": ["communication.bytes_per_stp"])")) ==
        "figures: communication.bytes_per_stp is not a field of the analyze report (did you mean "
        "'communication.bytes_per_step'?)");
  // Sections only some points have: a pipeline's, a mixture of experts', the interval of a named stack, a stage
  // beyond the reference's two.
  CHECK(figures_error(tiny_sweep(R"("axes": {"strategy.dp": [8]}, "mode": "simulate", "figures": [
      "pipeline.schedule_bubble_fraction_mean", "simulation.experts.all_to_all_s", "experts.tokens_per_rank",
      "simulation.interval.step_time_low_s", "memory.per_stage.7.total_bytes", "simulation.devices.63.busy_s"])")) ==
        "(no error)");
}

TEST_CASE("The default figures are in the reports the references produce") {
  // The sweep skips checking its own defaults; this holds them to what the reports really write.
  const std::vector<Json> experiments = figure_reference_experiments();
  const std::vector<Json> simulated = simulated_reports(PLACESIM_BINARY, Fidelity::Flow, experiments);
  REQUIRE(simulated.size() == experiments.size());
  SweepSpec spec = test::sweep(tiny_sweep(R"("axes": {"strategy.dp": [8]}, "mode": "simulate")"));
  REQUIRE(spec.figures == default_figures(SweepMode::Simulate));
  CHECK_NOTHROW(check_figures_in_reports(spec, simulated));
  for (const Json& report : simulated) CHECK(report["simulation"]["fidelity"] == "flow");  // simulated, not read back
}

TEST_CASE("A figure path selects list elements as a point's report may have them") {
  const Json report = Json::parse(R"({"memory": {"per_stage": [{"total_bytes": 1}, {"total_bytes": 2}]},
                                      "empty": []})");
  CHECK(report_has(report, "memory.per_stage.1.total_bytes"));
  CHECK(report_has(report, "memory.per_stage.9.total_bytes"));  // a deeper pipeline than the reference's
  CHECK(report_has(report, "memory.per_stage"));                // a whole list is a figure too
  CHECK_FALSE(report_has(report, "memory.per_stage.x.total_bytes"));
  CHECK_FALSE(report_has(report, "memory.per_stage.0.total"));
  CHECK_FALSE(report_has(report, "empty.0"));
  CHECK_FALSE(report_has(report, "memory.total_bytes"));
}

TEST_CASE("Axis values that can never be valid are refused at load, every one named with its field's rule") {
  const std::string message = sweep_error(tiny_sweep(R"("axes": {
      "strategy.schedule": ["1f1b", "bogus"], "strategy.preset": ["megatron-3d", "zeroo3"],
      "strategy.tp": [1, 3, "x", 0], "model": [{"layers": 2, "hidden": 64, "heads": 4, "vocab": 128, "seq_len": 16}]})"));
  CHECK_THAT(message, Catch::StartsWith("4 axis values can never be valid; fix or remove them:"));
  CHECK_THAT(message, Catch::Contains("\n  axes.strategy.schedule: the value \"bogus\" can never be valid "
                                      "(strategy.schedule=bogus is not one of: gpipe 1f1b interleaved"));
  CHECK_THAT(message, Catch::Contains("\n  axes.strategy.preset: the value \"zeroo3\" can never be valid "
                                      "(strategy.preset=zeroo3 is not a strategy preset (did you mean 'zero3'?))"));
  CHECK_THAT(message, Catch::Contains("\n  axes.strategy.tp: the value \"x\" can never be valid (strategy.tp=\"x\" "
                                      "must be a positive integer)"));
  CHECK_THAT(message, Catch::Contains("\n  axes.strategy.tp: the value 0 can never be valid (strategy.tp=0"));
  CHECK_THAT(message, !Catch::Contains("the value 3 "));  // 3 fails only against the model's 4 heads
  // One bad value of a joint axis; an unknown key inside an object value.
  CHECK(sweep_error(tiny_sweep(R"("axes": {"strategy.dp,strategy.tp": [[8, 1], [4, "two"]]})")) ==
        "axes.strategy.dp,strategy.tp: the value [4,\"two\"] can never be valid (strategy.tp=\"two\" must be a "
        "positive integer): fix or remove it");
  CHECK_THAT(sweep_error(tiny_sweep(R"("axes": {"cluster": [{"preset": "dgx-h100", "nodes": 1},
                                                             {"preset": "dgx-h100", "nodess": 2}]})")),
             Catch::Contains("axes.cluster: the value {\"nodess\":2,\"preset\":\"dgx-h100\"} can never be valid "
                             "(unknown key cluster.nodess (did you mean 'cluster.nodes'?))"));
}

TEST_CASE("Values invalid only with other fields, or skipped by a filter, stay points of the sweep") {
  // microbatch_group needs the interleaved schedule, which another axis sets: a combination, not a bad value.
  CHECK(sweep_error(tiny_sweep(R"("axes": {"strategy.schedule": ["1f1b", "interleaved"],
                                            "strategy.microbatch_group": [2]})")) == "(no error)");
  // A value a filter skips never runs.
  CHECK(sweep_error(tiny_sweep(
            R"("axes": {"strategy.tp": [1, "x"]}, "filters": {"strategy.tp": {"not_in": ["x"]}})")) == "(no error)");
  // tp 8 does not divide the model's 4 heads: its points are invalid rows, and the sweep exits 0.
  TempDir dir;
  write(dir / "s.json", tiny_sweep(R"("axes": {"strategy.dp,strategy.tp": [[8, 1], [1, 8]]})"));
  std::string output;
  REQUIRE(sweep_cli(dir / "s.json" + " --out " + dir / "r.jsonl --quiet", &output) == 0);
  const auto rows = lines_of(read(dir / "r.jsonl"));
  REQUIRE(rows.size() == 2);
  CHECK(Json::parse(rows[0])["status"] == "ok");
  CHECK(Json::parse(rows[1])["status"] == "invalid");
  CHECK_THAT(Json::parse(rows[1])["reason"].get<std::string>(),
             Catch::Contains("strategy.tp=8 does not divide model.heads=4"));
}

TEST_CASE("A bad axis value is refused by --count as by a run") {
  TempDir dir;
  write(dir / "s.json", tiny_sweep(R"("axes": {"strategy.schedule": ["1f1b", "bogus"]})"));
  for (const std::string& flags : {std::string(" --count"), " --out " + dir / "r.jsonl --quiet"}) {
    std::string output;
    CHECK(sweep_cli(dir / "s.json" + flags, &output) == 2);
    CHECK_THAT(output, Catch::Contains("axes.strategy.schedule: the value \"bogus\" can never be valid"));
  }
  CHECK_FALSE(std::filesystem::exists(dir / "r.jsonl"));  // no point ran
}

TEST_CASE("Sweeping the micro-batch count against a fixed global batch is refused with the recipe") {
  const std::string message = sweep_error(tiny_sweep(R"("axes": {"strategy.microbatches": [1, 2, 4]})"));
  CHECK_THAT(message, Catch::StartsWith("axes.strategy.microbatches: the base gives training.global_batch=16, and "
                                        "training.global_batch = strategy.microbatches x training.micro_batch x "
                                        "strategy.dp"));
  CHECK_THAT(message, Catch::Contains("give no training.global_batch"));
  CHECK_THAT(message, Catch::Contains("docs/sweeps.md"));
  // The reverse: the global batch swept against a fixed micro-batch count.
  CHECK_THAT(sweep_error(R"({"base": {"model": "gpt-1.7b", "strategy": {"preset": "megatron-3d", "microbatches": 4}},
                             "axes": {"training.global_batch": [64, 128]}})"),
             Catch::StartsWith("axes.training.global_batch: the base gives strategy.microbatches=4"));
  // Both in one joint axis, or a base without a global batch: accepted.
  CHECK(sweep_error(tiny_sweep(R"("axes": {"strategy.microbatches,training.global_batch": [[2, 16], [4, 32]]})")) ==
        "(no error)");
  CHECK(sweep_error(R"({"base": {"model": "gpt-1.7b", "strategy": "megatron-3d"},
                        "axes": {"strategy.microbatches": [1, 2, 4]}})") == "(no error)");
}

TEST_CASE("The micro-batch example trains microbatches x micro_batch x dp sequences with the 1F1B bubble") {
  TempDir dir;
  const std::string sweep = std::string(PLACESIM_SOURCE_DIR) + "/examples/sweeps/microbatches-1f1b.json";
  std::string output;
  REQUIRE(sweep_cli(sweep + " --out " + dir / "r.jsonl --quiet", &output) == 0);
  const auto rows = lines_of(read(dir / "r.jsonl"));
  REQUIRE(rows.size() == 6);
  const double p = 4, dp = 2, micro_batch = 1, seq_len = 2048;  // the example's base
  for (const auto& line : rows) {
    const Json row = Json::parse(line);
    INFO(line);
    REQUIRE(row["status"] == "ok");
    const double m = row["point"]["strategy.microbatches"].get<double>();
    CHECK(row["compute.tokens_per_step"].get<double>() == m * micro_batch * dp * seq_len);
    // 1F1B with balanced stages and free communication idles (p - 1) / (m + p - 1) of the step (Narayanan et al.
    // 2021, arXiv 2104.04473, Section 2.2.1).
    CHECK(row["pipeline.schedule_bubble_fraction_mean"].get<double>() == Approx((p - 1) / (m + p - 1)).epsilon(1e-9));
  }
}

TEST_CASE("An abstract pipeline is refused by analyze-mode sweeps and commands, and its simulated rows hold no zeros") {
  TempDir dir;
  const std::string pipeline =
      R"({"pipeline": {"stages": 4, "microbatches": 4, "forward_s": 1, "backward_s": 2, "schedule": "1f1b"}})";
  write(dir / "analyze.json", "{\"base\": " + pipeline + R"(, "axes": {"pipeline.microbatches": [4, 8]}})");
  std::string output;
  CHECK(sweep_cli(dir / "analyze.json --out " + dir / "a.jsonl --quiet", &output) == 2);
  CHECK_THAT(output, Catch::Contains("base.pipeline is an abstract pipeline") &&
                         Catch::Contains("sweep it with \"mode\": \"simulate\""));
  CHECK_FALSE(std::filesystem::exists(dir / "a.jsonl"));
  write(dir / "simulate.json",
        "{\"base\": " + pipeline + R"(, "axes": {"pipeline.microbatches": [4, 8]}, "mode": "simulate"})");
  REQUIRE(sweep_cli(dir / "simulate.json --out " + dir / "s.jsonl --quiet", &output) == 0);
  const std::vector<std::string> lines = lines_of(read(dir / "s.jsonl"));
  REQUIRE(lines.size() == 2);
  for (const std::string& line : lines) {
    const Json row = Json::parse(line);
    // 1F1B with equal stages and free transfers: (microbatches + stages - 1) x (forward + backward) = (m + 3) x 3 s.
    const double m = row["point"]["pipeline.microbatches"].get<double>();
    CHECK(row["simulation.step_time_s"].get<double>() == Approx((m + 3) * 3).epsilon(1e-12));
    CHECK_FALSE(row.contains("memory.total_bytes"));  // was 0: no model, no memory figure
    CHECK_FALSE(row.contains("communication.bytes_per_step"));
  }
  write(dir / "p.json", pipeline);
  for (const char* command : {"analyze", "check", "verify"}) {
    INFO(command);
    CHECK(test::run_placesim(std::string(command) + " " + dir / "p.json", &output) == 2);
    CHECK_THAT(output, Catch::Contains("pipeline: the experiment is an abstract pipeline") &&
                           Catch::Contains(std::string(command) + " needs"));
  }
}
