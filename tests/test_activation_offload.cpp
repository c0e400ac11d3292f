// Offloaded activations in the task graph: every layer's activations but each chunk's last go to the host
// after the layer's forward and come back before its backward, on the device's copy streams, with at most two
// offloaded layers on the device. Two cases computed by hand on one GPU, one micro-batch, one layer per task:
//
// PCIe-bound (a transfer c longer than any layer's compute): the copies run back to back. With L layers, f and b a
// layer's forward and backward, hf and hb the head's, the offloaded step is
//   embedding forward + f + 2(L-1) c + b + (embedding backward, optimizer)
// against the plain step's  embedding forward + L f + hf + hb + L b + (the same tail),  so the step grows by the
// exposed transfer time 2(L-1) c - [(L-1)(f + b) + hf + hb]: the 2(L-1) copies less the compute they overlap.
// Hidden (c shorter than f and b): each copy out overlaps the next layer's forward, each prefetch the backward of
// the layer after it, and the step time is unchanged.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "strategies/analytic/Analytic.hpp"
#include "strategies/analytic/Costs.hpp"
#include "tests/Helpers.hpp"
#include "topology/cluster/Cluster.hpp"
#include "workloads/json/JsonReader.hpp"

using namespace placesim;
using placesim::test::run_placesim;

namespace {

const char* kModel = R"({"layers": 8, "hidden": 512, "heads": 8, "vocab": 1000, "seq_len": 256})";

std::string cluster(const std::string& pcie) {
  return R"({"preset": "dgx-a100", "nodes": 1, "gpus_per_node": 1, "nics_per_node": 1, )" + pcie + "}";
}

std::string experiment_text(const std::string& activations, const std::string& pcie) {
  return std::string(R"({"model": )") + kModel +
         R"(, "training": {"global_batch": 1, "micro_batch": 1}, "strategy": {"placement": {"activations": ")" +
         activations + R"("}}, "cluster": )" + cluster(pcie) + "}";
}

Json simulate(const std::string& activations, const std::string& pcie) {
  std::string path = "/tmp/placesim-offload-" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << experiment_text(activations, pcie);
  std::string out;
  int rc = run_placesim("simulate " + path + " --report " + path + ".report", &out);
  INFO(out.substr(0, 2000));
  REQUIRE(rc == 0);
  return read_json_file(path + ".report");
}

double step(const Json& r) {
  return r["simulation"]["step_time_s"].get<double>();
}

}  // namespace

TEST_CASE("Offloaded activations: PCIe-bound, the step grows by exactly the exposed transfer time") {
  const std::string pcie = R"("pcie_bw": "1 GB/s", "pcie_latency": "5 us")";
  Experiment e = test::experiment(experiment_text("offloaded", pcie));
  const StageLayout st = stage_layouts(e).front();
  const StageCosts k = stage_costs(e, parse_cluster(Json::parse(cluster(pcie))), st);
  const double L = 8, A = layer_activation_bytes(e);
  const double c = 5e-6 + A / 1e9;  // one hop over the GPU's PCIe link: latency + bytes / bandwidth
  const double f = k.layer_forward_s, b = k.layer_backward_s, hf = k.extra_forward_s, hb = k.extra_backward_s;
  REQUIRE(c > 3 * (f + b + hf + hb));  // PCIe-bound
  Json plain = simulate("replicated", pcie);
  Json offloaded = simulate("offloaded", pcie);
  const double exposed = 2 * (L - 1) * c - ((L - 1) * (f + b) + hf + hb);
  CHECK(step(offloaded) - step(plain) == Approx(exposed).epsilon(1e-9));
  // 7 of the 8 layers out and back; the kept last layer and two offloaded ones at most on the device.
  CHECK(offloaded["simulation"]["offload"]["d2h_bytes"].get<double>() == 7 * A);
  CHECK(offloaded["communication"]["offload"]["h2d_bytes"].get<double>() == 7 * A);
  // The loss over the head's logits stays on the device (pp 1: the only stage holds the head).
  CHECK(offloaded["memory"]["activations_bytes"].get<double>() ==
        3 * A + loss_saved_bytes(e) + loss_transient_bytes(e));
  CHECK(offloaded["memory"]["host_bytes"].get<double>() == 7 * A);
}

TEST_CASE("Offloaded activations: fast PCIe hides every copy behind compute and the step time is unchanged") {
  const std::string pcie = R"("pcie_bw": "100 TB/s", "pcie_latency": "0 s")";
  Experiment e = test::experiment(experiment_text("offloaded", pcie));
  const StageCosts k = stage_costs(e, parse_cluster(Json::parse(cluster(pcie))), stage_layouts(e).front());
  REQUIRE(layer_activation_bytes(e) / 100e12 < std::min(k.layer_forward_s, k.layer_backward_s));
  Json plain = simulate("replicated", pcie);
  Json offloaded = simulate("offloaded", pcie);
  CHECK(step(offloaded) == step(plain));
  CHECK(offloaded["simulation"]["offload"]["h2d_bytes"].get<double>() == 7 * layer_activation_bytes(e));
}
