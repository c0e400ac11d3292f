// cluster.simgrid_config is checked against placesim's table of SimGrid settings before SimGrid sees it: SimGrid
// 3.32 crashes on maxmin/precision=-1 (SIGSEGV) and aborts on network/model=Bogus (SIGABRT), so both must be input
// errors (exit 2) wherever a cluster is read: parse_cluster, simulate's resolve_simulation, `placesim check` and
// `simulate`, and each point of a sweep.
#include <catch2/catch.hpp>
#include <string>

#include "sim/backend/Simulate.hpp"
#include "sim/backend/Simulator.hpp"
#include "strategies/graph/TaskGraph.hpp"
#include "strategies/placement/Experiment.hpp"
#include "tests/FileHelpers.hpp"
#include "tests/Helpers.hpp"
#include "tests/SweepHelpers.hpp"
#include "topology/cluster/Cluster.hpp"

using namespace placesim;
using Catch::Matchers::Contains;

namespace {

// One DGX A100 node with `config` as its simgrid_config (JSON text).
Json cluster_with(const std::string& config) {
  return Json::parse(R"({"preset": "dgx-a100", "nodes": 1, "simgrid_config": )" + config + "}");
}

std::string refusal(const std::string& config) {
  try {
    parse_cluster(cluster_with(config));
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

// A tiny experiment on 2 GPUs of one node, its cluster's simgrid_config given by --set.
const char* kTiny = R"({"model": {"layers": 4, "hidden": 256, "heads": 4, "vocab": 1000, "seq_len": 128},
  "training": {"global_batch": 4, "micro_batch": 1}, "strategy": {"preset": "dp", "dp": 2},
  "cluster": {"preset": "dgx-a100", "nodes": 1, "gpus_per_node": 2, "nics_per_node": 2}})";

const char* kCrashPrecision = "cluster.simgrid_config.maxmin/precision=-1 must be a number from 1e-15 to 0.01";
const char* kAbortModel = "cluster.simgrid_config.network/model=Bogus is not one of: CM02 LV08 SMPI IB";

}  // namespace

TEST_CASE("maxmin/precision=-1, which crashed SimGrid, is refused naming the key, the value and the range") {
  CHECK_THROWS_WITH(parse_cluster(cluster_with(R"({"maxmin/precision": "-1"})")), Contains(kCrashPrecision));
}

TEST_CASE("network/model=Bogus, which aborted SimGrid, is refused naming the models placesim passes") {
  CHECK_THROWS_WITH(parse_cluster(cluster_with(R"({"network/model": "Bogus"})")), Contains(kAbortModel));
  // SimGrid's Constant model refuses to create links and ns-3 is not built in: left out, and the message says why.
  CHECK_THAT(refusal(R"({"network/model": "Constant"})"), Contains("Constant and ns-3 cannot build placesim's links"));
}

TEST_CASE("simulate's cluster resolution refuses both crash inputs before any SimGrid call") {
  for (const auto& [config, message] :
       {std::pair{R"({"maxmin/precision": "-1"})", kCrashPrecision}, {R"({"network/model": "Bogus"})", kAbortModel}}) {
    Json j = Json::parse(kTiny);
    j["cluster"]["simgrid_config"] = Json::parse(config);
    CHECK_THROWS_WITH(resolve_simulation(parse_experiment(j, "")), Contains(message));
  }
}

TEST_CASE("A key placesim does not pass is refused with the nearest one and the list of keys") {
  CHECK(refusal(R"({"network/modle": "CM02"})") ==
        "cluster.simgrid_config: unknown key \"network/modle\" (did you mean 'network/model'?); placesim passes these "
        "keys: network/model, host/model, cpu/model, cpu/optim, network/optim, maxmin/precision, surf/precision, "
        "network/TCP-gamma, network/crosstraffic, network/latency-factor, network/bandwidth-factor, network/weight-S");
  // Keys SimGrid has that would change nothing placesim simulates, or write files, are not passed.
  CHECK_THAT(refusal(R"({"tracing": "1"})"), Contains("unknown key \"tracing\""));
}

TEST_CASE("Every problem of the object is listed in one error, in key order, unknown keys last") {
  CHECK(refusal(R"({"x": "1", "network/model": "Bogus", "maxmin/precision": "-1", "surf/precision": 1e-9})") ==
        std::string(kCrashPrecision) + "; " + kAbortModel +
            " (Constant and ns-3 cannot build placesim's links); cluster.simgrid_config.surf/precision=1e-09 must be a "
            "string; cluster.simgrid_config: unknown key \"x\"; placesim passes these keys: network/model, host/model, "
            "cpu/model, cpu/optim, network/optim, maxmin/precision, surf/precision, network/TCP-gamma, "
            "network/crosstraffic, network/latency-factor, network/bandwidth-factor, network/weight-S");
}

TEST_CASE("Each number setting takes its range, both ends included, and nothing past them") {
  struct Range {
    const char* key;
    const char* low;
    const char* high;
    const char* below;
    const char* above;
    const char* rule;
  };
  // Below maxmin/precision's range SimGrid crashes (-1); above it SimGrid aborts (1). surf/precision 0 never ends.
  for (const Range& r : {Range{"maxmin/precision", "1e-15", "1e-2", "-1", "1", "from 1e-15 to 0.01"},
                         Range{"surf/precision", "1e-15", "0.01", "0", "1", "from 1e-15 to 0.01"},
                         Range{"network/TCP-gamma", "0", "1e12", "-1", "1e13", "from 0 to 1e+12"},
                         Range{"network/latency-factor", "0.001", "1000", "0", "1e4", "from 0.001 to 1000"},
                         Range{"network/bandwidth-factor", "0.001", "1", "0", "1.5", "from 0.001 to 1"},
                         Range{"network/weight-S", "0", "1e9", "-1", "inf", "from 0 to 1e+09"}}) {
    INFO(r.key);
    for (const char* ok : {r.low, r.high})
      CHECK(refusal(std::string(R"({")") + r.key + R"(": ")" + ok + R"("})") == "(accepted)");
    for (const char* bad : {r.below, r.above, "nan", "1e-3x", "", " 1"})
      CHECK(refusal(std::string(R"({")") + r.key + R"(": ")" + bad + R"("})") ==
            std::string("cluster.simgrid_config.") + r.key + "=" + bad + " must be a number " + r.rule);
  }
}

TEST_CASE("Each word setting takes SimGrid's words that run placesim's platform") {
  CHECK(refusal(R"({"network/model": "LV08", "host/model": "ptask_L07", "cpu/model": "Cas01", "cpu/optim": "Full",
                    "network/optim": "Lazy", "network/crosstraffic": "yes"})") == "(accepted)");
  // host/model "default" would silently replace network/model by LV08; cpu/optim TI aborts on multi-core hosts.
  CHECK_THAT(refusal(R"({"host/model": "default"})"),
             Contains("cluster.simgrid_config.host/model=default is not one of: compound ptask_L07 (default replaces "
                      "network/model by LV08)"));
  CHECK_THAT(refusal(R"({"cpu/optim": "TI"})"),
             Contains("cluster.simgrid_config.cpu/optim=TI is not one of: Lazy Full (TI has no multi-core hosts)"));
  CHECK_THAT(refusal(R"({"network/crosstraffic": "maybe"})"),
             Contains("cluster.simgrid_config.network/crosstraffic=maybe is not one of: 0 1 no yes off on false true"));
  CHECK_THAT(refusal(R"({"network/model": "lv08"})"), Contains("(did you mean 'LV08'?)"));
}

TEST_CASE("The settings the tests and examples use are accepted as before") {
  CHECK(parse_cluster(cluster_with(R"({"maxmin/precision": "1e-9"})")).simgrid_config.at("maxmin/precision") == "1e-9");
  CHECK(parse_cluster(cluster_with(R"({"network/crosstraffic": "1"})")).simgrid_config.at("network/crosstraffic") ==
        "1");
  CHECK(parse_cluster(cluster_with("{}")).simgrid_config.empty());
}

TEST_CASE("A cluster built in code is checked the same way before the platform configures SimGrid") {
  CHECK_THROWS_WITH(check_simgrid_config({{"maxmin/precision", "-1"}}), kCrashPrecision);
  CHECK_THROWS_WITH(check_simgrid_config({{"network/model", "Bogus"}}), Contains(kAbortModel));
  CHECK_NOTHROW(check_simgrid_config({{"network/model", "CM02"}, {"network/TCP-gamma", "4194304"}}));
}

TEST_CASE("placesim check and simulate refuse the crash inputs with exit 2 and the message") {
  test::TempDir dir;
  test::write(dir / "tiny.json", kTiny);
  for (const auto& [config, message] :
       {std::pair{R"({"maxmin/precision":"-1"})", kCrashPrecision}, {R"({"network/model":"Bogus"})", kAbortModel}}) {
    for (const char* command : {"check", "simulate"}) {
      std::string output;
      const int rc = test::run_placesim(
          std::string(command) + " " + dir / "tiny.json" + " --set 'cluster.simgrid_config=" + config + "'", &output);
      INFO(command << " " << config << "\n" << output);
      CHECK(rc == 2);
      CHECK_THAT(output, Contains(message));
      CHECK_THAT(output, !Contains("CRITICAL"));
    }
  }
}

TEST_CASE("A sweep over simgrid_config refuses the crash inputs at load, naming each") {
  test::TempDir dir;
  auto sweep_over = [&](const Json& values) {
    Json sweep{{"base", Json::parse(kTiny)},
               {"axes", {{"cluster.simgrid_config", values}}},
               {"mode", "simulate"},
               {"figures", {"simulation.step_time_s"}}};
    test::write(dir / "sweep.json", sweep.dump());
    std::string output;
    const int rc = test::sweep_cli(dir / "sweep.json" + " --out " + dir / "rows.jsonl --force", &output);
    return std::pair{rc, output};
  };
  // Values no point could use are refused before any simulation, all of them in one message.
  const auto [refused, message] = sweep_over(Json::array(
      {Json{{"maxmin/precision", "-1"}}, Json{{"network/model", "Bogus"}}, Json{{"network/model", "LV08"}}}));
  CHECK(refused == 2);
  CHECK_THAT(message, Contains(kCrashPrecision));
  CHECK_THAT(message, Contains(kAbortModel));
  CHECK_THAT(message, !Contains("CRITICAL"));
  // The accepted setting simulates.
  const auto [rc, output] = sweep_over(Json::array({Json{{"network/model", "LV08"}}}));
  INFO(output);
  CHECK(rc == 0);
  const auto rows = test::lines_of(test::read(dir / "rows.jsonl"));
  REQUIRE(rows.size() == 1);
  CHECK(Json::parse(rows[0])["status"] == "ok");
  CHECK(Json::parse(rows[0])["simulation.step_time_s"].get<double>() > 0);
}

// One DGX-like node with raw links (tests/test_sim_timing.cpp's): 100 GB/s and 1 us per NVLink direction, a
// GPU -> GPU route crossing two links. Under CM02 a transfer takes latency_factor x sum(latency) + bytes /
// (bandwidth_factor x bandwidth).
TEST_CASE("An accepted setting reaches SimGrid: latency and bandwidth factors scale one transfer") {
  const ClusterSpec c = parse_cluster(Json::parse(R"({"accelerator": "a100-80gb", "nodes": 1, "gpus_per_node": 8,
      "nvlink_bw": 100e9, "nvlink_latency": 1e-6, "comm_model": "links",
      "simgrid_config": {"network/latency-factor": "3", "network/bandwidth-factor": "0.5"}})"));
  TaskGraph g;
  g.devices = 8;
  g.resident.assign(8, {0, 0, 0, 0});
  g.add(P2P{0, 1, 1e9}, 0);
  const SimResult r = simulate(g, c, {});
  const double alpha = 2e-6, bw = 100e9;
  CHECK(r.step_time_s == Approx(3 * alpha + 1e9 / (0.5 * bw)).epsilon(1e-12));  // 20.006 ms, not 10.002 ms
}
