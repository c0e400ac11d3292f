// Every command bounds its work and refuses absurd figures before the expensive part starts: search's GPU and
// candidate counts, pipeline-sweep's stage list, passes and op times, calibrate's point counts and physical
// plausibility, and the cluster's numeric fields. Each refusal names the flag or field, the value and the limit.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "strategies/analytic/ComputeModel.hpp"
#include "strategies/calibrate/Calibration.hpp"
#include "strategies/pipeline/AbstractPipeline.hpp"
#include "strategies/sweep/Search.hpp"
#include "tests/FileHelpers.hpp"
#include "tests/Helpers.hpp"
#include "workloads/json/Numbers.hpp"

using namespace placesim;
using Catch::Contains;

namespace {

using test::refusal_message;

// What `placesim <arguments>` prints when it refuses them, checking that it does (exit code 2).
std::string refused(const std::string& arguments) {
  std::string out;
  CHECK(test::run_placesim(arguments, &out) == 2);
  return out;
}

// The number of divisors of n (trial division), to count meshes independently of enumerate_meshes.
std::int64_t divisor_count(std::int64_t n) {
  std::int64_t count = 0;
  for (std::int64_t d = 1; d <= n; ++d) count += n % d == 0;
  return count;
}

std::string percent_g(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------- search

TEST_CASE("search refuses a GPU count past 2^20 before enumerating any mesh", "[work-bounds]") {
  CHECK_THAT(refused("search --model gpt-1.7b --set training.global_batch=64 --gpus 1099511627776 "
                     "--mode analyze --quiet"),
             Contains("--gpus=1099511627776 is more than the 1048576 (2^20) GPUs a search enumerates"));
  // From a cluster section: 131,073 nodes of 8 GPUs are 1,048,584 GPUs, 8 past the limit.
  CHECK_THAT(refused("search --model gpt-1.7b --set training.global_batch=64 "
                     "--set 'cluster={\"preset\": \"dgx-a100\", \"nodes\": 131073}' --mode analyze --quiet"),
             Contains("the cluster's 1048584 GPUs (cluster.nodes=131073 x 8 GPUs per node) are more than"));
  CHECK_THAT(refusal_message([] { enumerate_meshes(kMaxSearchGpus + 1, 8); }),
             Contains("the GPU count 1048577 is more than the 1048576 (2^20)"));
  // At the limit: a mesh per divisor of 2^20 / tp for tp = 1, 2, 4, 8, i.e. 21 + 20 + 19 + 18.
  CHECK(enumerate_meshes(kMaxSearchGpus, 8).size() == 21 + 20 + 19 + 18);
  // gpus per node far beyond the GPU count no longer loops over every tp up to it.
  CHECK(enumerate_meshes(4, std::int64_t{1} << 40).size() == 3 + 2 + 1);  // tp 1, 2, 4 x the divisors of 4 / tp
}

TEST_CASE("search refuses more candidates than it evaluates, counted before any runs", "[work-bounds]") {
  const Json base = Json::parse(R"({"model": "gpt-1.7b", "training": {"global_batch": 64}, "strategy": "dp"})");
  SearchSpace space;
  space.devices = 720720;  // 2^4 3^2 5 7 11 13, the most divisors below 2^20
  space.mode = SweepMode::Analyze;
  space.presets = {"dp", "zero1", "zero2"};
  space.recomputes = {"none"};
  space.cps = {1};
  space.max_chunks = 1;
  // The meshes: tp = 1, 2, 4, 8 and pp a divisor of 720720 / tp of at most the model's 24 layers.
  std::int64_t meshes = 0;
  for (std::int64_t tp : {1, 2, 4, 8})
    for (std::int64_t pp = 1; pp <= 24; ++pp) meshes += (space.devices / tp) % pp == 0;
  REQUIRE(meshes ==
          21 + 20 + 18 + 15);  // 720720 loses no divisor up to 24; /2 loses 16; /4 8, 16, 24; /8 also 4, 12, 20
  // Under 200,000 candidates: the largest count of micro-batch sizes that fits, then one more.
  const std::int64_t sizes = 200000 / (meshes * 3);
  space.micro_batches.clear();
  for (std::int64_t b = 1; b <= sizes; ++b) space.micro_batches.push_back(b);
  CHECK(search_sweep(base, "", space).points() == static_cast<std::uint64_t>(meshes * 3 * sizes));
  space.micro_batches.push_back(sizes + 1);
  CHECK_THAT(refusal_message([&] { search_sweep(base, "", space); }),
             Contains(std::to_string(meshes * 3 * (sizes + 1)) + " candidates (" + std::to_string(meshes) +
                      " meshes and schedules x presets x micro-batch sizes x recompute modes) are more than the "
                      "200000 a search analyses"));
}

// ---------------------------------------------------------------------------------------------- pipeline-sweep

TEST_CASE("pipeline-sweep refuses a sweep past 3.2e7 passes before evaluating any row", "[work-bounds]") {
  // --stages 2..200, every schedule: 2 S (10 S) 2 passes a row, twice for interleaved's 2 chunks, 1.5 times for
  // zb-h1's, zb-h2's and dualpipe's split backward (B and W; a DualPipe micro-batch passes one of a stage's two
  // chunks, its direction's) and 3 times for zb-v's, dualpipev's and interleaved-zb's (split, 2 chunks), so
  // (5 + 2 + 3 + 3 + 3 + 3 + 1.5) x 40 S^2.
  double passes = 0;
  for (int s = 2; s <= 200; ++s) passes += 20.5 * 40.0 * s * s;
  CHECK_THAT(refused("pipeline-sweep --stages 2..200"),
             Contains("pipeline-sweep would evaluate " + percent_g(passes) + " forward and backward passes") &&
                 Contains("(2388 rows of --schedules x --stages") && Contains("more than the limit of 3.2e+07"));
  // One stage count: 1118 stages of 11,180 micro-batches came within 0.01 % of the evaluator's per-run limit and
  // took 3.4 GB before the interleaved row was refused; it is refused whole now.
  CHECK_THAT(refused("pipeline-sweep --stages 1118"),
             Contains("would evaluate " + percent_g(20.5 * 2.0 * 1118 * 11180 * 2)));
  // Just past the limit with one row: 2 x 1000 x 16,001 x 1 = 32,002,000 passes.
  CHECK_THAT(refused("pipeline-sweep --schedules gpipe --stages 1000 --microbatches 16001 --steps 1"),
             Contains("would evaluate 3.2e+07 forward and backward passes (1 rows"));
  // A count that overflows an int is refused by the same sum, not wrapped around.
  CHECK_THAT(refused("pipeline-sweep --stages 4 --microbatches-per-stage 1000000000"),
             Contains("would evaluate " + percent_g(20.5 * 2.0 * 4 * 4e9 * 2)));
}

TEST_CASE("pipeline-sweep checks every row's shape before evaluating the first", "[work-bounds]") {
  // The 1F1B row of 4 stages is valid; the interleaved row of 4 stages and 6 micro-batches is not, and is refused
  // naming the row before the 1F1B one runs (no table is printed).
  const std::string out = refused("pipeline-sweep --stages 4 --schedules 1f1b,interleaved --microbatches 6");
  CHECK_THAT(out, Contains("--schedules interleaved at --stages 4: pipeline.microbatches=6 leaves a last group"));
  CHECK(out.find("schedule ") == std::string::npos);
}

TEST_CASE("pipeline-sweep refuses a stage list of more than 4096 counts without building it", "[work-bounds]") {
  CHECK_THAT(refused("pipeline-sweep --stages 1..2000000000"),
             Contains("--stages=1..2000000000 lists more than 4096 stage counts"));
  CHECK_THAT(refused("pipeline-sweep --stages 1..4000,5000..5100"), Contains("lists more than 4096 stage counts"));
}

TEST_CASE("Pass and transfer times stay where the pipeline arithmetic is finite", "[work-bounds]") {
  CHECK_THAT(refused("pipeline-sweep --forward-s 1e308"),
             Contains("--forward-s=1e308 is more than the 1e+06 s (11.6 days)"));
  CHECK_THAT(refused("pipeline-sweep --backward-s 1e-12"),
             Contains("--backward-s=1e-12 is less than the 1e-09 s (a nanosecond)"));
  CHECK_THAT(refused("pipeline-sweep --p2p-s 2e6"), Contains("--p2p-s=2e6 is more than the 1e+06 s"));
  // An abstract pipeline section reads the same range.
  Json section{{"stages", 2}, {"microbatches", 2}, {"forward_s", 1e308}, {"backward_s", 1}};
  CHECK_THAT(refusal_message([&] { parse_abstract_pipeline(section); }),
             Contains("pipeline.forward_s=1e+308 is more than the 1e+06 s"));
  section["forward_s"] = 1;
  section["average_s"] = 1e7;
  section["schedule"] = "localsgd";
  CHECK_THAT(refusal_message([&] { parse_abstract_pipeline(section); }), Contains("pipeline.average_s="));
  // At the limit the figures are finite: 1F1B over S = 2 stages and M = 2 micro-batches of f = b = 1e6 s fills and
  // drains once, (M + S - 1)(f + b) = 6e6 s.
  const Json report = simulate_abstract_pipeline(
      Json{{"stages", 2}, {"microbatches", 2}, {"forward_s", 1e6}, {"backward_s", 1e6}}, nullptr, nullptr);
  CHECK(report["simulation"]["makespan_s"].get<double>() == 3 * 2e6);
  CHECK(std::isfinite(report["pipeline"]["idle_fraction_mean"].get<double>()));
}

// ---------------------------------------------------------------------------------------------------- calibrate

namespace {

Json gemm(double m, double n, double k, double tflops) {
  return Json{{"m", m}, {"n", n}, {"k", k}, {"tflops", tflops}};
}

Json a100_file() {
  return Json{{"accelerator", "a100-80gb"}, {"sources", {"synthetic"}}};
}

}  // namespace

TEST_CASE("calibrate refuses more than 256 points in a group and 1024 in all before reading any", "[work-bounds]") {
  Json file = a100_file();
  for (int i = 0; i < 257; ++i) file["gemm"].push_back(Json::object());  // never read: refused by the count
  CHECK_THAT(refusal_message([&] { calibrate(file, ""); }),
             Contains("measured.gemm holds 257 points, more than the 256 a group may"));
  file = a100_file();
  for (const char* group : {"gemm", "memory", "attention", "collectives"})
    for (int i = 0; i < 256; ++i) file[group].push_back(Json::object());
  file["layers"].push_back(Json::object());
  CHECK_THAT(refusal_message([&] { calibrate(file, ""); }), Contains("measured holds 1025 points, more than the 1024"));
  const test::TempDir dir;
  test::write(dir / "many.json", file.dump());
  CHECK_THAT(refused("calibrate " + (dir / "many.json")), Contains("measured holds 1025 points"));
}

TEST_CASE("The built-in measurement files fit the point limits and pass the plausibility checks", "[work-bounds]") {
  const std::string folder = std::string(PLACESIM_SOURCE_DIR) + "/topology/profiles/measurements/";
  for (const char* name : {"a100-80gb", "h100-sxm", "h200", "b200", "gb200", "mi300x"}) {
    INFO(name);
    const Json file = read_json_file(folder + name + ".json");
    std::size_t total = 0;
    for (const char* group :
         {"collectives", "memory", "gemm", "attention", "layers", "power_limited_gemm", "interference"}) {
      const std::size_t n = file.contains(group) ? file[group].size() : 0;
      CHECK(n <= kMaxGroupPoints);
      total += n;
    }
    CHECK(total <= kMaxCalibrationPoints);
    CHECK_NOTHROW(calibrate(file, folder));
  }
}

TEST_CASE("A measured rate above the accelerator's peak is refused naming the point", "[work-bounds]") {
  const AcceleratorSpec a100 = accelerator_preset("a100-80gb", "test");
  Json file = a100_file();
  file["gemm"] = {gemm(8192, 8192, 8192, 200), gemm(8192, 8192, 8192, 1e300)};
  CHECK_THAT(refusal_message([&] { calibrate(file, ""); }),
             Contains("measured.gemm[1]: 8192x8192x8192 at 1e+300 TFLOP/s is above a100-80gb's bf16 peak of 312 "
                      "TFLOP/s"));
  // A time: 2 m n k FLOPs in t seconds at 1.25 x the bf16 peak.
  const double flops = 2.0 * 8192 * 8192 * 8192;
  file["gemm"] = {Json{{"m", 8192}, {"n", 8192}, {"k", 8192}, {"time_s", flops / (1.25 * a100.peak_bf16_flops)}}};
  CHECK_THAT(refusal_message([&] { calibrate(file, ""); }),
             Contains("measured.gemm[0]: 8192x8192x8192 at 390 TFLOP/s is above a100-80gb's bf16 peak"));
  // fp32 runs at its own peak (19.5 TFLOP/s on an A100): 20 is above it although far below bf16's.
  file["gemm"] = {Json{{"m", 8192}, {"n", 8192}, {"k", 8192}, {"dtype", "fp32"}, {"tflops", 20}}};
  CHECK_THAT(refusal_message([&] { calibrate(file, ""); }), Contains("above a100-80gb's fp32 peak of 19.5 TFLOP/s"));
  // A point's own peak_tflops (another precision) is the bound it is held to.
  file["gemm"] = {Json{{"m", 8192}, {"n", 8192}, {"k", 8192}, {"peak_tflops", 624}, {"tflops", 700}}};
  CHECK_THAT(refusal_message([&] { calibrate(file, ""); }), Contains("is above its peak_tflops of 624 TFLOP/s"));
  // Memory: a bandwidth above the HBM's (2039 GB/s).
  file = a100_file();
  file["memory"] = {Json{{"bytes", 1e9}, {"bw_GBps", 1e6}}};
  CHECK_THAT(refusal_message([&] { calibrate(file, ""); }),
             Contains("measured.memory[0]: 1.00 GB at 1e+06 GB/s is above a100-80gb's memory bandwidth of 2039 GB/s"));
}

TEST_CASE("GEMM dimensions past 2^24 and an absurd SM count are refused", "[work-bounds]") {
  Json file = a100_file();
  const double huge = std::ldexp(1.0, 62);
  file["gemm"] = {gemm(huge, huge, huge, 100)};
  CHECK_THAT(refusal_message([&] { calibrate(file, ""); }),
             Contains("measured.gemm[0].m=") && Contains("is more than the 16777216 (2^24) a GEMM dimension may be"));
  file["gemm"] = {gemm(16777216, 1024, 1024, 100), gemm(16777217, 1024, 1024, 100)};
  CHECK_THAT(refusal_message([&] { calibrate(file, ""); }),
             Contains("measured.gemm[1].m=16777217") && Contains("is more than the 16777216"));
  file = a100_file();
  file["gemm_sms"] = 1e12;
  file["memory"] = {Json{{"bytes", 1e9}, {"bw_GBps", 1500}}};
  CHECK_THAT(refusal_message([&] { calibrate(file, ""); }),
             Contains("measured.gemm_sms=") && Contains("is more than the 1024 SMs an accelerator has at most"));
  file["gemm_sms"] = 1024;
  CHECK_NOTHROW(calibrate(file, ""));
}

TEST_CASE("A fitted efficiency above 1 is refused naming the points that drive it", "[work-bounds]") {
  // Only gemm_peak_efficiency is fitted (the shape parameters held at the profile's values), so the fit must match
  // the one point exactly. The point runs 10 % faster than the A100 profile's GEMM model allows at efficiency 1, and
  // still below the bf16 peak, so it passes the point check and drives the efficiency past 1. A shape of
  // milliseconds, so the launch latency (held) is a small part of the time.
  AcceleratorSpec at_one = accelerator_preset("a100-80gb", "test");
  at_one.profile.gemm_peak_efficiency = 1;
  const GemmShape g{8192, 8192, 1024};
  const double ceiling_tflops = 2 * g.m * g.n * g.k / gemm_time_s(g, DType::BF16, at_one) / 1e12;
  const double measured = 1.1 * ceiling_tflops;
  REQUIRE(measured * 1e12 < at_one.peak_bf16_flops);
  Json file = a100_file();
  file["fixed"] = {{{"fields", {"gemm_latency_s", "gemm_k_overhead", "gemm_roofline_p"}}, {"why", "held"}}};
  file["gemm"] = {gemm(g.m, g.n, g.k, measured)};
  const std::string message = refusal_message([&] { calibrate(file, ""); });
  CHECK_THAT(message, Contains("gemm: the fit gives gemm_peak_efficiency=") && Contains(", above 1 (faster than") &&
                          Contains("1 point(s) measured faster than the model at 1 allows: measured.gemm[0] "
                                   "8192x8192x1024 (" +
                                   format_significant(measured, 4) + " TFLOP/s, the model at most " +
                                   format_significant(ceiling_tflops, 4) + ")"));
  // 10 % below the ceiling the fit matches the point with an efficiency below 1, and is kept.
  file["gemm"] = {gemm(g.m, g.n, g.k, 0.9 * ceiling_tflops)};
  const Calibration c = calibrate(file, "");
  CHECK(c.accelerator.profile.gemm_peak_efficiency < 1);
  REQUIRE(c.residuals.size() == 1);
  CHECK(std::fabs(c.residuals[0].error_percent()) < 1e-3);
}

// ------------------------------------------------------------------------------------------------------ cluster

namespace {

ClusterSpec cluster(const std::string& text) {
  return parse_cluster(Json::parse(text));
}

}  // namespace

TEST_CASE("The cluster's numeric fields are bounded where a figure would make the step absurd", "[work-bounds]") {
  // An oversubscription of 1e300 made a step of 7e295 s with warnings only.
  CHECK_THAT(refusal_message([] { cluster(R"({"preset": "dgx-a100", "oversubscription": 1e300})"); }),
             Contains("cluster.oversubscription=1e+300 is more than 64"));
  CHECK(cluster(R"({"preset": "dgx-a100", "oversubscription": 64})").oversubscription == 64);
  CHECK_THAT(refused("simulate examples/small-3d-1f1b.json --quiet --set cluster.oversubscription=1e300"),
             Contains("cluster.oversubscription=1e+300 is more than 64"));
  // A latency with a unit ("1e300us") passed the bare-number rule and made steps of 1e294 s under comm_model links.
  CHECK_THAT(refusal_message([] { cluster(R"({"preset": "dgx-a100", "nic_latency": "2s"})"); }),
             Contains("cluster.nic_latency=2 s is more than 1 s"));
  CHECK(cluster(R"({"preset": "dgx-a100", "switch_latency": "1s"})").switch_latency_s == 1);
  CHECK_THAT(refusal_message([] { cluster(R"({"preset": "dgx-a100", "gpus_per_node": 2048, "nics_per_node": 8})"); }),
             Contains("cluster.gpus_per_node=2048 is more than the 1024 GPUs of one node"));
  // Every preset is inside the bounds.
  for (const auto& [name, description] : cluster_preset_list()) CHECK_NOTHROW(parse_cluster(Json(name)));
}
