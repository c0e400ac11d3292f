#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "strategies/analytic/Analytic.hpp"
#include "strategies/analytic/ComputeModel.hpp"
#include "strategies/analytic/TpLayerTimes.hpp"
#include "strategies/placement/Layout.hpp"
#include "tests/Helpers.hpp"
#include "topology/cluster/Cluster.hpp"
#include "traces/report/Report.hpp"
#include "workloads/model/Training.hpp"

using namespace placesim;

namespace {

// The 22B layer of Korthikanti et al. (arXiv 2205.05198, Table 4): h 6144, 64 heads, seq 2048, micro-batch 4, tp 8.
Experiment layer_22b(const std::string& recompute, bool sp) {
  return test::experiment(
      R"({"model":{"preset":"gpt-22b","flash_attention":false},"training":{"micro_batch":4,"dtype":"fp16","recompute":")" +
      recompute + R"("},"strategy":{"preset":"megatron-3d","tp":8,"sp":)" + (sp ? "true" : "false") + "}}");
}

double rate(const GemmShape& g, const AcceleratorSpec& acc) {
  return 2 * g.m * g.n * g.k * g.batch / gemm_time_s(g, DType::BF16, acc);
}

// A tiny Llama layer (h 256, 4 heads of 64, 2 KV heads, ffn 512 gated; T = 128 tokens; bf16; 4 micro-batches per
// step) under `strategy`, with or without FP8; `extra` adds training fields (",\"key\": value"). Its linears (in x
// out): qkv 256 x 512, proj 256 x 256, fc1 256 x 1024, fc2 512 x 256.
Experiment tiny_fp8_layer(bool fp8, const std::string& strategy, const std::string& extra = "") {
  return test::experiment(std::string(R"({"model": {"family": "llama", "layers": 2, "hidden": 256, "heads": 4,
      "kv_heads": 2, "ffn": 512, "vocab": 512, "seq_len": 128}, "training": {"micro_batch": 1, "global_batch": 4,
      "fp8": )") + (fp8 ? "true" : "false") +
                          extra + R"(}, "strategy": )" + strategy + "}");
}
struct TinyLinear {
  double in, out;
};
constexpr double kTinyTokens = 128;
constexpr TinyLinear kTinyLinears[] = {{256, 512}, {256, 256}, {256, 1024}, {512, 256}};

// The tiny layer's forward and backward time under Transformer Engine's FP8 less its bf16 time, by hand: per linear,
// the GEMMs at `gemm`'s FP8 rate less bf16's, a cast of `bytes` an element of the input (forward), of
// `weight_share` of the weight (forward) and of the output gradient (backward), each a memory-bound pass on `acc`.
std::pair<double, double> te_fp8_deltas(const AcceleratorSpec& acc, const AcceleratorSpec& gemm, double bytes,
                                        double weight_share) {
  const double T = kTinyTokens;
  auto cast = [&](double elems) { return elementwise_time_s(bytes * elems, acc); };
  double fwd = 0, bwd = 0;
  for (const TinyLinear& x : kTinyLinears) {
    fwd += fp8_gemm_time_s({T, x.out, x.in}, gemm) - gemm_time_s({T, x.out, x.in}, DType::BF16, acc) + cast(T * x.in) +
           weight_share * cast(x.in * x.out);
    bwd += fp8_gemm_time_s({T, x.in, x.out}, gemm) - gemm_time_s({T, x.in, x.out}, DType::BF16, acc) +
           fp8_gemm_time_s({x.in, x.out, T}, gemm, 8 * x.in * x.out) -
           gemm_time_s({x.in, x.out, T}, DType::BF16, acc, 8 * x.in * x.out) + cast(T * x.out);
  }
  return {fwd, bwd};
}

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = std::string(PLACESIM_BINARY) + "." + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

namespace {

double kernel_speed(AttentionKernel k, const std::string& accelerator, double seq, double head_dim) {
  return attention_kernel_speed(k, accelerator_preset(accelerator, "test"), seq, head_dim);
}

double attention_shape(const std::string& accelerator, double seq, double head_dim) {
  return fused_attention_shape(accelerator_preset(accelerator, "test").profile, seq, head_dim);
}

}  // namespace

TEST_CASE("Korthikanti Table 4: all five 22B layer cases within 5 percent on a100-80gb") {
  Json table = read_json_file(test::reference("korthikanti-table4.json"));
  const std::pair<const char*, bool> cases[] = {
      {"none", false}, {"none", true}, {"full", false}, {"selective", false}, {"selective", true}};
  const AcceleratorSpec acc = accelerator_preset("a100-80gb", "test");
  const FabricProfile nvlink = fabric_preset("nvlink3", "test");
  for (int i = 0; i < 5; ++i) {
    const Json& row = table["rows"][i];
    Experiment e = layer_22b(cases[i].first, cases[i].second);
    // Megatron-LM's layer times include the TP collectives it leaves exposed; layer_times is the compute alone.
    PassTimes compute = layer_times(e, acc);
    PassTimes measured_like = layer_times_with_tp_comm(e, acc, nvlink);
    double forward_ms = row["forward_ms"].get<double>(), backward_ms = row["backward_ms"].get<double>();
    INFO(row["case"].get<std::string>());
    CHECK(measured_like.forward_s * 1e3 == Approx(forward_ms).epsilon(0.05));
    CHECK((measured_like.backward_s + measured_like.recompute_s) * 1e3 == Approx(backward_ms).epsilon(0.05));
    CHECK(compute.forward_s < measured_like.forward_s);
    CHECK(compute.forward_s * 1e3 > 0.6 * forward_ms);
  }
}

TEST_CASE("Thin and small GEMMs reach less of peak than square ones") {
  const AcceleratorSpec acc = accelerator_preset("a100-80gb", "test");
  const double square = rate({8192, 8192, 8192}, acc);
  CHECK(square / acc.peak_bf16_flops == Approx(acc.profile.gemm_peak_efficiency).epsilon(0.05));
  CHECK(rate({8192, 8192, 64}, acc) < 0.5 * square);  // thin K: K-loop overhead and memory traffic
  CHECK(rate({8192, 96, 8192}, acc) < 0.8 * square);  // thin N: tile quantization (96 of 128) and bandwidth
  CHECK(rate({512, 512, 512}, acc) < 0.5 * square);   // small: fixed latency dominates
}

TEST_CASE("Flash attention removes the s squared score traffic from HBM") {
  auto seq_experiment = [](bool flash) {
    return test::experiment(std::string(R"({"model":{"preset":"gpt-22b","seq_len":8192,"flash_attention":)") +
                            (flash ? "true" : "false") +
                            R"(},"training":{"micro_batch":1},"strategy":{"preset":"megatron-3d","tp":8}})");
  };
  AcceleratorSpec slow = accelerator_preset("a100-80gb", "test");
  AcceleratorSpec fast = slow;
  fast.hbm_bw_Bps *= 1e6;  // memory traffic becomes free
  Experiment plain = seq_experiment(false), flash = seq_experiment(true);
  double plain_memory = layer_times(plain, slow).forward_s - layer_times(plain, fast).forward_s;
  double flash_memory = layer_times(flash, slow).forward_s - layer_times(flash, fast).forward_s;
  // Scores of 64/8 heads x 8192^2: softmax (read+write 2 bytes) and dropout (2+2+1) per element.
  double scores = 8.0 * 8192 * 8192;
  double score_traffic_s = 9 * scores / (slow.hbm_bw_Bps * slow.profile.memory_efficiency);
  CHECK(plain_memory - flash_memory > 0.9 * score_traffic_s);
  CHECK(flash_memory < 0.2 * plain_memory);
}

TEST_CASE("Recompute: selective repeats the attention core and full repeats the forward") {
  const AcceleratorSpec acc = accelerator_preset("a100-80gb", "test");
  PassTimes none = layer_times(layer_22b("none", false), acc);
  PassTimes selective = layer_times(layer_22b("selective", false), acc);
  PassTimes full = layer_times(layer_22b("full", false), acc);
  CHECK(none.recompute_s == 0);
  CHECK(selective.recompute_s > 0);
  CHECK(selective.recompute_s < 0.3 * none.forward_s);
  CHECK(full.recompute_s == Approx(full.forward_s));
  CHECK(selective.backward_s == Approx(none.backward_s));
}

TEST_CASE("Sequence parallelism runs norms and dropout on a 1/tp slice of the tokens") {
  const AcceleratorSpec acc = accelerator_preset("a100-80gb", "test");
  PassTimes tp_only = layer_times(layer_22b("none", false), acc);
  PassTimes with_sp = layer_times(layer_22b("none", true), acc);
  CHECK(with_sp.forward_s < tp_only.forward_s);
  CHECK(with_sp.backward_s < tp_only.backward_s);
}

TEST_CASE("Opaque models have no layer times and the optimizer step is bytes over bandwidth") {
  const AcceleratorSpec acc = accelerator_preset("h100-sxm", "test");
  Experiment opaque = test::experiment(R"({"model":{"parameters":7.5e9},"strategy":"dp"})");
  CHECK(layer_times(opaque, acc).forward_s == 0);
  CHECK(logit_times(opaque, acc).backward_s == 0);
  CHECK(embedding_times(opaque, acc).forward_s == 0);
  // bf16 mixed-precision Adam: 42 bytes per element (see the optimizer_step_bytes test).
  double expected = acc.profile.kernel_latency_s + 1e9 * 42 / (acc.hbm_bw_Bps * acc.profile.memory_efficiency);
  CHECK(optimizer_step_s(1e9, opaque, acc) == Approx(expected));
  // On the host: 1e9 x 14 FLOP at 1 TFLOP/s (14 ms) against 42 GB at 100 GB/s (420 ms): memory-bound.
  CHECK(host_optimizer_step_s(1e9, opaque, 1e12, 100e9) == Approx(0.42));
  CHECK(host_optimizer_step_s(1e9, opaque, 1e9, 100e9) == Approx(14.0));
}

TEST_CASE("The optimizer step moves the bytes of Megatron-LM's mixed-precision step") {
  auto training = [](const char* json) { return parse_training(Json::parse(json)); };
  // bf16 Adam: state 2 x 12, fp32 gradient read 4, norm 4, master -> bf16 copy 4 + 2, main-grad zeroing 4.
  CHECK(optimizer_step_bytes(training(R"({})")) == 42);
  // fp16 adds the unscale with its inf/nan check (read and write the fp32 gradient, 8); its gradients are fp16
  // (grad_dtype), copied to fp32 (2 + 4) and their buffer zeroed (2) instead of 4, fused accumulation or not.
  CHECK(optimizer_step_bytes(training(R"({"dtype":"fp16"})")) == 54);
  CHECK(optimizer_step_bytes(training(R"({"dtype":"fp16","grad_accumulation_fusion":false})")) == 54);
  // fp16 with an fp32 main-grad buffer (Megatron's --accumulate-allreduce-grads-in-fp32): read in place, 50.
  CHECK(optimizer_step_bytes(training(R"({"dtype":"fp16","grad_dtype":"fp32"})")) == 50);
  CHECK(optimizer_step_bytes(training(R"({"grad_clipping":false})")) == 38);
  // fp32 Adam: m and v (2 x 8), the parameter read and written (8), gradient read 4, norm 4, zeroing 4.
  CHECK(optimizer_step_bytes(training(R"({"dtype":"fp32"})")) == 36);
  // bf16 with the fp32 master weights as the parameters (PyTorch FSDP): m and v (2 x 8), the parameter read and
  // written (8), gradient read 4, norm 4, zeroing 4; no 16-bit copy. 36, as in fp32.
  CHECK(optimizer_step_bytes(training(R"({"master_weights":"parameters"})")) == 36);
  // bf16 SGD with momentum: master weights and momentum (2 x 8) + 4 + 4 + 6 + 4.
  CHECK(optimizer_step_bytes(training(R"({"optimizer":"sgd"})")) == 34);
}

// torch.optim's foreach step (_multi_tensor_adamw, _multi_tensor_sgd), one pass per op, on fp32 parameters with fp32
// gradients. AdamW: parameter x (1 - lr wd) 4 + 4; lerp of m 4 + 4 + 4; v x beta2 4 + 4; addcmul into v 4 + 4 + 4;
// sqrt of v into a temporary 4 + 4; its division 4 + 4 and eps 4 + 4; addcdiv into the parameter 4 + 4 + 4 + 4: 80.
// clip_grad_norm_: the norm's read 4 and the scaling 4 + 4; the gradient made ready for the next step 4. 96.
TEST_CASE("The foreach optimizer step: one pass per op, hand-counted; the PyTorch presets' default") {
  auto training = [](const char* json) { return parse_training(Json::parse(json)); };
  CHECK(optimizer_step_bytes(training(R"({"master_weights":"parameters","optimizer_kernel":"foreach"})")) == 96);
  CHECK(optimizer_step_bytes(
            training(R"({"master_weights":"parameters","optimizer_kernel":"foreach","grad_clipping":false})")) == 84);
  // SGD with momentum: buffer x momentum 4 + 4, + gradient 4 + 4 + 4, parameter - lr buffer 4 + 4 + 4: 32; + 12 + 4.
  CHECK(optimizer_step_bytes(training(R"({"optimizer":"sgd","dtype":"fp32","optimizer_kernel":"foreach"})")) == 48);
  // Defaults: the fsdp preset (fp32 master weights as the parameters) steps foreach; Megatron's fused; the fsdp
  // preset with the master weights in the state, or another state size, fused.
  const Experiment fsdp = test::experiment(R"({"model": "llama3-8b", "strategy": {"preset": "fsdp", "dp": 8}})");
  CHECK(fsdp.training.optimizer_kernel == OptimizerKernel::Foreach);
  CHECK(fsdp.provenance.find("training.optimizer_kernel")->origin == Provenance::Origin::Stack);
  CHECK(training_to_json(fsdp.training)["optimizer_kernel"] == "foreach");
  CHECK_THAT(analysis_table(fsdp, analyze(fsdp)),
             Catch::Contains("torch.optim's foreach step (the torchtitan-2024-12 stack's default)"));
  CHECK(test::experiment(R"({"model": "llama3-8b", "strategy": {"preset": "megatron-3d", "tp": 8}})")
            .training.optimizer_kernel == OptimizerKernel::Fused);
  CHECK(test::experiment(R"({"model": "llama3-8b", "training": {"master_weights": "optimizer"},
      "strategy": {"preset": "fsdp", "dp": 8}})")
            .training.optimizer_kernel == OptimizerKernel::Fused);
  CHECK(test::experiment(R"({"model": "llama3-8b", "training": {"optimizer_bytes_per_param": 2},
      "strategy": {"preset": "fsdp", "dp": 8}})")
            .training.optimizer_kernel == OptimizerKernel::Fused);
  // Its step is 96 - 36 = 60 bytes a parameter slower than the fused one on the same experiment.
  const AcceleratorSpec acc = accelerator_preset("h100-sxm", "a");
  Experiment fused = fsdp;
  fused.training.optimizer_kernel = OptimizerKernel::Fused;
  CHECK(optimizer_step_s(1e9, fsdp, acc) - optimizer_step_s(1e9, fused, acc) ==
        Approx(1e9 * 60 / (acc.hbm_bw_Bps * acc.profile.memory_efficiency)));
  // Written where it cannot run: refused, naming the field.
  CHECK_THROWS_WITH(test::experiment(R"({"model": "llama3-8b", "training": {"optimizer_kernel": "foreach"},
      "strategy": {"preset": "megatron-3d", "tp": 8}})"),
                    Catch::Contains("training.optimizer_kernel=foreach") &&
                        Catch::Contains("training.master_weights=optimizer, the megatron-lm-2022 stack's default"));
  CHECK_THROWS_WITH(
      test::experiment(R"({"model": "llama3-8b", "training": {"optimizer_kernel": "foreach",
      "optimizer_bytes_per_param": 2}, "strategy": {"preset": "fsdp", "dp": 8}})"),
      Catch::Contains("training.optimizer_kernel=foreach") && Catch::Contains("optimizer_bytes_per_param"));
  CHECK_THROWS_WITH(training(R"({"optimizer_kernel": "apex"})"), Catch::Contains("training.optimizer_kernel"));
}

TEST_CASE("With gemm_sms a GEMM's output tiles run in whole waves over the SMs") {
  // Peak 1 PFLOP/s at efficiency 1, no latency, no K overhead, memory time negligible: a 256 x 256 x 1024 GEMM has
  // 4 tiles of 128 x 128; over 3 SMs they take 2 waves of 3, so the rate is 4/6 of peak. Two of them batched: 8 tiles
  // in 3 waves, 8/9 of peak. Without gemm_sms the rate is the peak.
  AcceleratorSpec acc;
  acc.peak_bf16_flops = 1e15;
  acc.hbm_bw_Bps = 1e30;
  acc.profile.gemm_peak_efficiency = 1;
  acc.profile.gemm_latency_s = 0;
  acc.profile.gemm_k_overhead = 0;
  acc.profile.gemm_tile = 128;
  acc.profile.memory_efficiency = 1;
  const double flops = 2.0 * 256 * 256 * 1024;
  CHECK(gemm_time_s({256, 256, 1024}, DType::BF16, acc) == Approx(flops / 1e15));
  acc.profile.gemm_sms = 3;
  CHECK(gemm_time_s({256, 256, 1024}, DType::BF16, acc) == Approx(flops / (1e15 * 4.0 / 6.0)));
  CHECK(gemm_time_s({256, 256, 1024, 2}, DType::BF16, acc) == Approx(2 * flops / (1e15 * 8.0 / 9.0)));
}

TEST_CASE("A profile file's gemm_sms is optional and must be a whole number") {
  Json compute = compute_profile_to_json(accelerator_preset("a100-80gb", "test").profile);
  compute.erase("gemm_sms");
  CHECK(parse_compute_profile(compute, "p").gemm_sms == 0);
  compute["gemm_sms"] = 132;
  CHECK(parse_compute_profile(compute, "p").gemm_sms == 132);
  compute["gemm_sms"] = 1.5;
  CHECK_THROWS_WITH(parse_compute_profile(compute, "p"), "p.gemm_sms=1.5 must be a whole number of SMs");
  compute["gemm_sms"] = -1;
  CHECK_THROWS_WITH(parse_compute_profile(compute, "p"), "p.gemm_sms=-1 must not be negative");
}

TEST_CASE("Logit and embedding layers split the vocabulary over tp") {
  const AcceleratorSpec acc = accelerator_preset("a100-80gb", "test");
  PassTimes tp1 = logit_times(test::experiment(R"({"model":"gpt-22b","strategy":"dp"})"), acc);
  PassTimes tp8 =
      logit_times(test::experiment(R"({"model":"gpt-22b","strategy":{"preset":"megatron-3d","tp":8}})"), acc);
  CHECK(tp8.forward_s < 0.25 * tp1.forward_s);
  // tp 1, one sequence of 2048 tokens, h 6144, vocabulary 51200, bf16: the final norm (read and write), the logits
  // GEMM and the fp32 cross entropy, 38 bytes per logit forward (cast 2 + 4, max 4, subtract 8, exp 8, sum 4,
  // divide 8) and 14 backward (scale 8, cast back 4 + 2).
  const double tokens = 2048, h = 6144, vocab = 51200, logits = tokens * vocab;
  CHECK(tp1.forward_s ==
        Approx(elementwise_time_s(2 * 2 * tokens * h, acc) + gemm_time_s({tokens, vocab, h}, DType::BF16, acc) +
               elementwise_time_s(38 * logits, acc)));
  CHECK(tp1.backward_s ==
        Approx(elementwise_time_s(14 * logits, acc) + gemm_time_s({tokens, h, vocab}, DType::BF16, acc) +
               gemm_time_s({h, vocab, tokens}, DType::BF16, acc, 8 * h * vocab) +
               elementwise_time_s(3 * 2 * tokens * h, acc)));
  CHECK(embedding_times(test::experiment(R"({"model":"gpt-22b","strategy":"dp"})"), acc).backward_s > 0);
  // training.loss_kernel = fused: two reads of the bf16 logits forward (max, then sum of exponentials), a read and a
  // write backward (4 and 4 bytes a logit), the norm and the GEMMs as above.
  PassTimes fused =
      logit_times(test::experiment(R"({"model":"gpt-22b","training":{"loss_kernel":"fused"},"strategy":"dp"})"), acc);
  CHECK(fused.forward_s ==
        Approx(tp1.forward_s - elementwise_time_s(38 * logits, acc) + elementwise_time_s(4 * logits, acc)));
  CHECK(fused.backward_s ==
        Approx(tp1.backward_s - elementwise_time_s(14 * logits, acc) + elementwise_time_s(4 * logits, acc)));
  // The loss kernel is echoed when written (a sweep's rows and the report's input echo re-parse it), not otherwise.
  const Experiment written =
      test::experiment(R"({"model":"gpt-22b","training":{"loss_kernel":"fused"},"strategy":"dp"})");
  CHECK(training_to_json(written.training, written.provenance)["loss_kernel"] == "fused");
  CHECK(parse_training(training_to_json(written.training, written.provenance)).loss_kernel == LossKernel::Fused);
  CHECK_FALSE(
      training_to_json(test::experiment(R"({"model":"gpt-22b","strategy":"dp"})").training).contains("loss_kernel"));
}

TEST_CASE("Every accelerator preset runs a built-in profile, as the file in topology/profiles says") {
  for (const auto& [name, description] : accelerator_preset_list()) {
    const AcceleratorSpec a = accelerator_preset(name, "test");
    REQUIRE_FALSE(a.profile_name.empty());
    ComputeProfile file =
        load_profile_file(std::string(PLACESIM_SOURCE_DIR) + "/topology/profiles/" + a.profile_name + ".json").compute;
    ComputeProfile preset = a.profile;
    INFO(name);
    CHECK(compute_profile_to_json(file) == compute_profile_to_json(preset));
    CHECK(file.sources.size() >= 1);
  }
}

TEST_CASE("No preset's GEMM runs faster than its peak or its HBM allows, at any size") {
  // The model is latency + a soft maximum of the compute time at peak x efficiency and the bytes over bandwidth, so
  // for every shape the time is at least the larger of the two bounds by hand: 2mnk / peak and the A, B and C bytes
  // (2 bytes each in bf16) over the HBM bandwidth. Profiles with a steep roofline exponent (q near 90) once
  // underflowed to a zero time below about 17 us of compute; these sizes span that range.
  for (const auto& [name, description] : accelerator_preset_list()) {
    const AcceleratorSpec a = accelerator_preset(name, "test");
    for (double n : {64.0, 256.0, 1024.0, 2048.0, 8192.0}) {
      const GemmShape g{n, n, n};
      const double compute_bound = 2 * n * n * n / a.peak_bf16_flops;
      const double memory_bound = 2 * 3 * n * n / a.hbm_bw_Bps;
      INFO(name << " " << n << "^3");
      CHECK(gemm_time_s(g, DType::BF16, a) >= std::max(compute_bound, memory_bound));
    }
  }
}

TEST_CASE("An accelerator takes a profile file by the profile key") {
  Json p = read_json_file(std::string(PLACESIM_SOURCE_DIR) + "/topology/profiles/h100-sxm.json");
  p["compute"]["gemm_peak_efficiency"] = 0.5;
  std::string path = write_temp("profile-ok.json", p.dump());
  AcceleratorSpec a = parse_accelerator(Json{{"preset", "a100-80gb"}, {"profile", path}}, "cluster.accelerator");
  CHECK(a.peak_bf16_flops == 312e12);
  CHECK(a.profile.gemm_peak_efficiency == 0.5);
  CHECK(a.profile.flash_attention_efficiency == p["compute"]["flash_attention_efficiency"].get<double>());
}

TEST_CASE("A profile file's fitted fabrics run the cluster's collectives unless the cluster gives comm") {
  Json p = read_json_file(std::string(PLACESIM_SOURCE_DIR) + "/topology/profiles/a100-80gb.json");
  p["comm"]["intra_node"]["bus_efficiency"] = 0.5;
  std::string path = write_temp("profile-comm.json", p.dump());
  Json accelerator{{"preset", "a100-80gb"}, {"profile", path}};
  ClusterSpec c = parse_cluster(Json{{"preset", "dgx-a100"}, {"accelerator", accelerator}});
  CHECK(c.comm.intra_node.bus_efficiency == 0.5);
  CHECK(c.comm.inter_node.name == "ib-hdr");  // the profile fitted no network: the reference system's
  ClusterSpec given = parse_cluster(Json{{"preset", "dgx-a100"},
                                         {"accelerator", accelerator},
                                         {"comm", {{"intra_node", "nvlink3"}, {"inter_node", "ib-hdr"}}}});
  CHECK(given.comm.intra_node.bus_efficiency == fabric_preset("nvlink3", "test").bus_efficiency);
  // A custom accelerator has no reference system for the fabric its profile did not fit.
  Json custom{{"name", "npu"},
              {"peak_bf16_flops", "400TFLOPS"},
              {"hbm_bytes", "96GiB"},
              {"hbm_bw", "3TB/s"},
              {"profile", path}};
  CHECK_THROWS_WITH(parse_cluster(Json{{"preset", "dgx-a100"}, {"accelerator", custom}}),
                    Catch::Contains("cluster.accelerator has only the intra_node fabric (from its profile or "
                                    "fabrics), and the custom accelerator npu has no reference system"));
  // The key calibrate wrote before fabrics named their place.
  p["comm"] = Json{{"fabric", p["comm"]["intra_node"]}};
  CHECK_THROWS_WITH(load_profile_file(write_temp("profile-old-comm.json", p.dump())),
                    Catch::Contains("comm.fabric: a profile's fabric names where it runs, intra_node or inter_node"));
}

TEST_CASE("The NVLink-cut variants' profile files keep the cut when an accelerator loads them") {
  for (const auto& [variant, cluster_preset] : {std::pair{"a800", "hgx-a800"}, std::pair{"h800", "hgx-h800"}}) {
    INFO(variant);
    const std::string path = std::string(PLACESIM_SOURCE_DIR) + "/topology/profiles/" + variant + ".json";
    ClusterSpec c =
        parse_cluster(Json{{"preset", cluster_preset}, {"accelerator", {{"preset", variant}, {"profile", path}}}});
    CHECK(c.comm.intra_node.link_bw_Bps == 200e9);
    CHECK(c.nvlink_bw_Bps == 200e9);
    CHECK(c.comm.intra_node.name == std::string(variant == std::string("a800") ? "nvlink3-a800" : "nvlink4-h800"));
  }
}

TEST_CASE("A profile file with a missing field is refused naming the field") {
  Json p = read_json_file(std::string(PLACESIM_SOURCE_DIR) + "/topology/profiles/a100-80gb.json");
  p["compute"].erase("memory_efficiency");
  std::string path = write_temp("profile-missing.json", p.dump());
  CHECK_THROWS_WITH(parse_accelerator(Json{{"preset", "a100-80gb"}, {"profile", path}}, "accelerator"),
                    Catch::Contains("compute.memory_efficiency is required but missing"));
}

TEST_CASE("A profile file with a negative field is refused naming the field and value") {
  Json p = read_json_file(std::string(PLACESIM_SOURCE_DIR) + "/topology/profiles/a100-80gb.json");
  p["compute"]["gemm_latency_s"] = -1e-6;
  std::string path = write_temp("profile-negative.json", p.dump());
  CHECK_THROWS_WITH(load_profile_file(path), Catch::Contains("compute.gemm_latency_s=-1e-06 must not be negative"));
}

// training.launch_overhead: a pass lasts at least its kernels' host issue time. A tiny GPT layer (fused attention, no
// rotary, biases): forward 4 linears + attention + layout copy + 2 norms + 2 residuals + activation = 11 kernels;
// backward 8 GEMMs + attention + copy + 2 norms + 2 residuals + activation + 4 bias reductions = 19. Llama (rotary, no
// biases): 12 and 16.
TEST_CASE("A host-bound layer lasts its kernels times the launch overhead") {
  const AcceleratorSpec acc = accelerator_preset("h100-sxm", "a");
  auto tiny = [](const char* family, const char* overhead) {
    return test::experiment(std::string(R"({"model": {"family": ")") + family +
                            R"(", "layers": 2, "hidden": 256, "heads": 4, "vocab": 512, "seq_len": 128},
                             "training": {"micro_batch": 1, "global_batch": 1, "launch_overhead": ")" +
                            overhead + R"("}, "strategy": "dp"})");
  };
  PassTimes gpu = layer_times(tiny("gpt", "0us"), acc);
  REQUIRE(gpu.forward_s < 11 * 50e-6);
  PassTimes host = layer_times(tiny("gpt", "50us"), acc);
  CHECK(host.forward_s == Approx(11 * 50e-6));
  CHECK(host.backward_s == Approx(19 * 50e-6));
  PassTimes llama = layer_times(tiny("llama", "50us"), acc);
  CHECK(llama.forward_s == Approx(12 * 50e-6));
  CHECK(llama.backward_s == Approx(16 * 50e-6));
  // A GPU-bound layer is untouched by a small overhead.
  Experiment big = test::experiment(R"({"model": "llama3-8b", "training": {"micro_batch": 1, "global_batch": 1,
                                        "launch_overhead": "10us"}, "strategy": "dp"})");
  Experiment big0 = test::experiment(R"({"model": "llama3-8b", "training": {"micro_batch": 1, "global_batch": 1},
                                         "strategy": "dp"})");
  CHECK(layer_times(big, acc).forward_s == layer_times(big0, acc).forward_s);
  CHECK_THROWS_WITH(tiny("gpt", "5ms"), Catch::Contains("training.launch_overhead") && Catch::Contains("at most 1 ms"));
}

// torchtitan's op-level selective AC (activation_checkpoint.selective_ac_option = "op": `_save_list` keeps mm, the
// attention kernel and reduce-scatter outputs "except every second mm"): the forward's element-wise kernels and its
// 2nd, 4th and 6th matmul run again. Llama 3 8B: wk (4096 x 1024), wo (4096 x 4096), w3 (4096 x 14336).
TEST_CASE("selective-op recomputes the element-wise ops and every second matmul of the forward") {
  const AcceleratorSpec acc = accelerator_preset("h100-sxm", "a");
  auto llama = [](const char* recompute) {
    return test::experiment(std::string(R"({"model": {"preset": "llama3-8b", "seq_len": 8192},
        "training": {"micro_batch": 1, "global_batch": 8, "recompute": ")") +
                            recompute + R"("}, "strategy": {"preset": "fsdp", "dp": 8}})");
  };
  const double T = 8192;
  PassTimes op = layer_times(llama("selective-op"), acc), none = layer_times(llama("none"), acc);
  const double gemms = gemm_time_s({T, 1024, 4096}, DType::BF16, acc) + gemm_time_s({T, 4096, 4096}, DType::BF16, acc) +
                       gemm_time_s({T, 14336, 4096}, DType::BF16, acc);
  CHECK(op.recompute_s > gemms);
  CHECK(op.recompute_s < none.forward_s);  // three of seven matmuls and the element-wise kernels: less than full
  CHECK(op.forward_s == none.forward_s);
  CHECK(op_sac_recompute_flops_per_token(llama("none").model) == 2.0 * (4096 * 1024 + 4096 * 4096 + 14336 * 4096));
  // The stage's hardware FLOPs count the recomputed matmuls once per micro-batch.
  Analysis a = analyze(llama("selective-op")), n = analyze(llama("none"));
  CHECK(a.stages[0].hardware_flops - n.stages[0].hardware_flops ==
        Approx(32 * 2.0 * (4096 * 1024 + 4096 * 4096 + 14336 * 4096) * T * 1));
}

// training.kernels = eager: PyTorch eager's decompositions (torchtitan's Llama: RMSNorm in 8 fp32 kernels, rotary
// through fp32 complex numbers, repeat_kv copies, SiLU and the gate product apart). A tiny Llama layer: h 256, 4 heads
// of 64, 2 KV heads (q 256, k 128), ffn 512, T = 128 tokens, bf16, one device. Per element, bytes read + written:
//   RMSNorm forward 6 + 8 + 4 + 8 + 6 + 4 = 36 (fused 4), and 4 + 8 + 8 + 4 = 24 per row (mean, eps, rsqrt, product);
//   backward 4 + 6 + 2 + 6 + 8 + 12 + 4 + 4 + 16 + 12 + 12 + 6 = 92 (fused 6), and 4 + 4 + 12 + 4 = 24 per row (rsqrt's
//   product, the row sum, rsqrt's and mean's backward); rotary 6 + 8 + 6 = 20 per q and k element each way (fused 4);
//   repeat_kv 2 (k + q) for K and V each way; SwiGLU forward 4 + 6 = 10 per ffn element (fused 6), backward 6 + 6 + 6 =
//   18 (fused 10).
// Kernels added: forward 2 x 7 (norms) + 5 (rotary: 6 for 1) + 2 (repeat_kv) + 1 (SiLU) = 22; backward 2 x 13 + 5 + 2
// + 2 = 35. Each kernel costs the profile's kernel latency, each byte 1 / (HBM bandwidth x memory efficiency).
TEST_CASE("Eager kernels add exactly the hand-counted bytes and kernels of torchtitan's decompositions") {
  const AcceleratorSpec acc = accelerator_preset("h100-sxm", "a");
  auto tiny = [](const char* kernels) {
    return test::experiment(std::string(R"({"model": {"family": "llama", "layers": 2, "hidden": 256, "heads": 4,
        "kv_heads": 2, "ffn": 512, "vocab": 512, "seq_len": 128}, "training": {"micro_batch": 1, "global_batch": 1,
        "kernels": ")") + kernels +
                            R"("}, "strategy": "dp"})");
  };
  const double T = 128, h = 256, qk = 256 + 128, f = 512;
  const double byte_s = 1 / (acc.hbm_bw_Bps * acc.profile.memory_efficiency), lat = acc.profile.kernel_latency_s;
  const double forward_bytes =
      2 * (36 - 4) * T * h + 2 * 24 * T + (20 - 4) * T * qk + 2 * 2 * T * qk + (10 - 6) * T * f;
  const double backward_bytes =
      2 * (92 - 6) * T * h + 2 * 24 * T + (20 - 4) * T * qk + 2 * 2 * T * qk + (18 - 10) * T * f;
  PassTimes fused = layer_times(tiny("fused"), acc), eager = layer_times(tiny("eager"), acc);
  CHECK(eager.forward_s - fused.forward_s == Approx(22 * lat + forward_bytes * byte_s).epsilon(1e-9));
  CHECK(eager.backward_s - fused.backward_s == Approx(35 * lat + backward_bytes * byte_s).epsilon(1e-9));
  // compiled (torch.compile) is costed as fused.
  PassTimes compiled = layer_times(tiny("compiled"), acc);
  CHECK(compiled.forward_s == fused.forward_s);
  CHECK(compiled.backward_s == fused.backward_s);
}

TEST_CASE("Eager LayerNorm and GeLU are single ATen kernels: a GPT layer without dropout costs the same") {
  const AcceleratorSpec acc = accelerator_preset("h100-sxm", "a");
  auto gpt = [](const char* kernels) {
    return test::experiment(std::string(R"({"model": {"family": "gpt", "layers": 2, "hidden": 256, "heads": 4,
        "vocab": 512, "seq_len": 128, "dropout": false}, "training": {"micro_batch": 1, "global_batch": 1,
        "kernels": ")") + kernels +
                            R"("}, "strategy": "dp"})");
  };
  PassTimes fused = layer_times(gpt("fused"), acc), eager = layer_times(gpt("eager"), acc);
  CHECK(eager.forward_s == fused.forward_s);
  CHECK(eager.backward_s == fused.backward_s);
}

TEST_CASE("The FSDP presets default to eager kernels, the others to fused; training.kernels wins and is reported") {
  auto with = [](const char* strategy, const char* training) {
    return test::experiment(std::string(R"({"model": {"preset": "llama3-8b", "seq_len": 1024}, "training":
        {"micro_batch": 1)") +
                            training + R"(}, "strategy": )" + strategy + "}");
  };
  CHECK(with(R"({"preset": "fsdp", "dp": 8})", "").training.kernels == Kernels::Eager);
  CHECK(with(R"({"preset": "hsdp", "dp": 16, "mesh": {"dp_replicate": 2, "dp_shard": 8}})", "").training.kernels ==
        Kernels::Eager);
  CHECK(with(R"({"preset": "fsdp-tp", "dp": 2, "tp": 4})", "").training.kernels == Kernels::Eager);
  CHECK(with(R"({"preset": "zero3", "dp": 8})", "").training.kernels == Kernels::Fused);
  CHECK(with(R"({"preset": "megatron-3d", "tp": 8})", "").training.kernels == Kernels::Fused);
  CHECK(with(R"({"preset": "dp", "dp": 8})", "").training.kernels == Kernels::Fused);
  Experiment compiled = with(R"({"preset": "fsdp", "dp": 8})", R"(, "kernels": "compiled")");
  CHECK(compiled.training.kernels == Kernels::Compiled);
  CHECK(training_to_json(compiled.training)["kernels"] == "compiled");
  CHECK(kernels_text(compiled) == "compiled element-wise kernels, costed as fused (training.kernels)");
  CHECK(kernels_text(with(R"({"preset": "fsdp", "dp": 8})", "")) ==
        "eager element-wise kernels (the torchtitan-2024-12 stack's default)");
  CHECK_THROWS_WITH(with(R"({"preset": "fsdp", "dp": 8})", R"(, "kernels": "jit")"),
                    Catch::Contains("training.kernels") && Catch::Contains("jit"));
}

// Eager saves per layer (no recompute): each RMSNorm 4 more bytes per hidden element (its fp32 input copy and 16-bit
// output before the weight, for the fused norm's 16-bit input), K and V at every query head (2 x 2 x (heads - kv_heads)
// x head_dim per token) and SwiGLU's SiLU output (2 x ffn). Llama 3 8B, seq 1024, micro-batch 1: 8 x 1024 x 4096 +
// 2 x 2 x 1024 x 24 x 128 + 2 x 1024 x 14336.
TEST_CASE("Eager kernels keep more activations unless op-level or full recompute drops them") {
  auto llama = [](const char* kernels, const char* recompute) {
    return test::experiment(std::string(R"({"model": {"preset": "llama3-8b", "seq_len": 1024}, "training":
        {"micro_batch": 1, "kernels": ")") +
                            kernels + R"(", "recompute": ")" + recompute +
                            R"("}, "strategy": {"preset": "fsdp", "dp": 8}, "stack": "megatron-lm-2022"})");
  };
  const double extra = 8.0 * 1024 * 4096 + 2.0 * 2 * 1024 * 24 * 128 + 2.0 * 1024 * 14336;
  CHECK(layer_activation_bytes(llama("eager", "none")) - layer_activation_bytes(llama("fused", "none")) == extra);
  CHECK(layer_activation_bytes(llama("eager", "selective")) - layer_activation_bytes(llama("fused", "selective")) ==
        extra);
  CHECK(layer_activation_bytes(llama("eager", "selective-op")) ==
        layer_activation_bytes(llama("fused", "selective-op")));
  CHECK(layer_activation_bytes(llama("eager", "full")) == layer_activation_bytes(llama("fused", "full")));
}

// Host-bound eager layer: a Llama layer without GQA launches 12 + 2 x 7 + 5 + 1 = 32 kernels forward and
// 16 + 2 x 13 + 5 + 2 = 49 backward (the fused counts of the launch-overhead test plus the decompositions).
TEST_CASE("An eager host-bound layer lasts its eager kernel count times the launch overhead") {
  const AcceleratorSpec acc = accelerator_preset("h100-sxm", "a");
  Experiment e = test::experiment(R"({"model": {"family": "llama", "layers": 2, "hidden": 256, "heads": 4, "vocab": 512,
      "seq_len": 128}, "training": {"micro_batch": 1, "global_batch": 1, "launch_overhead": "50us", "kernels": "eager"},
      "strategy": "dp"})");
  PassTimes t = layer_times(e, acc);
  CHECK(t.forward_s == Approx(32 * 50e-6));
  CHECK(t.backward_s == Approx(49 * 50e-6));
}

// training.fused_norm (torchtitan's norm_type = "fused_rmsnorm"): under eager kernels the norms cost as fused; the
// tiny Llama layer of the eager test keeps only the rotary, repeat_kv and SwiGLU terms, and no norm activation extra.
TEST_CASE("fused_norm keeps eager's other decompositions and drops the norm's") {
  const AcceleratorSpec acc = accelerator_preset("h100-sxm", "a");
  auto tiny = [](const char* training) {
    return test::experiment(std::string(R"({"model": {"family": "llama", "layers": 2, "hidden": 256, "heads": 4,
        "kv_heads": 2, "ffn": 512, "vocab": 512, "seq_len": 128}, "training": {"micro_batch": 1, "global_batch": 1)") +
                            training + R"(}, "strategy": "dp"})");
  };
  const double T = 128, qk = 256 + 128, f = 512;
  const double byte_s = 1 / (acc.hbm_bw_Bps * acc.profile.memory_efficiency), lat = acc.profile.kernel_latency_s;
  Experiment e = tiny(R"(, "kernels": "eager", "fused_norm": true)");
  PassTimes fused = layer_times(tiny(""), acc), eager = layer_times(e, acc);
  CHECK(eager.forward_s - fused.forward_s ==
        Approx(8 * lat + ((20 - 4) * T * qk + 2 * 2 * T * qk + (10 - 6) * T * f) * byte_s).epsilon(1e-9));
  CHECK(eager.backward_s - fused.backward_s ==
        Approx(9 * lat + ((20 - 4) * T * qk + 2 * 2 * T * qk + (18 - 10) * T * f) * byte_s).epsilon(1e-9));
  CHECK(layer_activation_bytes(e) - layer_activation_bytes(tiny("")) == 2.0 * 2 * T * 2 * 64 + 2.0 * T * f);
  CHECK(kernels_text(e) == "eager element-wise kernels with a fused RMSNorm (training.kernels)");
  CHECK(training_to_json(e.training)["fused_norm"] == true);
  CHECK_THROWS_WITH(tiny(R"(, "fused_norm": true)"),
                    "training.fused_norm=true has no meaning with training.kernels=fused (the megatron-lm-2022 stack's "
                    "default): "
                    "fused and compiled kernels fuse every norm already");
}

// FlashAttention-2 release benchmarks (Dao-AILab/flash-attention 4f285b35, assets/flash2_{a100,h100}_fwd_bwd_
// benchmark.png, causal panels): A100 head dim 128 at 2k: Triton 68, FlashAttention-2 155 TFLOP/s; head dim 64:
// Triton 79, FA2 140; 16k: Triton 80, FA2 189. H100 head dim 128: FA1 108 at 2k, 126 at 4k; FA2 265, 294.
TEST_CASE("Older attention kernels run at their measured speed over FlashAttention-2, interpolated in log2") {
  CHECK(kernel_speed(AttentionKernel::Fused, "b200", 2048, 128) == 1);
  CHECK(kernel_speed(AttentionKernel::Triton, "a100-80gb", 2048, 128) == Approx(68.0 / 155).epsilon(1e-12));
  CHECK(kernel_speed(AttentionKernel::Triton, "a100-40gb", 2048, 64) == Approx(79.0 / 140).epsilon(1e-12));
  CHECK(kernel_speed(AttentionKernel::Triton, "a800", 2048, 128) == Approx(68.0 / 155).epsilon(1e-12));
  // Head dimension 96: log2(96) = 6.585 of the way from 64 to 128.
  const double f = std::log2(96.0) - 6;
  CHECK(kernel_speed(AttentionKernel::Triton, "a100-80gb", 2048, 96) ==
        Approx(79.0 / 140 + (68.0 / 155 - 79.0 / 140) * f).epsilon(1e-12));
  // Sequence 3000 on H100, FlashAttention v1: between 2k and 4k at log2(3000) - 11.
  const double g = std::log2(3000.0) - 11;
  CHECK(kernel_speed(AttentionKernel::Flash1, "h100-sxm", 3000, 128) ==
        Approx(108.0 / 265 + (126.0 / 294 - 108.0 / 265) * g).epsilon(1e-12));
  // Clamped outside 512..16k; the Triton kernel on Hopper takes FlashAttention v1's curve.
  CHECK(kernel_speed(AttentionKernel::Triton, "a100-80gb", 65536, 128) == Approx(80.0 / 189).epsilon(1e-12));
  CHECK(kernel_speed(AttentionKernel::Triton, "h200", 2048, 128) ==
        kernel_speed(AttentionKernel::Flash1, "h100-sxm", 2048, 128));
  CHECK_THROWS_WITH(kernel_speed(AttentionKernel::Triton, "b200", 2048, 128),
                    Catch::Contains("training.attention_kernel=triton") && Catch::Contains("b200"));
}

// FlashAttention-3 paper (arXiv 2407.08608), Figures 5 and 6, H100 80GB SXM5, BF16 (TFLOP/s). Head dimension 128 at
// 8k: FlashAttention-2 forward (causal) 333, backward 318; cuDNN 529 and 518. Head dimension 64 at 2k: FlashAttention-2
// forward 318, backward 264; FlashAttention-3 460 and 422. The passes' times per forward FLOP: 1/fwd + 2.5/bwd.
TEST_CASE("cuDNN's and FlashAttention-3's attention run at their measured speed over FlashAttention-2 on Hopper") {
  const double cudnn_8k = (1 / 333.0 + 2.5 / 318) / (1 / 529.0 + 2.5 / 518);  // = 1.6176
  CHECK(kernel_speed(AttentionKernel::Cudnn, "h100-sxm", 8192, 128) == Approx(cudnn_8k).epsilon(1e-12));
  CHECK(kernel_speed(AttentionKernel::Cudnn, "h200", 8192, 128) == Approx(cudnn_8k).epsilon(1e-12));
  const double fa3_2k_hd64 = (1 / 318.0 + 2.5 / 264) / (1 / 460.0 + 2.5 / 422);  // = 1.5577
  CHECK(kernel_speed(AttentionKernel::Fa3, "h800", 2048, 64) == Approx(fa3_2k_hd64).epsilon(1e-12));
  // The layer's attention at that point: 8 heads of dimension 128 over 8,192 tokens, causal (8192^2 / 2 pairs), 4 x 128
  // FLOPs per pair and head forward, 2.5x that backward, at H100's reference point of the FlashAttention-2 curve
  // (shape 1, above) and cuDNN's speed over it: latency + FLOPs / (peak x efficiency x 1.6176).
  const AcceleratorSpec h100 = accelerator_preset("h100-sxm", "a");
  const Experiment layer = test::experiment(
      R"({"model": {"family": "gpt", "layers": 2, "hidden": 1024, "heads": 8, "vocab": 512, "seq_len": 8192,
          "dropout": false}, "training": {"micro_batch": 1, "global_batch": 1, "attention_kernel": "cudnn"},
          "strategy": "dp", "cluster": {"preset": "dgx-h100", "nodes": 1}})");
  const double flops = 4 * 128 * 8 * 8192.0 * 8192 / 2;
  const double rate = h100.peak_flops(DType::BF16) * h100.profile.flash_attention_efficiency * cudnn_8k;
  const PassTimes t = layer_times(layer, h100);
  CHECK(t.attention_forward_s == Approx(h100.profile.kernel_latency_s + flops / rate).epsilon(1e-12));
  CHECK(t.attention_backward_s == Approx(h100.profile.kernel_latency_s + 2.5 * flops / rate).epsilon(1e-12));
  // Clamped beyond 16k: the 16k points (cuDNN, head dimension 128: 335/322 against 539/516).
  CHECK(kernel_speed(AttentionKernel::Cudnn, "h100-sxm", 131072, 128) ==
        Approx((1 / 335.0 + 2.5 / 322) / (1 / 539.0 + 2.5 / 516)).epsilon(1e-12));
  CHECK_THROWS_WITH(kernel_speed(AttentionKernel::Cudnn, "a100-80gb", 2048, 128),
                    Catch::Contains("training.attention_kernel=cudnn") && Catch::Contains("not measured") &&
                        Catch::Contains("a100-80gb") && Catch::Contains("fused, fa2, flash1, triton"));
  CHECK_THROWS_WITH(kernel_speed(AttentionKernel::Fa3, "b200", 2048, 128),
                    Catch::Contains("training.attention_kernel=fa3") && Catch::Contains("not measured"));
  const Experiment cudnn = test::experiment(
      R"({"model": "gpt-1.7b", "training": {"attention_kernel": "cudnn"}, "strategy": "dp",
          "cluster": {"preset": "dgx-h100", "nodes": 1}})");
  CHECK(training_to_json(cudnn.training)["attention_kernel"] == "cudnn");
  CHECK(attention_text(cudnn) ==
        "fused attention (cuDNN's, at its measured speed relative to FlashAttention-2: training.attention_kernel)");
}

TEST_CASE("Fused attention follows FlashAttention-2's measured curve over sequence length and head dimension") {
  // Release benchmark points (causal, fwd + bwd TFLOP/s), over the reference point: A100 (8192, 64) = 165,
  // Hopper (8192, 128) = 308.
  CHECK(attention_shape("a100-80gb", 8192, 64) == 1);
  CHECK(attention_shape("a100-40gb", 2048, 128) == Approx(155.0 / 165).epsilon(1e-12));
  CHECK(attention_shape("a100-80gb", 512, 64) == Approx(88.0 / 165).epsilon(1e-12));
  CHECK(attention_shape("a100-80gb", 65536, 128) == Approx(189.0 / 165).epsilon(1e-12));  // clamped at 16k
  CHECK(attention_shape("a100-80gb", 256, 32) == Approx(88.0 / 165).epsilon(1e-12));      // clamped below
  // Head dimension 96: linear in log2 between 64 (140 at 2k) and 128 (155): 140 + 15 (log2 96 - 6).
  CHECK(attention_shape("a100-80gb", 2048, 96) == Approx((140 + 15 * (std::log2(96.0) - 6)) / 165).epsilon(1e-12));
  CHECK(attention_shape("h100-sxm", 8192, 128) == 1);
  CHECK(attention_shape("h100-sxm", 4096, 128) == Approx(294.0 / 308).epsilon(1e-12));
  CHECK(attention_shape("h800", 8192, 64) == Approx(273.0 / 308).epsilon(1e-12));
  // A800 is the A100 die: A100's curve, at A100's reference head dimension 64.
  CHECK(attention_shape("a800", 2048, 96) == Approx((140 + 15 * (std::log2(96.0) - 6)) / 165).epsilon(1e-12));
  CHECK(accelerator_preset("a800", "a").profile.attention.reference_head_dim == 64);
  CHECK(attention_shape("h200", 2048, 128) == Approx(265.0 / 308).epsilon(1e-12));
  // Sequence 3000: linear in log2 between 2048 (265) and 4096 (294).
  CHECK(attention_shape("h100-sxm", 3000, 128) == Approx((265 + 29 * std::log2(3000.0 / 2048)) / 308).epsilon(1e-12));
  // Blackwell: cuDNN's own curve (cudnn-frontend artifacts), forward and backward apart, combined as one training
  // pass costs them: 3.5 / (1 / fwd + 2.5 / bwd), over the reference (8192, 128).
  auto pass = [](double fwd, double bwd) { return 3.5 / (1 / fwd + 2.5 / bwd); };
  CHECK(attention_shape("b200", 2048, 128) == Approx(pass(907.547, 545.088) / pass(1384.231, 994.85)).epsilon(1e-9));
  CHECK(attention_shape("gb200", 32768, 128) == Approx(pass(1681, 1348) / pass(1584, 1211)).epsilon(1e-9));
  // The time: latency + FLOPs / (peak x efficiency x shape x the older kernel's speed).
  const AcceleratorSpec acc = accelerator_preset("h100-sxm", "a");
  const double flops = 1e12, peak = acc.peak_flops(DType::BF16), eff = acc.profile.flash_attention_efficiency;
  CHECK(flash_attention_time_s(flops, DType::BF16, acc, 4096, 128) ==
        Approx(acc.profile.kernel_latency_s + flops / (peak * eff * 294.0 / 308)).epsilon(1e-12));
  CHECK(flash_attention_time_s(flops, DType::BF16, acc, 4096, 128, 0.5) ==
        Approx(acc.profile.kernel_latency_s + flops / (peak * eff * 294.0 / 308 * 0.5)).epsilon(1e-12));
}

TEST_CASE("training.attention_kernel slows the fused attention and nothing else; it is echoed and reported") {
  const AcceleratorSpec acc = accelerator_preset("a100-80gb", "a");
  auto gpt = [](const char* kernel) {
    return test::experiment(std::string(R"({"model": {"family": "gpt", "layers": 2, "hidden": 1024, "heads": 8,
        "vocab": 512, "seq_len": 2048, "dropout": false}, "training": {"micro_batch": 2, "global_batch": 2,
        "attention_kernel": ")") +
                            kernel + R"("}, "strategy": "dp"})");
  };
  const Experiment fused = gpt("fused"), triton = gpt("triton");
  // 2 x 8 heads, 2048^2 / 2 causal pairs, 4 x 128 FLOPs per pair and head: 1.718e10 forward FLOPs.
  const double flops = 4 * 128 * 16 * 2048.0 * 2048 / 2;
  // FlashAttention-2 at 2k and head dimension 128 runs at 155 TFLOP/s where the profile's reference (8k, 64) runs at
  // 165 (fused_attention_shape); the Triton kernel at 68 of FlashAttention-2's 155 there.
  const double rate = acc.peak_flops(DType::BF16) * acc.profile.flash_attention_efficiency * 155.0 / 165;
  const double lat = acc.profile.kernel_latency_s, speed = 68.0 / 155;
  PassTimes a = layer_times(fused, acc), b = layer_times(triton, acc);
  CHECK(a.attention_forward_s == Approx(lat + flops / rate).epsilon(1e-12));
  CHECK(b.attention_forward_s == Approx(lat + flops / (rate * speed)).epsilon(1e-12));
  CHECK(b.attention_backward_s == Approx(lat + 2.5 * flops / (rate * speed)).epsilon(1e-12));
  CHECK(b.forward_s - a.forward_s == Approx(b.attention_forward_s - a.attention_forward_s).epsilon(1e-9));
  CHECK(b.backward_s - a.backward_s == Approx(b.attention_backward_s - a.attention_backward_s).epsilon(1e-9));
  CHECK(training_to_json(triton.training)["attention_kernel"] == "triton");
  CHECK_FALSE(training_to_json(fused.training).contains("attention_kernel"));
  CHECK(attention_text(triton) ==
        "fused attention (FlashAttention's Triton kernel at its measured speed relative to FlashAttention-2: "
        "training.attention_kernel)");
  CHECK_THROWS_WITH(
      test::experiment(R"({"model": {"preset": "gpt-1.7b", "flash_attention": false},
        "training": {"attention_kernel": "flash1"}, "strategy": "dp"})"),
      Catch::Contains("training.attention_kernel=flash1") && Catch::Contains("model.flash_attention=false"));
  CHECK_THROWS_WITH(gpt("xformers"), Catch::Contains("training.attention_kernel") && Catch::Contains("xformers"));
}

// training.fp8: the linear GEMMs on FP8 tensor cores. The h100-sxm profile was fitted to Azure's FP8 cuBLASLt sweep
// (topology/profiles/measurements/h100-sxm.json, peak 1,979 TFLOP/s); an FP8 GEMM is that fitted model, so at the
// sweep's shapes it gives the fit recorded in topology/profiles/h100-sxm.json: 8192^3 1341.36 TFLOP/s (measured
// 1290.1), 6144 x 12288 x 12288 1345.26 (measured 1351.4).
TEST_CASE("FP8 GEMMs are the profile's GEMM model at the FP8 peak, as fitted to the FP8 cuBLASLt sweep") {
  const AcceleratorSpec h100 = accelerator_preset("h100-sxm", "a");
  CHECK(h100.peak_fp8_flops == 1979e12);
  auto tflops = [&](const GemmShape& g) { return 2 * g.m * g.n * g.k / fp8_gemm_time_s(g, h100) / 1e12; };
  // (the preset holds the fit's fields rounded to four digits: 1e-4)
  CHECK(tflops({8192, 8192, 8192}) == Approx(1341.3558771744886).epsilon(1e-4));
  CHECK(tflops({6144, 12288, 12288}) == Approx(1345.262688998149).epsilon(1e-4));
  CHECK(tflops({8192, 8192, 8192}) == Approx(1290.1).epsilon(0.05));
  // Twice the bf16 peak: a compute-bound GEMM takes about half the bf16 time (the memory term is the same).
  const GemmShape big{16384, 16384, 16384};
  CHECK(fp8_gemm_time_s(big, h100) / gemm_time_s(big, DType::BF16, h100) == Approx(0.5).epsilon(0.01));
  // No FP8 tensor cores on A100: refused, naming the field.
  const AcceleratorSpec a100 = accelerator_preset("a100-80gb", "a");
  CHECK(a100.peak_fp8_flops == 0);
  CHECK_THROWS_WITH(fp8_gemm_time_s(big, a100), Catch::Contains("training.fp8=true") && Catch::Contains("a100-80gb"));
  // A power limit scales the FP8 peak with the others; a custom accelerator gives its own.
  ClusterSpec capped = parse_cluster(Json::parse(
      R"({"preset": "dgx-h100", "nodes": 1, "accelerator": {"preset": "h100-sxm", "power_limit_w": 500}})"));
  CHECK(capped.accelerator.peak_fp8_flops == Approx(1979e12 * 0.8442));
  ClusterSpec custom = parse_cluster(Json::parse(
      R"({"preset": "dgx-a100", "nodes": 1, "accelerator": {"preset": "a100-80gb", "peak_fp8_flops": "624TFLOPS"}})"));
  CHECK(custom.accelerator.peak_fp8_flops == 624e12);
}

// The tiny Llama layer (tiny_fp8_layer; parameters on the device). Under FP8 each GEMM runs at the FP8 peak and the
// layer adds, per linear, bytes read + written by memory-bound kernels: forward the input's cast with its transpose,
// 2 + 1 + 1 = 4 bytes per input element (T x in), and a quarter of the weight's (4 bytes per in x out: cast on the
// first of 4 micro-batches, kept to the step's end); backward the output gradient's, 4 bytes per T x out. Attention,
// norms and the SwiGLU are unchanged.
TEST_CASE("FP8 linears: GEMMs at the FP8 peak plus their hand-counted casts, nothing else") {
  const AcceleratorSpec acc = accelerator_preset("h100-sxm", "a");
  auto tiny = [](bool fp8, const char* strategy) { return tiny_fp8_layer(fp8, strategy); };
  auto expected = [&](double weight_share) { return te_fp8_deltas(acc, acc, 4, weight_share); };
  const char* dp = R"({"preset": "dp", "dp": 1})";
  PassTimes bf16 = layer_times(tiny(false, dp), acc), fp8 = layer_times(tiny(true, dp), acc);
  auto [fwd, bwd] = expected(0.25);
  CHECK(fp8.forward_s - bf16.forward_s == Approx(fwd).epsilon(1e-9));
  CHECK(fp8.backward_s - bf16.backward_s == Approx(bwd).epsilon(1e-9));
  CHECK(fp8.attention_forward_s == bf16.attention_forward_s);
  CHECK(tiny(true, dp).training.fp8_scaling == Fp8Scaling::Delayed);  // the dp preset's default: TE's
  // Gathered per use (FSDP, 2 ranks): the weight is cast again each micro-batch.
  const char* fsdp = R"({"preset": "fsdp", "dp": 2})";
  Experiment f16 = tiny(false, fsdp), f8 = tiny(true, fsdp);
  f16.training.kernels = f8.training.kernels = Kernels::Fused;
  f8.training.fp8_scaling = Fp8Scaling::Delayed;  // (the fsdp preset's default is tensorwise, the next case)
  auto [ffwd, fbwd] = expected(1.0);
  CHECK(layer_times(f8, acc).forward_s - layer_times(f16, acc).forward_s == Approx(ffwd).epsilon(1e-9));
  CHECK(layer_times(f8, acc).backward_s - layer_times(f16, acc).backward_s == Approx(fbwd).epsilon(1e-9));
  // The output layer stays 16-bit.
  CHECK(logit_times(tiny(true, dp), acc).forward_s == logit_times(tiny(false, dp), acc).forward_s);
  // Host-bound (training.launch_overhead 50 us): the four cast kernels each way join the layer's 12 forward and 16
  // backward kernels.
  Experiment host = tiny(true, dp);
  host.training.launch_overhead_s = 50e-6;
  CHECK(layer_times(host, acc).forward_s == Approx(16 * 50e-6));
  CHECK(layer_times(host, acc).backward_s == Approx(20 * 50e-6));
}

// The tiny layer under Transformer Engine's `scaling` (dp preset, 4 micro-batches: the weights cast on the first):
// its FP8 time over bf16's is te_fp8_deltas of `bytes` a cast element; host-bound at 50 us a launch its passes last
// `forward_kernels` and `backward_kernels` launches; the echo and the analysis name the scaling. Returns the run.
Experiment check_te_scaling(const std::string& scaling, const AcceleratorSpec& acc, const AcceleratorSpec& gemm,
                            double bytes, int forward_kernels, int backward_kernels) {
  const auto [fwd, bwd] = te_fp8_deltas(acc, gemm, bytes, 0.25);
  const char* dp = R"({"preset": "dp", "dp": 1})";
  const Experiment d16 = tiny_fp8_layer(false, dp),
                   d8 = tiny_fp8_layer(true, dp, R"(, "fp8_scaling": ")" + scaling + "\"");
  CHECK(layer_times(d8, acc).forward_s - layer_times(d16, acc).forward_s == Approx(fwd).epsilon(1e-9));
  CHECK(layer_times(d8, acc).backward_s - layer_times(d16, acc).backward_s == Approx(bwd).epsilon(1e-9));
  Experiment host = d8;
  host.training.launch_overhead_s = 50e-6;
  CHECK(layer_times(host, acc).forward_s == Approx(forward_kernels * 50e-6));
  CHECK(layer_times(host, acc).backward_s == Approx(backward_kernels * 50e-6));
  CHECK(training_to_json(d8.training)["fp8_scaling"] == scaling);
  CHECK_THAT(analysis_table(d8, analyze(d8)),
             Catch::Contains("FP8 linear layers (training.fp8, " + scaling + " scaling)"));
  return d8;
}

// Transformer Engine's current scaling (TransformerEngine d0067d0 pytorch/csrc/quantizer.cpp,
// Float8CurrentScalingQuantizer::quantize_impl: nvte_compute_amax, nvte_compute_scale_from_amax, nvte_quantize_v2):
// each cast reads its 16-bit tensor once more for the amax, 2 + 2 + 1 + 1 = 6 bytes an element against delayed
// scaling's 4, for the inputs, the output gradients and the weights alike; an amax and a scale kernel per cast.
TEST_CASE("FP8 current scaling (Transformer Engine): an amax read before each cast, hand-counted") {
  const AcceleratorSpec acc = accelerator_preset("h100-sxm", "a");
  // Host-bound: the layer's 12 forward and 16 backward kernels, plus 3 per cast, 4 casts each way.
  CHECK(check_te_scaling("current", acc, acc, 6, 24, 28).training.fp8_scaling == Fp8Scaling::Current);
}

// Transformer Engine's MXFP8 block scaling (TransformerEngine d0067d0 docs/features/low_precision_training/mxfp8:
// one E8M0 scale per 32 elements, rowwise and columnwise copies quantized separately from the 16-bit data, no
// transpose on Blackwell): each cast reads 2 bytes and writes 1 + 1 FP8 bytes and 2 / 32 scale bytes, 4.0625 an
// element, one kernel; the GEMMs are the FP8 model at the FP8 peak times b200's mxfp8_gemm_factor.
TEST_CASE("FP8 MXFP8 (Transformer Engine): one cast with both copies and scales, MX GEMM rate, hand-counted") {
  const AcceleratorSpec b200 = accelerator_preset("b200", "a");
  AcceleratorSpec mx = b200;  // the per-tensor FP8 model at the MX rate
  mx.peak_fp8_flops = b200.peak_fp8_flops * 0.951;
  // Host-bound: one kernel per cast, as under delayed scaling: 12 + 4 forward, 16 + 4 backward.
  const Experiment d8 = check_te_scaling("mxfp8", b200, mx, 4.0625, 16, 20);
  CHECK(d8.training.fp8_scaling == Fp8Scaling::Mxfp8);
  // Hopper has no MX tensor cores: refused, naming the setting and the accelerator.
  const AcceleratorSpec h100 = accelerator_preset("h100-sxm", "a");
  CHECK(h100.mxfp8_gemm_factor == 0);
  CHECK_THROWS_WITH(layer_times(d8, h100), Catch::Contains("training.fp8_scaling=mxfp8") &&
                                               Catch::Contains("h100-sxm") && Catch::Contains("mxfp8_gemm_factor"));
  // A custom accelerator gives its factor; the cluster's echo carries it.
  ClusterSpec custom = parse_cluster(Json::parse(
      R"({"preset": "dgx-h100", "nodes": 1, "accelerator": {"preset": "h100-sxm", "mxfp8_gemm_factor": 0.9}})"));
  CHECK(custom.accelerator.mxfp8_gemm_factor == 0.9);
  CHECK(cluster_to_json(custom)["accelerator"]["mxfp8_gemm_factor"] == 0.9);
  // A factor on an accelerator without FP8 tensor cores is refused, not costed at a zero rate.
  AcceleratorSpec a100 = accelerator_preset("a100-80gb", "a");
  a100.mxfp8_gemm_factor = 0.9;
  CHECK_THROWS_WITH(layer_times(d8, a100), Catch::Contains("peak_fp8_flops") && Catch::Contains("a100-80gb"));
}

// Transformer Engine's GEMM profiling guide (NVIDIA/TransformerEngine d0067d0
// docs/examples/gemm_profiling/gemm_profiling.rst, 'Autocast vs Pre-quantized', NVIDIA B300 SXM6 AC, M 15,872,
// hidden 4,096, intermediate 16,384, kernels only): per-layer GEMM time FP8Current (per-tensor FP8) 6.812 ms, MXFP8
// 7.161 ms; fprop 2.158 / 2.365, dgrad 2.329 / 2.397, wgrad 2.325 / 2.400 ms. B200's and GB200's factor reproduces
// each within 5 %.
TEST_CASE("The Blackwell mxfp8_gemm_factor reproduces Transformer Engine's B300 kernel times within 5 percent") {
  for (const char* name : {"b200", "gb200"}) {
    const double factor = accelerator_preset(name, "a").mxfp8_gemm_factor;
    CHECK(factor == Approx(6.812 / 7.161).epsilon(0.05));
    CHECK(factor == Approx(2.158 / 2.365).epsilon(0.05));
    CHECK(factor == Approx(2.329 / 2.397).epsilon(0.05));
    CHECK(factor == Approx(2.325 / 2.400).epsilon(0.05));
  }
}

// The same tiny layer under torchao's tensorwise scaling (torchao eab345c, float8_linear.py and float8_ops.py), per
// linear in x out: forward the input's amax read and cast (2 + 2 + 1 = 5 bytes per T x in) and the weight's, every
// micro-batch (5 per in x out); input gradient: the output gradient's amax and cast (5 per T x out) and the FP8
// weight copied column-major (1 + 1 = 2 per in x out); weight gradient: the FP8 output gradient and the saved FP8
// input copied into the GEMM's layouts (2 per T x out and 2 per T x in). Compiled, each cast and copy is one launch.
TEST_CASE("FP8 tensorwise (torchao): amax, cast and layout copies, hand-counted; the PyTorch presets' default") {
  const AcceleratorSpec acc = accelerator_preset("h100-sxm", "a");
  auto tiny = [](bool fp8, const char* strategy, const std::string& extra = "") {
    return tiny_fp8_layer(fp8, strategy, R"(, "kernels": "compiled")" + extra);
  };
  const double T = kTinyTokens;
  auto pass = [&](double bytes) { return elementwise_time_s(bytes, acc); };
  double fwd = 0, bwd = 0;
  for (const TinyLinear& x : kTinyLinears) {
    fwd += fp8_gemm_time_s({T, x.out, x.in}, acc) - gemm_time_s({T, x.out, x.in}, DType::BF16, acc) +
           pass(5 * T * x.in) + pass(5 * x.in * x.out);
    bwd += fp8_gemm_time_s({T, x.in, x.out}, acc) - gemm_time_s({T, x.in, x.out}, DType::BF16, acc) +
           pass(5 * T * x.out) + pass(2 * x.in * x.out) + fp8_gemm_time_s({x.in, x.out, T}, acc, 8 * x.in * x.out) -
           gemm_time_s({x.in, x.out, T}, DType::BF16, acc, 8 * x.in * x.out) + pass(2 * T * x.out) + pass(2 * T * x.in);
  }
  const char* fsdp = R"({"preset": "fsdp", "dp": 2})";
  const Experiment f16 = tiny(false, fsdp), f8 = tiny(true, fsdp);
  CHECK(f8.training.fp8_scaling == Fp8Scaling::Tensorwise);
  CHECK_FALSE(f8.provenance.written("training.fp8_scaling"));
  CHECK(layer_times(f8, acc).forward_s - layer_times(f16, acc).forward_s == Approx(fwd).epsilon(1e-9));
  CHECK(layer_times(f8, acc).backward_s - layer_times(f16, acc).backward_s == Approx(bwd).epsilon(1e-9));
  // Written on the dp preset, whose parameters stay on the device: torchao still casts the weight every forward.
  const char* dp = R"({"preset": "dp", "dp": 1})";
  const Experiment d16 = tiny(false, dp), d8 = tiny(true, dp, R"(, "fp8_scaling": "tensorwise")");
  CHECK(d8.provenance.written("training.fp8_scaling"));
  CHECK(layer_times(d8, acc).forward_s - layer_times(d16, acc).forward_s == Approx(fwd).epsilon(1e-9));
  // Host-bound (50 us a launch): the fused layer's 12 forward and 16 backward kernels, plus per linear 2 casts
  // forward, and a cast and 3 copies backward.
  Experiment host = f8;
  host.training.launch_overhead_s = 50e-6;
  CHECK(layer_times(host, acc).forward_s == Approx(20 * 50e-6));
  CHECK(layer_times(host, acc).backward_s == Approx(32 * 50e-6));
  // Megatron's presets keep Transformer Engine's delayed scaling; the echo carries the scaling.
  const Experiment mega = test::experiment(R"({"model": "llama3-8b", "training": {"fp8": true},
      "strategy": {"preset": "megatron-3d", "tp": 2}})");
  CHECK(mega.training.fp8_scaling == Fp8Scaling::Delayed);
  CHECK(training_to_json(f8.training)["fp8_scaling"] == "tensorwise");
  CHECK(training_to_json(mega.training)["fp8_scaling"] == "delayed");
  CHECK_THAT(analysis_table(f8, analyze(f8)), Catch::Contains("FP8 linear layers (training.fp8, tensorwise scaling)"));
  // Without FP8 it is refused, naming the field; so is tensorwise on a model with experts.
  CHECK_THROWS_WITH(
      test::experiment(R"({"model": "llama3-8b", "training": {"fp8_scaling": "tensorwise"}, "strategy": "dp"})"),
      Catch::Contains("training.fp8_scaling=tensorwise") && Catch::Contains("training.fp8=true"));
  CHECK_THROWS_WITH(
      test::experiment(
          R"({"model": "llama3-8b", "training": {"fp8": true, "fp8_scaling": "rowwise"}, "strategy": "dp"})"),
      Catch::Contains("training.fp8_scaling"));
}

TEST_CASE("training.fp8 is refused with fp32 training and dtype fp8 points to it; it is echoed and reported") {
  CHECK_THROWS_WITH(test::experiment(R"({"model": "llama3-8b", "training": {"dtype": "fp32", "fp8": true},
                                        "strategy": "dp"})"),
                    Catch::Contains("training.fp8=true") && Catch::Contains("training.dtype=fp32"));
  CHECK_THROWS_WITH(test::experiment(R"({"model": "llama3-8b", "training": {"dtype": "fp8"}, "strategy": "dp"})"),
                    Catch::Contains("training.dtype=fp8") && Catch::Contains("\"fp8\": true"));
  CHECK_THROWS_WITH(test::experiment(R"({"model": {"parameters": 1e9}, "training": {"fp8": true}, "strategy": "dp"})"),
                    Catch::Contains("training.fp8=true") && Catch::Contains("opaque"));
  Experiment e = test::experiment(R"({"model": "llama3-8b", "training": {"fp8": true}, "strategy": "dp"})");
  CHECK(e.training.fp8);
  CHECK(training_to_json(e.training)["fp8"] == true);
  CHECK_THAT(analysis_table(e, analyze(e)), Catch::Contains("FP8 linear layers (training.fp8, delayed scaling)"));
}

// training.attention_kernel=fa2 names FlashAttention-2 on every accelerator: Hopper's and Ampere's profiles measure
// it (speed 1), Blackwell's measure cuDNN, and FlashAttention-2 runs at its ratio in the same cudnn-frontend run
// (B200, 8k, head dimension 128: forward 399.925 / 1384.231, backward 318.004 / 994.85 TFLOP/s).
TEST_CASE("FlashAttention-2 on Blackwell runs at its measured ratio to cuDNN, on Hopper at the profile's speed") {
  auto pass = [](double fwd, double bwd) { return 1 / (1 / fwd + 2.5 / bwd); };
  CHECK(kernel_speed(AttentionKernel::Fa2, "b200", 8192, 128) ==
        Approx(pass(399.925, 318.004) / pass(1384.231, 994.85)).epsilon(1e-9));
  CHECK(kernel_speed(AttentionKernel::Fa2, "h100-sxm", 8192, 128) == 1);
  CHECK(kernel_speed(AttentionKernel::Fused, "b200", 8192, 128) == 1);
  CHECK(kernel_speed(AttentionKernel::Cudnn, "b200", 8192, 128) == 1);
}
