// End to end: `placesim simulate --trace --report` on two DGX A100 nodes, the trace read back by the
// validator. The expected counts are worked out by hand from the experiment, not read from the simulator:
// compute slices per device = micro-batches x layers on the device's stage x passes, one flow per pipeline send, and
// the memory counter's maximum per device = the report's peak_memory_bytes.total of that device.
// One simulation per process (SimGrid), so each case runs the CLI.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/Helpers.hpp"
#include "traces/chrome/ChromeTrace.hpp"
#include "traces/chrome/TraceValidator.hpp"
#include "traces/output/OutputFile.hpp"
#include "workloads/json/JsonReader.hpp"

using namespace placesim;
using placesim::test::run_placesim;

namespace {

/// 8 heads so that tp 2 divides them; `layers` is the experiment's own.
std::string model(int layers) {
  return R"({"layers": )" + std::to_string(layers) + R"(, "hidden": 512, "heads": 8, "vocab": 1000, "seq_len": 256})";
}

struct TracedRun {
  TraceCheck check;
  Json report;
  Json trace;       ///< the trace parsed whole (plain traces only)
  std::string svg;  ///< the SVG overview (plain traces only)
};

/// Simulates the experiment on 2 x dgx-a100 with one compute task per layer, writing a trace (gzipped or plain, then
/// with an SVG too) and a report, which it reads back and removes.
TracedRun simulate_traced(const std::string& name, int layers, const std::string& strategy,
                          const std::string& flags = "", bool gzip = true) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("placesim-e2e-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string experiment = (dir / "experiment.json").string(), report = (dir / "report.json").string(),
                    trace = (dir / (gzip ? "trace.json.gz" : "trace.json")).string(),
                    svg = (dir / "trace.svg").string();
  std::ofstream(experiment) << R"({"model": )" << model(layers)
                            << R"(, "training": {"global_batch": 32, "micro_batch": 1}, "strategy": )" << strategy
                            << R"(, "cluster": {"preset": "dgx-a100", "nodes": 2}})";
  std::string out;
  int rc = run_placesim("simulate " + experiment + " --layer-group 1 --report " + report + " --trace " + trace +
                            (gzip ? "" : " --svg " + svg) + " " + flags,
                        &out);
  INFO(out.substr(0, 2000));
  REQUIRE(rc == 0);
  TracedRun run{validate_trace_file(trace), read_json_file(report), Json{}, ""};
  if (!gzip) {
    run.trace = Json::parse(read_text_file(trace));
    run.svg = read_text_file(svg);
  }
  std::filesystem::remove_all(dir);
  std::string problems;
  for (const auto& p : run.check.problems) problems += p + "\n";
  INFO(problems);
  REQUIRE(run.check.valid());
  return run;
}

/// Slices of category `cat` on one thread of `device` (0 when the thread has none).
std::size_t slices_on(const TraceCounts& counts, int device, Stream stream, const std::string& cat) {
  auto thread = counts.slices.find({trace_pid(device), trace_tid(stream)});
  if (thread == counts.slices.end()) return 0;
  auto n = thread->second.find(cat);
  return n == thread->second.end() ? 0 : n->second;
}

/// Every device's memory counter peaks at the report's peak_memory_bytes.total for that device, and the largest of
/// them is the report's overall peak.
void check_memory_counters(const TracedRun& run, int devices) {
  const Json& sim = run.report["simulation"];
  double largest = 0;
  for (int x = 0; x < devices; ++x) {
    INFO("device " << x);
    double peak = sim["devices"][static_cast<std::size_t>(x)]["peak_memory_bytes"]["total"].get<double>();
    REQUIRE(run.check.counts.counter_max.count(trace_pid(x)) == 1);
    CHECK(run.check.counts.counter_max.at(trace_pid(x)).at("memory") == peak);
    largest = std::max(largest, run.check.counts.counter_max.at(trace_pid(x)).at("memory"));
  }
  CHECK(largest == sim["peak_memory_bytes"]["total"].get<double>());
}

}  // namespace

TEST_CASE("A ZeRO-3 trace on 2 DGX A100 has micro-batches x layers x 2 compute events per device") {
  // dp 16 over both nodes: 32 samples / (micro-batch 1 x dp 16) = 2 micro-batches per device; 8 layers, no pipeline.
  // Each device: forward and backward of every layer for every micro-batch, plus the embedding's and the head's own
  // forward and backward tasks (one stage holds both), no recompute (activations kept), one optimizer step on its
  // shard. No pipeline, so no p2p and (coarse detail) no flows.
  const int dp = 16, microbatches = 2, layers = 8;
  TracedRun run = simulate_traced("zero3", layers, R"({"preset": "zero3", "dp": 16})");
  const TraceCounts& c = run.check.counts;
  CHECK(c.process_names.size() == dp);
  for (int x = 0; x < dp; ++x) {
    INFO("device " << x);
    CHECK(slices_on(c, x, Stream::Compute, "forward") == microbatches * (layers + 2));
    CHECK(slices_on(c, x, Stream::Compute, "backward") == microbatches * (layers + 2));
    CHECK(c.slices_of(trace_pid(x), "recompute") == 0);
    CHECK(slices_on(c, x, Stream::Compute, "optimizer") == 1);
    CHECK(c.slices_of(trace_pid(x), "p2p") == 0);
    CHECK(c.slices_of(trace_pid(x), "collective") > 0);  // the parameter gathers and gradient reduce-scatters
  }
  CHECK(c.flows == 0);
  check_memory_counters(run, dp);
}

TEST_CASE("The trace and the SVG of a simulation carry the report's step time") {
  TracedRun run = simulate_traced("step", 8, R"({"preset": "zero3", "dp": 16})", "", false);
  const double reported = run.report["simulation"]["step_time_s"].get<double>();
  REQUIRE(reported > 0);
  CHECK(run.trace["otherData"]["step_time_s"].get<double>() == reported);
  char heading[64];  // the SVG's title line states the step in ms with 3 decimals
  std::snprintf(heading, sizeof heading, "step %.3f ms", static_cast<double>(std::llround(reported * 1e9)) * 1e-6);
  CHECK_THAT(run.svg, Catch::Contains(heading));
}

TEST_CASE("A 3D-parallel 1F1B trace on 2 DGX A100 has the schedule's compute events and a flow per pipeline send") {
  // dp 2 x tp 2 x pp 4 (megatron-3d: activations recomputed). 32 samples / (micro-batch 1 x dp 2) = 16 micro-batches.
  // 10 layers over 4 stages split unevenly, end stages lighter: 2, 3, 3, 2. Per device of stage s: forward, recompute
  // and backward of each of its layers for each micro-batch, then one optimizer step.
  // Pipeline sends per device: activations to the next stage (all but the last stage) and gradients to the previous
  // one (all but the first), one per micro-batch each; each is received by the peer and linked to it by one flow.
  const int dp = 2, tp = 2, pp = 4, microbatches = 16, devices = dp * tp * pp;
  const int stage_layers[pp] = {2, 3, 3, 2};
  TracedRun run =
      simulate_traced("3d", 10, R"({"preset": "megatron-3d", "dp": 2, "tp": 2, "pp": 4, "schedule": "1f1b"})");
  const TraceCounts& c = run.check.counts;
  CHECK(c.process_names.size() == devices);
  std::size_t sends = 0;
  for (int x = 0; x < devices; ++x) {
    const int stage = x / (dp * tp);  // Megatron rank order: tp fastest, then dp, then pp
    const std::size_t per_pass = static_cast<std::size_t>(microbatches * stage_layers[stage]);
    // The first stage also runs the embedding and the last the head, each a task of its own per micro-batch and pass
    // (not recomputed).
    const std::size_t ends = static_cast<std::size_t>(microbatches * ((stage == 0) + (stage == pp - 1)));
    INFO("device " << x << " stage " << stage);
    CHECK(slices_on(c, x, Stream::Compute, "forward") == per_pass + ends);
    CHECK(slices_on(c, x, Stream::Compute, "recompute") == per_pass);
    CHECK(slices_on(c, x, Stream::Compute, "backward") == per_pass + ends);
    CHECK(slices_on(c, x, Stream::Compute, "optimizer") == 1);
    const int neighbours = (stage > 0 ? 1 : 0) + (stage < pp - 1 ? 1 : 0);
    CHECK(slices_on(c, x, Stream::PpSend, "p2p") == static_cast<std::size_t>(neighbours * microbatches));
    // Receives from both neighbours may overlap and spill onto a second pp-recv thread: count over the process.
    CHECK(c.slices_of(trace_pid(x), "p2p") == static_cast<std::size_t>(2 * neighbours * microbatches));
    sends += slices_on(c, x, Stream::PpSend, "p2p");
  }
  CHECK(sends == static_cast<std::size_t>(dp * tp * 2 * (pp - 1) * microbatches));
  CHECK(c.flows == sends);  // coarse detail: the only flows are pipeline sends, each with its receive
  check_memory_counters(run, devices);
  CHECK(run.report["simulation"]["peak_memory_bytes"]["activations"].get<double>() > 0);
}

TEST_CASE("A fine-detail 3D-parallel trace passes the validator with a flow per pipeline send and per ring hop") {
  // Same experiment. Fine detail adds one flow from every collective step to the step it feeds on the receiver, so
  // there are more flows than the 192 pipeline sends; compute events and memory are unchanged.
  const int dp = 2, tp = 2, pp = 4, microbatches = 16, devices = dp * tp * pp;
  TracedRun run =
      simulate_traced("3d-fine", 10, R"({"preset": "megatron-3d", "dp": 2, "tp": 2, "pp": 4, "schedule": "1f1b"})",
                      "--trace-detail fine --fidelity full");
  const TraceCounts& c = run.check.counts;
  CHECK(slices_on(c, 0, Stream::Compute, "forward") ==
        static_cast<std::size_t>(microbatches * (2 + 1)));  // + embedding
  CHECK(c.flows > static_cast<std::size_t>(dp * tp * 2 * (pp - 1) * microbatches));
  check_memory_counters(run, devices);
}
