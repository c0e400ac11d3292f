// Mixture-of-experts layers under the schedules that split the backward (zero-bubble, DualPipeV): each MoE layer's
// backward as an input-gradient op B (the experts' data-gradient GEMMs between the two all-to-alls, the dense part's)
// and a weight-gradient op W (the experts' and the dense part's weight-gradient GEMMs), and DualPipeV's overlapped
// pairs, whose forward and backward alternate part by part so that one's all-to-all runs beside the other's compute
// (deepseek-ai/DualPipe; the DeepSeek-V3 report, arXiv 2412.19437, figure 4). Each TEST_CASE runs in its own process.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <tuple>

#include "strategies/pipeline/PipelineSchedule.hpp"
#include "tests/Helpers.hpp"
#include "tests/PipelineHelpers.hpp"

using namespace placesim;
using placesim::test::run_placesim;

namespace {

// The golden case's model: 8 llama layers of h 1024, every one MoE with 8 experts of 2048 (top 2), seq 2048, on one
// DGX H100 as pp 2 x dp 4 with ep 4 (each rank holds 2 experts; balanced routing sends each rank 4096 token-expert
// pairs per layer and micro-batch: 2048 tokens x top 2).
const std::string kExperiment =
    std::string(PLACESIM_SOURCE_DIR) + "/tests/golden/simulate-moe-dualpipev/moe-dualpipev.json";

struct Run {
  Json report, trace;
};

Run simulate(const std::string& schedule) {
  static int n = 0;
  const std::string path = "/tmp/placesim-moe-pipe-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
  std::string out;
  INFO(out);
  REQUIRE(run_placesim("simulate " + kExperiment + " --set strategy.schedule=" + schedule + " --report " + path +
                           ".report.json --trace " + path + ".trace.json --trace-devices 0",
                       &out) == 0);
  Run r;
  std::ifstream report(path + ".report.json"), trace(path + ".trace.json");
  r.report = Json::parse(report);
  r.trace = Json::parse(trace);
  return r;
}

struct Slice {
  std::string name, cat;
  double start, end, flops;
  int microbatch, chunk;
};

std::vector<Slice> slices(const Json& trace) {
  std::vector<Slice> out;
  for (const Json& e : trace["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    const Json& a = e["args"];
    const double start = e["ts"].get<double>();
    out.push_back({e["name"].get<std::string>(), e["cat"].get<std::string>(), start, start + e["dur"].get<double>(),
                   a.value("flops", 0.0), a.value("microbatch", -1), a.value("chunk", -1)});
  }
  return out;
}

bool is_compute(const Slice& s) {
  return s.cat == "forward" || s.cat == "backward" || s.cat == "weight-grad" || s.cat == "recompute";
}

bool is_alltoall(const Slice& s) {
  return s.name.rfind("alltoall", 0) == 0;
}

// Microseconds during which an all-to-all of one op (micro-batch, chunk) runs beside compute of another op.
double alltoall_beside_other_compute(const std::vector<Slice>& all) {
  double total = 0;
  for (const Slice& a : all) {
    if (!is_alltoall(a)) continue;
    for (const Slice& c : all)
      if (is_compute(c) && std::tie(c.microbatch, c.chunk) != std::tie(a.microbatch, a.chunk))
        total += std::max(0.0, std::min(a.end, c.end) - std::max(a.start, c.start));
  }
  return total;
}

double flops_of(const std::vector<Slice>& all, const std::string& cat, const std::string& prefix = "") {
  double sum = 0;
  for (const Slice& s : all)
    if (s.cat == cat && s.name.rfind(prefix, 0) == 0) sum += s.flops;
  return sum;
}

void require_exact(const Json& report) {
  for (const Json& row : report["validation"]) {
    INFO(row["figure"].get<std::string>());
    CHECK(row["difference"].get<double>() == 0);
  }
}

// Overlapped pairs: more than half of the all-to-all time runs beside another op's compute, less than half of it is
// exposed, and the activations walked pair by pair (paired_walked_peak) are those the simulation held at its peak.
void require_paired_alltoall(const Run& run) {
  const std::vector<Slice> d = slices(run.trace);
  double alltoall = 0;
  for (const Slice& s : d)
    if (is_alltoall(s)) alltoall += s.end - s.start;
  CHECK(alltoall_beside_other_compute(d) > 0.5 * alltoall);
  const Json& experts = run.report["simulation"]["experts"];
  CHECK(experts["all_to_all_exposed_s"].get<double>() < 0.5 * experts["all_to_all_s"].get<double>());
  require_exact(run.report);
}

}  // namespace

TEST_CASE("ZB-H1 on an MoE model: the experts' W takes their weight-gradient GEMMs' FLOPs, the forward's") {
  const Run one = simulate("1f1b"), h1 = simulate("zb-h1");
  const std::vector<Slice> a = slices(one.trace), b = slices(h1.trace);
  // One expert task's FLOPs on a rank: 2 FLOPs per multiply-add over 4096 pairs through the gated MLP's up
  // projection (h x 2 x 2048) and down projection (2048 x h): 2 x 4096 x (1024 x 4096 + 2048 x 1024) = 51,539,607,552.
  const double expert_forward = 2.0 * 4096 * (1024.0 * 4096 + 2048.0 * 1024);
  int expert_weights = 0;
  for (const Slice& s : b)
    if (s.cat == "weight-grad" && s.name.rfind("wgrad experts", 0) == 0) {
      ++expert_weights;
      CHECK(s.flops == expert_forward);
    }
  // Stage 0 of the 1F1B split holds 4 MoE layers: a W of its experts per layer and micro-batch, 4 x 8.
  CHECK(expert_weights == 32);
  // B and W together do the whole backward's FLOPs: the sum over the step equals 1F1B's backward.
  CHECK(flops_of(b, "backward") + flops_of(b, "weight-grad") == Approx(flops_of(a, "backward")).epsilon(1e-12));
  CHECK(flops_of(b, "backward", "bwd experts") == Approx(32 * expert_forward).epsilon(1e-12));
  // The same work in less time, every exact figure of the analysis reproduced (bytes and activations held until W).
  CHECK(h1.report["simulation"]["step_time_s"].get<double>() < one.report["simulation"]["step_time_s"].get<double>());
  require_exact(h1.report);
}

TEST_CASE("DualPipeV on an MoE model runs one op's all-to-all beside the other op's compute") {
  const Run v = simulate("zb-v"), dual = simulate("dualpipev");
  // ZB-V runs each op's layers one after the other: an op's all-to-all waits for its own compute and its next compute
  // waits for the all-to-all, so no all-to-all runs beside another op's compute (but for the trace's rounding of
  // times to the nanosecond).
  const std::vector<Slice> z = slices(v.trace);
  CHECK(alltoall_beside_other_compute(z) < 0.001 * static_cast<double>(z.size()));
  // DualPipeV's pairs alternate the forward's and the backward's parts: most of the all-to-all time of a paired op
  // runs beside the other op's compute, and the exposed all-to-all shrinks.
  require_paired_alltoall(dual);
  const Json& ve = v.report["simulation"]["experts"];
  CHECK(ve["all_to_all_exposed_s"].get<double>() == Approx(ve["all_to_all_s"].get<double>()).epsilon(1e-9));
  CHECK(dual.report["simulation"]["step_time_s"].get<double>() < v.report["simulation"]["step_time_s"].get<double>());
}

// DualPipe (bidirectional) pairs the same way: rank s runs stage s of one direction's copy and stage p - 1 - s of the
// other's, a forward of one direction beside a backward of the other, their all-to-alls beside each other's compute.
TEST_CASE("DualPipe on an MoE model runs one op's all-to-all beside the other op's compute") {
  require_paired_alltoall(simulate("dualpipe"));
}

// A pair's forward adds its layers' activations as its backward frees its own, layer by layer. DualPipeV on 2 stages
// and 8 micro-batches (dualpipev.py's steps; chunks of 2 layers): stage 0 runs F0 F1 F2 of chunk 0 and F0 of chunk 1
// (4 chunk passes), B0 W0 of chunk 1 (3), F1 of chunk 1 (4), then only pairs, the first F3 of chunk 0 with B1 of
// chunk 1: one layer of F3 is held before B1 frees one, so its peak is 4 passes and a layer, 9 layers, where the
// DeepSeek-V3 report counts PP + 1 = 2p + 1 = 5 passes (Table 2). Stage 1 runs F0 F1 of both chunks (4), then its
// first pair one pass after the other (the V's turn feeds itself): F2 of chunk 0 alone reaches 5 passes, 10 layers.
TEST_CASE("DualPipeV on an MoE model holds 2p + 1 chunk passes at the V's turn and a layer less on stage 0") {
  const Run v = simulate("zb-v"), dual = simulate("dualpipev");
  const Json& stages = dual.report["pipeline_stages"]["stages"];
  CHECK(stages[0]["activation_layers"].get<double>() == 9);
  CHECK(stages[1]["activation_layers"].get<double>() == 10);
  for (const Json& st : stages) CHECK(st["inflight_chunk_passes"].get<double>() == 5);
  // In bytes: ZB-V holds 2p = 4 chunk passes of 2 layers on stage 1 (Qi et al., arXiv 2405.15362), which holds no
  // loss in a V (the head is on stage 0): 8 layers.
  const auto activations = [](const Run& r, int stage) {
    return r.report["memory"]["per_stage"][stage]["activations_bytes"].get<double>();
  };
  const double layer = activations(v, 1) / 8;
  CHECK(activations(dual, 1) == Approx(10 * layer).epsilon(1e-12));
  CHECK(activations(dual, 0) - activations(v, 0) == Approx(layer).epsilon(1e-12));
}

namespace {

PipelineShape combined_shape(Schedule schedule, int stages, int microbatches, int chunks) {
  PipelineShape sh = test::pipeline_shape(schedule, stages, microbatches);
  sh.chunks = chunks;
  sh.combined = true;
  return sh;
}

}  // namespace

// Megatron-Core's combined_1f1b_schedule_for_no_pipelining, as its docstring lists the phases for 4 micro-batches:
// the 1st forward alone; the 1st backward with the 2nd forward; ...; the 4th backward alone.
TEST_CASE("Combined 1F1B without pipeline stages pairs each forward with the previous micro-batch's backward") {
  const PipelineShape sh = combined_shape(Schedule::OneFOneB, 1, 4, 1);
  // "+": the op and the next one run as a pair; "BW" a whole backward; "A" the step's update.
  CHECK(test::render_paired(stage_order(sh, strategy_shape_fields(), 0)) ==
        "F0.0 F1.0+ BW0.0 F2.0+ BW1.0 F3.0+ BW2.0 BW3.0 A");
}

// Megatron-Core's get_pp_rank_microbatches with overlap_moe_expert_parallel_comm: the interleaved warm-up
// 2 (p - s - 1) + (v - 1) N plus one, here p = 2, v = 2, N = p = 2: 5 forwards on stage 0 and 3 on stage 1 before the
// first backward; then each forward paired with the backward after it, the remaining backwards alone.
TEST_CASE("Combined 1F1B on interleaved stages runs one more warm-up forward and pairs the steady state") {
  const PipelineShape sh = combined_shape(Schedule::Interleaved, 2, 4, 2);
  const std::vector<PipeOp> s0 = stage_order(sh, strategy_shape_fields(), 0);
  const std::vector<PipeOp> s1 = stage_order(sh, strategy_shape_fields(), 1);
  CHECK(test::render_paired(s0) ==
        "F0.0 F1.0 F0.1 F1.1 F2.0 F3.0+ BW0.1 F2.1+ BW1.1 F3.1+ BW0.0 BW1.0 BW2.1 BW3.1 BW2.0 BW3.0 A");
  CHECK(test::render_paired(s1) ==
        "F0.0 F1.0 F0.1 F1.1+ BW0.1 F2.0+ BW1.1 F3.0+ BW0.0 F2.1+ BW1.0 F3.1+ BW2.1 BW3.1 BW2.0 BW3.0 A");
}

TEST_CASE("Combined 1F1B on an MoE model hides most of the all-to-all and holds one layer more") {
  const std::string pp1 = " --set strategy.pp=1 --set strategy.dp=8 --set strategy.ep=8 --set strategy.schedule=1f1b";
  const Run plain = simulate("1f1b" + pp1), combined = simulate("1f1b" + pp1 + " --set strategy.ep_overlap=true");
  const Json &pe = plain.report["simulation"]["experts"], &ce = combined.report["simulation"]["experts"];
  CHECK(pe["all_to_all_exposed_s"].get<double>() == Approx(pe["all_to_all_s"].get<double>()).epsilon(1e-9));
  CHECK(ce["all_to_all_exposed_s"].get<double>() < 0.5 * ce["all_to_all_s"].get<double>());
  CHECK(alltoall_beside_other_compute(slices(combined.trace)) > 0);
  CHECK(combined.report["simulation"]["step_time_s"].get<double>() <
        plain.report["simulation"]["step_time_s"].get<double>());
  // Without pipeline stages 1F1B holds one micro-batch of 8 layers (and the loss); the combined step allocates the
  // next micro-batch's first layer before the backward frees its first: 9 layers.
  // One layer's bytes: ZB-V's stage 1 holds 4 chunk passes of 2 layers and no loss (as in the DualPipeV test above).
  const double layer = simulate("zb-v").report["memory"]["per_stage"][1]["activations_bytes"].get<double>() / 8;
  const auto activations = [](const Run& r) { return r.report["memory"]["activations_bytes"].get<double>(); };
  CHECK(activations(combined) - activations(plain) == Approx(layer).epsilon(1e-12));
  // The simulation held those bytes at its peak (the analysis' exact figures reproduced).
  require_exact(combined.report);
}

// Dense and MoE layers in turn (model.moe_layers=2): a pair's parts no longer line up layer for layer, and on the
// stage with the output layer the peak need not meet a live loss; the walk follows both, and the simulation holds
// what it says, under DualPipeV and under combined 1F1B.
TEST_CASE("Paired activations with dense and MoE layers in turn equal the simulated peak") {
  require_exact(simulate("dualpipev --set model.moe_layers=2").report);
  require_exact(
      simulate("interleaved --set strategy.chunks=2 --set strategy.ep_overlap=true --set model.moe_layers=3").report);
}

TEST_CASE("Combined 1F1B is refused where Megatron-Core refuses it, naming the field") {
  const auto refused = [](const std::string& sets) {
    std::string out;
    CHECK(run_placesim("check " + kExperiment + " --set strategy.ep_overlap=true" + sets, &out) != 0);
    return out;
  };
  CHECK_THAT(refused(" --set strategy.ep=1"),
             Catch::Contains("needs expert parallelism") && Catch::Contains("strategy.ep=1"));
  CHECK_THAT(refused(" --set strategy.schedule=1f1b"), Catch::Contains("strategy.schedule=1f1b must be interleaved"));
  CHECK_THAT(refused(" --set strategy.schedule=interleaved --set training.recompute=full"),
             Catch::Contains("training.recompute=full"));
  CHECK_THAT(refused(" --set strategy.schedule=interleaved --set strategy.p2p=megatron"),
             Catch::Contains("set strategy.p2p=async"));
}
