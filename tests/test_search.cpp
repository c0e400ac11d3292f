// `placesim search`: mesh enumeration, the search sweep, ranking and the top-k table.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "strategies/sweep/Search.hpp"
#include "tests/Helpers.hpp"

using namespace placesim;

namespace {

// The meshes enumerated for `devices` GPUs, `per_node` to a node, in order: "dp x tp x pp" each, as "8x2x1".
std::string meshes(std::int64_t devices, std::int64_t per_node) {
  std::string out;
  for (const CandidateMesh& m : enumerate_meshes(devices, per_node))
    out += (out.empty() ? "" : " ") + std::to_string(m.dp) + "x" + std::to_string(m.tp) + "x" + std::to_string(m.pp);
  return out;
}

Json row(int index, const char* status, double bytes) {
  return Json{{"index", index}, {"status", status}, {"communication.bytes_per_step", bytes}};
}

}  // namespace

TEST_CASE("Meshes multiply to the GPU count with tp inside a node") {
  CHECK(meshes(16, 8) == "16x1x1 8x1x2 4x1x4 2x1x8 1x1x16 8x2x1 4x2x2 2x2x4 1x2x8 4x4x1 2x4x2 1x4x4 2x8x1 1x8x2");
  // 12 GPUs, 8 per node: tp 8 does not divide 12.
  CHECK(meshes(12, 8) == "12x1x1 6x1x2 4x1x3 3x1x4 2x1x6 1x1x12 6x2x1 3x2x2 2x2x3 1x2x6 3x4x1 1x4x3");
  CHECK(meshes(1, 8) == "1x1x1");
}

TEST_CASE("The search sweep needs a fixed global batch and a free micro-batch count") {
  SearchSpace space;
  space.devices = 16;
  auto message = [&](const std::string& experiment) {
    return test::refusal_message([&] { search_sweep(Json::parse(experiment), "", space); });
  };
  CHECK_THAT(message(R"({"model": "gpt-1.7b", "strategy": "dp"})"),
             Catch::Contains("training.global_batch is required"));
  CHECK_THAT(message(R"({"model": "gpt-1.7b", "training": {"global_batch": 64},
                         "strategy": {"preset": "dp", "microbatches": 4}})"),
             Catch::Contains("strategy.microbatches must not be fixed"));
  space.presets = {"dp", "zero1"};
  space.micro_batches = {1};
  space.recomputes = {"none"};
  space.cps = {1};
  space.max_chunks = 1;
  SweepSpec s = search_sweep(
      Json::parse(R"({"model": "gpt-1.7b", "training": {"global_batch": 64}, "strategy": "dp"})"), "", space);
  CHECK(s.points() == 14 * 2);  // 14 meshes of 16 GPUs x 2 presets (one size, one recompute mode, 1F1B)
  CHECK(s.paths() == std::vector<std::string>{"strategy", "training.micro_batch", "training.recompute"});
  // Its rows name the search as a sweep file's rows name the file: the same inputs give the same hash, other
  // candidates or another base another one.
  const Json base = Json::parse(R"({"model": "gpt-1.7b", "training": {"global_batch": 64}, "strategy": "dp"})");
  CHECK(s.hash.size() == 16);
  CHECK(search_sweep(base, "", space).hash == s.hash);
  SearchSpace fewer = space;
  fewer.presets = {"zero1"};
  CHECK(search_sweep(base, "", fewer).hash != s.hash);
  Json other = base;
  other["training"]["global_batch"] = 128;
  CHECK(search_sweep(other, "", space).hash != s.hash);
}

TEST_CASE("Rows rank by a figure ascending or descending and only valid rows rank") {
  std::vector<Json> rows = {row(0, "ok", 30), row(1, "invalid", 1), row(2, "ok", 10),
                            row(3, "ok", 20), row(4, "ok", 10),     Json{{"index", 5}, {"status", "ok"}}};
  std::vector<int> order;
  for (const auto& r : rank_rows(rows, parse_rank_by("communication.bytes_per_step")))
    order.push_back(r["index"].get<int>());
  CHECK(order == std::vector<int>{2, 4, 3, 0});  // ties keep index order
  order.clear();
  for (const auto& r : rank_rows(rows, parse_rank_by("-communication.bytes_per_step")))
    order.push_back(r["index"].get<int>());
  CHECK(order == std::vector<int>{0, 3, 2, 4});
  CHECK(default_rank_by(SweepMode::Simulate).path == "simulation.step_time_s");
  CHECK(default_rank_by(SweepMode::Analyze).path == "communication.bytes_per_step");
}

namespace {

// Runs `placesim search` on `experiment` with `flags` (plus --quiet and --out) and reads back every candidate row.
struct SearchRun {
  int rc = 0;
  std::string output;
  std::vector<Json> rows;
};

SearchRun run_search(const std::string& experiment, const std::string& flags) {
  char pattern[] = "/tmp/placesim-search-test-XXXXXX";
  const std::string dir = ::mkdtemp(pattern);
  std::ofstream(dir + "/exp.json") << experiment;
  SearchRun run;
  run.rc =
      test::run_placesim("search " + dir + "/exp.json " + flags + " --quiet --out " + dir + "/r.jsonl", &run.output);
  std::ifstream in(dir + "/r.jsonl");
  for (std::string line; std::getline(in, line);) run.rows.push_back(Json::parse(line));
  std::filesystem::remove_all(dir);
  return run;
}

}  // namespace

TEST_CASE("placesim search prints the best valid candidates and writes every candidate as JSONL") {
  const SearchRun run = run_search(R"({"model": "gpt-1.7b", "cluster": {"preset": "dgx-a100", "nodes": 2},
      "training": {"global_batch": 64, "recompute": "selective"}, "strategy": "dp"})",
                                   "--mode analyze --top 3 --presets dp,zero1,zero2,zero3,megatron-3d,megatron-core "
                                   "--recompute selective --cp 1 --max-chunks 1");
  std::string output = run.output;
  const std::vector<Json>& rows = run.rows;
  INFO(output);
  REQUIRE(run.rc == 0);
  REQUIRE(rows.size() == 14 * 6 * 4);
  double best = 1e300;
  const Json* winner = nullptr;
  for (const auto& r : rows)
    if (r["status"] == "ok" && r["communication.bytes_per_step"].get<double>() < best) {
      best = r["communication.bytes_per_step"].get<double>();
      winner = &r;
    }
  REQUIRE(winner);
  CHECK_THAT(output, Catch::Contains("16 GPUs (8 per node); presets: --presets"));
  CHECK_THAT(output, Catch::Contains("  336 candidates: "));
  CHECK_THAT(output, Catch::Contains("ranked by communication.bytes_per_step (lowest first): a proxy"));
  // The first table row is the winner: rank 1, its preset and mesh.
  std::istringstream table(output.substr(output.find("rank ")));
  std::string header, first;
  std::getline(table, header);
  std::getline(table, first);
  std::istringstream cells(first);
  std::string rank, preset, dp, tp, pp;
  cells >> rank >> preset >> dp >> tp >> pp;
  CHECK(rank == "1");
  const Json& strategy = (*winner)["point"]["strategy"];
  CHECK(preset == strategy["preset"].get<std::string>());
  CHECK(dp == strategy["dp"].dump());
  CHECK(tp == strategy["tp"].dump());
  CHECK(pp == strategy["pp"].dump());
  std::string third;
  std::getline(table, third);
  std::getline(table, third);
  CHECK(third.substr(0, 5) == "    3");
  CHECK(test::run_placesim("search --model gpt-1.7b --set training.global_batch=64 --quiet", &output) == 2);
  CHECK_THAT(output, Catch::Contains("search needs the GPU count"));
  // Without a cluster section there is nothing to simulate on: --gpus alone searches in analyze mode and says so;
  // asking for simulate mode is refused before any candidate runs.
  CHECK(test::run_placesim("search --model gpt-1.7b --gpus 8 --set training.global_batch=64 --quiet --top 1",
                           &output) == 0);
  CHECK_THAT(output, Catch::Contains("ranked by communication.bytes_per_step (lowest first): a proxy"));
  CHECK(test::run_placesim("search --model gpt-1.7b --gpus 8 --set training.global_batch=64 --mode simulate",
                           &output) == 2);
  CHECK_THAT(output, Catch::Contains("--mode simulate needs the experiment's cluster section"));
}

TEST_CASE("search refuses an unknown preset up front, and with no valid candidate says why and exits 1") {
  std::string output;
  CHECK(test::run_placesim("search --model gpt-1.7b --gpus 8 --set training.global_batch=64 --presets zero1,zero9",
                           &output) == 2);
  CHECK_THAT(output, Catch::Contains("--presets=zero9 is not a strategy preset (did you mean 'zero1'?)"));
  // A misspelt --rank-by in the default (simulate) mode is refused before any candidate runs, as in analyze mode.
  CHECK(test::run_placesim("search " + std::string(PLACESIM_SOURCE_DIR) +
                               "/examples/small-3d-1f1b.json --presets zero1 --rank-by simulation.step_tme_s",
                           &output) == 2);
  CHECK_THAT(output, Catch::Contains("simulation.step_tme_s is not a field of the simulate report (did you mean "
                                     "'simulation.step_time_s'?)"));
  CHECK(output.find("ranked by") == std::string::npos);
  // A global batch of null fails every candidate the same way: the reason is quoted once, with the count of points
  // the header gives.
  CHECK(test::run_placesim("search --model gpt-1.7b --gpus 8 --set training.global_batch=null --quiet --presets dp",
                           &output) == 1);
  const std::size_t points = std::stoul(output.substr(output.find(" candidates: ") - 6));
  CHECK_THAT(output, Catch::Contains("no valid candidate; every candidate's reason:\n  " + std::to_string(points) +
                                     " x invalid: training.global_batch=null must be a positive integer"));
}

// Ranked by bytes sent, search once picked zero-offload tp2 pp32 for a 70B model. By default it simulates every valid
// candidate and ranks by step time, and says so.
TEST_CASE("placesim search simulates by default and ranks by step time at the fidelity it names") {
  const SearchRun run = run_search(R"({"model": {"layers": 4, "hidden": 256, "heads": 4, "vocab": 1000,
      "seq_len": 128}, "cluster": {"preset": "dgx-a100", "nodes": 1, "gpus_per_node": 4, "nics_per_node": 4},
      "training": {"global_batch": 16}, "strategy": "dp"})",
                                   "--presets zero1,zero3 --micro-batches 1,4 --top 1 --fidelity analytic");
  std::string output = run.output;
  INFO(output);
  REQUIRE(run.rc == 0);
  const std::vector<Json>& rows = run.rows;
  double best = 1e300;
  std::string best_preset;
  int ok = 0;
  for (const auto& r : rows)
    if (r["status"] == "ok") {
      ++ok;
      if (r["simulation.step_time_s"].get<double>() < best) {
        best = r["simulation.step_time_s"].get<double>();
        best_preset = r["point"]["strategy"]["preset"].get<std::string>();
      }
    }
  REQUIRE(ok > 1);
  CHECK_THAT(output,
             Catch::Contains("ranked by simulation.step_time_s (lowest first), simulated at analytic fidelity"));
  std::istringstream table(output.substr(output.find("rank ")));
  std::string header, rank, preset;
  std::getline(table, header);
  table >> rank >> preset;
  CHECK(rank == "1");
  CHECK(preset == best_preset);
  CHECK(test::run_placesim("search --model gpt-1.7b --gpus 8 --set training.global_batch=64 --mode analyze "
                           "--fidelity flow",
                           &output) == 2);
  CHECK_THAT(output, Catch::Contains("--fidelity=flow applies to --mode simulate only"));
}

TEST_CASE("A search over an MoE model adds every expert-parallel degree the experts and a stage's ranks allow") {
  SearchSpace space;
  space.devices = 4;
  space.gpus_per_node = 4;
  space.presets = {"dp"};
  space.micro_batches = {1};
  space.recomputes = {"none"};
  space.cps = {1};
  space.max_chunks = 1;
  const SweepSpec s =
      search_sweep(Json::parse(R"({"model": {"family": "llama", "layers": 2, "hidden": 64, "heads": 4, "vocab": 256,
                     "seq_len": 128, "experts": 4, "top_k": 2, "moe_ffn": 32},
                     "training": {"global_batch": 16}, "strategy": "dp"})"),
                   "", space);
  const SweepAxis& mesh = s.axes.front();
  // (dp, tp, pp) over 4 GPUs, and ep dividing both the 4 experts and tp x dp: dp 4 -> ep 1, 2, 4; dp 2 x pp 2 -> 1, 2;
  // tp 2 x dp 2 -> 1, 2, 4 (sp on); tp 2 x pp 2 -> 1, 2; tp 4 -> 1, 2, 4. pp 4 is not a candidate: the model has 2
  // layers. Each ep > 1 without pipeline stages again with Megatron-Core's combined 1F1B (ep_overlap; with stages it
  // needs interleaved chunks, none here).
  std::vector<std::vector<std::int64_t>> got;
  for (const auto& v : mesh.values)
    got.push_back({v[0]["dp"].get<std::int64_t>(), v[0]["tp"].get<std::int64_t>(), v[0]["pp"].get<std::int64_t>(),
                   v[0]["ep"].get<std::int64_t>(), v[0]["sp"].get<bool>() ? 1 : 0,
                   v[0].value("ep_overlap", false) ? 1 : 0});
  CHECK(got == std::vector<std::vector<std::int64_t>>{{4, 1, 1, 1, 0, 0},
                                                      {4, 1, 1, 2, 0, 0},
                                                      {4, 1, 1, 2, 0, 1},
                                                      {4, 1, 1, 4, 0, 0},
                                                      {4, 1, 1, 4, 0, 1},
                                                      {2, 1, 2, 1, 0, 0},
                                                      {2, 1, 2, 2, 0, 0},
                                                      {2, 2, 1, 1, 1, 0},
                                                      {2, 2, 1, 2, 1, 0},
                                                      {2, 2, 1, 2, 1, 1},
                                                      {2, 2, 1, 4, 1, 0},
                                                      {2, 2, 1, 4, 1, 1},
                                                      {1, 2, 2, 1, 1, 0},
                                                      {1, 2, 2, 2, 1, 0},
                                                      {1, 4, 1, 1, 1, 0},
                                                      {1, 4, 1, 2, 1, 0},
                                                      {1, 4, 1, 2, 1, 1},
                                                      {1, 4, 1, 4, 1, 0},
                                                      {1, 4, 1, 4, 1, 1}});
}

// The search's pruning against an exhaustive simulation of the same candidates: a tiny model on one DGX H100, every
// candidate simulated at analytic fidelity with --exhaustive, then pruned by the lower bound. The pruned search must
// find the exhaustive optimum (its step time, to the last digit), simulate fewer, and no simulated candidate may beat
// its own bound (the bound is what makes skipping safe).
TEST_CASE("search pruned by the step-time bound finds the optimum of an exhaustive simulation of its candidates") {
  const std::string experiment = R"({"model": {"layers": 8, "hidden": 512, "heads": 8, "vocab": 1024,
      "seq_len": 512}, "cluster": {"preset": "dgx-h100", "nodes": 1}, "training": {"global_batch": 32}})";
  const std::string flags =
      "--presets megatron-core,fsdp --micro-batches 1,2 --recompute none,full --cp 1,2 --max-chunks 2 "
      "--fidelity analytic --top 1";
  const SearchRun all = run_search(experiment, flags + " --exhaustive");
  const SearchRun pruned = run_search(experiment, flags);
  INFO(all.output << "\n" << pruned.output);
  REQUIRE(all.rc == 0);
  REQUIRE(pruned.rc == 0);
  REQUIRE(all.rows.size() == pruned.rows.size());
  auto best = [](const std::vector<Json>& rows, std::size_t* simulated) {
    double b = 1e300;
    *simulated = 0;
    for (const auto& r : rows)
      if (r.contains("simulation.step_time_s")) {
        ++*simulated;
        const double step = r["simulation.step_time_s"].get<double>();
        if (r["status"] == "ok") b = std::min(b, step);
        CHECK(r["compute.step_time_lower_bound_s"].get<double>() <= step);
      }
    return b;
  };
  std::size_t simulated_all = 0, simulated_pruned = 0;
  const double optimum = best(all.rows, &simulated_all);
  CHECK(best(pruned.rows, &simulated_pruned) == optimum);
  CHECK(simulated_pruned < simulated_all);
  std::size_t skipped = 0;
  for (const auto& r : pruned.rows)
    if (r["status"] == "filtered" && r["reason"].get<std::string>().rfind("pruned: ", 0) == 0) ++skipped;
  CHECK(skipped > 0);
  CHECK_THAT(pruned.output, Catch::Contains(std::to_string(skipped) + " pruned: their bound is at least"));
}

TEST_CASE("search tries the presets of the experiment's stack and never ranks a plan the stack cannot run") {
  // DeepSpeed's pipeline engine refuses ZeRO-2 and ZeRO-3 (the deepspeed-zero stack's cannot_run).
  const SearchRun run = run_search(R"({"model": {"layers": 4, "hidden": 256, "heads": 4, "vocab": 1000,
      "seq_len": 128}, "cluster": {"preset": "dgx-a100", "nodes": 1}, "training": {"global_batch": 16},
      "stack": "deepspeed-zero"})",
                                   "--mode analyze --micro-batches 1 --recompute none --cp 1 --max-chunks 1");
  INFO(run.output);
  REQUIRE(run.rc == 0);
  CHECK_THAT(run.output,
             Catch::Contains("presets: dp, zero1, zero2, zero3, zero-offload, zero++, the deepspeed-zero stack's"));
  std::set<std::string> presets;
  std::size_t refused = 0;
  for (const auto& r : run.rows) {
    const Json& s = r["point"]["strategy"];
    presets.insert(s["preset"].get<std::string>());
    const bool sharded_grads = s["preset"] == "zero2" || s["preset"] == "zero3";
    if (sharded_grads && s["pp"].get<int>() > 1) {
      CHECK(r["status"] == "invalid");
      CHECK_THAT(r["reason"].get<std::string>(), Catch::Contains("the deepspeed-zero stack cannot run it"));
      ++refused;
    }
  }
  // The stack's six presets but ZeRO++, whose hpZ needs data-parallel replicas across nodes (one node here).
  CHECK(presets == std::set<std::string>{"dp", "zero1", "zero2", "zero3", "zero-offload"});
  CHECK(refused > 0);
}

// The bound counts the tensor-parallel collectives a layer waits for on its device's chain (the forward's two
// all-reduces without sp), not the compute alone: with NVLink slowed 45-fold the step is mostly those collectives,
// and the bound must follow it up while staying below it, at every fidelity.
namespace {

// The simulated step time and its lower bound for `experiment` at `fidelity`.
std::pair<double, double> step_and_bound(const std::string& experiment, const std::string& fidelity) {
  char pattern[] = "/tmp/placesim-bound-test-XXXXXX";
  const std::string dir = ::mkdtemp(pattern);
  std::ofstream(dir + "/exp.json") << experiment;
  std::string output;
  const int rc = test::run_placesim(
      "simulate " + dir + "/exp.json --quiet --fidelity " + fidelity + " --report " + dir + "/r.json", &output);
  INFO(output);
  REQUIRE(rc == 0);
  const Json r = Json::parse(std::ifstream(dir + "/r.json"));
  std::filesystem::remove_all(dir);
  return {r["simulation"]["step_time_s"].get<double>(), r["compute"]["step_time_lower_bound_s"].get<double>()};
}

// The step times and bounds of an experiment with a link at a fast and a slow figure.
struct LinkRuns {
  double fast_step, fast_bound, slow_step, slow_bound;
};

// Runs `cluster_head` + figure + `rest` (an experiment of 8 layers of hidden 4096 at 2048 tokens whose cluster
// section is cut where a link's figure goes) at `fidelity` with the `fast` and the `slow` figure, and checks that each
// bound stays below its step.
LinkRuns with_link(const std::string& cluster_head, const std::string& rest, const std::string& fast,
                   const std::string& slow, const std::string& fidelity) {
  const std::string model = R"({"model": {"layers": 8, "hidden": 4096, "heads": 32, "vocab": 32000, "seq_len": 2048},
        "cluster": )";
  LinkRuns r{};
  std::tie(r.fast_step, r.fast_bound) = step_and_bound(model + cluster_head + fast + rest, fidelity);
  std::tie(r.slow_step, r.slow_bound) = step_and_bound(model + cluster_head + slow + rest, fidelity);
  CHECK(r.fast_bound <= r.fast_step);
  CHECK(r.slow_bound <= r.slow_step);
  return r;
}

}  // namespace

TEST_CASE("The step-time bound follows a step made of exposed tensor-parallel collectives") {
  for (const std::string fidelity : {"analytic", "flow"}) {
    INFO(fidelity);
    const LinkRuns r = with_link(R"({"preset": "dgx-h100", "nodes": 1, "nvlink_bw": ")",
                                 R"("}, "strategy": {"preset": "megatron-core", "tp": 8, "sp": false},
        "training": {"global_batch": 4, "micro_batch": 1}})",
                                 "450 GB/s", "10 GB/s", fidelity);
    // A compute-only bound would stay at fast_bound; this one takes at least 80 % of what the collectives add.
    CHECK(r.slow_step > 5 * r.fast_step);
    CHECK(r.slow_bound - r.fast_bound >= 0.8 * (r.slow_step - r.fast_step));
  }
}

// Two stages on two nodes (tp 8 fills a node), 1F1B with Megatron-LM's blocking exchanges: each stage sends once per
// micro-batch (the first its outputs, the second its input gradients), 2048 x 4096 / 8 (sequence parallel) x 2 B =
// 2097152 B over the NIC. With the NIC slowed from 50 to 1 GB/s the bound grows by 4 micro-batches x 0.9 x 2097152 B
// x (1/1e9 - 1/50e9) s/B = 7.3985 ms, and stays below the simulated step.
TEST_CASE("The step-time bound counts the blocking pipeline sends at the NIC's bandwidth") {
  for (const std::string fidelity : {"analytic", "flow"}) {
    INFO(fidelity);
    const LinkRuns r = with_link(R"({"preset": "dgx-h100", "nodes": 2, "nic_bw": ")",
                                 R"("}, "strategy": {"preset": "megatron-core", "tp": 8, "pp": 2,
        "schedule": "1f1b", "p2p": "megatron"}, "training": {"global_batch": 4, "micro_batch": 1}})",
                                 "50 GB/s", "1 GB/s", fidelity);
    CHECK(r.slow_bound - r.fast_bound == Approx(4 * 0.9 * 2097152 * (1 / 1e9 - 1 / 50e9)).epsilon(1e-6));
  }
}

// Megatron-Core's combined 1F1B pairs nothing when a step is one micro-batch (its forward and backward alone): such a
// candidate is its plain twin's, simulated once; with micro-batches to pair it is a candidate of its own.
TEST_CASE("search simulates once a combined 1F1B candidate with nothing to pair") {
  const SearchRun run =
      run_search(R"({"model": {"family": "llama", "layers": 4, "hidden": 256, "heads": 4, "vocab": 1000,
      "seq_len": 128, "experts": 4, "top_k": 2, "moe_ffn": 256}, "cluster": {"preset": "dgx-a100", "nodes": 1},
      "training": {"global_batch": 32}})",
                 "--presets zero1 --micro-batches 1,4 --recompute none --cp 1 --max-chunks 1 --fidelity analytic "
                 "--exhaustive");
  INFO(run.output);
  REQUIRE(run.rc == 0);
  std::size_t twins = 0, own = 0;
  for (const Json& r : run.rows) {
    const Json& st = r["point"]["strategy"];
    if (!st.value("ep_overlap", false) || st["pp"] != 1 || r["status"] == "invalid") continue;
    // 32 sequences over dp 8 in micro-batches of 4: one micro-batch a step; of 1: four.
    const bool one = st["dp"] == 8 && r["point"]["training.micro_batch"] == 4;
    const bool twin = r.value("reason", "").rfind("the same candidate as #", 0) == 0;
    CHECK(twin == one);
    (twin ? twins : own) += 1;
  }
  CHECK(twins > 0);
  CHECK(own > 0);
}

// Presets that resolve to the same strategy (dp and megatron-3d: both replicate every state and exchange stages as
// Megatron-LM does; megatron-3d's recompute is the search's to set) are one candidate, simulated once; a preset
// that places a state otherwise (zero1 shards the optimizer) is not the same.
TEST_CASE("search simulates once the candidates of presets that resolve to the same strategy") {
  const SearchRun run = run_search(R"({"model": {"layers": 4, "hidden": 256, "heads": 4, "vocab": 1000,
      "seq_len": 128}, "cluster": {"preset": "dgx-a100", "nodes": 1}, "training": {"global_batch": 16}})",
                                   "--presets dp,megatron-3d,zero1 --micro-batches 1 --recompute none --cp 1 "
                                   "--max-chunks 1 --fidelity analytic --exhaustive");
  INFO(run.output);
  REQUIRE(run.rc == 0);
  std::map<std::int64_t, const Json*> by_index;
  for (const Json& r : run.rows) by_index[r["index"].get<std::int64_t>()] = &r;
  std::size_t twins = 0, zero1_simulated = 0;
  for (const Json& r : run.rows) {
    const auto preset = r["point"]["strategy"]["preset"].get<std::string>();
    const std::string reason = r.value("reason", "");
    if (preset == "zero1" && r.contains("simulation.step_time_s")) ++zero1_simulated;
    if (reason.rfind("the same candidate as #", 0) != 0) continue;
    const Json& kept = *by_index.at(std::stoll(reason.substr(23)));
    CHECK(preset == "megatron-3d");
    CHECK(kept["point"]["strategy"]["preset"] == "dp");
    Json a = r["point"], b = kept["point"];
    a["strategy"].erase("preset");
    b["strategy"].erase("preset");
    CHECK(a == b);
    CHECK(kept.contains("simulation.step_time_s"));
    ++twins;
  }
  CHECK(twins > 0);
  CHECK(zero1_simulated > 0);
  CHECK_THAT(run.output, Catch::Contains(std::to_string(twins) + " the same as another"));
}

// A simulation that dies (the simulator's process killed by SIGKILL, as the kernel's out-of-memory killer does) beside
// others of its batch is run again alone; when it dies alone too its candidate is left unranked, and the search says
// so after the table, with the reason, and exits 1, instead of ranking the rest as if they were all.
TEST_CASE("search runs a candidate killed beside others again alone, and says which ones failed") {
  char pattern[] = "/tmp/placesim-search-fail-XXXXXX";
  const std::string dir = ::mkdtemp(pattern);
  // The real simulator, except that a tp 2 candidate is killed: always, or only the first time (a marker per input).
  const auto simulator =
      [&](bool once) {
        const std::string kill = once ? "key=$(printf '%s' \"$input\" | md5sum | cut -c1-12); [ -f " + dir +
                                            "/$key ] || { touch " + dir + "/$key; kill -9 $$; }"
                                      : std::string("kill -9 $$");
        std::ofstream(dir + "/simulator.sh")
            << "#!/bin/sh\n[ \"$1\" = simulate ] && [ \"$2\" = - ] || exec " PLACESIM_BINARY
               " \"$@\"\ninput=$(cat)\ncase \"$input\" in *'\"tp\":2'*) "
            << kill << ";; esac\nprintf '%s' \"$input\" | exec " PLACESIM_BINARY " \"$@\"\n";
        ::chmod((dir + "/simulator.sh").c_str(), 0755);
        return run_search(R"({"model": {"layers": 4, "hidden": 256, "heads": 4, "vocab": 1000,
        "seq_len": 128}, "cluster": {"preset": "dgx-a100", "nodes": 1}, "training": {"global_batch": 16}})",
                          "--presets megatron-core --micro-batches 1 --recompute none --cp 1 --max-chunks 1 "
                          "--exhaustive --jobs 2 --simulator " +
                              dir + "/simulator.sh");
      };
  const auto count = [](const SearchRun& run, const char* status) {
    std::size_t n = 0;
    for (const Json& r : run.rows) n += r["status"] == status;
    return n;
  };
  {
    const SearchRun run = simulator(true);
    INFO(run.output);
    CHECK(run.rc == 0);
    CHECK(count(run, "error") == 0);
    CHECK_THAT(run.output, Catch::Contains(" simulated again alone after the kernel killed them beside others"));
  }
  {
    const SearchRun run = simulator(false);
    INFO(run.output);
    CHECK(run.rc == 1);
    const std::size_t failed = count(run, "error");
    CHECK(failed > 0);
    CHECK(count(run, "ok") > 0);
    CHECK_THAT(run.output, Catch::Contains("warning: " + std::to_string(failed) + " simulated candidate"));
    CHECK_THAT(run.output, Catch::Contains("failed and are not ranked (any of them could have been the best)"));
    CHECK_THAT(run.output, Catch::Contains("simulator was killed by signal 9 (SIGKILL, most often the kernel's "
                                           "out-of-memory killer"));
  }
  std::filesystem::remove_all(dir);
}

// Which candidates start before the best step is known depends on how the simulations' times fall, but the rows and
// the counts do not: a candidate whose bound is at least the best step is pruned whether or not a slot ran it.
TEST_CASE("search gives the same rows and counts with one simulation at a time and with several") {
  const std::string experiment = R"({"model": {"layers": 8, "hidden": 512, "heads": 8, "vocab": 1000,
      "seq_len": 256}, "cluster": {"preset": "dgx-a100", "nodes": 2}, "training": {"global_batch": 32}})";
  const std::string flags =
      "--presets megatron-3d,zero1 --micro-batches 1,2 --recompute none --cp 1 --max-chunks 2 "
      "--fidelity analytic --top 3 --jobs ";
  SearchRun one = run_search(experiment, flags + "1");
  SearchRun three = run_search(experiment, flags + "3");
  REQUIRE(one.rc == 0);
  REQUIRE(three.rc == 0);
  auto by_index = [](std::vector<Json>& rows) {
    std::sort(rows.begin(), rows.end(),
              [](const Json& a, const Json& b) { return a["index"].get<int>() < b["index"].get<int>(); });
  };
  by_index(one.rows);
  by_index(three.rows);
  CHECK(one.rows == three.rows);
  CHECK(one.output == three.output);
  std::size_t pruned = 0;
  for (const Json& r : one.rows) pruned += r.value("reason", std::string()).rfind("pruned:", 0) == 0;
  CHECK(pruned > 0);
}
