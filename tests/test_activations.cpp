// Activation memory per layer follows Korthikanti et al. (arXiv 2205.05198), Table 2 / eqs. 1-4:
//   no parallelism        sbh(34 + 5as/h)
//   tensor parallel       sbh(10 + 24/t + 5as/(ht))
//   TP + sequence par.    sbh(34/t + 5as/(ht))
//   TP + selective        sbh(10 + 24/t)
//   TP + SP + selective   34sbh/t
//   full recompute        2sbh (2sbh/t with SP)
#include <catch2/catch.hpp>

#include "strategies/analytic/Analytic.hpp"
#include "strategies/placement/Layout.hpp"
#include "tests/Helpers.hpp"
#include "traces/report/Report.hpp"

using namespace placesim;

namespace {

// The 22B model of Korthikanti et al.: s = 2048, h = 6144, a = 64, micro-batch b = 4, t = 8.
const double s = 2048, b = 4, h = 6144, a = 64, t = 8;

// Korthikanti's formulas count the stored attention scores: unfused attention, as in the paper.
double per_layer(int tp, bool sp, const char* recompute, bool flash = false) {
  Experiment e = test::experiment(
      R"({"model": {"preset": "gpt-22b", "flash_attention": )" + std::string(flash ? "true" : "false") +
      R"(}, "training": {"micro_batch": 4, "recompute": ")" + std::string(recompute) + R"("}, "strategy": {"tp": )" +
      std::to_string(tp) + R"(, "sp": )" + (sp ? "true" : "false") + "}}");
  return layer_activation_bytes(e);
}

}  // namespace

TEST_CASE("Korthikanti activation formulas for none TP TP+SP selective and full recompute") {
  const double sbh = s * b * h;
  CHECK(per_layer(1, false, "none") == Approx(sbh * (34 + 5 * a * s / h)).epsilon(1e-12));
  CHECK(per_layer(8, false, "none") == Approx(sbh * (10 + 24 / t + 5 * a * s / (h * t))).epsilon(1e-12));
  CHECK(per_layer(8, true, "none") == Approx(sbh * (34 / t + 5 * a * s / (h * t))).epsilon(1e-12));
  CHECK(per_layer(8, false, "selective") == Approx(sbh * (10 + 24 / t)).epsilon(1e-12));
  CHECK(per_layer(8, true, "selective") == Approx(34 * sbh / t).epsilon(1e-12));
  CHECK(per_layer(1, false, "full") == 2 * sbh);
  CHECK(per_layer(8, true, "full") == 2 * sbh / t);
  // By hand: 34 s b h / t with s=2048, b=4, h=6144, t=8 = 213,909,504 bytes per layer.
  CHECK(per_layer(8, true, "selective") == 213909504.0);
}

// Fused attention was off by default, so modern runs stored the scores and ran the slow kernel.
TEST_CASE("Fused attention is the default of every family and stores no attention scores") {
  // Fused attention never stores the a*s^2 scores, softmax or dropout mask: without recompute a layer holds
  // what selective recompute keeps, sbh(34 + 0) with no 5as/h term.
  const double sbh = s * b * h;
  CHECK(per_layer(1, false, "none", true) == 34 * sbh);
  CHECK(per_layer(8, true, "none", true) == 34 * sbh / t);
  for (const char* model : {R"("gpt-22b")", R"("llama3-8b")", R"({"family": "neox", "layers": 2, "hidden": 256,
      "heads": 4, "vocab": 1000, "seq_len": 512})"}) {
    Experiment e = test::experiment(std::string(R"({"strategy": "dp", "model": )") + model + "}");
    CHECK(e.model.flash_attention);
  }
  // The summary says which attention the numbers assume.
  Experiment e = test::experiment(R"({"model": "llama3-8b", "strategy": "dp"})");
  CHECK_THAT(analysis_table(e, analyze(e)), Catch::Contains("seq 8192, fused attention"));
}

TEST_CASE("The summary says when the recompute comes from the placement, not training.recompute") {
  const std::string note = "recompute full (training.recompute not given: the placement's activations are materialized";
  Experiment preset = test::experiment(R"({"model": "gpt-22b", "strategy": {"preset": "megatron-3d", "tp": 8}})");
  CHECK(preset.training.recompute == Recompute::Full);
  CHECK_THAT(analysis_table(preset, analyze(preset)), Catch::Contains(note));
  Experiment given = test::experiment(
      R"({"model": "gpt-22b", "training": {"recompute": "full"}, "strategy": {"preset": "megatron-3d", "tp": 8}})");
  CHECK_THAT(analysis_table(given, analyze(given)), Catch::Contains("recompute full;"));
  CHECK_THAT(analysis_table(given, analyze(given)), !Catch::Contains("not given"));
  Experiment none = test::experiment(R"({"model": "gpt-22b", "strategy": {"preset": "megatron-3d", "tp": 8},
                                        "training": {"recompute": "none"}})");
  CHECK_THAT(analysis_table(none, analyze(none)), Catch::Contains("recompute none;"));
}

TEST_CASE("1F1B holds at most p micro-batches on the first stage and GPipe holds m") {
  auto first_stage = [](const char* schedule) {
    Experiment e = test::experiment(
        R"({"model": "gpt-22b", "training": {"micro_batch": 1, "global_batch": 16, "recompute": "full"},
        "strategy": {"pp": 4, "schedule": ")" +
        std::string(schedule) + R"("}})");
    Analysis a = analyze(e);
    return a.stages.front().memory.activations / layer_activation_bytes(e);
  };
  // 48 layers over 4 stages = 12 layers per stage, m = 16 micro-batches.
  CHECK(first_stage("1f1b") == 12 * 4);
  CHECK(first_stage("gpipe") == 12 * 16);
  // Interleaved with v = 2: (1 + (p-1)/(p v)) times 1F1B's L = 48 layers: 48 * (1 + 3/8) = 66 layer-equivalents.
  Experiment e =
      test::experiment(R"({"model": "gpt-22b", "training": {"micro_batch": 1, "global_batch": 16, "recompute": "full"},
        "strategy": {"pp": 4, "schedule": "interleaved", "chunks": 2}})");
  CHECK(analyze(e).stages.front().memory.activations / layer_activation_bytes(e) == 66);
}

TEST_CASE("Recompute and the activation placement agree after resolution") {
  Experiment e = test::experiment(R"({"model": "gpt-22b", "training": {"recompute": "selective"}, "strategy": "dp"})");
  CHECK(e.strategy.placement.activations == Mode::Materialized);
  Experiment f =
      test::experiment(R"({"model": "gpt-22b", "strategy": {"placement": {"activations": "materialized"}}})");
  CHECK(f.training.recompute == Recompute::Full);
}

// Offloaded activations were free -- peak memory fell from 47.5 to 11.4 GB with 0 bytes over PCIe
// and the same step. Now every layer's activations but the last of each chunk cross PCIe out and back for each
// micro-batch; the kept last layer and at most two offloaded ones stay on the device (a bound), and the simulation
// carries the copies (tests/test_activation_offload.cpp times them by hand).
TEST_CASE("Offloaded activations cost PCIe bytes both ways, host memory, and at most three layers on the device") {
  const double sbh = s * b * h;
  const double layer = sbh * (34 / t + 5 * a * s / (h * t));  // TP + SP, no recompute, unfused (as above)
  auto experiment = [](const char* activations) {
    return test::experiment(
        std::string(R"({"model": {"preset": "gpt-22b", "flash_attention": false}, "training": {"micro_batch": 4,
        "global_batch": 8}, "strategy": {"tp": 8, "sp": true, "placement": {"activations": ")") +
        activations + R"("}}})");
  };
  const Analysis kept = analyze(experiment("replicated"));
  const Analysis offloaded = analyze(experiment("offloaded"));
  // 48 layers, one micro-batch in flight, and the loss over the head's logits (not offloaded): fused kernels, 6 bytes
  // a logit (fp32 softmax and the bf16 gradient) x 2048 x 4 tokens x 51,200 / 8 vocabulary = 314,572,800 bytes.
  CHECK(loss_saved_bytes(experiment("replicated")) + loss_transient_bytes(experiment("replicated")) == 314572800.0);
  CHECK(kept.memory.activations == Approx(48 * layer + 314572800.0).epsilon(1e-12));
  CHECK(offloaded.memory.activations == Approx(3 * layer + 314572800.0).epsilon(1e-12));
  CHECK(offloaded.memory.host == Approx(47 * layer).epsilon(1e-12));
  // Two micro-batches of 47 offloaded layers, out after the forward and back before the backward.
  CHECK(offloaded.comm.d2h == Approx(2 * 47 * layer).epsilon(1e-12));
  CHECK(offloaded.comm.h2d == Approx(2 * 47 * layer).epsilon(1e-12));
  CHECK(kept.comm.d2h == 0);
}

// torchtitan's op-level selective AC (training.recompute = selective-op) keeps per layer the block input, the outputs
// of the 1st, 3rd, 5th and 7th matmul (Q, V, w1, w2), the attention output and its fp32 log-sum-exp, and the
// reduce-scatters' shards with sp; it was costed as no recompute before (2.2x too much on Llama 3 8B), which refused
// torchtitan's own 8-GPU run.
TEST_CASE("Op-level selective AC keeps the block input, every other matmul output and the attention output") {
  // Llama 3 8B (h 4096, 32 heads of 128, 8 K/V heads, ffn 14336), seq 8192, micro-batch 2: 16,384 tokens.
  auto layer = [](int tp) {
    Experiment e = test::experiment(
        R"({"model": {"preset": "llama3-8b", "seq_len": 8192}, "training": {"micro_batch": 2, "recompute":
        "selective-op"}, "strategy": {"tp": )" +
        std::to_string(tp) + (tp > 1 ? R"(, "sp": true)" : "") + "}}");
    return layer_activation_bytes(e);
  };
  // Per token, bf16: input 4096 + Q 4096 + V 1024 + w1 14336 + w2 4096 + attention output 4096 = 31,744 elements =
  // 63,488 bytes, plus 32 heads x 4 bytes of log-sum-exp = 63,616 bytes; x 16,384 tokens = 1,042,284,544.
  CHECK(layer(1) == 1042284544.0);
  // tp 2 with sp: input 2048, Q/V/w1/attention out halved (2048 + 512 + 7168 + 2048), w2's partial sums whole (4096),
  // two reduce-scatter shards (2 x 2048): 22,016 elements = 44,032 bytes, plus 16 x 4 = 64: 44,096 x 16,384.
  CHECK(layer(2) == 722468864.0);
  // The full model on one GPU: 32 layers, against 139,264 bytes a token a layer before (no recompute, fused).
  Experiment none = test::experiment(R"({"model": {"preset": "llama3-8b", "seq_len": 8192}, "training":
      {"micro_batch": 2, "kernels": "fused"}, "strategy": "dp"})");
  CHECK(layer_activation_bytes(none) == 139264.0 * 16384);
  // Multi-head latent attention has no defined op-level AC here: refused.
  CHECK_THROWS_WITH(test::experiment(R"({"model": {"family": "llama", "layers": 2, "hidden": 256,
      "heads": 4, "vocab": 1000, "seq_len": 512, "head_dim": 32, "kv_lora_rank": 16, "qk_rope_head_dim": 16,
      "v_head_dim": 32}, "training": {"recompute": "selective-op"}, "strategy": "dp"})"),
                    Catch::Contains("training.recompute=selective-op is not modelled for multi-head latent"));
}

// The loss over the output head's logits was not counted: on Llama 3 (128k vocabulary) at 8,192 tokens it is the
// largest single allocation of the step. Saved fp32 softmax (4 bytes a logit) from the head's forward to its backward,
// plus the backward's gradients at its peak: eager PyTorch's nll_loss and log-softmax gradients in fp32 (8 bytes),
// Megatron's bf16 cast of the gradient computed in place (2 bytes).
TEST_CASE("The last stage holds the loss over its logits: saved softmax per micro-batch in flight and the gradients") {
  auto exp = [](const std::string& training, const std::string& strategy) {
    return test::experiment(R"({"model": {"preset": "llama3-8b", "seq_len": 8192}, "training": )" + training +
                            R"(, "strategy": )" + strategy + "}");
  };
  // Micro-batch 2 x 8,192 tokens x 128,256 words = 2,101,346,304 logits.
  const Experiment eager = exp(R"({"micro_batch": 2, "kernels": "eager"})", R"("dp")");
  CHECK(loss_saved_bytes(eager) == 4.0 * 2101346304);
  CHECK(loss_saved_bytes(eager) + loss_transient_bytes(eager) == 25216155648.0);  // 12 bytes a logit
  const Experiment fused = exp(R"({"micro_batch": 2})", R"("dp")");
  CHECK(loss_transient_bytes(fused) == 2.0 * 2101346304);
  // training.loss_kernel = fused (flash-attn's cross entropy, llm-foundry's default): the bf16 logits (2 bytes) and
  // an fp32 log-sum-exp per token (2 x 8,192 x 4 = 65,536) saved, the bf16 gradient (2 bytes) at the peak; under
  // eager kernels as well: the field, not the kernels, decides.
  const Experiment xentropy = exp(R"({"micro_batch": 2, "kernels": "eager", "loss_kernel": "fused"})", R"("dp")");
  CHECK(loss_saved_bytes(xentropy) == 4202758144.0);
  CHECK(loss_transient_bytes(xentropy) == 4202692608.0);
  // Written against the kernels' default: PyTorch's fp32 cross entropy under fused kernels, 4 + 8 bytes.
  const Experiment pytorch = exp(R"({"micro_batch": 2, "loss_kernel": "pytorch"})", R"("dp")");
  CHECK(loss_saved_bytes(pytorch) + loss_transient_bytes(pytorch) == 25216155648.0);
  CHECK_THROWS_WITH(exp(R"({"loss_kernel": "liger"})", R"("dp")"), Catch::Contains("training.loss_kernel") &&
                                                                       Catch::Contains("liger") &&
                                                                       Catch::Contains("is not one of"));
  // Vocabulary-parallel over tp 4: a quarter of the logits on each rank (128,256 / 4 = 32,064 words).
  const Experiment tp4 = exp(R"({"micro_batch": 2})", R"({"tp": 4})");
  CHECK(loss_saved_bytes(tp4) == 4.0 * 2 * 8192 * 32064);
  // pp 2, GPipe, 4 micro-batches: all four forwards' softmax wait for their backwards on the last stage; the first
  // stage holds none of it.
  const Experiment gpipe =
      exp(R"({"micro_batch": 1, "global_batch": 4})", R"({"pp": 2, "schedule": "gpipe", "microbatches": 4})");
  const Analysis a = analyze(gpipe);
  const double logits = 8192.0 * 128256;
  CHECK(a.stages[1].memory.activations == 4 * 16 * layer_activation_bytes(gpipe) + 4 * 4 * logits + 2 * logits);
  CHECK(a.stages[0].memory.activations == 4 * 16 * layer_activation_bytes(gpipe));
}
