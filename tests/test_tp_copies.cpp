// PyTorch's DTensor TP as torchtitan runs it: the copies funcol makes around the sequence-parallel collectives of
// batch-first activations (strategy.tp_copies) and torchao's Float8 TP plan, whose all-gathers move FP8
// (strategy.tp_fp8_gather). Hand-computed on a small layer: 2 layers of hidden 512, sequence 256, micro-batch 2, on
// H100 (HBM 3,350 GB/s at the profile's memory efficiency 0.8981, kernel latency 4 us), tp 4.
#include <catch2/catch.hpp>

#include "strategies/analytic/Analytic.hpp"
#include "strategies/analytic/TpLayerTimes.hpp"
#include "tests/Helpers.hpp"
#include "workloads/json/Error.hpp"

using namespace placesim;

namespace {

std::string text(const std::string& strategy, const std::string& training = "") {
  return R"({"model": {"layers": 2, "hidden": 512, "heads": 8, "vocab": 1024, "seq_len": 256},
             "training": {"global_batch": 8, "micro_batch": 2)" +
         training + R"(},
             "strategy": {"dp": 2, "tp": 4, )" +
         strategy + R"(},
             "cluster": {"preset": "dgx-h100", "nodes": 1}})";
}

Experiment experiment(const std::string& strategy, const std::string& training = "") {
  return test::experiment(text(strategy, training));
}

const AcceleratorSpec& h100() {
  static const AcceleratorSpec acc = accelerator_preset("h100-sxm", "test");
  return acc;
}

const FabricProfile& nvlink4() {
  static const FabricProfile f = fabric_preset("nvlink4", "test");
  return f;
}

double tp_bytes(const Experiment& e) {
  return analyze(e).stages[0].comm.by_class[static_cast<std::size_t>(CommClass::TpCollective)];
}

// One collective's full buffer: 2 x 256 x 512 elements, 524,288 bytes in bf16. A copy reads and writes it:
// 4e-6 + 2 x 524,288 / (3,350e9 x the profile's element-wise efficiency) s; its FP8 all-gather's copy moves half.
constexpr double kBuffer = 2.0 * 256 * 512 * 2;
const double kHbm = 3350e9 * h100().profile.memory_efficiency;
const double kCopy = 4e-6 + 2 * kBuffer / kHbm;
const double kFp8Copy = 4e-6 + kBuffer / kHbm;

}  // namespace

TEST_CASE("fsdp-tp costs PyTorch's copies around each sequence-parallel collective: 4 forward, 6 backward") {
  const Experiment with = experiment(R"("preset": "fsdp-tp")");
  const Experiment without = experiment(R"("preset": "fsdp-tp", "tp_copies": false)");
  REQUIRE(with.strategy.tp_copies);
  const PassTimes a = layer_times_with_tp_comm(with, h100(), nvlink4());
  const PassTimes b = layer_times_with_tp_comm(without, h100(), nvlink4());
  REQUIRE(h100().hbm_bw_Bps == 3350e9);
  CHECK(a.forward_s - b.forward_s == Approx(4 * kCopy).epsilon(1e-9));
  CHECK(a.backward_s - b.backward_s == Approx(6 * kCopy).epsilon(1e-9));
  CHECK(a.recompute_s == b.recompute_s);
  // The copies are kernels, not traffic: the bytes sent are the same.
  CHECK(tp_bytes(with) == tp_bytes(without));

  SECTION("a full recompute copies again for its forward's 4 collectives") {
    const Experiment full = experiment(R"("preset": "fsdp-tp")", R"(, "recompute": "full")");
    const Experiment full_without =
        experiment(R"("preset": "fsdp-tp", "tp_copies": false)", R"(, "recompute": "full")");
    const PassTimes f = layer_times_with_tp_comm(full, h100(), nvlink4());
    const PassTimes g = layer_times_with_tp_comm(full_without, h100(), nvlink4());
    CHECK(f.recompute_s - g.recompute_s == Approx(4 * kCopy).epsilon(1e-9));
  }
}

TEST_CASE("tp_copies costs nothing with async TP (tp_overlap), without sp, or on Megatron's presets") {
  const PassTimes base = layer_times_with_tp_comm(
      experiment(R"("preset": "fsdp-tp", "tp_overlap": true, "tp_copies": false)"), h100(), nvlink4());
  const PassTimes async =
      layer_times_with_tp_comm(experiment(R"("preset": "fsdp-tp", "tp_overlap": true)"), h100(), nvlink4());
  CHECK(async.forward_s == base.forward_s);
  CHECK(async.backward_s == base.backward_s);
  const Experiment no_sp = experiment(R"("preset": "fsdp-tp", "sp": false)");
  CHECK_FALSE(no_sp.strategy.costs_tp_copies());
  const Experiment megatron = experiment(R"("preset": "megatron-core")");
  CHECK_FALSE(megatron.strategy.tp_copies);
  CHECK_FALSE(megatron.strategy.costs_tp_copies());
}

TEST_CASE("Tensorwise Float8 under fsdp-tp gathers in FP8: 6 of a layer's 10 collectives move half the bytes") {
  const Experiment fp8 = experiment(R"("preset": "fsdp-tp")", R"(, "fp8": true)");
  const Experiment bf16_gathers = experiment(R"("preset": "fsdp-tp", "tp_fp8_gather": false)", R"(, "fp8": true)");
  REQUIRE(fp8.strategy.tp_fp8_gather);
  REQUIRE_FALSE(bf16_gathers.strategy.tp_fp8_gather);
  // Per layer and micro-batch each all-gather sends 3/4 of 262,144 elements: 196,608 bytes fewer in FP8. 6 gathers
  // (2 forward, 2 re-gathers, 2 of output gradients) x 2 layers x 2 micro-batches.
  CHECK(tp_bytes(bf16_gathers) - tp_bytes(fp8) == 6.0 * 196608 * 2 * 2);
  // The copies: an FP8 all-gather's moves half as many bytes. Forward 2 FP8 + 2 bf16, backward 4 + 2.
  const PassTimes a = layer_times_with_tp_comm(fp8, h100(), nvlink4());
  const Experiment fp8_no_copies =
      experiment(R"("preset": "fsdp-tp", "tp_copies": false, "tp_fp8_gather": true)", R"(, "fp8": true)");
  const PassTimes b = layer_times_with_tp_comm(fp8_no_copies, h100(), nvlink4());
  CHECK(a.forward_s - b.forward_s == Approx(2 * kFp8Copy + 2 * kCopy).epsilon(1e-9));
  CHECK(a.backward_s - b.backward_s == Approx(4 * kFp8Copy + 2 * kCopy).epsilon(1e-9));
  // The all-gathers themselves: the FP8 experiment's forward all-gathers take the time of half the buffer.
  const TpExposure x = tp_exposure(fp8, h100(), nvlink4());
  CHECK(x.gather_bytes == kBuffer / 2);
  CHECK(x.bytes == kBuffer);

  SECTION("not with Transformer Engine's delayed scaling, nor on Megatron's presets") {
    CHECK_FALSE(
        experiment(R"("preset": "fsdp-tp")", R"(, "fp8": true, "fp8_scaling": "delayed")").strategy.tp_fp8_gather);
    CHECK_FALSE(experiment(R"("preset": "megatron-core")", R"(, "fp8": true)").strategy.tp_fp8_gather);
    CHECK_FALSE(experiment(R"("preset": "fsdp-tp")").strategy.tp_fp8_gather);
  }
}

TEST_CASE("strategy.tp_fp8_gather is refused without FP8 or without sequence-parallel all-gathers") {
  CHECK_THROWS_WITH(experiment(R"("preset": "fsdp-tp", "tp_fp8_gather": true)"),
                    Catch::Contains("strategy.tp_fp8_gather=true") && Catch::Contains("training.fp8=false"));
  CHECK_THROWS_WITH(experiment(R"("preset": "fsdp-tp", "sp": false, "tp_fp8_gather": true)", R"(, "fp8": true)"),
                    Catch::Contains("strategy.tp_fp8_gather=true") && Catch::Contains("strategy.sp=false"));
}

// FSDP2's own copies (gather_copies) are left out so that the simulated layer is the analytic one.
TEST_CASE("The simulated fsdp-tp Float8 step moves the analytic FP8 bytes and its layers take the analytic times") {
  const std::string strategy = R"("preset": "fsdp-tp", "gather_copies": false)", training = R"(, "fp8": true)";
  const Experiment e = experiment(strategy, training);
  REQUIRE(e.strategy.tp_fp8_gather);
  const Json report = test::simulate_exact("tp-fp8-gather", text(strategy, training));
  const PassTimes analytic = layer_times_with_tp_comm(e, h100(), nvlink4());
  const Json& layer = report["simulation"]["layer_times"][0];
  CHECK(layer["forward_s"].get<double>() == Approx(analytic.forward_s).epsilon(1e-6));
  CHECK(layer["backward_s"].get<double>() == Approx(analytic.backward_s + analytic.recompute_s).epsilon(1e-6));
}
