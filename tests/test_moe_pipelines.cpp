// Mixture-of-experts layers under the schedules that split the backward (zero-bubble, DualPipeV): each MoE layer's
// backward as an input-gradient op B (the experts' data-gradient GEMMs between the two all-to-alls, the dense part's)
// and a weight-gradient op W (the experts' and the dense part's weight-gradient GEMMs). Each TEST_CASE runs in its own
// process.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <tuple>

#include "tests/Helpers.hpp"

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
