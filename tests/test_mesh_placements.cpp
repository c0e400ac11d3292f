// Placements along the named mesh: HSDP, 2-D FSDP + TP, ZeRO++ hpZ and ZeRO-Infinity offload, their
// memory and per-axis bytes computed by hand, and the per-axis validity rules.
//
// Formulas. A state sharded over k data ranks is held as 1/k of each unit (FSDP pads its flat parameters to a
// multiple of the group; placesim pads each unit to a multiple of dp, which here divides every unit exactly). A ring
// all-gather or reduce-scatter of B bytes over k ranks sends (k-1)/k B per rank, an all-reduce twice that.
// - FSDP HYBRID_SHARD (docs.pytorch.org/docs/stable/fsdp.html, ShardingStrategy.HYBRID_SHARD): "shard parameters,
//   gradients and optimizer states within a node and replicate across nodes": parameters all-gathered within the
//   shard group before forward and backward, gradients reduce-scattered within it and their shards all-reduced
//   across the replicas.
// - ZeRO++ hpZ (Wang et al., arXiv 2306.10209, §3.2 and Table 2): the forward all-gathers over all ranks (M), the
//   backward over the secondary group inside a node only (0 across nodes), gradients reduce-scattered over all (M);
//   each rank keeps a secondary shard of M / (ranks per node).
// - ZeRO-Infinity (Rajbhandari et al., arXiv 2104.07857, §5): parameters, gradients and optimizer states partitioned
//   and offloaded; each rank moves its partition over PCIe and the ranks all-gather the parameters.
#include <catch2/catch.hpp>

#include "strategies/analytic/Analytic.hpp"
#include "strategies/analytic/Validity.hpp"
#include "tests/Helpers.hpp"

using namespace placesim;
using placesim::test::experiment;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// 2^33 parameters in 32 layers of 2^28: every unit divides by 64 ranks. Placement mechanics under one stack (fp32
// gradients, no reduce buckets of DeepSpeed's), whichever stack a preset names.
std::string opaque(const std::string& strategy, const std::string& stack = "megatron-lm-2022") {
  return R"({"model": {"parameters": 8589934592, "layers": 32}, "training": {"global_batch": 512, "micro_batch": 1},
             "stack": ")" +
         stack + R"(", "strategy": )" + strategy + "}";
}

double cls(const Analysis& a, CommClass c) {
  return a.comm.by_class[static_cast<std::size_t>(c)];
}

const DataCollectiveBytes& collective(const Analysis& a, const std::string& purpose) {
  for (const auto& dc : a.stages.front().data_collectives)
    if (dc.plan.purpose == purpose) return dc;
  FAIL("no data collective " << purpose);
  return a.stages.front().data_collectives.front();
}

}  // namespace

TEST_CASE("HSDP 8 x 8: memory and bytes per axis as FSDP HYBRID_SHARD computes them") {
  Experiment e =
      experiment(opaque(R"({"preset": "hsdp", "mesh": {"dp_replicate": 8, "dp_shard": 8}})", "torchtitan-2024-12"));
  check_validity(e);
  REQUIRE(e.strategy.dp == 64);
  REQUIRE(e.strategy.microbatches == 8);                            // 512 / (1 x 64)
  REQUIRE(e.training.master_weights == MasterWeights::Parameters);  // PyTorch FSDP: the fp32 shard is the master
  REQUIRE(e.training.optimizer_bytes_per_param == 8);
  Analysis a = analyze(e);
  // Each rank holds 1/8 of 2^33 parameters: 2^30 elements, in fp32 (the master weights) / fp32 gradients / Adam's
  // two fp32 moments.
  CHECK(a.memory.parameters == 4 * kGiB);
  CHECK(a.memory.gradients == 4 * kGiB);
  CHECK(a.memory.optimizer == 8 * kGiB);
  // Two gathered layers (2^28 elements) and two unsharded gradient buffers of a layer.
  CHECK(a.memory.buffers == 2 * 0.25 * kGiB * 2 + 2 * 0.25 * kGiB * 4);
  // Parameters gathered over the 8 ranks of dp_shard before each forward and each backward of 8 micro-batches:
  // 2 x 8 x 7/8 x 2^34 bytes.
  CHECK(collective(a, "parameter all-gather (forward)").plan.group == kShardAxis);
  CHECK(collective(a, "parameter all-gather (forward)").bytes() == 8 * 7 * 2 * kGiB);
  CHECK(cls(a, CommClass::ZeroGather) == 2 * 8 * 7 * 2 * kGiB);
  // Gradients reduce-scattered over dp_shard after each backward (8 x 7/8 x 2^35 bytes), then their 2^30-element
  // shards all-reduced over the 8 replicas once per step (2 x 7/8 x 2^32 bytes).
  CHECK(collective(a, "gradient reduce-scatter").bytes() == 8 * 7 * 4 * kGiB);
  const auto& across = collective(a, "accumulated gradient all-reduce");
  CHECK(across.plan.group == kReplicateAxis);
  CHECK(across.group_size == 8);
  CHECK(across.runs == 1);
  CHECK(across.bytes() == 2 * 7 * 0.5 * kGiB);
  CHECK(cls(a, CommClass::DpGradSync) == 8 * 7 * 4 * kGiB + 7 * kGiB);
}

TEST_CASE("HSDP holds 8x the shards of FSDP over 64 ranks and moves gathers inside the shard group") {
  Analysis hsdp = analyze(experiment(opaque(R"({"preset": "hsdp", "mesh": {"dp_replicate": 8, "dp_shard": 8}})")));
  Analysis fsdp = analyze(experiment(opaque(R"({"preset": "fsdp", "dp": 64})")));
  CHECK(hsdp.memory.optimizer == 8 * fsdp.memory.optimizer);
  // FSDP over 64: 2 x 8 x 63/64 x 2^34 bytes of gathers over the one data axis (dp is shorthand for dp_shard).
  CHECK(cls(fsdp, CommClass::ZeroGather) == 2 * 8 * 63 * 0.25 * kGiB);
  CHECK(collective(fsdp, "parameter all-gather (forward)").plan.group == kShardAxis);
  CHECK(collective(fsdp, "parameter all-gather (forward)").group_size == 64);
}

TEST_CASE("FSDP + TP (dp_shard 16 x tp 4) on Llama 3 8B: per-device shards and bytes by hand") {
  Experiment e = experiment(R"({"model": {"preset": "llama3-8b", "seq_len": 4096},
      "training": {"global_batch": 512, "micro_batch": 1},
      "strategy": {"preset": "fsdp-tp", "mesh": {"dp_shard": 16, "tp": 4}}})");
  check_validity(e);
  REQUIRE(e.strategy.sp);
  CHECK(!e.strategy.tp_overlap);  // torchtitan's vanilla TP: the backward's collectives are not overlapped
  CHECK(experiment(R"({"model": {"preset": "llama3-8b", "seq_len": 4096}, "training": {"micro_batch": 1},
      "strategy": {"preset": "fsdp-tp", "tp_overlap": true, "mesh": {"dp_shard": 16, "tp": 4}}})")
            .strategy.tp_overlap);  // a field written beside the preset wins
  REQUIRE(e.strategy.microbatches == 32);
  // Per TP rank: a layer holds (2 x 4096^2 + 2 x 4096 x 1024 + 3 x 4096 x 14336) / 4 + 2 x 4096 (norms) =
  // 54,534,144 elements; the vocabulary-parallel embedding 128256 x 4096 / 4 = 131,334,144; the head that plus the
  // final norm's 4096. Each divides by 16.
  const double stage = 32.0 * 54534144 + 131334144 + 131338240;
  const double shard = stage / 16;
  Analysis a = analyze(e);
  CHECK(a.memory.parameters == shard * 4);  // fp32 master weights as the parameters (PyTorch FSDP), Adam's m and v
  CHECK(a.memory.gradients == shard * 4);
  CHECK(a.memory.optimizer == shard * 8);
  // FSDP over dp_shard: gathers before forward and backward, a reduce-scatter after each backward, 32 micro-batches.
  CHECK(cls(a, CommClass::ZeroGather) == 2 * 32 * 15 * shard * 2);
  CHECK(cls(a, CommClass::DpGradSync) == 32 * 15 * shard * 4);
  // Sequence-parallel TP over 4: per layer and micro-batch 10 all-gather/reduce-scatter-sized transfers of the
  // 4096 x 4096 activation (3/4 of it each), the embedding and head 6 more; the norms' gradients (32 x 8192 + 4096)
  // all-reduced once in fp32.
  const double gather = 3.0 * 4096 * 4096 / 4 * 2;
  CHECK(cls(a, CommClass::TpCollective) == 32 * (32 * 10 + 6) * gather + 2 * 3 * (266240 / 4) * 4.0);
}

TEST_CASE("ZeRO++ hpZ: a secondary shard per node and the backward gather inside it") {
  Experiment e = experiment(opaque(R"({"preset": "zero++", "mesh": {"dp_replicate": 8, "dp_shard": 8}})"));
  check_validity(e);
  Analysis a = analyze(e);
  // Primary shard 2^33 / 64, secondary 2^33 / 8, in bf16.
  CHECK(a.memory.parameters == (0.125 + 1) * 2 * kGiB);
  CHECK(a.memory.optimizer == 0.125 * 12 * kGiB);
  // Forward: all-gather over all 64 ranks (8 x 63/64 x 2^34 bytes); backward: over dp_shard's 8 (8 x 7/8 x 2^34),
  // which is inside a node when dp_shard fills it -- ZeRO++'s cross-node volume drops from ZeRO-3's 3M to 2M.
  CHECK(collective(a, "parameter all-gather (forward)").plan.group == kDataAxes);
  CHECK(collective(a, "parameter all-gather (forward)").bytes() == 8 * 63 * 0.25 * kGiB);
  const auto& backward = collective(a, "parameter all-gather (backward, from the secondary shard)");
  CHECK(backward.plan.group == kShardAxis);
  CHECK(backward.bytes() == 8 * 7 * 2 * kGiB);
  CHECK(cls(a, CommClass::DpGradSync) == 8 * 63 * 0.5 * kGiB);  // reduce-scatter over 64 each micro-batch
}

TEST_CASE("ZeRO-Infinity: parameters, gradients and optimizer offloaded as shards, gathered after the fetch") {
  Experiment e = experiment(opaque(
      R"({"dp": 64, "placement": {"parameters": "offloaded", "gradients": "offloaded", "optimizer": "offloaded"}})"));
  check_validity(e);
  Analysis a = analyze(e);
  const double shard = 8589934592.0 / 64;  // 2^27 elements per rank
  CHECK(a.memory.model_states() == 0);
  CHECK(a.memory.host == shard * (2 + 4 + 12));
  // Each rank fetches its parameter shard before each forward and each backward, and sends its gradient shard to
  // the host after each backward.
  CHECK(a.comm.h2d == 2 * 8 * shard * 2);
  CHECK(a.comm.d2h == 8 * shard * 4);
  CHECK(cls(a, CommClass::ZeroGather) == 2 * 8 * 63 * shard * 2);
  CHECK(cls(a, CommClass::DpGradSync) == 8 * 63 * shard * 4);
}

TEST_CASE("A one-string placement is the same along both data axes; the one-axis presets are unchanged by a split") {
  // zero3 over 8 x 8 is zero3 over 64: the same bytes and memory.
  Analysis split = analyze(experiment(opaque(R"({"preset": "zero3", "mesh": {"dp_replicate": 8, "dp_shard": 8}})")));
  Analysis flat = analyze(experiment(opaque(R"({"preset": "zero3", "dp": 64})")));
  CHECK(split.memory.total() == flat.memory.total());
  CHECK(split.comm.total() == flat.comm.total());
  CHECK(split.bytes_per_step == flat.bytes_per_step);
}

TEST_CASE("Per-axis validity names the rule, the state and the axis") {
  auto refused = [](const std::string& strategy) {
    Experiment e = experiment(opaque(strategy));
    check_validity(e);
  };
  CHECK_THROWS_WITH(refused(R"({"preset": "hsdp", "dp": 64})"),
                    Catch::Contains("strategy.preset=hsdp needs strategy.mesh.dp_replicate > 1"));
  // Review findings: a degenerate axis under hsdp / hpZ, and materialized modes along a dp_replicate of degree 1.
  CHECK_THROWS_WITH(refused(R"({"preset": "hsdp", "mesh": {"dp_replicate": 16, "dp_shard": 1}})"),
                    Catch::Contains("and dp_shard > 1"));
  CHECK_THROWS_WITH(refused(R"({"mesh": {"dp_replicate": 16, "dp_shard": 1}, "placement": {"parameters":
                      {"dp_shard": "SG", "dp_replicate": "SG", "secondary": "dp_shard"}}})"),
                    Catch::Contains("rule secondary-of-primary: parameters.secondary=dp_shard (ZeRO++ hpZ) needs"));
  CHECK_THROWS_WITH(refused(R"({"dp": 16, "placement": {"optimizer": {"dp_shard": "S", "dp_replicate": "M"}}})"),
                    Catch::Contains("rule optimizer-persists"));
  CHECK_THROWS_WITH(refused(R"({"dp": 16, "placement": {"parameters": {"dp_shard": "R", "dp_replicate": "M"}}})"),
                    Catch::Contains("rule parameters-persist"));
  CHECK_THROWS_WITH(
      refused(R"({"mesh": {"dp_replicate": 8, "dp_shard": 8},
                  "placement": {"gradients": {"dp_shard": "R", "dp_replicate": "S"}, "optimizer": "R"}})"),
      Catch::Contains(
          "rule gradient-owner: gradients=sharded with optimizer=replicated along dp_replicate (degree 8)"));
  CHECK_THROWS_WITH(refused(R"({"mesh": {"dp_replicate": 8, "dp_shard": 8},
                  "placement": {"parameters": {"dp_shard": "SG", "dp_replicate": "S"}}})"),
                    Catch::Contains("rule parameters-gathered: parameters=sharded along dp_replicate (degree 8)"));
  CHECK_THROWS_WITH(refused(R"({"mesh": {"dp_replicate": 8, "dp_shard": 8},
                  "placement": {"optimizer": {"dp_shard": "Off", "dp_replicate": "S"}}})"),
                    Catch::Contains("rule offload-whole: optimizer=offloaded along dp_shard"));
  CHECK_THROWS_WITH(refused(R"({"mesh": {"dp_replicate": 8, "dp_shard": 8},
                  "placement": {"parameters": {"dp_shard": "SG", "dp_replicate": "R", "secondary": "dp_shard"}}})"),
                    Catch::Contains("rule secondary-of-primary"));
  CHECK_THROWS_WITH(refused(R"({"tp": 2, "placement": {"parameters": {"dp_shard": "R", "dp_replicate": "R",
                                                                        "tp": "R"}}})"),
                    Catch::Contains("rule tp-shards-weights"));
  CHECK_THROWS_WITH(refused(R"({"placement": {"activations": {"dp_shard": "R", "dp_replicate": "M"}}})"),
                    Catch::Contains("rule activations-per-replica"));
  CHECK_THROWS_WITH(refused(R"({"dp": 32, "mesh": {"dp_replicate": 8, "dp_shard": 8}})"),
                    Catch::Contains("strategy.dp=32 contradicts strategy.mesh dp_replicate x dp_shard = 8 x 8"));
  CHECK_THROWS_WITH(refused(R"({"mesh": {"dp_replicate": 8, "dp_shard": 8, "ep": 2}})"),
                    Catch::Contains("strategy.ep=2 places routed experts, but model custom has none"));
}

TEST_CASE("Activations along tp are sequence parallelism") {
  Experiment e = experiment(R"({"model": "gpt-7.5b", "strategy": {"tp": 4,
      "placement": {"activations": {"dp_shard": "R", "dp_replicate": "R", "tp": "S"}}}})");
  CHECK(e.strategy.sp);
}

// PyTorch FSDP keeps the sharded fp32 parameter as the optimizer's master weight (MixedPrecisionPolicy casts it to
// bf16 for the all-gather): 4 + 4 + 8 = 16 bytes per parameter with Adam, where Megatron-LM and DeepSpeed hold bf16
// parameters beside 12 bytes of optimizer state (2 + 4 + 12 = 18 with fp32 gradients).
TEST_CASE("FSDP presets hold the fp32 master weights as the parameters; ZeRO and a written field keep them apart") {
  Analysis fsdp = analyze(experiment(opaque(R"({"preset": "fsdp", "dp": 64})")));
  Analysis zero3 = analyze(experiment(opaque(R"({"preset": "zero3", "dp": 64})")));
  // 2^33 / 64 = 2^27 elements per rank: fsdp 4 + 4 + 8 bytes, zero3 2 + 4 + 12 bytes.
  CHECK(fsdp.memory.parameters == 0.5 * kGiB);
  CHECK(fsdp.memory.optimizer == 1.0 * kGiB);
  CHECK(fsdp.model_states_bytes == 2.0 * kGiB);
  CHECK(zero3.memory.parameters == 0.25 * kGiB);
  CHECK(zero3.memory.optimizer == 1.5 * kGiB);
  CHECK(zero3.model_states_bytes == 2.25 * kGiB);
  // The gathered units are bf16 all the same: the same gather bytes, 2 x 8 x 63/64 x 2^34 (see HSDP's test above).
  CHECK(cls(fsdp, CommClass::ZeroGather) == cls(zero3, CommClass::ZeroGather));
  // Written fields win over the preset: fsdp with the master weights in the optimizer is ZeRO-3's 18 bytes.
  Experiment apart = experiment(R"({"model": {"parameters": 8589934592, "layers": 32},
      "training": {"global_batch": 512, "micro_batch": 1, "master_weights": "optimizer"},
      "strategy": {"preset": "fsdp", "dp": 64}})");
  CHECK(apart.training.optimizer_bytes_per_param == 12);
  CHECK(analyze(apart).model_states_bytes == 2.25 * kGiB);
  Experiment together = experiment(R"({"model": {"parameters": 8589934592, "layers": 32},
      "training": {"global_batch": 512, "micro_batch": 1, "master_weights": "parameters"},
      "strategy": {"preset": "zero3", "dp": 64}})");
  CHECK(analyze(together).model_states_bytes == 2.0 * kGiB);
  // fp32 training has no master weights; offloaded parameters are copied as 16-bit ones (ZeRO-Offload), so the
  // preset's default moves to the optimizer and an explicit "parameters" is refused.
  CHECK_THROWS_WITH(experiment(R"({"model": {"parameters": 8589934592, "layers": 32},
      "training": {"global_batch": 512, "dtype": "fp32", "master_weights": "parameters"},
      "strategy": {"preset": "fsdp", "dp": 64}})"),
                    Catch::Contains("training.master_weights=parameters with training.dtype=fp32"));
  const char* offloaded = R"(, "placement": {"parameters": "offloaded", "gradients": "offloaded",
      "optimizer": "offloaded", "activations": "replicated"}}})";
  CHECK(experiment(R"({"model": {"parameters": 8589934592, "layers": 32}, "training": {"global_batch": 512},
      "strategy": {"preset": "fsdp", "dp": 64)" +
                   std::string(offloaded))
            .training.master_weights == MasterWeights::Optimizer);
  CHECK_THROWS_WITH(experiment(R"({"model": {"parameters": 8589934592, "layers": 32},
      "training": {"global_batch": 512, "master_weights": "parameters"},
      "strategy": {"preset": "fsdp", "dp": 64)" +
                               std::string(offloaded)),
                    Catch::Contains("training.master_weights=parameters with strategy.placement.parameters=offloaded "
                                    "is not modelled") &&
                        Catch::Contains("use training.master_weights=optimizer"));
}

// Megatron-Core as Megatron-LM and NeMo run it: the distributed optimizer shards the optimizer state over the data
// ranks (R/S/R/R), the gradients (fp32 main grads, Megatron-LM's bf16 default) are reduce-scattered and the updated
// bf16 parameters all-gathered once per step; no recompute; sequence parallelism wherever tp > 1.
TEST_CASE("The megatron-core preset: distributed optimizer, no recompute, sequence parallel with tp") {
  Experiment e = experiment(opaque(R"({"preset": "megatron-core", "dp": 64})"));
  check_validity(e);
  CHECK(e.training.recompute == Recompute::None);
  CHECK(!e.strategy.sp);  // tp 1: nothing to shard the sequence over
  CHECK(e.strategy.schedule == Schedule::OneFOneB);
  Analysis a = analyze(e);
  // 2^33 parameters: bf16 2 bytes = 16 GiB, fp32 gradients 32 GiB, Adam's 12 bytes over 64 ranks = 1.5 GiB.
  CHECK(a.memory.parameters == 16.0 * kGiB);
  CHECK(a.memory.gradients == 32.0 * kGiB);
  CHECK(a.memory.optimizer == 1.5 * kGiB);
  // Per step: the fp32 gradients reduce-scattered (63/64 x 32 GiB), the bf16 parameters all-gathered (63/64 x 16 GiB).
  CHECK(cls(a, CommClass::DpGradSync) == 63.0 / 64 * 32 * kGiB);
  CHECK(cls(a, CommClass::ZeroGather) == 63.0 / 64 * 16 * kGiB);
  // With tp > 1 the preset turns sequence parallelism on; a written sp wins, in either spelling.
  const std::string llama = R"({"model": "llama3-8b", "training": {"global_batch": 64, "micro_batch": 1},
      "strategy": {"preset": "megatron-core", "dp": 8, "tp": 4)";
  CHECK(experiment(llama + "}}").strategy.sp);
  CHECK(!experiment(llama + R"(, "sp": false}})").strategy.sp);
  CHECK(!experiment(llama + R"(, "placement": {"activations": {"dp_shard": "R", "dp_replicate": "R", "tp": "R"}}}})")
             .strategy.sp);
  CHECK(experiment(llama + "}}").training.recompute == Recompute::None);
}
