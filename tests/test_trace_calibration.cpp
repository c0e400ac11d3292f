// Calibration from a profiler trace and comparison with one: the model's kernel classes, the round trip from a
// simulated trace with known perturbations, the exact attribution of a comparison, and the experiment's
// "calibration" key.
#include <catch2/catch.hpp>
#include <cmath>

#include "FileHelpers.hpp"
#include "Helpers.hpp"
#include "strategies/analytic/ComputeModel.hpp"
#include "strategies/analytic/TaskClasses.hpp"
#include "topology/hardware/Accelerator.hpp"
#include "topology/hardware/CommProfile.hpp"
#include "traces/profiler/TraceCalibration.hpp"
#include "traces/profiler/TraceCompare.hpp"
#include "traces/profiler/TraceSummary.hpp"
#include "workloads/json/Units.hpp"

using namespace placesim;

namespace {

const char* kLlama = R"({"model":{"preset":"llama2-7b","seq_len":4096},"training":{"micro_batch":1},"strategy":"dp"})";

}  // namespace

TEST_CASE("kernel classes: a pass's GEMM class is its linears' GEMMs and the classes sum to the pass",
          "[trace-calibration]") {
  const Experiment e = test::experiment(kLlama);
  const AcceleratorSpec acc = accelerator_preset("a100-80gb", "acc");
  const PassTimes t = layer_times(e, acc);
  // Llama 2 7B, one sequence of 4,096 tokens, bf16, tp 1: QKV 4096 -> 3 x 4096, output 4096 -> 4096, the gated
  // MLP's up projections 4096 -> 2 x 11008 and its down projection 11008 -> 4096 (C[T x out] = A[T x in] B[in x out]).
  const double T = 4096;
  const std::vector<GemmShape> forward{{T, 3 * 4096, 4096}, {T, 4096, 4096}, {T, 2 * 11008, 4096}, {T, 4096, 11008}};
  double gemm = 0;
  for (const GemmShape& g : forward) gemm += gemm_time_s(g, DType::BF16, acc);
  CHECK(t.forward_classes.gemm == Approx(gemm).epsilon(1e-12));
  // The fused attention kernel is the attention class, as the pass's own attention share says.
  CHECK(t.forward_classes.attention == Approx(t.attention_forward_s).epsilon(1e-12));
  CHECK(t.backward_classes.attention == Approx(t.attention_backward_s).epsilon(1e-12));
  CHECK(t.forward_classes.total() == Approx(t.forward_s).epsilon(1e-12));
  CHECK(t.backward_classes.total() == Approx(t.backward_s).epsilon(1e-12));
  CHECK(t.forward_classes.memory > 0);
  // The backward runs two GEMMs per linear (input and weight gradients) of the forward's FLOPs each.
  CHECK(t.backward_classes.gemm > 1.8 * t.forward_classes.gemm);
}

TEST_CASE("kernel classes: a host-bound pass's launch floor is its own class", "[trace-calibration]") {
  Experiment e = test::experiment(
      R"({"model":{"preset":"llama2-7b","seq_len":128},"training":{"micro_batch":1,"launch_overhead":"200us"},"strategy":"dp"})");
  const PassTimes t = layer_times(e, accelerator_preset("h100-sxm", "acc"));
  REQUIRE(t.forward_classes.launch > 0);
  CHECK(t.forward_classes.total() == Approx(t.forward_s).epsilon(1e-12));
}

namespace {

// A Kineto trace of one rank: a ProfilerStep span over [0, step] and the given kernels (name, start, duration, in
// microseconds), each launched from the main thread just before it starts.
std::string kineto(double step_us, const std::vector<std::tuple<std::string, double, double>>& kernels) {
  Json events = Json::array();
  events.push_back(Json{{"ph", "X"},
                        {"cat", "user_annotation"},
                        {"name", "ProfilerStep#1"},
                        {"pid", 1},
                        {"tid", 1},
                        {"ts", 0},
                        {"dur", step_us},
                        {"args", Json::object()}});
  int id = 0;
  for (const auto& [name, start, dur] : kernels) {
    ++id;
    events.push_back(Json{{"ph", "X"},
                          {"cat", "cuda_runtime"},
                          {"name", "cudaLaunchKernel"},
                          {"pid", 1},
                          {"tid", 1},
                          {"ts", start > 1 ? start - 1 : 0},
                          {"dur", 0.5},
                          {"args", Json{{"correlation", id}}}});
    events.push_back(
        Json{{"ph", "X"},
             {"cat", "kernel"},
             {"name", name},
             {"pid", 0},
             {"tid", 7},
             {"ts", start},
             {"dur", dur},
             {"args",
              Json{{"device", 0}, {"stream", name.find("nccl") != std::string::npos ? 20 : 7}, {"correlation", id}}}});
  }
  return Json{{"schemaVersion", 1}, {"traceEvents", events}}.dump();
}

TraceSummary summary_of(const std::string& dir, const std::string& name, const std::string& text) {
  test::write(dir + "/" + name, text);
  return summarize(read_profiler_traces({dir + "/" + name}));
}

}  // namespace

TEST_CASE("compare: a two-kernel trace's difference is attributed exactly", "[trace-calibration]") {
  test::TempDir dir;
  // Measured: a GEMM of 12 ms, 2 ms idle (a host stall), an all-reduce of 6 ms: a 20 ms step. Simulated: the GEMM
  // in 10 ms and the all-reduce in 5 ms back to back: 15 ms.
  const TraceSummary measured = summary_of(dir.path, "measured.json",
                                           kineto(20000, {{"ampere_bf16_s16816gemm_128x128", 0, 12000},
                                                          {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 14000, 6000}}));
  const TraceSummary simulated = summary_of(dir.path, "simulated.json",
                                            kineto(15000, {{"ampere_bf16_s16816gemm_128x128", 0, 10000},
                                                           {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 10000, 5000}}));
  const TraceComparison c = compare_summaries(measured, simulated);
  CHECK(c.measured_step_s == Approx(0.020));
  CHECK(c.simulated_step_s == Approx(0.015));
  auto row = [&](const std::string& what) {
    for (const CompareRow& r : c.rows)
      if (r.what == what) return r.difference_s();
    FAIL("no row " << what);
    return 0.0;
  };
  CHECK(row("forward gemm") == Approx(0.002));
  CHECK(row("forward collective") == Approx(0.001));
  CHECK(row("idle: host stalls") == Approx(0.002));
  CHECK(row("overlap") == Approx(0).margin(1e-12));
  double sum = 0;
  for (const CompareRow& r : c.rows) sum += r.difference_s();
  CHECK(sum == Approx(0.005));
  REQUIRE(!c.findings.empty());
  CHECK(c.findings.front().find("forward gemm: 20 % slower than modelled (+2.000 ms per step)") == 0);
}

TEST_CASE("compare: overlapping kernels keep the decomposition exact", "[trace-calibration]") {
  test::TempDir dir;
  // The all-reduce runs beside the second half of the GEMM: 4 ms of overlap in a 10 ms step.
  const TraceSummary measured = summary_of(
      dir.path, "m.json",
      kineto(10000, {{"sm90_xmma_gemm_bf16", 0, 8000}, {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 4000, 6000}}));
  const TraceSummary simulated = summary_of(
      dir.path, "s.json", kineto(9000, {{"sm90_xmma_gemm_bf16", 0, 8000}, {"flash_fwd_kernel", 8000, 1000}}));
  const TraceComparison c = compare_summaries(measured, simulated);
  double sum = 0;
  for (const CompareRow& r : c.rows) sum += r.difference_s();
  CHECK(sum == Approx(c.measured_step_s - c.simulated_step_s));
  CHECK(measured.overlapped_s[static_cast<int>(KernelClass::Gemm)] == Approx(0.004));
  CHECK(measured.overlapped_s[static_cast<int>(KernelClass::Collective)] == Approx(0.004));
}

namespace {

// A calibration file for a100-80gb with the given compute and NCCL factors and host time per step.
Json perturbed_calibration(double gemm, double nccl, const std::string& host) {
  const AcceleratorSpec acc = accelerator_preset("a100-80gb", "acc");
  ComputeProfile p = acc.profile;
  p.gemm_peak_efficiency *= gemm;
  FabricProfile f = *acc.intra_node_fabric;
  f.bus_efficiency *= nccl;
  f.ll_bus_efficiency *= nccl;
  f.nvls_bus_efficiency *= nccl;
  return Json{{"accelerator", "a100-80gb"},
              {"compute", compute_profile_to_json(p)},
              {"comm", Json{{"intra_node", fabric_profile_to_json(f)}}},
              {"training", Json{{"host_time_per_step", host}}}};
}

const char* kNode = R"({"name":"Llama 3 8B, FSDP on one DGX A100","model":{"preset":"llama3-8b","seq_len":4096},
  "training":{"global_batch":16,"micro_batch":1},"strategy":{"preset":"fsdp","dp":8},
  "cluster":{"preset":"dgx-a100","nodes":1}})";

}  // namespace

TEST_CASE("calibrate --trace: a simulated trace with known perturbations calibrates back to them",
          "[trace-calibration]") {
  test::TempDir dir;
  // The node simulated with its GEMMs at 85 % of the profile's efficiency, NCCL at 80 % of its bus bandwidth and
  // 50 ms of host time per step; its profiler trace calibrated against the unperturbed experiment.
  test::write(dir / "perturbed.json", perturbed_calibration(0.85, 0.80, "50ms").dump());
  Json node = Json::parse(kNode);
  test::write(dir / "node.json", node.dump());
  node["calibration"] = "perturbed.json";
  test::write(dir / "perturbed-node.json", node.dump());
  std::string out;
  REQUIRE(test::run_placesim("simulate " + dir / "perturbed-node.json" +
                                 " --fidelity analytic --quiet --profiler-trace " + dir / "trace.json.gz",
                             &out) == 0);
  REQUIRE(test::run_placesim("calibrate --trace " + dir / "trace.json.gz" + " " + dir / "node.json" + " --out " +
                                 dir / "calibration.json",
                             &out) == 0);
  const Json cal = Json::parse(test::read(dir / "calibration.json"));
  const AcceleratorSpec a100 = accelerator_preset("a100-80gb", "acc");
  CHECK(cal["compute"]["gemm_peak_efficiency"].get<double>() ==
        Approx(0.85 * a100.profile.gemm_peak_efficiency).epsilon(0.02));
  CHECK(cal["compute"]["flash_attention_efficiency"].get<double>() ==
        Approx(a100.profile.flash_attention_efficiency).epsilon(0.02));
  CHECK(cal["compute"]["memory_efficiency"].get<double>() == Approx(a100.profile.memory_efficiency).epsilon(0.02));
  CHECK(cal["comm"]["intra_node"]["bus_efficiency"].get<double>() ==
        Approx(0.80 * a100.intra_node_fabric->bus_efficiency).epsilon(0.02));
  CHECK(cal["training"]["host_time_per_step"].get<std::string>().find("50") == 0);
  CHECK(parse_time(cal["training"]["host_time_per_step"].get<std::string>(), "t") == Approx(0.050).epsilon(0.02));
  // The calibrated experiment: the trace's figures reach the simulation, and its report names them.
  Json calibrated = Json::parse(kNode);
  calibrated["calibration"] = "calibration.json";
  test::write(dir / "calibrated.json", calibrated.dump());
  REQUIRE(test::run_placesim("simulate " + dir / "calibrated.json" + " --fidelity analytic --quiet", &out) == 0);
  CHECK(out.find("calibration          calibration.json (a profiler trace of one node)") != std::string::npos);
  CHECK(out.find("training.host_time_per_step 50.000 ms (model 0.000 us)") != std::string::npos);
}

TEST_CASE("compare: the simulated trace of the experiment itself differs by nothing", "[trace-calibration]") {
  test::TempDir dir;
  test::write(dir / "node.json", kNode);
  std::string out;
  REQUIRE(test::run_placesim(
              "simulate " + dir / "node.json" + " --fidelity analytic --quiet --profiler-trace " + dir / "trace.json",
              &out) == 0);
  REQUIRE(test::run_placesim("compare " + dir / "trace.json" + " " + dir / "node.json" + " --fidelity analytic --out " +
                                 dir / "c.json" + " --svg " + dir / "c.svg",
                             &out) == 0);
  const Json c = Json::parse(test::read(dir / "c.json"));
  CHECK(c["measured_step_s"].get<double>() == Approx(c["simulated_step_s"].get<double>()).epsilon(1e-9));
  for (const Json& r : c["rows"]) CHECK(r["difference_s"].get<double>() == Approx(0).margin(1e-9));
  CHECK(c["findings"].size() == 0);
  CHECK(test::read(dir / "c.svg").find("<svg") == 0);
}

TEST_CASE("experiment calibration: the accelerator must match, and the experiment's own fields win",
          "[trace-calibration]") {
  test::TempDir dir;
  test::write(dir / "cal.json", perturbed_calibration(1, 1, "20ms").dump());
  Json e = Json::parse(kNode);
  e["calibration"] = "cal.json";
  e["training"]["host_time_per_step"] = "5ms";
  Experiment x = parse_experiment(e, dir.path);
  CHECK(x.training.host_time_per_step_s == Approx(0.005));
  CHECK(x.calibration["training"].size() == 0);
  e["training"].erase("host_time_per_step");
  x = parse_experiment(e, dir.path);
  CHECK(x.training.host_time_per_step_s == Approx(0.020));
  CHECK(x.calibration["training"] == Json::array({"training.host_time_per_step"}));
  e["cluster"] = Json{{"preset", "dgx-h100"}, {"nodes", 1}};
  x = parse_experiment(e, dir.path);
  CHECK_THROWS_WITH(check_calibration_accelerator(x, "h100-sxm"),
                    Catch::Contains("was measured on a100-80gb, but the cluster's accelerator is h100-sxm"));
  e["cluster"] = Json{{"preset", "dgx-a100"}, {"accelerator", {{"preset", "a100-80gb"}, {"profile", "x.json"}}}};
  CHECK_THROWS_WITH(parse_experiment(e, dir.path), Catch::Contains("both set the accelerator's profile"));
  e["calibration"] = 3;
  CHECK_THROWS_WITH(parse_experiment(e, dir.path), Catch::Contains("calibration must be the path"));
}

TEST_CASE("trace summary: GEMM shapes by total time, with their median kernel", "[trace-calibration]") {
  ProfilerTrace t;
  t.steps.push_back({0, 1, 0, 0.1});
  auto gemm = [&](double m, double start, double dur) {
    TraceKernel k;
    k.cls = KernelClass::Gemm;
    k.m = m, k.n = 4096, k.k = 4096, k.elem_bytes = 2;
    k.start_s = start, k.dur_s = dur, k.step = 0;
    t.kernels.push_back(k);
  };
  gemm(4096, 0.00, 0.001);
  gemm(4096, 0.01, 0.003);
  gemm(4096, 0.02, 0.002);
  gemm(1024, 0.03, 0.0005);
  const TraceSummary s = summarize(t);
  REQUIRE(s.gemm_shapes.size() == 2);
  CHECK(s.gemms_with_shape == 4);
  CHECK(s.gemm_shapes[0].m == 4096);
  CHECK(s.gemm_shapes[0].count == 3);
  CHECK(s.gemm_shapes[0].median_s == Approx(0.002));
  CHECK(s.gemm_shapes[0].total_s == Approx(0.006));
  CHECK(s.gemm_shapes[1].m == 1024);
}

TEST_CASE("calibrate --trace: a trace of another run is refused, naming the class", "[trace-calibration]") {
  // HolisticTraceAnalysis's ROCm toy (two small GEMMs per step) is not a step of Llama 3 8B.
  const ProfilerTrace t = read_profiler_traces(
      {std::string(PLACESIM_SOURCE_DIR) + "/tests/data/profiler/hta/mi250_minitoy_train_ROCm6_2_kineto.json.gz"});
  const Experiment e = parse_experiment(Json::parse(kNode), "");
  CHECK_THROWS_WITH(calibrate_from_trace(summarize(t), e, parse_cluster(e.cluster), t.files),
                    Catch::Contains("the trace's GEMM kernels take") && Catch::Contains("more than 5x apart"));
}
