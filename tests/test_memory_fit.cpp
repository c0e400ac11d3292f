// Memory that admits the runs that ran: Transformer Engine's FP8 activations, devices' visible capacity, and the
// headroom a stack's reserve leaves.
#include <catch2/catch.hpp>

#include "Helpers.hpp"
#include "strategies/placement/Layout.hpp"
#include "traces/report/StackReport.hpp"

using namespace placesim;

namespace {

// Llama-shaped layer: h 1024, 8 heads of 128 (GQA: 2 KV heads), SwiGLU ffn 2816, seq 2048, micro-batch 1, tp 2 + sp.
Experiment layer(const std::string& training) {
  return test::experiment(R"({"model": {"family": "llama", "layers": 4, "hidden": 1024, "heads": 8, "kv_heads": 2,
      "ffn": 2816, "vocab": 1024, "seq_len": 2048}, "training": {"global_batch": 1, "micro_batch": 1)" +
                          training + R"(}, "strategy": {"preset": "megatron-core", "tp": 2}})");
}

}  // namespace

TEST_CASE("Transformer Engine's FP8 linears keep 1-byte inputs: the norms' outputs and fc2's input, by hand") {
  // TE's LayerNormLinear saves the bf16 norm input and the FP8 norm output; its Linear the FP8 input only; under
  // delayed scaling the projection adds an FP8 copy of the attention output the attention kernel keeps in bf16.
  // Against bf16: the QKV and MLP inputs (sequence-parallel shards, s h / tp each) lose a byte an element, fc2's input
  // (s f / tp) too, and the projection's FP8 copy (s heads head_dim / tp) adds one.
  const double s = 2048, h = 1024, f = 2816, o = 8 * 128, tp = 2;
  const double bf16 = layer_activation_bytes(layer(""));
  const double te = layer_activation_bytes(layer(R"(, "fp8": true, "fp8_scaling": "delayed")"));
  CHECK(bf16 - te == 2 * s * h / tp + s * f / tp - s * o / tp);
  // Current scaling runs the same modules (Float8CurrentScalingQuantizer in place of Float8Quantizer): the same saves.
  CHECK(layer_activation_bytes(layer(R"(, "fp8": true, "fp8_scaling": "current")")) == te);
  // MXFP8 saves the same tensors in FP8 with an E8M0 scale per 32 elements: 1 + 1/32 bytes each.
  const double b8 = 1 + 1.0 / 32;
  CHECK(bf16 - layer_activation_bytes(layer(R"(, "fp8": true, "fp8_scaling": "mxfp8")")) ==
        Approx((2 - b8) * (2 * s * h / tp + s * f / tp) - b8 * s * o / tp));
  // torchao's tensorwise Float8Linear saves the 16-bit input: nothing changes.
  CHECK(layer_activation_bytes(layer(R"(, "fp8": true, "fp8_scaling": "tensorwise")")) == bf16);
  // Full recompute keeps only each layer's input, FP8 or not.
  CHECK(layer_activation_bytes(layer(R"(, "recompute": "full", "fp8": true)")) ==
        layer_activation_bytes(layer(R"(, "recompute": "full")")));
}

TEST_CASE("Devices hold what nvidia-smi reports: H100 80GB 81,559 MiB, B200 183,359 MiB, GB200 189,471 MiB") {
  CHECK(accelerator_preset("h100-sxm", "a").hbm_bytes == 81559.0 * 1024 * 1024);
  CHECK(accelerator_preset("b200", "a").hbm_bytes == 183359.0 * 1024 * 1024);
  CHECK(accelerator_preset("gb200", "a").hbm_bytes == 189471.0 * 1024 * 1024);
  CHECK(accelerator_preset("a100-80gb", "a").hbm_bytes == 81920.0 * 1024 * 1024);
}

TEST_CASE("Headroom: the device less the peak and the stack's reserve, with a warning when it is gone") {
  Experiment e = layer("");
  e.device_memory_bytes = 80e9;
  // Megatron-Core's stack reserves 0.3 GB of CUDA context and 0.5 GB of communicators' buffers (its memory source).
  REQUIRE(e.stack->memory.reserve_bytes() == Approx(0.8e9));
  const MemoryHeadroom fits = memory_headroom(e, 70e9);
  CHECK(fits.spare_bytes() == Approx(80e9 - 70e9 - 0.8e9));
  CHECK(headroom_warnings(fits).empty());
  CHECK_THAT(headroom_summary(fits), Catch::StartsWith("  headroom             9.20 GB of the device's 80.0 GB"));
  const MemoryHeadroom tight = memory_headroom(e, 79.5e9);
  CHECK(tight.spare_bytes() == Approx(-0.3e9));
  REQUIRE(headroom_warnings(tight).size() == 1);
  CHECK_THAT(headroom_warnings(tight).front(),
             Catch::StartsWith("memory: the peak 79.5 GB and the stack's reserve 800 MB") &&
                 Catch::Contains("exceed device memory 80.0 GB by 300 MB: the run may not fit"));
  CHECK(headroom_summary(memory_headroom(layer(""), 1e9)).empty());  // no device memory known
}
