// Symmetry folding. plan_folding and the Folding arithmetic are pure; the folded expansion is checked
// without SimGrid; the equivalence cases run `placesim simulate` twice (folded and --symmetry off), each in its own
// process, and compare the reports: step time within 0.1 % (the issue's tolerance), bytes identical per device.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "sim/backend/Simulate.hpp"
#include "strategies/expand/Expand.hpp"
#include "tests/Helpers.hpp"
#include "topology/cluster/Cluster.hpp"

using namespace placesim;

namespace {

ClusterSpec cluster(const std::string& preset_json) {
  return parse_cluster(Json::parse(preset_json));
}

// A small Llama-like model (8 layers of hidden 1024) for inline experiments.
const char* kModel =
    R"("model": {"family": "llama", "layers": 8, "hidden": 1024, "heads": 8, "kv_heads": 8, "ffn": 4096,
                 "vocab": 32000, "seq_len": 2048})";

std::string with_model(const std::string& rest) {
  return std::string("{") + kModel + ", " + rest + "}";
}

std::string temp_file(const std::string& text) {
  char path[] = "/tmp/placesim-symmetry-XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(path) << text;
  return path;
}

Json run_report(const std::string& experiment, const std::string& flags) {
  const std::string report = temp_file("");
  std::string out;
  const int code =
      test::run_placesim("simulate " + experiment + " --quiet --reproducible --report " + report + " " + flags, &out);
  INFO(out);
  REQUIRE(code == 0);
  std::ifstream in(report);
  Json j = Json::parse(in);
  std::remove(report.c_str());
  return j;
}

// Folded and unfolded runs of `experiment` agree: the step time within 0.1 %, every device's bytes per class
// identical, the totals identical. Returns the folded report.
Json check_equivalent(const std::string& experiment, const std::string& flags = "", bool expect_folded = true) {
  const Json folded = run_report(experiment, flags);
  const Json full = run_report(experiment, flags + " --symmetry off");
  const Json& a = folded["simulation"];
  const Json& b = full["simulation"];
  CHECK(a["symmetry"]["folded"].get<bool>() == expect_folded);
  CHECK_FALSE(b["symmetry"]["folded"].get<bool>());
  CHECK(b["symmetry"]["not_folded_because"] == "symmetry folding off (--symmetry off)");
  const double ta = a["step_time_s"].get<double>(), tb = b["step_time_s"].get<double>();
  CHECK(std::abs(ta - tb) <= 1e-3 * tb);
  CHECK(a["bytes_sent"] == b["bytes_sent"]);
  REQUIRE(a["devices"].size() == b["devices"].size());
  for (std::size_t x = 0; x < a["devices"].size(); ++x) {
    INFO("device " << x);
    CHECK(a["devices"][x]["bytes_sent"] == b["devices"][x]["bytes_sent"]);
    CHECK(a["devices"][x]["offload"] == b["devices"][x]["offload"]);
    CHECK(a["devices"][x]["peak_memory_bytes"] == b["devices"][x]["peak_memory_bytes"]);
  }
  CHECK(folded["validation"] == full["validation"]);
  return folded;
}

// The fine trace of `device` in a run of `experiment` with `flags`, without the expansion's internal task and
// collective ids (a folded expansion numbers only the tasks it holds).
Json fine_trace(const std::string& experiment, int device, const std::string& flags) {
  const std::string path = temp_file("");
  std::string out;
  REQUIRE(test::run_placesim("simulate " + experiment + " --quiet --reproducible --trace " + path +
                                 " --trace-devices " + std::to_string(device) + " --trace-detail fine " + flags,
                             &out) == 0);
  std::ifstream in(path);
  Json j = Json::parse(in);
  std::remove(path.c_str());
  for (Json& event : j["traceEvents"])
    if (event.contains("args")) {
      event["args"].erase("task");
      event["args"].erase("collective");
    }
  return j;
}

std::string example(const std::string& name) {
  return std::string(PLACESIM_SOURCE_DIR) + "/examples/" + name;
}

}  // namespace

TEST_CASE("Folding arithmetic: representatives and shifts along the data lanes", "[symmetry]") {
  // tp 2, 8 data lanes folded to 2: device = t + 2 (lane + 8 stage); blocks of lanes {0,1}, {2,3}, {4,5}, {6,7}.
  Folding f;
  f.tp = 2;
  f.lanes = 8;
  f.folded_lanes = 2;
  CHECK(f.active());
  CHECK(f.blocks() == 4);
  CHECK(f.lane(21) == 2);  // 21 = 1 + 2 (2 + 8 x 1): stage 1, lane 2, tp 1
  CHECK(f.block(21) == 1);
  CHECK(f.representative(21) == 17);  // stage 1, lane 0, tp 1
  CHECK(f.simulated(17));
  CHECK_FALSE(f.simulated(21));
  CHECK(f.shift(17, 3) == 29);  // lane 6
  CHECK(f.shift(29, 1) == 17);  // wraps to lane 0 of the same stage
  CHECK(f.shift(17, -1) == 29);
}

TEST_CASE("plan_folding: blocks of whole nodes, or the reason there are none", "[symmetry]") {
  const ClusterSpec dgx16 = cluster(R"({"preset": "dgx-h100", "nodes": 16})");
  // FSDP over 64 GPUs: one lane per GPU, blocks of one node (8 lanes).
  Folding f = plan_folding(test::experiment(with_model(R"("training": {"global_batch": 64, "micro_batch": 1},
      "strategy": {"preset": "fsdp", "dp": 64})")),
                           dgx16);
  CHECK(f.folded_lanes == 8);
  CHECK(f.blocks() == 8);
  // tp 8 x pp 2 x dp 8: a tp group fills a node, so one lane is a block.
  f = plan_folding(test::experiment(with_model(R"("training": {"global_batch": 64, "micro_batch": 1},
      "strategy": {"preset": "megatron-3d", "tp": 8, "pp": 2, "dp": 8})")),
                   dgx16);
  CHECK(f.folded_lanes == 1);
  CHECK(f.blocks() == 8);
  // HSDP 8 x 4 with cp 1, tp 2: blocks hold whole dp_shard groups (8 lanes = 2 nodes), 4 blocks.
  f = plan_folding(test::experiment(with_model(R"("training": {"global_batch": 64, "micro_batch": 1},
      "strategy": {"preset": "hsdp", "tp": 2, "mesh": {"dp_shard": 8, "dp_replicate": 4}})")),
                   cluster(R"({"preset": "dgx-h100", "nodes": 8})"));
  CHECK(f.folded_lanes == 8);
  CHECK(f.blocks() == 4);
  // tp 2 x dp 2 x pp 4 on 2 nodes: a stage's 4 devices are half a node.
  f = plan_folding(test::experiment(with_model(R"("training": {"global_batch": 8, "micro_batch": 1},
      "strategy": {"preset": "megatron-3d", "tp": 2, "pp": 4, "dp": 2})")),
                   cluster(R"({"preset": "dgx-a100", "nodes": 2})"));
  CHECK_FALSE(f.active());
  CHECK(f.reason == "a stage's 4 devices (tp x cp x dp) do not fill whole nodes of 8 GPUs");
  // One node per stage: a single block, nothing to fold and nothing to explain.
  f = plan_folding(test::experiment(with_model(R"("training": {"global_batch": 8, "micro_batch": 1},
      "strategy": {"preset": "fsdp", "dp": 8})")),
                   cluster(R"({"preset": "dgx-h100", "nodes": 1})"));
  CHECK_FALSE(f.active());
  CHECK(f.reason.empty());
  // Oversubscribed leaves of 24 NICs (3 nodes) and blocks of 2 nodes (HSDP's shard groups of 16): a block's move by
  // one would change which transfers share an uplink. Without oversubscription it folds (leaf crossings differ in
  // latency only, which the runner takes from the slowest congruent route).
  const Experiment hsdp48 = test::experiment(with_model(R"("training": {"global_batch": 48, "micro_batch": 1},
      "strategy": {"preset": "hsdp", "mesh": {"dp_shard": 16, "dp_replicate": 3}})"));
  f = plan_folding(
      hsdp48,
      cluster(
          R"({"preset": "dgx-h100", "nodes": 6, "fabric": "fat-tree", "switch_radix": 48, "oversubscription": 2})"));
  CHECK_FALSE(f.active());
  CHECK(f.reason ==
        "the 48 data lanes (cp x dp) do not divide into blocks of 48 lanes on whole nodes and whole leaf switches (3 "
        "nodes per leaf; their uplinks are oversubscribed)");
  CHECK(plan_folding(hsdp48, cluster(R"({"preset": "dgx-h100", "nodes": 6, "fabric": "fat-tree", "switch_radix": 48})"))
            .folded_lanes == 16);
  // FSDP on 8 nodes with oversubscribed leaves of 4 nodes: blocks grow from one node to a leaf's 4.
  f = plan_folding(
      test::experiment(with_model(R"("training": {"global_batch": 64, "micro_batch": 1},
      "strategy": {"preset": "fsdp", "dp": 64})")),
      cluster(
          R"({"preset": "dgx-h100", "nodes": 8, "fabric": "fat-tree", "switch_radix": 64, "oversubscription": 4})"));
  CHECK(f.folded_lanes == 32);
  // An oversubscribed rail-optimized unit: its rail leaves' uplinks carry every node's cross-rail transfers.
  f = plan_folding(test::experiment(with_model(R"("training": {"global_batch": 48, "micro_batch": 1},
      "strategy": {"preset": "hsdp", "mesh": {"dp_shard": 12, "dp_replicate": 4}})")),
                   cluster(R"({"preset": "dgx-h100", "nodes": 6, "fabric": "rail-optimized", "switch_radix": 16,
                               "oversubscription": 4})"));
  CHECK_FALSE(f.active());
  CHECK(f.reason.find("their uplinks are oversubscribed") != std::string::npos);
}

TEST_CASE("A folded expansion holds block 0's tasks; its collectives keep every member", "[symmetry]") {
  const Experiment e = test::experiment(with_model(R"("training": {"global_batch": 32, "micro_batch": 1},
      "strategy": {"preset": "fsdp", "dp": 32})"));
  const ClusterSpec c = simulated_network(cluster(R"({"preset": "dgx-h100", "nodes": 4})"));
  const Folding f = plan_folding(e, c);
  REQUIRE(f.folded_lanes == 8);
  const TaskGraph full = expand(e, c);
  ExpandOptions o;
  o.folded_lanes = f.folded_lanes;
  const TaskGraph folded = expand(e, c, o);
  auto count = [](const TaskGraph& g, bool collectives) {
    std::size_t n = 0;
    for (TaskId id = 0; id < g.size(); ++id) n += std::holds_alternative<Collective>(g[id].body) == collectives;
    return n;
  };
  // Compute tasks: a quarter (8 of 32 devices); collectives: the same (one dp group of all 32).
  CHECK(count(folded, false) * 4 == count(full, false));
  CHECK(count(folded, true) == count(full, true));
  for (TaskId id = 0; id < folded.size(); ++id) {
    if (const auto* col = std::get_if<Collective>(&folded[id].body)) {
      CHECK(folded.groups[static_cast<std::size_t>(col->group)].size() == 32);
    } else {
      for (int x : task_devices(folded, folded[id])) CHECK(x < 8);
    }
  }
}

TEST_CASE("Folded = unfolded: FSDP over 2 nodes at flow fidelity", "[symmetry]") {
  check_equivalent(example("llama3-8b-fsdp.json"));
}

TEST_CASE("Folded = unfolded: FSDP at analytic fidelity", "[symmetry]") {
  check_equivalent(example("llama3-8b-fsdp.json"), "--fidelity analytic");
}

TEST_CASE("Folded = unfolded: FSDP at full fidelity (ring steps inside nodes too)", "[symmetry]") {
  // H100's NVLink interference slows the decomposed ring steps by their sender's compute while they flow: it folds.
  const Json r = check_equivalent(example("llama3-8b-fsdp.json"), "--fidelity full");
  CHECK(r["simulation"]["overlap_interference"]["compute_time_lost_s"].get<double>() > 0);
}

// PyTorch's context parallelism sends K/V between the cp ranks of a node as point-to-point transfers beside the
// attention compute: with H100's interference each send is slowed while its devices compute. Congruent cp groups
// must be slowed alike whatever order the simultaneous events of their blocks are taken in (they once differed by
// 1.2 %: slowdowns taken at each send's launch), at every fidelity, and with interference inter-node too.
TEST_CASE("Folded = unfolded: PyTorch CP + FSDP under overlap interference, at every fidelity", "[symmetry]") {
  const std::string cp = temp_file(R"({"model": {"preset": "llama3-8b", "layers": 8, "seq_len": 32768},
      "training": {"global_batch": 8, "micro_batch": 1, "recompute": "full", "kernels": "compiled"},
      "strategy": {"preset": "fsdp", "dp": 8, "cp": 4, "cp_comm": "ring"},
      "cluster": {"preset": "dgx-h100", "nodes": 4}})");
  for (const char* fidelity : {"analytic", "flow", "full"}) {
    INFO(fidelity);
    const Json r = check_equivalent(cp, std::string("--fidelity ") + fidelity);
    CHECK(r["simulation"]["overlap_interference"]["compute_time_lost_s"].get<double>() > 0);
  }
  // Inter-node factors too (the profile measures none on H100): the FSDP rings across nodes are slowed as well.
  const std::string inter = temp_file(R"({"model": {"preset": "llama3-8b", "layers": 8, "seq_len": 32768},
      "training": {"global_batch": 8, "micro_batch": 1, "recompute": "full", "kernels": "compiled"},
      "strategy": {"preset": "fsdp", "dp": 8, "cp": 4, "cp_comm": "ring"},
      "cluster": {"preset": "dgx-h100", "nodes": 4, "accelerator": {"preset": "h100-sxm",
                  "interference": {"inter_node": {"compute_slowdown": 1.3, "comm_slowdown": 1.5}}}}})");
  for (const char* fidelity : {"flow", "full"}) {
    INFO(fidelity);
    check_equivalent(inter, std::string("--fidelity ") + fidelity);
  }
}

TEST_CASE("Folded = unfolded: GPT-3 175B on 1,024 A100 (16 blocks of one pipeline)", "[symmetry]") {
  const Json r = check_equivalent(example("gpt3-175b-3d.json"));
  CHECK(r["simulation"]["symmetry"]["simulated_devices"] == 64);
  CHECK(r["simulation"]["symmetry"]["blocks"] == 16);
}

TEST_CASE("Folded = unfolded: FSDP + TP with context parallelism", "[symmetry]") {
  check_equivalent(example("long-context/llama3-70b-64k-cp4.json"));
}

TEST_CASE("Folded = unfolded: all-gather context parallelism, its cp groups spanning blocks", "[symmetry]") {
  // tp 8 fills a node: blocks of one lane, so each cp group of 4 spans 4 blocks (its all-gathers fold like rings).
  const Json r = check_equivalent(temp_file(R"({"model": {"family": "llama", "layers": 8, "hidden": 1024, "heads": 8,
      "kv_heads": 8, "ffn": 4096, "vocab": 32000, "seq_len": 8192},
      "training": {"global_batch": 8, "micro_batch": 1},
      "strategy": {"preset": "megatron-3d", "tp": 8, "cp": 4, "pp": 2, "dp": 2, "sp": true, "cp_comm": "all-gather"},
      "cluster": {"preset": "dgx-h100", "nodes": 16}})"));
  CHECK(r["simulation"]["symmetry"]["blocks"] == 8);
}

TEST_CASE("Folded = unfolded: ring context parallelism, its rings spanning blocks", "[symmetry]") {
  // tp 8 fills a node: blocks of one lane, so each ring of 4 cp ranks spans 4 blocks. Block 0's rank sends its K/V
  // (and in the backward the gradients) to its successor's real node, and receives what its predecessor's
  // representative (itself) sent. Megatron-Core's ring (TransformerEngine) and PyTorch's, forward and backward.
  for (const char* impl : {"te", "pytorch"}) {
    INFO(impl);
    const Json r = check_equivalent(temp_file(std::string(R"({"model": {"family": "llama", "layers": 8, "hidden": 1024,
      "heads": 8, "kv_heads": 8, "ffn": 4096, "vocab": 32000, "seq_len": 8192},
      "training": {"global_batch": 8, "micro_batch": 1},
      "strategy": {"preset": "megatron-3d", "tp": 8, "cp": 4, "pp": 2, "dp": 2, "sp": true, "cp_comm": "ring",
                   "cp_impl": ")") + impl + R"("},
      "cluster": {"preset": "dgx-h100", "nodes": 16}})"));
    CHECK(r["simulation"]["symmetry"]["blocks"] == 8);
  }
  // Two lanes a node (tp 4) and rings of 8: blocks of 2 lanes, 4 blocks to a ring.
  const Json r = check_equivalent(temp_file(R"({"model": {"family": "llama", "layers": 4, "hidden": 1024, "heads": 8,
      "kv_heads": 8, "ffn": 4096, "vocab": 32000, "seq_len": 16384},
      "training": {"global_batch": 4, "micro_batch": 1},
      "strategy": {"preset": "megatron-core", "tp": 4, "cp": 8, "pp": 2, "dp": 2, "sp": true},
      "cluster": {"preset": "dgx-h100", "nodes": 16}})"));
  CHECK(r["simulation"]["symmetry"]["blocks"] == 8);
}

TEST_CASE("Folded = unfolded: all-gather cp groups and whole-leaf blocks that do not divide each other", "[symmetry]") {
  // Oversubscribed leaves of 3 nodes (3 lanes) and cp groups of 2: blocks grow to 6 lanes, holding whole groups.
  const Json r = check_equivalent(temp_file(R"({"model": {"family": "llama", "layers": 8, "hidden": 1024, "heads": 8,
      "kv_heads": 8, "ffn": 4096, "vocab": 32000, "seq_len": 8192},
      "training": {"global_batch": 6, "micro_batch": 1},
      "strategy": {"preset": "megatron-3d", "tp": 8, "cp": 2, "dp": 6, "sp": true, "cp_comm": "all-gather"},
      "cluster": {"preset": "dgx-h100", "nodes": 12, "fabric": "fat-tree", "switch_radix": 48,
                  "oversubscription": 2}})"));
  CHECK(r["simulation"]["symmetry"]["blocks"] == 2);
}

TEST_CASE("Folded = unfolded: interleaved pipeline with ZeRO-1", "[symmetry]") {
  check_equivalent(example("long-context/llama3-405b-interleaved-8k.json"));
}

TEST_CASE("Folded = unfolded: HSDP, its shard groups inside blocks and replicate rings across them", "[symmetry]") {
  check_equivalent(temp_file(with_model(R"("training": {"global_batch": 32, "micro_batch": 1},
      "strategy": {"preset": "hsdp", "mesh": {"dp_shard": 8, "dp_replicate": 4}},
      "cluster": {"preset": "dgx-h100", "nodes": 4})")));
}

TEST_CASE("Folded = unfolded: ZeRO-Offload (host optimizer, PCIe copies)", "[symmetry]") {
  check_equivalent(temp_file(with_model(R"("training": {"global_batch": 16, "micro_batch": 1},
      "strategy": {"preset": "zero-offload", "dp": 16},
      "cluster": {"preset": "dgx-a100", "nodes": 2})")));
}

TEST_CASE("Folded = unfolded: hierarchical collectives on a rail-optimized fabric", "[symmetry]") {
  check_equivalent(temp_file(with_model(R"("training": {"global_batch": 32, "micro_batch": 1},
      "strategy": {"preset": "zero2", "dp": 32, "collective": "hierarchical"},
      "cluster": {"preset": "dgx-a100", "nodes": 4, "fabric": "rail-optimized", "switch_radix": 4})")));
}

TEST_CASE("Folded = unfolded: an oversubscribed fat-tree, blocks of whole leaves sharing their uplinks", "[symmetry]") {
  // Leaves of 8 NICs (one node each), 2 nodes per block; uplinks of 4 NICs' bandwidth.
  check_equivalent(temp_file(with_model(R"("training": {"global_batch": 32, "micro_batch": 1},
      "strategy": {"preset": "hsdp", "mesh": {"dp_shard": 16, "dp_replicate": 2}},
      "cluster": {"preset": "dgx-h100", "nodes": 4, "fabric": "fat-tree", "oversubscription": 2, "switch_radix": 16})")));
}

// Leaves of 3 nodes, blocks of 2 (HSDP's shard groups): block 0's shard ring stays on a leaf, block 1's crosses the
// spine; each block's replicate hop differs too. Folded, block 0 takes the slowest congruent route of each transfer:
// every ring keeps its unfolded pace, but the blocks' contention differs where their hops' timing differs. Measured:
// folded 10.406 vs unfolded 10.486 ms (-0.76 %) with 130 ns switches, -1.02 % with 20 us switches (before the
// slowest routes, -1.04 % and -41 %). The report says the fold is approximate.
TEST_CASE("Blocks that split leaves fold approximately, within 1.5 %, and say so", "[symmetry]") {
  for (const char* latency : {"", R"(, "switch_latency": "20us")"}) {
    INFO(latency);
    const std::string path = temp_file(with_model(std::string(R"("training": {"global_batch": 48, "micro_batch": 1},
        "strategy": {"preset": "hsdp", "mesh": {"dp_shard": 16, "dp_replicate": 3}},
        "cluster": {"preset": "dgx-h100", "nodes": 6, "fabric": "fat-tree", "switch_radix": 48)") +
                                                  latency + "}"));
    const Json folded = run_report(path, ""), full = run_report(path, "--symmetry off");
    const double a = folded["simulation"]["step_time_s"].get<double>();
    const double b = full["simulation"]["step_time_s"].get<double>();
    CHECK(std::abs(a - b) <= 0.015 * b);
    CHECK(folded["simulation"]["bytes_sent"] == full["simulation"]["bytes_sent"]);
    CHECK(folded["simulation"]["symmetry"]["approximation"].get<std::string>().find(
              "blocks of 2 nodes do not hold whole leaf switches (3 nodes per leaf)") == 0);
  }
}

TEST_CASE("Blocks that split oversubscribed leaves are simulated unfolded, and the report says why", "[symmetry]") {
  const Json r = check_equivalent(temp_file(with_model(R"("training": {"global_batch": 48, "micro_batch": 1},
      "strategy": {"preset": "hsdp", "mesh": {"dp_shard": 16, "dp_replicate": 3}},
      "cluster": {"preset": "dgx-h100", "nodes": 6, "fabric": "fat-tree", "switch_radix": 48, "oversubscription": 2})")),
                                  "", false);
  CHECK(r["simulation"]["symmetry"]["not_folded_because"].get<std::string>().find("whole leaf switches") !=
        std::string::npos);
}

TEST_CASE("A folded step runs with SimGrid's cross-traffic on (routes both ways)", "[symmetry]") {
  check_equivalent(temp_file(with_model(R"("training": {"global_batch": 16, "micro_batch": 1},
      "strategy": {"preset": "fsdp", "dp": 16},
      "cluster": {"preset": "dgx-h100", "nodes": 2, "simgrid_config": {"network/crosstraffic": "1"}})")));
}

// The trace of a device outside block 0 is its representative's moved to it: identical to the unfolded trace but for
// the expansion's internal task and collective ids (a folded expansion numbers only the tasks it holds).
TEST_CASE("A traced device outside block 0 has the trace it has unfolded", "[symmetry]") {
  // FSDP (device 9, block 1 of 2), and tp 8 x pp 2 x dp 2 with sends and TP groups (device 8: block 1's stage 0,
  // whose sends go to device 24 and whose TP group is grp@gpu8).
  const std::string pipeline = temp_file(with_model(R"("training": {"global_batch": 8, "micro_batch": 1},
      "strategy": {"preset": "megatron-3d", "tp": 8, "pp": 2, "dp": 2},
      "cluster": {"preset": "dgx-h100", "nodes": 4})"));
  // And all-gather cp groups of 4 spanning blocks of one lane: device 32 (lane 4) is in the cp group of lanes 4-7
  // (grp@gpu32), whose representative (lane 0) is in lanes 0-3's.
  const std::string cp = temp_file(R"({"model": {"family": "llama", "layers": 8, "hidden": 1024, "heads": 8,
      "kv_heads": 8, "ffn": 4096, "vocab": 32000, "seq_len": 8192},
      "training": {"global_batch": 8, "micro_batch": 1},
      "strategy": {"preset": "megatron-3d", "tp": 8, "cp": 4, "pp": 2, "dp": 2, "sp": true, "cp_comm": "all-gather"},
      "cluster": {"preset": "dgx-h100", "nodes": 16}})");
  for (const auto& [experiment, device] :
       {std::pair<std::string, int>{example("llama3-8b-fsdp.json"), 9}, std::pair<std::string, int>{pipeline, 8},
        std::pair<std::string, int>{cp, 32}, std::pair<std::string, int>{cp, 24}}) {
    const Json folded = fine_trace(experiment, device, ""), full = fine_trace(experiment, device, "--symmetry off");
    REQUIRE(folded["traceEvents"].size() > 200);
    CHECK(folded == full);
    if (device == 8) CHECK(folded.dump().find("send act mb0 -> gpu24") != std::string::npos);
    if (device == 32) CHECK(folded.dump().find("allgather cp_kv grp@gpu32 ") != std::string::npos);
  }
}

// Item 3: the analytic fidelity shares a NIC between the inter-node rings on it. Before, it gave each ring the whole
// NIC and was 23-81 % optimistic on these steps (measured: 7.76 s vs flow's 41.22 s, 2.01 vs 2.62 s, 4.14 vs
// 7.83 s); now it stays within 5 % of flow fidelity (they agree within 1.1 %). FSDP's gathers and reduce-scatters of
// one group no longer share its NIC: their NCCL communicator runs one collective at a time, so fsdp-1-nic's take
// turns and both fidelities give the same step.
TEST_CASE("Analytic fidelity within 5 % of flow fidelity where rings share NICs", "[symmetry]") {
  for (const char* name : {"fsdp-tp-2-nics.json", "fsdp-1-nic.json", "megatron-1-nic.json"}) {
    INFO(name);
    const std::string path = std::string(PLACESIM_SOURCE_DIR) + "/tests/data/nic-shared/" + name;
    const Json analytic = run_report(path, "--fidelity analytic");
    const Json flow = run_report(path, "");
    const double a = analytic["simulation"]["step_time_s"].get<double>();
    const double f = flow["simulation"]["step_time_s"].get<double>();
    CHECK(std::abs(a - f) <= 0.05 * f);
    if (std::string(name) == "fsdp-1-nic.json")
      CHECK(analytic["simulation"]["analytic_nic_overlap_s"].get<double>() == 0);  // serialized: never shared
    else
      CHECK(analytic["simulation"]["analytic_nic_overlap_s"].get<double>() > 0.05 * a);  // the NICs were shared
    CHECK(analytic["simulation"]["bytes_sent"] == flow["simulation"]["bytes_sent"]);
  }
}

TEST_CASE("Folded = unfolded where rings share NICs (flow and analytic)", "[symmetry]") {
  const std::string path = std::string(PLACESIM_SOURCE_DIR) + "/tests/data/nic-shared/fsdp-tp-2-nics.json";
  check_equivalent(path);
  check_equivalent(path, "--fidelity analytic");
}

// Blocks an imperfection touches are simulated apart: the simulation runs a frame rotated so that they follow one
// untouched block (frame block 0), and every other block takes frame block 0's figures.
TEST_CASE("Folding arithmetic with blocks simulated apart (window and rotation)", "[symmetry]") {
  // tp 2, 8 lanes in 4 blocks of 2; block 2 touched: the frame starts at block 1 (rotation 1), window 2.
  Folding f;
  f.tp = 2;
  f.lanes = 8;
  f.folded_lanes = 2;
  f.window = 2;
  f.rotation = 1;
  CHECK(f.simulated_share() == 0.5);
  // Real device 9 (stage 0, lane 4, tp 1: block 2) is frame device 5 (lane 2: frame block 1, simulated).
  CHECK(f.frame(9) == 5);
  CHECK(f.real(5) == 9);
  CHECK(f.simulated(5));
  CHECK(f.source(9) == 5);
  // Real device 13 (lane 6, block 3) is frame lane 4 (frame block 2, not simulated): it takes frame lane 0's figures,
  // frame lane 0 being real lane 2 (block 1, untouched).
  CHECK(f.frame(13) == 9);
  CHECK_FALSE(f.simulated(9));
  CHECK(f.source(13) == 1);
  CHECK(f.real(1) == 5);
  // Real block 0 (device 1) is frame block 3: frame block 0's figures too.
  CHECK(f.source(1) == 1);
  // Nothing apart: the frame is the real cluster and only block 0 is simulated.
  f.window = 1;
  f.rotation = 0;
  CHECK(f.source(13) == 1);
  CHECK(f.source(5) == 1);
  CHECK(f.simulated_share() == 0.25);
}

// The frame rotated by one block of 2 lanes (tp 8: a lane is a node): real node n is frame node n - 2 (mod 8 lanes,
// same stage). Stragglers become per-GPU entries of their frame GPUs, NICs and NVLinks move with their nodes, a rail
// is every node's and stays.
TEST_CASE("frame_cluster moves stragglers and degraded links to their frame devices", "[symmetry]") {
  ClusterSpec c = cluster(R"({"preset": "dgx-h100", "nodes": 16, "slow": {"node 3": 0.8, "gpu 9": 0.5},
      "degraded": {"nic 2.5": 0.5, "nvlink 17": 0, "rail 1": 0.5}})");
  Folding f;
  f.tp = 8;
  f.lanes = 8;  // 8 lanes a stage, 2 stages: nodes 0-7 and 8-15
  f.folded_lanes = 2;
  f.window = 2;
  f.rotation = 1;
  const ClusterSpec frame = frame_cluster(c, f, 128);
  // Node 3 (stage 0, lane 3) -> frame node 1: its GPUs 8-15 at 0.8; GPU 9 (node 1, lane 1) -> frame lane 7: GPU 57.
  CHECK(frame.straggler_speed(8) == 0.8);
  CHECK(frame.straggler_speed(15) == 0.8);
  CHECK(frame.straggler_speed(57) == 0.5);
  CHECK(frame.straggler_speed(24) == 1);  // real node 3's GPU 0 is not node 3 of the frame
  CHECK(frame.slow.size() == 9);
  // NIC 2.5 (node 2, lane 2) -> frame node 0; NVLink 17 (node 2, GPU 1) -> frame GPU 1; rail 1 stays.
  CHECK(frame.nic_left(0, 5) == 0.5);
  CHECK(frame.nic_left(2, 5) == 1);
  CHECK(frame.nvlink_left(1) == 0);
  CHECK(frame.nvlink_left(17) == 1);
  CHECK(frame.nic_left(9, 1) == 0.5);
  // Not rotated: the cluster itself.
  f.rotation = 0;
  CHECK(frame_cluster(c, f, 128).slow == c.slow);
}

TEST_CASE("plan_folding: the blocks a straggler or a degraded link touches are simulated apart", "[symmetry]") {
  // GPT-3 175B on 128 DGX A100: tp 8 x pp 8 x dp 16; a stage's 16 lanes are 16 nodes, one block each.
  std::ifstream in(example("gpt3-175b-3d.json"));
  std::stringstream text;
  text << in.rdbuf();
  const Experiment gpt3 = test::experiment(text.str());
  auto plan = [&](const std::string& imperfection) {
    return plan_folding(gpt3, cluster(R"({"preset": "dgx-a100", "nodes": 128, )" + imperfection + "}"));
  };
  // Node 37 = stage 2 (nodes 32-47), lane 5: block 5. The frame starts at block 4, block 5 follows it.
  Folding f = plan(R"("slow": {"node 37": 0.8})");
  CHECK(f.blocks() == 16);
  CHECK(f.window == 2);
  CHECK(f.rotation == 4);
  CHECK(f.apart == "block 5 (node 37 at 0.8x, cluster.slow)");
  CHECK(f.reason.empty());
  // Node 0: block 0 itself; the frame starts at block 15.
  f = plan(R"("slow": {"node 0": 0.5})");
  CHECK(f.window == 2);
  CHECK(f.rotation == 15);
  // Nodes 37 (block 5) and 50 (stage 3, lane 2: block 2): blocks 2-5 after block 1, 5 simulated of 16.
  f = plan(R"("slow": {"node 37": 0.8, "node 50": 0.9})");
  CHECK(f.window == 5);
  CHECK(f.rotation == 1);
  CHECK(f.apart == "block 2 (node 50 at 0.9x, cluster.slow); block 5 (node 37 at 0.8x, cluster.slow)");
  // Blocks 0 and 15 are neighbours going round: the frame starts at block 14.
  f = plan(R"("slow": {"gpu 3": 0.8, "node 127": 0.9})");
  CHECK(f.window == 3);
  CHECK(f.rotation == 14);
  // A GPU, a NIC, an NVLink; a rail is every node's and touches no block.
  CHECK(plan(R"("slow": {"gpu 300": 0.7})").apart == "block 5 (gpu 300 at 0.7x, cluster.slow)");
  CHECK(plan(R"("degraded": {"nic 37.3": 0.5})").apart == "block 5 (nic 37.3 at 0.5, cluster.degraded)");
  CHECK(plan(R"("degraded": {"nvlink 300": 0})").apart == "block 5 (nvlink 300 at 0, cluster.degraded)");
  f = plan(R"("degraded": {"rail 3": 0.5})");
  CHECK(f.window == 1);
  CHECK(f.apart.empty());
  CHECK(f.blocks() == 16);
  // A leaf's uplinks differ for the blocks under it and not for the others' transfers crossing it: not folded.
  f = plan(R"("degraded": {"leaf 1": 0.5})");
  CHECK_FALSE(f.active());
  CHECK(f.reason == "cluster.degraded names a leaf switch, so the blocks differ");
  // Blocks 1, 3, ..., 15 touched: a run of 15 blocks after block 0 is more than half: not folded, saying why.
  std::string odd;
  for (int lane = 1; lane < 16; lane += 2)
    odd += (odd.empty() ? "" : ", ") + std::string("\"node ") + std::to_string(lane) + "\": 0.9";
  f = plan(R"("slow": {)" + odd + "}");
  CHECK_FALSE(f.active());
  CHECK(f.reason ==
        "node 1 at 0.9x, cluster.slow and 7 more make 8 of 16 blocks differ; simulated apart they would run 16 "
        "of the 16");
  // A speed drawn for every GPU touches every block.
  f = plan(R"("speed_spread": {"sigma": 0.02, "seed": 1})");
  CHECK_FALSE(f.active());
  CHECK(f.reason.find("and 15 more make 16 of 16 blocks differ") != std::string::npos);
  // Context-parallel rings of 4 spanning blocks of one lane: with a straggler, blocks grow to whole rings (4 lanes).
  // tp 8 x cp 4 x dp 8 x pp 2 on 64 nodes: node 9 = stage 0, lane 9: block 2 of 8.
  f = plan_folding(test::experiment(R"({"model": {"family": "llama", "layers": 8, "hidden": 1024, "heads": 8,
      "kv_heads": 8, "ffn": 4096, "vocab": 32000, "seq_len": 8192},
      "training": {"global_batch": 16, "micro_batch": 1},
      "strategy": {"preset": "megatron-3d", "tp": 8, "cp": 4, "pp": 2, "dp": 8, "sp": true, "cp_comm": "ring"}})"),
                   cluster(R"({"preset": "dgx-h100", "nodes": 64, "slow": {"node 9": 0.8}})"));
  CHECK(f.folded_lanes == 4);
  CHECK(f.window == 2);
  CHECK(f.rotation == 1);
}

// Folded with a block apart = unfolded: the straggler gates each collective and pipeline exchange as the DAG says,
// in one block of the fold as in the whole cluster.
TEST_CASE("Folded with a block apart = unfolded: a slow node in GPT-3 175B's pipelines", "[symmetry]") {
  const Json r = check_equivalent(example("gpt3-175b-3d.json"), R"(--set 'cluster.slow={"node 37": 0.8}')");
  CHECK(r["simulation"]["symmetry"]["simulated_devices"] == 128);
  CHECK(r["simulation"]["symmetry"]["simulated_apart"] == "block 5 (node 37 at 0.8x, cluster.slow)");
}

TEST_CASE("Folded with a block apart = unfolded: block 0 slow at analytic fidelity", "[symmetry]") {
  const Json r = check_equivalent(example("gpt3-175b-3d.json"),
                                  R"(--fidelity analytic --set 'cluster.slow={"node 0": 0.8, "node 50": 0.9}')");
  CHECK(r["simulation"]["symmetry"]["simulated_blocks"] == 4);  // blocks 15 (untouched), 0, 1 and 2
}

TEST_CASE("Folded with a block apart = unfolded: a NIC down and an NVLink at half", "[symmetry]") {
  check_equivalent(example("gpt3-175b-3d.json"), R"(--set 'cluster.degraded={"nic 37.3": 0, "nvlink 900": 0.5}')");
}

TEST_CASE("Folded with a block apart = unfolded: HSDP with a slow GPU", "[symmetry]") {
  const Json r = check_equivalent(temp_file(with_model(R"("training": {"global_batch": 32, "micro_batch": 1},
      "strategy": {"preset": "hsdp", "mesh": {"dp_shard": 8, "dp_replicate": 4}},
      "cluster": {"preset": "dgx-h100", "nodes": 4, "slow": {"gpu 21": 0.7}})")));
  CHECK(r["simulation"]["symmetry"]["simulated_apart"] == "block 2 (gpu 21 at 0.7x, cluster.slow)");
}

// The summary says what was simulated apart: 4 blocks of one node (HSDP's shard groups of 8), gpu 21 in block 2.
TEST_CASE("The summary names the blocks simulated apart and why", "[symmetry]") {
  std::string out;
  REQUIRE(test::run_placesim("simulate " + temp_file(with_model(R"("training": {"global_batch": 32, "micro_batch": 1},
      "strategy": {"preset": "hsdp", "mesh": {"dp_shard": 8, "dp_replicate": 4}},
      "cluster": {"preset": "dgx-h100", "nodes": 4, "slow": {"gpu 21": 0.7}})")) +
                                 " --quiet",
                             &out) == 0);
  CHECK_THAT(out, Catch::Contains("16 of 32 devices (2 of 4 congruent data-parallel blocks; simulated apart: block 2 "
                                  "(gpu 21 at 0.7x, cluster.slow); the others take an untouched block's figures)"));
}

TEST_CASE("Folded with a block apart = unfolded: ring context parallelism, blocks grown to whole rings", "[symmetry]") {
  const Json r = check_equivalent(temp_file(R"({"model": {"family": "llama", "layers": 8, "hidden": 1024, "heads": 8,
      "kv_heads": 8, "ffn": 4096, "vocab": 32000, "seq_len": 8192},
      "training": {"global_batch": 16, "micro_batch": 1},
      "strategy": {"preset": "megatron-3d", "tp": 8, "cp": 4, "pp": 2, "dp": 4, "sp": true, "cp_comm": "ring"},
      "cluster": {"preset": "dgx-h100", "nodes": 32, "slow": {"node 9": 0.8}}})"));
  CHECK(r["simulation"]["symmetry"]["blocks"] == 4);
  CHECK(r["simulation"]["symmetry"]["simulated_blocks"] == 2);
}

TEST_CASE("Folded with a block apart = unfolded: expert parallelism, all-to-alls in the block apart", "[symmetry]") {
  // Mixtral 8x7B (4 layers) on 8 DGX H100: ep 8 fills a node, pp 2 x dp 32: blocks of a node, 4 per stage; node 6
  // (stage 1, lane block 2) slow.
  const Json r = check_equivalent(temp_file(R"({"model": {"preset": "mixtral-8x7b", "layers": 4, "seq_len": 2048},
      "training": {"global_batch": 64, "micro_batch": 1, "recompute": "full"},
      "strategy": {"preset": "zero1", "dp": 32, "pp": 2, "ep": 8, "schedule": "1f1b"},
      "cluster": {"preset": "dgx-h100", "nodes": 8, "slow": {"node 6": 0.8}}})"));
  CHECK(r["simulation"]["symmetry"]["simulated_apart"] == "block 2 (node 6 at 0.8x, cluster.slow)");
}

// The traces of a device in the block apart and of devices folded onto the frame's first block equal their unfolded
// traces: records are moved from the rotated frame to the real devices, peers and group names with them.
TEST_CASE("Traced devices of a fold with a block apart have their unfolded traces", "[symmetry]") {
  // tp 8 x pp 2 x dp 4 on 8 nodes: 4 blocks of a node per stage; node 6 (stage 1, lane 2) slow: frame rotated by 1.
  const std::string pipeline = temp_file(with_model(R"("training": {"global_batch": 8, "micro_batch": 1},
      "strategy": {"preset": "megatron-3d", "tp": 8, "pp": 2, "dp": 4},
      "cluster": {"preset": "dgx-h100", "nodes": 8, "slow": {"node 6": 0.8}})"));
  for (int device : {48, 24, 3}) {
    INFO("device " << device);
    const Json folded = fine_trace(pipeline, device, ""), full = fine_trace(pipeline, device, "--symmetry off");
    REQUIRE(folded["traceEvents"].size() > 100);
    CHECK(folded == full);
  }
}
