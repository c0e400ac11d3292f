// The simulation confirms the analytic model: per device and class the simulated bytes equal the analytic bytes to
// the byte, and the simulated peak memory per state equals the analytic memory. One simulation per process, so
// each preset runs through the CLI.
#include <catch2/catch.hpp>
#include <fstream>

#include "tests/FileHelpers.hpp"
#include "tests/Helpers.hpp"
#include "workloads/json/JsonReader.hpp"
#include "workloads/json/Units.hpp"

using placesim::Json;
using placesim::test::run_placesim;

namespace {

const char* kModel = R"({"layers": 8, "hidden": 512, "heads": 8, "vocab": 1000, "seq_len": 256})";

// What `placesim simulate` says of `experiment` (written to a file named after `name`), checking it refuses it (exit
// 2).
std::string refusal(const std::string& name, const std::string& experiment) {
  std::string out;
  CHECK(run_placesim("simulate " + placesim::test::write_temp(name, experiment), &out) == 2);
  return out;
}

Json simulate(const std::string& strategy, const std::string& extra_flags = "",
              const std::string& training = R"({"global_batch": 32, "micro_batch": 1})",
              const std::string& cluster = R"({"preset": "dgx-a100", "nodes": 2})") {
  std::string path = "/tmp/placesim-sim-" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << R"({"model": )" << kModel << R"(, "training": )" << training << R"(, "strategy": )" << strategy
                      << R"(, "cluster": )" << cluster << "}";
  std::string out;
  int rc = run_placesim("simulate " + path + " --report " + path + ".report " + extra_flags, &out);
  INFO(out.substr(0, 2000));
  REQUIRE(rc == 0);
  return placesim::read_json_file(path + ".report");
}

void check_exact(const Json& report) {
  for (const auto& row : report["validation"]) {
    std::string figure = row["figure"].get<std::string>();
    INFO(figure << ": analytic " << row["analytic"] << " simulated " << row["simulated"]);
    if (figure.find("bound") != std::string::npos)
      CHECK(row["simulated"].get<double>() <= row["analytic"].get<double>());
    else
      CHECK(row["difference"].get<double>() == 0);
  }
}

}  // namespace

TEST_CASE("Simulated bytes and peak memory equal the analytic ones for dp on 2 DGX A100") {
  check_exact(simulate(R"({"preset": "dp", "dp": 16})"));
}

TEST_CASE("Simulated bytes and peak memory equal the analytic ones for zero1 on 2 DGX A100") {
  check_exact(simulate(R"({"preset": "zero1", "dp": 16})"));
}

TEST_CASE("Simulated bytes and peak memory equal the analytic ones for zero2 on 2 DGX A100") {
  check_exact(simulate(R"({"preset": "zero2", "dp": 16})"));
}

TEST_CASE("Simulated bytes and peak memory equal the analytic ones for zero3 on 2 DGX A100") {
  check_exact(simulate(R"({"preset": "zero3", "dp": 16})"));
}

TEST_CASE("Simulated bytes and peak memory equal the analytic ones for fsdp with full fidelity") {
  check_exact(simulate(R"({"preset": "fsdp", "dp": 16})", "--fidelity full"));
}

TEST_CASE("Simulated bytes and peak memory equal the analytic ones for zero-offload on 2 DGX A100") {
  check_exact(simulate(R"({"preset": "zero-offload", "dp": 16})"));
}

TEST_CASE("Simulated bytes and peak memory equal the analytic ones for megatron-3d with 1F1B") {
  Json r = simulate(R"({"preset": "megatron-3d", "dp": 2, "tp": 2, "pp": 4, "schedule": "1f1b"})", "--layer-group 1");
  check_exact(r);
  CHECK(r["simulation"]["step_time_s"].get<double>() > 0);
}

TEST_CASE("Simulated bytes and peak memory equal the analytic ones for megatron-3d with SP and full recompute") {
  check_exact(simulate(R"({"preset": "megatron-3d", "dp": 2, "tp": 4, "pp": 2, "sp": true})", "--fidelity full",
                       R"({"global_batch": 32, "micro_batch": 2, "recompute": "full"})"));
}

TEST_CASE("Simulate reports are byte-identical for equal input") {
  std::string path = "/tmp/placesim-det-" + std::to_string(::getpid()) + ".json";
  std::ofstream(path)
      << R"({"model": )" << kModel
      << R"(, "strategy": {"preset": "zero2", "dp": 8, "pp": 2}, "cluster": {"preset": "dgx-a100", "nodes": 2}})";
  std::string a, b;
  REQUIRE(run_placesim("simulate " + path + " --reproducible --report " + path + ".a", &a) == 0);
  REQUIRE(run_placesim("simulate " + path + " --reproducible --report " + path + ".b", &b) == 0);
  a = placesim::read_json_file(path + ".a").dump();
  b = placesim::read_json_file(path + ".b").dump();
  CHECK(a.size() > 1000);
  CHECK(a == b);
}

TEST_CASE("Simulate refuses a mesh that does not match the cluster") {
  const std::string out = refusal(
      "mesh.json",
      R"({"model": "gpt-7.5b", "strategy": {"preset": "dp", "dp": 12}, "cluster": {"preset": "dgx-a100", "nodes": 2}})");
  CHECK_THAT(out,
             Catch::Contains("= 12 devices does not match the cluster's 16 GPUs (cluster.nodes=2 x 8 GPUs per node)"));
}

TEST_CASE("Simulate refuses an experiment whose memory does not fit the accelerator") {
  const std::string out = refusal(
      "fit.json",
      R"({"model": "gpt3-175b", "strategy": {"preset": "dp", "dp": 16}, "cluster": {"preset": "dgx-a100", "nodes": 2}})");
  CHECK_THAT(out, Catch::Contains("does not fit") && Catch::Contains("device memory is 85.9 GB"));
}

// The analytic bound holds every transient buffer live at once; simulate decides by what was live at one moment.
// This FSDP step over 16 GPUs: bound 110,132,224 B, model states 25,863,168 B; the simulated peak lies between (the
// gathers wait for the reduce-scatters issued before them on their communicator, so fewer are live at once) and
// is what decides.
TEST_CASE("Simulate refuses by the simulated peak when only the analytic bound is over device memory") {
  auto run = [](const std::string& hbm, std::string* out) {
    std::string path = "/tmp/placesim-peakfit-" + std::to_string(::getpid()) + ".json";
    std::ofstream(path) << R"({"model": )" << kModel << R"(, "training": {"global_batch": 32, "micro_batch": 1},
        "strategy": {"preset": "fsdp", "dp": 16}, "cluster": {"preset": "dgx-a100", "nodes": 2,
        "accelerator": {"preset": "a100-80gb", "hbm_bytes": )"
                        << hbm << "}}}";
    return run_placesim("simulate " + path, out);
  };
  // The number after `prefix` in `out`, in MB.
  auto megabytes_after = [](const std::string& out, const std::string& prefix) {
    const std::size_t at = out.find(prefix);
    REQUIRE(at != std::string::npos);
    return std::stod(out.substr(at + prefix.size()));
  };
  std::string out;
  CHECK(run("100e6", &out) == 0);  // bound over, peak fits: simulated, with a warning naming both
  CHECK_THAT(out, Catch::Contains("warning: memory: the analytic bound 110 MB is over device memory 100 MB"));
  const double peak = megabytes_after(out, "the simulated peak ");
  CHECK(peak > 25.86);
  CHECK(peak < 100);
  CHECK_THAT(out, Catch::Contains(placesim::format_bytes(peak * 1e6) + " fits, " +
                                  placesim::format_bytes((100 - peak) * 1e6) + " to spare"));
  CHECK(run("50e6", &out) == 2);  // the peak is over too: refused, naming the peak
  CHECK(megabytes_after(out, "does not fit: the simulated peak of a device is ") == Approx(peak).margin(0.05));
  CHECK_THAT(out, Catch::Contains("analytic bound 110 MB) but device memory is 50.0 MB"));
  CHECK(run("20e6", &out) == 2);  // the model states alone are over: refused before simulating, by the bound
  CHECK_THAT(out, Catch::Contains("does not fit: a device needs 110 MB"));
}

TEST_CASE("Simulate needs a cluster") {
  const std::string out = refusal("nocluster.json", R"({"model": "gpt-7.5b", "strategy": "dp"})");
  CHECK_THAT(out, Catch::Contains("cluster is required to simulate"));
}

TEST_CASE("Analytic fidelity gives the flow step time within 1 percent and the same bytes where no flows contend") {
  // ZeRO-2 with tp 8 inside each DGX A100 and dp 2 across the two: every data-parallel ring is rail-aligned, each hop
  // one NIC that nothing else uses, so the ring's alpha-beta form is exact. (Rings mixing NVLink and NIC hops are
  // where the flows differ: they pipeline past the slow hops, which the conservative alpha-beta form does not.)
  Json flow = simulate(R"({"preset": "zero2", "dp": 2, "tp": 8})", "--fidelity flow");
  Json analytic = simulate(R"({"preset": "zero2", "dp": 2, "tp": 8})", "--fidelity analytic");
  double a = analytic["simulation"]["step_time_s"].get<double>(), f = flow["simulation"]["step_time_s"].get<double>();
  CHECK(std::abs(a - f) / f < 0.01);
  CHECK(analytic["simulation"]["bytes_sent"] == flow["simulation"]["bytes_sent"]);
  CHECK(analytic["simulation"]["activities"].get<int>() < flow["simulation"]["activities"].get<int>());
}

TEST_CASE("Hierarchical collectives send the ring's bytes exactly and keep memory exact") {
  // dp 16 over 2 nodes of 8: intra-node reduce-scatter, inter-node ring over 2, intra-node all-gather.
  Json r = simulate(R"({"preset": "zero2", "dp": 16, "collective": "hierarchical"})", "--fidelity full");
  check_exact(r);
  CHECK(r["strategy"]["collective"].get<std::string>() == "hierarchical");
  Json dp = simulate(R"({"preset": "dp", "dp": 16, "collective": "hierarchical"})");
  check_exact(dp);
}

// The placements of the named mesh simulate with the analytic bytes, per device and class, to the byte
// (tests/test_mesh_placements.cpp computes those bytes by hand).
namespace {
const char* kH100x8 = R"({"preset": "dgx-h100", "nodes": 8})";
const char* kBatch64 = R"({"global_batch": 128, "micro_batch": 1})";
}  // namespace

TEST_CASE("HSDP 8 x 8 on 8 DGX H100 simulates with the analytic bytes and memory") {
  Json r = simulate(R"({"preset": "hsdp", "mesh": {"dp_replicate": 8, "dp_shard": 8}})", "", kBatch64, kH100x8);
  check_exact(r);
  CHECK(r["strategy"]["mesh"]["dp_replicate"] == 8);
  CHECK(r["simulation"]["bytes_sent"]["by_class"]["dp_grad_sync"].get<double>() > 0);
}

TEST_CASE("FSDP + TP (dp_shard 16 x tp 4) on 8 DGX H100 simulates with the analytic bytes and memory") {
  check_exact(simulate(R"({"preset": "fsdp-tp", "mesh": {"dp_shard": 16, "tp": 4}})", "", kBatch64, kH100x8));
}

TEST_CASE("ZeRO++ hpZ on 8 DGX H100 simulates with the analytic bytes and memory") {
  check_exact(simulate(R"({"preset": "zero++", "mesh": {"dp_replicate": 8, "dp_shard": 8}})", "", kBatch64, kH100x8));
}

TEST_CASE("ZeRO-Infinity parameter and optimizer offload simulates with the analytic bytes, PCIe included") {
  Json r = simulate(
      R"({"dp": 16, "placement": {"parameters": "offloaded", "optimizer": "offloaded", "gradients": "offloaded"}})");
  check_exact(r);
  bool pcie = false;
  for (const auto& row : r["validation"])
    pcie = pcie || row["figure"].get<std::string>().find("h2d") != std::string::npos;
  CHECK(pcie);
}
