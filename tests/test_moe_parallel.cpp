// Expert parallelism: expert memory under ep, all-to-all bytes, expert-data-parallel collectives, skewed routing and
// the straggler it makes, simulated bytes against analytic bytes. Numbers worked by hand in the comments.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <numeric>

#include "strategies/analytic/Analytic.hpp"
#include "strategies/analytic/ComputeModel.hpp"
#include "strategies/placement/Routing.hpp"
#include "tests/FileHelpers.hpp"
#include "tests/Helpers.hpp"

using namespace placesim;
using placesim::test::run_placesim;
using placesim::test::write_temp;

namespace {

// Two MoE layers, hidden 64 (4 heads of 16), 4 experts of moe_ffn 32, top-2, vocab 256, llama family (no biases,
// SwiGLU, RMSNorm, untied). By hand:
//   attention 2 x 64 x 64 (Q, O) + 2 x 64 x 64 (K, V) = 16384, norms 2 x 64 = 128 -> 16512
//   router 4 x 64 = 256 -> an MoE layer's dense part 16768; one expert 3 x 64 x 32 = 6144
//   embedding 256 x 64 = 16384, head 16384, final norm 64
//   total 2 x (16768 + 4 x 6144) + 16384 + 16384 + 64 = 115520
const char* kModel = R"({"family": "llama", "layers": 2, "hidden": 64, "heads": 4, "vocab": 256, "seq_len": 128,
  "ffn": 128, "experts": 4, "top_k": 2, "moe_ffn": 32})";

// Placement mechanics under one stack (fp32 gradients), whichever stack a preset names.
Experiment moe(const std::string& strategy, const std::string& training = R"({"global_batch": 8, "micro_batch": 1})",
               const std::string& stack = "megatron-lm-2022") {
  return test::experiment(std::string(R"({"model": )") + kModel + R"(, "stack": ")" + stack + R"(", "training": )" +
                          training + R"(, "strategy": )" + strategy + "}");
}

double by_class(const Analysis& a, CommClass c) {
  return a.comm.by_class[static_cast<std::size_t>(c)];
}

// The JSON report of `placesim simulate` on `experiment`.
Json simulate_report(const std::string& experiment, const std::string& args = "") {
  static int runs = 0;
  const std::string tag = std::to_string(runs++);
  std::string out;
  const std::string path = write_temp("e" + tag + ".json", experiment);
  const std::string report = path + ".report";
  INFO(out);
  REQUIRE(run_placesim("simulate " + path + " " + args + " --report " + report, &out) == 0);
  std::ifstream in(report);
  return Json::parse(in);
}

void check_bytes_identical(const Json& report) {
  for (const Json& row : report["validation"]) {
    const std::string figure = row["figure"].get<std::string>();
    if (figure.rfind("communication.", 0) == 0 || figure.rfind("devices whose bytes", 0) == 0) {
      INFO(figure);
      CHECK(row["difference"].get<double>() == 0);
    }
  }
}

}  // namespace

TEST_CASE("MoE parameters and expert memory under ep, by hand") {
  const Experiment replicated = moe(R"({"preset": "dp", "dp": 2})");
  CHECK(total_parameters(replicated.model) == 115520);
  // Every device holds every expert: 2 x 16768 + 16384 + 16448 (final norm + head) = 66368 dense + 49152 experts.
  CHECK(analyze(replicated).memory.parameters == 115520.0 * 2);
  // ep 2: each device holds 2 of the 4 experts of each layer: 2 layers x 2 x 6144 = 24576 expert elements.
  const Experiment ep2 = moe(R"({"preset": "dp", "dp": 2, "ep": 2})");
  CHECK(analyze(ep2).memory.parameters == (66368.0 + 24576) * 2);
  CHECK(analyze(ep2).memory.gradients == (66368.0 + 24576) * 4);
  CHECK(analyze(ep2).memory.optimizer == (66368.0 + 24576) * 12);
}

TEST_CASE("ZeRO-1 with ep 2 over dp 4: experts sharded over edp 2, their collectives by hand") {
  const Experiment e = moe(R"({"preset": "zero1", "dp": 4, "ep": 2})");
  REQUIRE(e.strategy.edp() == 2);
  const Analysis a = analyze(e);
  // Dense optimizer over dp 4, each unit padded: layers 2 x 16768 / 4 = 8384, embedding 4096, head 16448 / 4 = 4112
  // -> 16592; experts over edp 2: 24576 / 2 = 12288.
  CHECK(a.memory.optimizer == (16592.0 + 12288) * 12);
  // Expert gradients reduce-scattered over edp 2 (fp32): 24576 / 2 = 12288 elements sent, x 4 B = 49152; updated
  // expert parameters all-gathered after the step: 12288 x 2 B = 24576.
  CHECK(by_class(a, CommClass::ExpertDataSync) == 49152 + 24576);
  REQUIRE(a.stages.front().expert_collectives.size() == 2);
  // All-to-all: each rank routes 128 tokens x top-2 = 256 assignments, balanced 128 to each of the 2 ep ranks; it
  // sends 128 tokens x 64 x 2 B = 16384 B to the other rank per all-to-all, 4 per MoE layer and micro-batch
  // (dispatch, combine, their gradients): 2 layers x 2 micro-batches x 4 x 16384 = 262144 B.
  CHECK(by_class(a, CommClass::EpAllToAll) == 262144);
  CHECK(a.stages.front().ep_rank_bytes == std::vector<double>{262144, 262144});
  // Dense gradients still over dp 4 (reduce-scatter of the padded 66368-element stage: 3/4 of 66368 x 4 B).
  CHECK(by_class(a, CommClass::DpGradSync) == 16592.0 * 3 * 4);
}

TEST_CASE("A hot expert: shares, tokens per ep rank and the straggler factor by hand") {
  // hot_fraction 0.2 on one of 4 experts: it takes 0.2 + 0.8 / 4 = 0.4 of the assignments, the others 0.2 each. The
  // ep rank holding it (2 experts) gets 0.6 of each rank's 256 assignments: 153.6 -> 154 (largest remainder), the
  // other 102.4 -> 102. It computes 2 x 154 = 308 pairs, x1.203 the mean 256 (1 + 0.2 x (2 - 1) before rounding).
  const Experiment e = moe(R"({"preset": "dp", "dp": 2, "ep": 2})",
                           R"({"global_batch": 2, "micro_batch": 1,
                               "routing": {"kind": "hot", "hot_fraction": 0.2, "seed": 7}})");
  const std::vector<double> p = expert_shares(e.model, e.training.routing);
  CHECK(std::count(p.begin(), p.end(), Approx(0.4)) == 1);
  CHECK(std::count(p.begin(), p.end(), Approx(0.2)) == 3);
  const ExpertRouting r = expert_routing(e);
  std::vector<std::int64_t> sorted = r.tokens_to;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == std::vector<std::int64_t>{102, 154});
  CHECK(r.imbalance() == Approx(308.0 / 256));
  // The cap: a hot fraction of 0.9 would give one expert 0.925 > 1 / top_k = 0.5; it keeps 0.5 and the excess goes
  // to the other three in proportion (0.025 each + 0.425 / 3).
  RoutingSpec hot = e.training.routing;
  hot.hot_fraction = 0.9;
  const std::vector<double> capped = expert_shares(e.model, hot);
  CHECK(*std::max_element(capped.begin(), capped.end()) == Approx(0.5));
  CHECK(std::accumulate(capped.begin(), capped.end(), 0.0) == Approx(1.0));
  // Every assignment to one hot expert (hot_fraction 1): it keeps 1 / top_k = 0.5, the other three, which had
  // nothing, share the excess evenly (1/6 each); no token is lost.
  hot.hot_fraction = 1;
  const std::vector<double> all_hot = expert_shares(e.model, hot);
  CHECK(std::count(all_hot.begin(), all_hot.end(), Approx(0.5)) == 1);
  CHECK(std::count(all_hot.begin(), all_hot.end(), Approx(1.0 / 6)) == 3);
  // Deterministic given the seed; another seed may pick another expert.
  CHECK(expert_routing(e).tokens_to == r.tokens_to);
}

TEST_CASE("Capacity factor: drops and padding by hand") {
  // capacity 1.0: each expert takes at most ceil(256 / 4 x 1.0) = 64 tokens of a rank. The hot expert wants 102.4
  // and keeps 64, the others 51.2 each: the rank holding it is sent 64 + 51.2 = 115.2, the other 2 x 51.2 = 102.4;
  // kept 217.6 -> 218 whole tokens: floors 115 + 102 = 217, +1 to the larger remainder (0.4): {115, 103}.
  const Experiment dropped = moe(R"({"preset": "dp", "dp": 2, "ep": 2})",
                                 R"({"global_batch": 2, "micro_batch": 1,
                                     "routing": {"kind": "hot", "hot_fraction": 0.2, "seed": 7}})");
  Experiment e = dropped;
  e.model.capacity_factor = 1.0;
  const ExpertRouting r = expert_routing(e);
  std::vector<std::int64_t> sorted = r.tokens_to;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == std::vector<std::int64_t>{103, 115});
  CHECK(r.dropped == 256 - 218);
  e.model.pad_to_capacity = true;  // every expert receives exactly its 64: every rank alike
  CHECK(expert_routing(e).tokens_to == std::vector<std::int64_t>{128, 128});
  CHECK(expert_routing(e).imbalance() == 1);
}

TEST_CASE("Skewed routing: the step grows by the busiest ep rank's extra expert time, bytes equal analytic") {
  // One node of 2 GPUs whose links are so fast that every transfer takes ~0 s: the step is compute alone, and the
  // ranks wait for each other at every combine. Balanced, each rank's experts compute 256 pairs per layer and pass;
  // with the hot expert the busiest computes 308 (case above). Every MoE layer's forward and backward then takes the
  // busiest rank's expert time: 2 layers x [(f(308) - f(256)) + (b(308) - b(256))] longer.
  const std::string base = std::string(R"({"model": )") + kModel +
                           R"(, "strategy": {"preset": "dp", "dp": 2, "ep": 2},
    "cluster": {"preset": "dgx-h100", "nodes": 1, "gpus_per_node": 2, "nics_per_node": 2, "nvlink_bw": "1e9 GB/s",
                "nvlink_latency": 0, "comm_model": "links"},
    "training": {"global_batch": 2, "micro_batch": 1)";
  const Json balanced = simulate_report(base + "}}", "--fidelity full");
  const Json skewed =
      simulate_report(base + R"(, "routing": {"kind": "hot", "hot_fraction": 0.2, "seed": 7}}})", "--fidelity full");
  check_bytes_identical(balanced);
  check_bytes_identical(skewed);
  const Experiment e = moe(R"({"preset": "dp", "dp": 2, "ep": 2})", R"({"global_batch": 2, "micro_batch": 1})");
  const AcceleratorSpec acc = parse_cluster(Json::parse(R"({"preset": "dgx-h100", "nodes": 1})")).accelerator;
  const PassTimes busy = expert_times(e, acc, 308), even = expert_times(e, acc, 256);
  const double straggler = 2 * ((busy.forward_s - even.forward_s) + (busy.backward_s - even.backward_s));
  REQUIRE(straggler > 0);
  const double grown =
      skewed["simulation"]["step_time_s"].get<double>() - balanced["simulation"]["step_time_s"].get<double>();
  CHECK(grown == Approx(straggler).epsilon(1e-6));
}

TEST_CASE("MoE with tp, sp, pp and ep across 2 nodes at flow fidelity: simulated bytes equal analytic bytes") {
  // tp 2 (sp) x dp 4 = 8 ranks per stage, ep 8 (the whole node), pp 2 over 2 nodes; ZeRO-1.
  const Json r = simulate_report(std::string(R"({"model": {"family": "llama", "layers": 4, "hidden": 256, "heads": 8,
    "vocab": 1024, "seq_len": 256, "experts": 8, "top_k": 2, "moe_ffn": 128, "shared_experts": 1, "first_dense_layers": 1},
    "training": {"global_batch": 16, "micro_batch": 1, "recompute": "full",
                 "routing": {"kind": "zipf", "zipf": 1.0, "seed": 3}},
    "strategy": {"preset": "zero1", "dp": 4, "tp": 2, "sp": true, "pp": 2, "ep": 8},
    "cluster": {"preset": "dgx-h100", "nodes": 2}})"),
                                 "--fidelity flow");
  check_bytes_identical(r);
  CHECK(r["simulation"]["experts"]["busiest_rank_factor"].get<double>() > 1);
  CHECK(r["simulation"]["experts"]["all_to_all_s"].get<double>() > 0);
}

TEST_CASE("Expert parallelism is refused with a precise error where it cannot hold") {
  auto refusal = [](const std::string& strategy, const std::string& training = R"({"global_batch": 8})") {
    try {
      moe(strategy, training);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(refusal(R"({"preset": "dp", "dp": 2, "ep": 4})"), Catch::Contains("strategy.ep=4 must divide the ranks"));
  CHECK_THAT(refusal(R"({"preset": "dp", "dp": 3, "ep": 3})", R"({"global_batch": 9})"),
             Catch::Contains("must divide model.experts=4"));
  CHECK_THAT(refusal(R"({"preset": "dp", "dp": 2, "tp": 2, "ep": 2})"), Catch::Contains("needs strategy.sp=true"));
  CHECK_THAT(refusal(R"({"preset": "zero3", "dp": 4, "ep": 2})"), Catch::Contains("edp = tp x cp x dp / ep"));
  CHECK(refusal(R"({"preset": "zero3", "dp": 4, "ep": 4})") == "accepted");  // edp 1: the experts stay whole
  CHECK_THAT(
      refusal(R"({"preset": "dp", "dp": 2, "ep": 2, "pp": 2, "schedule": "pipedream"})", R"({"global_batch": 8})"),
      Catch::Contains("strategy.schedule=pipedream is not modelled for mixture-of-experts"));
  CHECK_THROWS_WITH(test::experiment(R"({"model": "llama3-8b", "strategy": {"preset": "dp", "dp": 2, "ep": 2}})"),
                    Catch::Contains("places routed experts, but model llama3-8b has none"));
}

TEST_CASE("Interleaved chunks of dense and MoE layers: simulated activation peak and bytes equal analytic") {
  // Layers 0, 1, 6, 7 MoE (top-4 of 8 experts of 1024: heavy activations), 2-5 dense; pp 2 x 2 chunks, so stage 0's
  // chunks are {0, 1} (MoE) and {4, 5} (dense): more early-chunk forwards are in flight in the warm-up.
  const Json r = simulate_report(R"({"model": {"family": "llama", "layers": 8, "hidden": 256, "heads": 8, "vocab": 1024,
      "seq_len": 256, "ffn": 128, "experts": 8, "top_k": 4, "moe_ffn": 1024, "moe_layers": [0, 1, 6, 7]},
    "training": {"global_batch": 32, "micro_batch": 1},
    "strategy": {"preset": "zero1", "dp": 4, "pp": 2, "ep": 4, "schedule": "interleaved", "chunks": 2},
    "cluster": {"preset": "dgx-h100", "nodes": 1}})");
  check_bytes_identical(r);
  for (const Json& row : r["validation"])
    if (row["figure"] == "memory.activations_bytes") CHECK(row["difference"].get<double>() == 0);
}

// training.fp8 on the routed experts (Transformer Engine's grouped linear): 4 experts over ep 2 = 2 local, each on
// pairs / 2 token-expert pairs; hidden 64, moe_ffn 32 gated (up 64). Forward: the two grouped GEMMs at the FP8 peak,
// the inputs' cast-transposes (pairs x (64 + 32) elements, 4 bytes each) and a quarter of the local weights'
// (2 x 64 x (64 + 32), cast on the first of 4 micro-batches); backward: the four GEMMs at the FP8 peak and the output
// gradients' cast-transposes (pairs x (64 + 64)). The router and the permutes stay 16-bit.
TEST_CASE("FP8 experts: grouped GEMMs at the FP8 peak plus their hand-counted casts") {
  const AcceleratorSpec acc = accelerator_preset("h100-sxm", "a");
  const char* strategy = R"({"preset": "dp", "dp": 2, "ep": 2})";
  const Experiment bf16 = moe(strategy), fp8 = moe(strategy, R"({"global_batch": 8, "micro_batch": 1, "fp8": true})");
  REQUIRE(fp8.strategy.microbatches == 4);
  const double pairs = 256, local = 2, per = pairs / local, h = 64, fe = 32, up = 64;
  auto both = [&](const GemmShape& g, double extra = 0) {
    return fp8_gemm_time_s(g, acc, extra) - gemm_time_s(g, DType::BF16, acc, extra);
  };
  auto cast = [&](double elems) { return elementwise_time_s(4 * elems, acc); };
  const double fwd = both({per, up, h, local}) + both({per, h, fe, local}) + cast(pairs * (h + fe)) +
                     0.25 * cast(local * h * (up + fe));
  const double bwd = both({per, h, up, local}) + both({per, fe, h, local}) +
                     both({h, up, per, local}, 8 * local * h * up) + both({fe, h, per, local}, 8 * local * fe * h) +
                     cast(pairs * (up + h));
  const PassTimes a = expert_times(bf16, acc, pairs), b = expert_times(fp8, acc, pairs);
  CHECK(b.forward_s - a.forward_s == Approx(fwd).epsilon(1e-9));
  CHECK(b.backward_s - a.backward_s == Approx(bwd).epsilon(1e-9));
  // torchao's tensorwise Float8Linear does not run grouped expert GEMMs: refused, written or as the fsdp preset's
  // stack's default.
  CHECK_THROWS_WITH(moe(strategy, R"({"global_batch": 8, "micro_batch": 1, "fp8": true, "fp8_scaling": "tensorwise"})"),
                    Catch::Contains("training.fp8_scaling=tensorwise") && Catch::Contains("MoE"));
  CHECK_THROWS_WITH(
      moe(R"({"preset": "fsdp", "dp": 2, "ep": 2})", R"({"global_batch": 8, "micro_batch": 1, "fp8": true})",
          "torchtitan-2024-12"),
      Catch::Contains("the torchtitan-2024-12 stack's default") && Catch::Contains("fp8_scaling=delayed"));
}
