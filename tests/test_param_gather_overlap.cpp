// strategy.param_gather_overlap: Megatron-Core's --overlap-param-gather, the updated shards gathered during the next
// step's first forward.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "tests/Helpers.hpp"

using namespace placesim;

namespace {

struct Event {
  std::string name;
  double start = 0, end = 0;  // us
};

// A GPT of 4 layers on 2 H100 nodes (dp 16, the distributed optimizer), every layer group (the first holds the
// embeddings, the last the head) its own gradient and gather bucket. A long micro-batch: each layer's forward
// outlasts the gather of the next layer's bucket. Overlap interference off: a gather beside a forward costs it
// nothing, so the step's change is the gathers' time alone.
std::string experiment(const std::string& extra) {
  return R"({"model": {"family": "gpt", "layers": 4, "hidden": 2048, "heads": 16, "vocab": 256, "seq_len": 4096},
    "training": {"global_batch": 64, "micro_batch": 4},
    "strategy": {"preset": "megatron-core", "dp": 16, "bucket_bytes": "1MB")" +
         extra + R"(}, "cluster": {"preset": "dgx-h100", "nodes": 2,
    "accelerator": {"preset": "h100-sxm", "interference": "off"}}})";
}

// Device 0's trace events (name, start, end) and the step time of a run.
std::vector<Event> device0_events(const std::string& extra, double* step_s) {
  const std::string path = std::string(PLACESIM_BINARY) + ".pgo.json", trace = path + ".trace.json";
  std::ofstream(path) << experiment(extra);
  std::string out;
  REQUIRE(test::run_placesim("simulate " + path + " --fidelity analytic --layer-group 1 --quiet --reproducible " +
                                 "--report " + path + ".report --trace " + trace + " --trace-devices 0",
                             &out) == 0);
  std::ifstream report(path + ".report");
  *step_s = Json::parse(report)["simulation"]["step_time_s"].get<double>();
  std::ifstream in(trace);
  const Json j = Json::parse(in);
  std::vector<Event> events;
  for (const Json& e : j["traceEvents"])
    if (e.value("ph", "") == "X")
      events.push_back(
          {e["name"].get<std::string>(), e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
  for (const std::string& p : {path, path + ".report", trace}) std::remove(p.c_str());
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.start < b.start; });
  return events;
}

std::vector<Event> named(const std::vector<Event>& events, const std::string& part) {
  std::vector<Event> out;
  for (const Event& e : events)
    if (e.name.find(part) != std::string::npos) out.push_back(e);
  return out;
}

}  // namespace

// Megatron-Core core_v0.14.0 distrib_optimizer.py step_with_ready_grads: with overlap_param_gather "the first
// all-gather is launched asynchronously in the next optimizer.zero_grad() call and subsequent all-gathers are launched
// in the forward pre-hook"; param_and_grad_buffer.py finish_param_sync waits for a bucket and launches the next. By
// hand, with one bucket per layer group (embeddings and layer 0, layers 1 and 2, layer 3 and the head) and each
// layer's forward longer than the next bucket's gather: the first bucket's gather runs first, exposed, and every later
// one beside the layer before its own. Exposed is the first gather where all four were: the step shortens by the
// other three gathers exactly.
TEST_CASE("The overlapped parameter gather runs in the first forward: all but the first gather hidden, by hand") {
  double plain_s = 0, overlapped_s = 0;
  const std::vector<Event> plain = device0_events("", &plain_s);
  const std::vector<Event> overlapped = device0_events(R"(, "param_gather_overlap": true)", &overlapped_s);
  const std::vector<Event> after = named(plain, "zero_gather"), before = named(overlapped, "zero_gather");
  REQUIRE(after.size() == 4);
  REQUIRE(before.size() == 4);
  // Without: every gather after the optimizer.
  const std::vector<Event> optimizer = named(plain, "optimizer step");
  REQUIRE(optimizer.size() == 1);
  for (const Event& g : after) CHECK(g.start >= optimizer[0].end - 1e-6);
  // With: the first at the step's start, each done before its group's first forward.
  CHECK(before[0].start == 0);
  const char* firsts[] = {"fwd embedding mb0", "fwd L1 mb0", "fwd L2 mb0", "fwd L3 mb0"};
  for (int b = 0; b < 4; ++b) {
    const std::vector<Event> forward = named(overlapped, firsts[b]);
    REQUIRE(forward.size() == 1);
    CHECK(forward[0].start >= before[static_cast<std::size_t>(b)].end - 1e-6);
  }
  // Layer b - 1's forward outlasts bucket b's gather (the case's premise), so only the first stays exposed.
  const char* beside[] = {"", "fwd L0 mb0", "fwd L1 mb0", "fwd L2 mb0"};
  for (int b = 1; b < 4; ++b) {
    const Event layer = named(overlapped, beside[b])[0], gather = before[static_cast<std::size_t>(b)];
    CHECK(layer.end - layer.start > gather.end - gather.start);
  }
  double hidden_us = 0;
  for (int b = 1; b < 4; ++b)
    hidden_us += after[static_cast<std::size_t>(b)].end - after[static_cast<std::size_t>(b)].start;
  CHECK(plain_s - overlapped_s == Approx(hidden_us * 1e-6).epsilon(1e-5));  // the trace in ns
}

TEST_CASE("param_gather_overlap is refused where nothing is gathered after the step and supplied by the NeMo stack") {
  const std::string fsdp = R"({"model": "llama3-8b", "strategy": {"preset": "fsdp", "dp": 8,
      "param_gather_overlap": true}, "cluster": {"preset": "dgx-h100", "nodes": 1}})";
  CHECK_THROWS_WITH(test::experiment(fsdp), Catch::Contains("strategy.param_gather_overlap=true") &&
                                                Catch::Contains("SG/S/S/R") && Catch::Contains("drop it"));
  // The nemo-24.07 stack supplies it (NeMo's recipes); on FSDP it has nothing to move and is accepted.
  const Experiment nemo = test::experiment(R"({"model": "llama3-8b", "stack": "nemo-24.07",
      "strategy": {"preset": "megatron-core", "dp": 8}})");
  CHECK(nemo.strategy.param_gather_overlap);
  CHECK_FALSE(nemo.provenance.written("strategy.param_gather_overlap"));
  const Experiment nemo_fsdp = test::experiment(R"({"model": "llama3-8b", "stack": "nemo-24.07",
      "strategy": {"preset": "fsdp", "dp": 8}})");
  CHECK(nemo_fsdp.strategy.param_gather_overlap);
  // The echo carries it only where it acts, so that a plan read back from a report is not refused.
  CHECK_FALSE(strategy_to_json(nemo_fsdp.strategy).contains("param_gather_overlap"));
  CHECK(strategy_to_json(nemo.strategy)["param_gather_overlap"] == true);
}

// With experts, the experts' updated shards are gathered per MoE layer before its first forward, on the
// expert-data-parallel group: the same bytes as the after-step gather, and the step no longer ends with them.
TEST_CASE("Overlapped parameter gathers with experts move the after-step gathers' bytes in a shorter step") {
  const std::string moe = R"({"model": {"family": "llama", "layers": 4, "hidden": 1024, "heads": 8, "kv_heads": 8,
      "ffn": 2816, "vocab": 1024, "seq_len": 2048, "experts": 8, "top_k": 2, "moe_ffn": 1408},
    "training": {"global_batch": 32, "micro_batch": 2},
    "strategy": {"preset": "megatron-core", "dp": 16, "ep": 4, "param_gather_overlap": )";
  const std::string cluster = R"(}, "cluster": {"preset": "dgx-h100", "nodes": 2}})";
  const Json plain = test::simulate_report(moe + "false" + cluster, "--fidelity analytic");
  const Json overlapped = test::simulate_report(moe + "true" + cluster, "--fidelity analytic");
  REQUIRE(plain["simulation"]["bytes_sent"]["by_class"]["expert_data_sync"].get<double>() > 0);
  CHECK(overlapped["simulation"]["bytes_sent"] == plain["simulation"]["bytes_sent"]);
  CHECK(overlapped["simulation"]["bytes_sent"]["by_class"]["expert_data_sync"] ==
        plain["simulation"]["bytes_sent"]["by_class"]["expert_data_sync"]);
  CHECK(overlapped["simulation"]["step_time_s"].get<double>() < plain["simulation"]["step_time_s"].get<double>());
}
