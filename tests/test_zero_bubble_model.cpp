// Zero-bubble schedules (ZB-H1, ZB-H2, ZB-V; Qi et al., arXiv 2401.10241 and 2405.15362) and DualPipeV on a model's
// task graph: each layer's backward split into its input-gradient task B and its weight-gradient task W, the
// activations held until W, the gradients synchronised after the last W, ZB-V's and DualPipeV's chunks in a V;
// `verify` executes them numerically against one device.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "strategies/placement/Layout.hpp"
#include "tests/Helpers.hpp"

using namespace placesim;
using placesim::test::run_placesim;

namespace {

// Eight llama layers on four stages (two each), ZeRO-1 over two data-parallel ranks, 16 micro-batches a rank.
std::string experiment(const std::string& schedule, const std::string& p2p = "async") {
  return R"({"model": {"family": "llama", "layers": 8, "hidden": 512, "heads": 8, "vocab": 1024, "seq_len": 256,
    "ffn": 1024, "tied_embeddings": false},
    "training": {"global_batch": 32, "micro_batch": 1, "recompute": "none"},
    "strategy": {"preset": "zero1", "dp": 2, "pp": 4, "p2p": ")" +
         p2p + R"(", "schedule": ")" + schedule + R"("},
    "cluster": {"preset": "dgx-a100", "nodes": 1}})";
}

std::string write(const std::string& text) {
  static int n = 0;
  const std::string path = "/tmp/placesim-zb-model-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
  std::ofstream(path + ".json") << text;
  return path;
}

double step(const Json& r) {
  return r["simulation"]["step_time_s"].get<double>();
}

double bubble(const Json& r) {
  return r["pipeline"]["schedule_bubble_fraction_mean"].get<double>();
}

}  // namespace

TEST_CASE("ZB-H1 and ZB-H2 on a model fill the 1F1B bubble with weight-gradient tasks") {
  const Json one = test::simulate_report(experiment("1f1b"));
  const Json h1 = test::simulate_report(experiment("zb-h1"));
  const Json h2 = test::simulate_report(experiment("zb-h2"));
  // The same work, less idle time: each split schedule is faster than the one before it, its bubble smaller.
  CHECK(step(h1) < step(one));
  CHECK(step(h2) < step(h1));
  CHECK(bubble(h1) < bubble(one));
  CHECK(bubble(h2) < bubble(h1));
  // Every exact figure of the simulation equals the analysis: bytes, and the activations held until each W (ZB-H1
  // p = 4 micro-batches on every stage, ZB-H2 2p - 1 = 7, as Qi et al. Table 1).
  for (const Json* r : {&h1, &h2})
    for (const Json& row : (*r)["validation"]) {
      INFO(row["figure"].get<std::string>());
      CHECK(row["difference"].get<double>() == 0);
    }
  // ZB-H2 holds 7 micro-batches where ZB-H1 holds 4: its activations grow by at least 6/4 (the head's loss buffers,
  // held once, dilute the 7/4).
  CHECK(h2["memory"]["activations_bytes"].get<double>() > 1.5 * h1["memory"]["activations_bytes"].get<double>());
}

// A trace names each task for what ran: a split backward's B "bwd", its W "wgrad" (category weight-grad), never the
// optimizer's "optimizer step".
TEST_CASE("A trace names the weight-gradient tasks of a split backward wgrad") {
  const std::string path = write(experiment("zb-h1"));
  std::string out;
  REQUIRE(run_placesim("simulate " + path + ".json --trace " + path + ".trace.json --trace-devices 0", &out) == 0);
  std::ifstream in(path + ".trace.json");
  const Json trace = Json::parse(in);
  int weights = 0, optimizers = 0;
  for (const Json& event : trace["traceEvents"]) {
    if (event.value("ph", "") != "X") continue;
    const std::string name = event["name"].get<std::string>(), cat = event["cat"].get<std::string>();
    if (cat == "weight-grad") {
      ++weights;
      CHECK(name.rfind("wgrad L", 0) == 0);
    }
    if (name.rfind("optimizer step", 0) == 0) ++optimizers;
  }
  // Stage 0 holds two layers, each its own group (the task budget allows one layer per task): a W per layer and
  // micro-batch, 2 x 16; one optimizer step.
  CHECK(weights == 32);
  CHECK(optimizers == 1);
}

TEST_CASE("A zero-bubble schedule with blocking exchanges is refused naming strategy.p2p") {
  const std::string path = write(experiment("zb-h1", "megatron"));
  std::string out;
  CHECK(run_placesim("simulate " + path + ".json", &out) != 0);
  CHECK_THAT(out, Catch::Contains("strategy.schedule=zb-h1 with strategy.p2p=megatron"));
  CHECK_THAT(out, Catch::Contains("set strategy.p2p=async"));
}

TEST_CASE("verify executes the zero-bubble schedules and DualPipe(V) and finds them equal to one device") {
  for (const std::string schedule : {"zb-h1", "zb-h2", "zb-v", "dualpipev", "interleaved-zb", "dualpipe"}) {
    INFO(schedule);
    std::string out;
    CHECK(run_placesim("verify " + std::string(PLACESIM_SOURCE_DIR) +
                           "/examples/verify/pipedream-s4.json --set strategy.schedule=" + schedule +
                           " --set strategy.p2p=async --set strategy.preset=zero1 --set strategy.dp=2",
                       &out) == 0);
    CHECK_THAT(out, Catch::Contains("verdict: trains the same model as one device; checker and execution agree"));
  }
}

TEST_CASE("A V places chunk c of stage s at virtual stage s or 2p - 1 - s with the head on stage 0") {
  // 8 layers over 4 stages in a V (Qi et al., arXiv 2405.15362, Figure 4; DualPipeV): stage s holds layer s and
  // layer 7 - s, so stage 0 holds the first and the last layer, the embedding and the output layer.
  const Experiment e = test::experiment(experiment("zb-v"));
  const std::vector<StageLayout> layouts = stage_layouts(e);
  REQUIRE(layouts.size() == 4);
  for (int s = 0; s < 4; ++s) {
    INFO("stage " << s);
    CHECK(layouts[static_cast<std::size_t>(s)].chunk_first == std::vector<std::int64_t>{s, 7 - s});
    CHECK(layouts[static_cast<std::size_t>(s)].chunk_layers == std::vector<std::int64_t>{1, 1});
    CHECK((layouts[static_cast<std::size_t>(s)].head_elems > 0) == (s == 0));
    CHECK((layouts[static_cast<std::size_t>(s)].embed_elems > 0) == (s == 0));
  }
  // Tied embeddings need no copy on another stage: the V's ends meet on stage 0.
  Experiment tied = e;
  tied.model.tied_embeddings = true;
  for (const StageLayout& st : stage_layouts(tied)) CHECK(st.tied_copy_elems == 0);
  // 10 layers: ceil(10 / 4) = 3 a stage, stages 0 and 1 one fewer; the odd layer in the first chunk.
  CHECK(v_stage_layer_counts(10, 4) == std::vector<std::int64_t>{1, 1, 2, 2, 1, 1, 1, 1});
}

TEST_CASE("ZB-V and DualPipeV on a model hold their papers' activations and exchange only across stages") {
  const Json h1 = test::simulate_report(experiment("zb-h1"));
  const Json h2 = test::simulate_report(experiment("zb-h2"));
  const Json v = test::simulate_report(experiment("zb-v"));
  const Json dv = test::simulate_report(experiment("dualpipev"));
  for (const Json* r : {&v, &dv})
    for (const Json& row : (*r)["validation"]) {
      INFO(row["figure"].get<std::string>());
      CHECK(row["difference"].get<double>() == 0);
    }
  // Activations at the peak, in layer-passes of this 2-layer stage plus the loss (the same on every schedule):
  // ZB-H1 p = 4 micro-batches = 8, ZB-H2 2p - 1 = 7 micro-batches = 14; ZB-V 2p = 8 chunk passes of one layer = 8,
  // as ZB-H1 (Qi et al., arXiv 2405.15362, Table 1); DualPipeV 2p + 1 = 9 (DeepSeek-V3 report, Table 2: PP + 1 chunks).
  auto act = [](const Json& r) { return r["memory"]["activations_bytes"].get<double>(); };
  const double layer = (act(h2) - act(h1)) / 6;
  CHECK(act(v) == act(h1));
  CHECK(act(dv) - act(h1) == Approx(layer).epsilon(1e-12));
  // ZB-V keeps a smaller bubble than ZB-H2 (with ZB-H1's memory).
  CHECK(bubble(v) < bubble(h2));
  // The exchanges: every stage sends each micro-batch's boundary forward and its gradient back once per chunk, except
  // where the V turns (the last stage feeds itself) and where it ends (stage 0): 4 boundaries on the middle stages,
  // 2 on the ends, against 2 and 1 under ZB-H1.
  auto p2p = [](const Json& r, int stage) {
    return r["communication"]["per_stage"][stage]["by_class"]["pp_p2p"].get<double>();
  };
  for (int s = 0; s < 4; ++s) CHECK(p2p(v, s) == (s == 0 || s == 3 ? 2 : 4) * p2p(h1, 1) / 2);
}

TEST_CASE("DualPipeV on a model refuses fewer micro-batches than twice the stages") {
  const std::string path = write(experiment("dualpipev"));
  std::string out;
  CHECK(run_placesim("check " + path + ".json --set training.global_batch=12", &out) != 0);
  CHECK_THAT(out, Catch::Contains("strategy.microbatches=6"));
}

// Interleaved zero bubble on the model: 16 micro-batches, 2 chunks of one layer: rounds of 16 / max(1, 16 / 4) = 4,
// so (2 - 1) 4 + 4 = 8 chunk-forwards of one layer at the peak, ZB-H1's 4 micro-batches of two layers.
TEST_CASE("Interleaved zero bubble on a model holds ZB-H1's activations with less bubble than interleaved") {
  const Json h1 = test::simulate_report(experiment("zb-h1"));
  const Json inter = test::simulate_report(experiment("interleaved"));
  const Json izb = test::simulate_report(experiment("interleaved-zb"));
  for (const Json& row : izb["validation"]) {
    INFO(row["figure"].get<std::string>());
    CHECK(row["difference"].get<double>() == 0);
  }
  CHECK(izb["memory"]["activations_bytes"].get<double>() == h1["memory"]["activations_bytes"].get<double>());
  CHECK(bubble(izb) < bubble(inter));
}
