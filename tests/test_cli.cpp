// The CLI end to end: exit codes and one clear message per kind of bad input.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "tests/CliHelpers.hpp"
#include "tests/FileHelpers.hpp"
#include "tests/Helpers.hpp"
#include "workloads/json/Units.hpp"

using placesim::test::cli_output;
using placesim::test::run_placesim;
using placesim::test::write_temp;

TEST_CASE("The issue's two experiments work as written") {
  std::string out;
  CHECK(
      run_placesim("analyze " + write_temp("a.json", R"({"model": {"parameters": 7.5e9}, "training": {"dtype": "fp16"},
                    "strategy": {"preset": "zero3", "dp": 64}})"),
                   &out) == 0);
  auto report = placesim::Json::parse(out);
  CHECK(report["memory"]["model_states_bytes"].get<double>() == 1.875e9);
  CHECK(report["communication"]["by_class"]["zero_gather"].get<double>() == 2 * 63 * 117187500.0 * 2);
  CHECK(
      run_placesim(
          "analyze --table " +
              write_temp(
                  "b.json",
                  R"({"model": "gpt3-175b", "training": {"global_batch": 1536, "micro_batch": 1, "recompute": "selective"}, "strategy": {"preset": "megatron-3d", "tp": 8, "pp": 8, "dp": 16, "sp": true}})"),
          &out) == 0);
  CHECK_THAT(out, Catch::Contains("1024 devices") && Catch::Contains("activations"));
}

TEST_CASE("Same input gives byte-identical output") {
  std::string path =
      write_temp("det.json", R"({"model": "llama3-70b", "strategy": {"preset": "zero2", "dp": 16, "tp": 8}})");
  std::string first, second;
  REQUIRE(run_placesim("analyze " + path, &first) == 0);
  REQUIRE(run_placesim("analyze " + path, &second) == 0);
  CHECK(first == second);
}

TEST_CASE("Malformed JSON is reported with line and column") {
  std::string out;
  std::string path = write_temp("bad.json", "{\n  \"model\": \"gpt-7.5b\",\n  \"strategy\": {\"dp\": 4,}\n}\n");
  CHECK(run_placesim("analyze " + path, &out) == 2);
  CHECK_THAT(out, Catch::Contains(path + ":3:") && Catch::Contains("malformed JSON"));
}

TEST_CASE("An unknown key is named with the nearest known one") {
  std::string out;
  CHECK(run_placesim(
            "check " + write_temp("k.json", R"({"model": "gpt-7.5b", "strategy": {"preset": "zero1", "dpp": 4}})"),
            &out) == 2);
  CHECK_THAT(out, Catch::Contains("unknown key strategy.dpp") && Catch::Contains("did you mean 'strategy.dp'"));
}

TEST_CASE("A missing required field is named") {
  std::string out;
  CHECK(run_placesim("check " + write_temp("m.json", R"({"strategy": "dp"})"), &out) == 2);
  CHECK_THAT(out, Catch::Contains("model is required but missing"));
}

TEST_CASE("check exits 0 for a valid strategy and 2 naming the broken rule otherwise") {
  std::string out;
  CHECK(run_placesim(
            "check " + write_temp("v.json", R"({"model": "gpt-7.5b", "strategy": {"preset": "zero2", "dp": 8}})"),
            &out) == 0);
  CHECK_THAT(out, Catch::StartsWith("valid:"));
  CHECK(run_placesim(
            "check " +
                write_temp("i.json",
                           R"({"model": "gpt-7.5b", "strategy": {"dp": 8, "placement": {"gradients": "sharded"}}})"),
            &out) == 2);
  CHECK_THAT(out, Catch::Contains("gradient integrity"));
  CHECK(run_placesim("check " + write_temp("h.json", R"({"model": "gpt-7.5b", "strategy": {"tp": 3}})"), &out) == 2);
  CHECK_THAT(out, Catch::Contains("strategy.tp=3 does not divide model.heads=32"));
}

TEST_CASE("The --device-memory option refuses a model that does not fit") {
  std::string out;
  std::string path = write_temp("fit.json", R"({"model": {"parameters": 7.5e9}, "strategy": "dp"})");
  CHECK(run_placesim("analyze " + path + " --device-memory 80GiB", &out) == 2);
  CHECK_THAT(out, Catch::Contains("does not fit"));
  CHECK(run_placesim("analyze " + path + " --device-memory 80XB", &out) == 2);
  CHECK_THAT(out, Catch::Contains("--device-memory=\"80XB\": unknown size unit 'XB'"));
}

TEST_CASE("Unknown subcommands and options suggest the nearest") {
  std::string out;
  CHECK(run_placesim("analyse", &out) == 2);
  CHECK_THAT(out, Catch::Contains("did you mean 'analyze'"));
  CHECK(run_placesim("analyze --tabel", &out) == 2);
  CHECK_THAT(out, Catch::Contains("unknown option --tabel (did you mean --table?)"));
  // The command's name is said once, not "placesim analyze: error: placesim analyze: ...".
  CHECK(out.rfind("placesim analyze: error: unknown option --tabel", 0) == 0);
  CHECK(run_placesim("analyze --help", &out) == 0);
  CHECK_THAT(out, Catch::Contains("--device-memory"));
}

TEST_CASE("Flags build an experiment without a file") {
  std::string out;
  REQUIRE(run_placesim("analyze --model-hf " + std::string(PLACESIM_SOURCE_DIR) +
                           "/tests/data/hf-llama-2-7b.json --strategy zero3 --set strategy.dp=8",
                       &out) == 0);
  auto report = placesim::Json::parse(out);
  CHECK(report["model"]["parameters"].get<double>() == 6738415616.0);
  CHECK(report["strategy"]["placement_short"].get<std::string>() == "SG/S/S/R");
  CHECK(report["strategy"]["dp"].get<int>() == 8);
}

// With the optimizer on the host (zero-offload) and pp > 1, the pipeline metrics found no record for
// a stage's optimizer step and the command stopped with an internal error (exit 1).
TEST_CASE("zero-offload with pipeline stages simulates: the host optimizer step is the stage's apply") {
  std::string out;
  CHECK(run_placesim("simulate examples/small-3d-1f1b.json --set strategy.preset=zero-offload --quiet", &out) == 0);
  INFO(out);
  CHECK(out.find("internal error") == std::string::npos);
  CHECK(out.find("step time") != std::string::npos);
}

// Transformer Engine (Megatron-Core, NeMo) selects cuDNN's fused attention on Hopper; placesim's default costs
// FlashAttention-2's speed, and the summary of any run with that default on H100 says so and names the setting that
// costs cuDNN's (the note depends on the accelerator and the kernel, not on the stack).
TEST_CASE("A run on H100 with the default attention states its speed and names training.attention_kernel=cudnn") {
  const std::string nemo = "simulate examples/validation2024/nemo-llama31-8b-8gpu.json --quiet";
  const std::string line =
      "attention: FlashAttention-2's measured speed (training.attention_kernel=fused); "
      "Transformer Engine selects cuDNN's fused attention on Hopper";
  std::string fused, cudnn, fsdp;
  REQUIRE(run_placesim(nemo, &fused) == 0);
  REQUIRE(run_placesim(nemo + " --set training.attention_kernel=cudnn", &cudnn) == 0);
  REQUIRE(run_placesim("simulate examples/llama3-8b-fsdp.json --quiet", &fsdp) == 0);
  CHECK(fused.find(line) != std::string::npos);
  CHECK(cudnn.find(line) == std::string::npos);
  CHECK(fsdp.find(line) != std::string::npos);
  std::string a100;
  CHECK(run_placesim(nemo + " --set training.attention_kernel=cudnn --set cluster.preset=dgx-a100", &a100) == 2);
  CHECK(a100.find("training.attention_kernel=cudnn: that kernel's speed is not measured on accelerator a100-80gb") !=
        std::string::npos);
}

// docs/validation.md section 3: the published PyTorch FSDP2 runs miss about the same time per step whichever their
// kernels (host time outside them). That is the torchtitan stack's caveat (its data file): a run on that stack prints
// it, a run on a Megatron stack does not.
TEST_CASE("A run on the torchtitan stack prints its host-time caveat, a Megatron run does not") {
  const std::string line =
      "stack caveat         published FSDP2 runs took about a constant time per step more than placesim's kernels "
      "and exchanges account for";
  std::string fsdp, megatron;
  REQUIRE(run_placesim("simulate examples/llama3-8b-fsdp.json --quiet", &fsdp) == 0);
  REQUIRE(run_placesim("simulate examples/validation2024/nemo-llama31-8b-8gpu.json --quiet", &megatron) == 0);
  CHECK(fsdp.find(line) != std::string::npos);
  CHECK(megatron.find(line) == std::string::npos);
  CHECK(fsdp.find("training.host_time_per_step and host_time_per_microbatch cost what you measured") !=
        std::string::npos);
}

TEST_CASE("A run given host time states it in the summary") {
  std::string out;
  REQUIRE(run_placesim("simulate examples/llama3-8b-fsdp.json --quiet --set training.host_time_per_microbatch=80ms "
                       "--set training.host_time_per_step=0.2s",
                       &out) == 0);
  CHECK_THAT(out, Catch::Contains("host time outside the kernels: 80.000 ms per micro-batch (before its first forward) "
                                  "and 200.000 ms per step (at its start) on every GPU, whose compute waits for it"));
  CHECK_THAT(cli_output("simulate examples/llama3-8b-fsdp.json --quiet --set training.host_time_per_step=-1s", 2),
             Catch::Contains("training.host_time_per_step"));
}

// `--set cluster.nic_bw=400` was read as 400 B/s and gave a step of 29,407,695 s, exit 0.
TEST_CASE("A bare bandwidth too small for bytes/s is refused naming the field and suggesting units") {
  CHECK_THAT(cli_output("simulate examples/llama3-8b-fsdp.json --set cluster.nic_bw=400 --quiet", 2),
             Catch::Contains("cluster.nic_bw=400 is a bare number read as 400 B/s: give a unit, e.g. "
                             "\"400Gbps\" or \"400GB/s\""));
  cli_output("analyze examples/llama3-8b-fsdp.json --set cluster.nic_bw=400Gbps", 0);
}

namespace {

// The report of `simulate <example> <flags> --quiet`, or null when it fails.
placesim::Json simulated_report(const std::string& flags) {
  const std::string path = "/tmp/placesim-test-" + std::to_string(::getpid()) + "-report.json";
  std::string out;
  if (run_placesim("simulate examples/llama3-8b-fsdp.json " + flags + " --quiet --report " + path, &out) != 0) {
    UNSCOPED_INFO(out);
    return nullptr;
  }
  std::ifstream in(path);
  return placesim::Json::parse(in);
}

}  // namespace

// A comm override of one fabric was refused with "intra_node is required".
TEST_CASE("A comm override of one fabric simulates, keeping the other from the accelerator") {
  auto report = simulated_report("--set cluster.comm.inter_node=roce-200g");
  REQUIRE(report.is_object());
  CHECK(report["cluster"]["nic_bw"].get<double>() == 25e9);
  CHECK(report["cluster"]["comm"]["intra_node"]["name"].get<std::string>() == "nvlink4");
}

// `--set cluster.accelerator=b200` on dgx-h100 kept NVLink at 450 GB/s under an NVLink5 profile.
TEST_CASE("Switching accelerator switches the node's NVLink with it") {
  auto report = simulated_report("--set cluster.accelerator=b200");
  REQUIRE(report.is_object());
  CHECK(report["cluster"]["nvlink_bw"].get<double>() == 900e9);
  CHECK(report["cluster"]["comm"]["intra_node"]["link_bw"].get<double>() == 900e9);
}

// A strategy preset is a placement (and the stack assumed when the experiment names none): under a named stack,
// switching it changes the placement and nothing else.
TEST_CASE("Switching the strategy preset under a named stack changes the placement and nothing else") {
  auto strategy_without_placement = [](const std::string& preset, const std::string& stack = "megatron-lm-2022") {
    std::string out;
    REQUIRE(run_placesim("analyze examples/small-3d-1f1b.json --stack " + stack + " --set strategy.preset=" + preset,
                         &out) == 0);
    // The output carries stderr too: drop its warning lines (fsdp under a pipeline has one) before the JSON.
    while (out.rfind("warning: ", 0) == 0) out.erase(0, out.find('\n') + 1);
    placesim::Json s = placesim::Json::parse(out)["strategy"];
    for (const char* key : {"preset", "placement", "placement_short"}) s.erase(key);
    return s;
  };
  const placesim::Json megatron = strategy_without_placement("megatron-3d");
  CHECK(megatron["p2p"] == "megatron");
  for (const char* preset : {"dp", "zero1", "zero2", "zero3", "zero-offload", "fsdp"}) {
    INFO(preset);
    CHECK(strategy_without_placement(preset) == megatron);
  }
  // Under torchtitan's stack the FSDP preset keeps its units gathered for the step under a pipeline, and every
  // preset gets its TP behaviour: the stack, not the preset, decides.
  const placesim::Json fsdp = strategy_without_placement("fsdp", "torchtitan-2024-12");
  CHECK(fsdp["reshard_after_forward"] == false);
  CHECK(fsdp["tp_overlap"] == false);
  placesim::Json dp = strategy_without_placement("dp", "torchtitan-2024-12");
  CHECK(dp["tp_overlap"] == false);
  CHECK(dp["reshard_after_forward"] == true);  // its condition: gathered parameters
}

// A plan that does not fit printed only the refusal; the breakdown is what a user then needs.
TEST_CASE("analyze and simulate print the memory breakdown before refusing a plan that does not fit") {
  const std::string too_big =
      " --model llama3-70b --strategy zero1 --stack megatron-lm-2022 --set strategy.tp=4 --set strategy.pp=4 "
      "--set strategy.dp=32 --set cluster.preset=dgx-h100 --set cluster.nodes=64 "
      "--set training.global_batch=1024";
  std::string out;
  CHECK(run_placesim("analyze --table" + too_big, &out) == 2);
  // 106 GB: 9.08 GB of parameters, 18.2 GB of fp32 gradients, 1.70 GB of optimizer state, 77.2 GB of activations.
  CHECK_THAT(out, Catch::Contains("memory per device") && Catch::Contains("activations") &&
                      Catch::Contains("77.2 GB") &&
                      Catch::Contains("error: memory: the model does not fit: a device needs 106 GB"));
  CHECK(out.find("memory per device") < out.find("does not fit"));
  CHECK(run_placesim("analyze" + too_big, &out) == 2);
  CHECK_THAT(out, Catch::Contains("memory per device") && Catch::Contains("does not fit"));
  CHECK(run_placesim("simulate" + too_big, &out) == 2);
  CHECK_THAT(out, Catch::Contains("memory per device") && Catch::Contains("does not fit"));
}

// `check` called pipedream, pipedream-2bw and localsgd "valid" with exit 0, though they give up the
// equivalence with single-device training that check exists to verify.
TEST_CASE("check gives asynchronous schedules the not-equivalent verdict with their delay, exit 3") {
  std::string out;
  CHECK(run_placesim("check examples/small-3d-1f1b.json --set strategy.schedule=pipedream", &out) == 3);
  CHECK_THAT(out, Catch::StartsWith("not equivalent: ") &&
                      Catch::Contains("strategy.schedule=pipedream is a valid strategy but does not train the same "
                                      "model as one device") &&
                      Catch::Contains("weight stashing"));
  // PipeDream's steady-state delay at S = 4: S^2 - S/2 = 14 block updates on stage 0 (Ilin & Richtarik).
  CHECK_THAT(out, Catch::Contains("delay: max 14, mean "));
  CHECK(run_placesim("check examples/small-3d-1f1b.json --set strategy.schedule=pipedream-2bw", &out) == 3);
  CHECK_THAT(out, Catch::Contains("a new weight version every 16 micro-batches"));
  CHECK(run_placesim("check examples/small-3d-1f1b.json --set strategy.schedule=localsgd --set strategy.replicas=2 "
                     "--set strategy.local_steps=4",
                     &out) == 3);
  CHECK_THAT(out, Catch::Contains("delay: 4 local step(s) between averagings of 2 replica(s)"));
  for (const char* schedule : {"1f1b", "gpipe"}) {
    CHECK(run_placesim(std::string("check examples/small-3d-1f1b.json --set strategy.schedule=") + schedule, &out) ==
          0);
    CHECK_THAT(out, Catch::StartsWith("valid: "));
  }
}

// The summary said "13 of 13 figures identical" while memory.total_bytes (50.49 GB) and the
// simulated peak (47.51 GB) differed, and the peak's breakdown left out the buffers. Now the breakdown is the peak
// moment's (it sums to the peak) and every analytic bound that differs is named with both figures.
TEST_CASE("The simulated peak is broken down at its moment and analytic bounds are named where they differ") {
  std::string out;
  REQUIRE(run_placesim("simulate examples/llama3-8b-fsdp.json --quiet --report -", &out) == 0);
  const std::string summary = out.substr(out.find("simulated step:"));
  const placesim::Json report = placesim::Json::parse(out.substr(0, out.find("simulated step:")));
  const placesim::Json& peak = report["simulation"]["peak_memory_bytes"];
  double sum = 0;
  for (const auto& [state, bytes] : peak["at_peak"].items()) sum += bytes.get<double>();
  CHECK(sum == Approx(peak["total"].get<double>()).epsilon(1e-12));
  CHECK(peak["at_peak"]["buffers"].get<double>() > 0);
  const double analytic_total = report["memory"]["total_bytes"].get<double>();
  CHECK(analytic_total > peak["total"].get<double>());
  CHECK_THAT(summary, Catch::Contains("14 of 14 exact figures identical") &&
                          Catch::Contains("memory.total_bytes: analytic bound 46.2 GB, simulated peak 39.2 GB") &&
                          Catch::Contains("memory.buffers_bytes: analytic bound 8.92 GB, simulated peak 3.41 GB") &&
                          Catch::Contains("at that moment: parameters 2.01 GB, gradients 2.01 GB") &&
                          Catch::Contains("activations 29.3 GB, buffers 1.92 GB"));
}

// The bucket change: the simulation gathers an opaque model bucket by bucket too, so the analytic
// buffers stay a bound of the simulated ones and every byte figure matches.
TEST_CASE("An opaque ZeRO-3 model is simulated bucket by bucket within the analytic buffer bound") {
  std::string out;
  REQUIRE(run_placesim("simulate examples/zero3-7.5b.json --stack megatron-lm-2022 --set cluster.preset=dgx-a100 "
                       "--set cluster.nodes=8 --fidelity analytic --quiet --report -",
                       &out) == 0);
  CHECK_THAT(out, Catch::Contains("14 of 14 exact figures identical"));
  const placesim::Json report = placesim::Json::parse(out.substr(0, out.find("simulated step:")));
  const double analytic = report["memory"]["buffers_bytes"].get<double>();
  const double simulated = report["simulation"]["peak_memory_bytes"]["buffers"].get<double>();
  CHECK(analytic == 4 * 12499968.0 * 2);  // two parameter and two gradient buckets, fp16
  CHECK(simulated > 0);
  CHECK(simulated <= analytic);
}

TEST_CASE("check: one-stage PipeDream-2BW is gradient accumulation; one-stage PipeDream updates per micro-batch") {
  const auto one_stage = [](const std::string& schedule) {
    return "check examples/small-3d-1f1b.json --set strategy.schedule=" + schedule +
           " --set strategy.pp=1 --set strategy.dp=8";
  };
  CHECK_THAT(cli_output(one_stage("pipedream-2bw"), 0), Catch::StartsWith("valid: "));
  CHECK_THAT(cli_output(one_stage("pipedream"), 3),
             Catch::Contains("updates the weights after every micro-batch instead of once per global batch"));
}

// A refusal for memory says which one-field change would fit, judged by the changed experiment's analytic bound.
TEST_CASE("A plan that does not fit is refused with the one-field changes that would fit") {
  std::string out;
  // 7.5e9 parameters over dp 64 with bf16 Adam: replicated, 2 + 4 + 12 = 18 bytes a parameter (135 GB); with the
  // optimizer sharded, 2 + 4 + 12/64 = 6.1875 bytes (46.40625 GB), which fits 80 GiB.
  std::string path =
      write_temp("fit-hint.json", R"({"model": {"parameters": 7.5e9}, "strategy": {"preset": "dp", "dp": 64}})");
  CHECK(run_placesim("analyze " + path + " --device-memory 80GiB", &out) == 2);
  CHECK_THAT(out, Catch::Contains("a device needs 135 GB") &&
                      Catch::Contains("; it fits with strategy.placement.optimizer=sharded (analytic bound 46.4 GB)"));
  CHECK(run_placesim("check " + path + " --device-memory 80GiB", &out) == 2);
  CHECK_THAT(out, Catch::Contains("it fits with strategy.placement.optimizer=sharded (analytic bound 46.4 GB)"));
  // One data rank: nothing to shard over, and an opaque model has no recompute to change: no hint.
  path = write_temp("fit-none.json", R"({"model": {"parameters": 7.5e9}, "strategy": {"preset": "dp", "dp": 1}})");
  CHECK(run_placesim("analyze " + path + " --device-memory 80GiB", &out) == 2);
  CHECK_THAT(out, Catch::Contains("a device needs 135 GB") && !Catch::Contains("it fits with"));
  // Neither change alone fits Llama 3 8B at 8k with micro-batch 2 on 8 data ranks, both together do; the bound named
  // is the changed experiment's own.
  const std::string llama =
      " --model llama3-8b --strategy megatron-3d --set strategy.dp=8 --set training.global_batch=16 "
      "--set training.micro_batch=2 --set model.seq_len=8192";
  std::string both;
  REQUIRE(run_placesim("analyze" + llama + " --set training.recompute=full --set strategy.placement.optimizer=sharded",
                       &both) == 0);
  const placesim::Json report = placesim::Json::parse(both.substr(both.find('{')));
  const std::string bound = placesim::format_bytes(report["memory"]["total_bytes"].get<double>());
  CHECK(run_placesim("analyze" + llama + " --set training.recompute=none --device-memory 80GiB", &out) == 2);
  CHECK_THAT(out, Catch::Contains("; it fits with training.recompute=full and strategy.placement.optimizer=sharded "
                                  "together (analytic bound " +
                                  bound + ")"));
}

// Korthikanti's "selective" (the attention core, free with fused attention) saves nothing for Llama 3 8B at micro-batch
// 2 on 96 GB under eager kernels; torchtitan's op-level selective AC fits and is named first, then full recompute,
// each with its bound. Under torchtitan's own stack the word "selective" means its op-level AC, which fits.
TEST_CASE("A refusal for memory names torchtitan's op-level selective AC before full recompute") {
  const std::string llama =
      " --model llama3-8b --strategy fsdp --set training.kernels=eager --stack megatron-lm-2022 --set strategy.dp=8 "
      "--set training.global_batch=16 --set training.micro_batch=2 --set model.seq_len=8192";
  auto bound_of = [&](const std::string& recompute) {
    std::string out;
    REQUIRE(run_placesim("analyze" + llama + " --set training.recompute=" + recompute, &out) == 0);
    const placesim::Json report = placesim::Json::parse(out.substr(out.find('{')));
    return placesim::format_bytes(report["memory"]["total_bytes"].get<double>());
  };
  const std::string op = bound_of("selective-op"), full = bound_of("full");
  std::string out;
  CHECK(run_placesim("analyze" + llama + " --set training.recompute=selective --device-memory 96GB", &out) == 2);
  CHECK_THAT(out, Catch::Contains("; it fits with training.recompute=selective-op (analytic bound " + op +
                                  "), or with training.recompute=full (analytic bound " + full + ")"));
  std::string titan;
  CHECK(run_placesim("analyze --model llama3-8b --strategy fsdp --set strategy.dp=8 --set training.global_batch=16 "
                     "--set training.micro_batch=2 --set model.seq_len=8192 --set training.recompute=selective "
                     "--device-memory 96GB --table",
                     &titan) == 0);
  CHECK_THAT(titan, Catch::Contains("recompute selective-op") &&
                        Catch::Contains("\"selective\" under torchtitan-2024-12 means selective-op"));
}

// The summary says how a power limit's compute scale was found: h100-sxm has a measured 500 W scale (0.8442), h200
// none (the linear estimate 500 / 700 = 0.714).
TEST_CASE("The simulate summary states a power limit's scale and where it comes from") {
  auto summary = [](const char* accelerator) {
    std::string out;
    const std::string path = write_temp(std::string("power-") + accelerator + ".json",
                                        std::string(R"({"model": {"family": "llama", "layers": 2, "hidden": 256,
        "heads": 4, "ffn": 512, "vocab": 512, "seq_len": 128}, "training": {"micro_batch": 1, "global_batch": 8},
        "strategy": {"preset": "fsdp", "dp": 8}, "cluster": {"preset": "dgx-h100", "nodes": 1,
        "accelerator": {"preset": ")") + accelerator +
                                            R"(", "power_limit_w": 500}}})");
    CHECK(run_placesim("simulate --quiet " + path, &out) == 0);
    return out;
  };
  CHECK_THAT(summary("h100-sxm"),
             Catch::Contains("500 W of the rated 700 W: compute peaks x0.844 (the profile's GEMMs measured at this "
                             "limit; HBM bandwidth unchanged)"));
  CHECK_THAT(summary("h200"), Catch::Contains("500 W of the rated 700 W: compute peaks x0.714 (sustained clock taken "
                                              "as proportional to the limit, an estimate; HBM bandwidth unchanged)"));
}

// The simulate summary's FP8 line says how the casts were costed and whether the scaling was written or the preset's
// (training.fp8_scaling).
TEST_CASE("The simulate summary states the FP8 scaling and where it comes from") {
  auto summary = [](const char* name, const char* training, const char* strategy) {
    std::string out;
    const std::string path = write_temp(std::string("fp8-") + name + ".json",
                                        std::string(R"({"model": {"family": "llama", "layers": 2, "hidden": 256,
        "heads": 4, "ffn": 512, "vocab": 512, "seq_len": 128}, "training": {"micro_batch": 1, "global_batch": 8,
        "fp8": true)") + training + R"(}, "strategy": )" +
                                            strategy + R"(, "cluster": {"preset": "dgx-h100", "nodes": 1}})");
    CHECK(run_placesim("simulate --quiet " + path, &out) == 0);
    return out;
  };
  CHECK_THAT(summary("fsdp", "", R"({"preset": "fsdp", "dp": 8})"),
             Catch::Contains("(training.fp8; tensorwise scaling, torchao's Float8Linear: amax and cast passes, the "
                             "weights cast every forward, operand copies for the backward GEMMs (training.fp8_scaling "
                             "not given: the torchtitan-2024-12 stack's default))"));
  CHECK_THAT(summary("written", R"(, "fp8_scaling": "delayed")", R"({"preset": "fsdp", "dp": 8})"),
             Catch::Contains("(training.fp8; delayed scaling, Transformer Engine's: fused cast-transposes, the weights "
                             "cast once per step (training.fp8_scaling))"));
}

TEST_CASE("simulate --report-figures writes only the paths asked for, each as the whole report has it") {
  const std::string experiment = std::string(PLACESIM_SOURCE_DIR) + "/examples/small-3d-1f1b.json";
  const std::string whole = write_temp("whole.json", ""), part = write_temp("part.json", "");
  std::string out;
  REQUIRE(run_placesim("simulate " + experiment + " --fidelity analytic --quiet --report " + whole, &out) == 0);
  REQUIRE(run_placesim("simulate " + experiment + " --fidelity analytic --quiet --report " + part +
                           " --report-figures simulation.step_time_s,memory.per_stage.1.total_bytes,no.such.path",
                       &out) == 0);
  std::ifstream a(whole), b(part);
  const auto full = placesim::Json::parse(a), some = placesim::Json::parse(b);
  CHECK(some["simulation"]["step_time_s"] == full["simulation"]["step_time_s"]);
  // A list element is written under its index as a key; the missing path is left out.
  CHECK(some["memory"]["per_stage"]["1"]["total_bytes"] == full["memory"]["per_stage"][1]["total_bytes"]);
  CHECK(some.size() == 2);
  CHECK(some["simulation"].size() == 1);
  CHECK_FALSE(some.contains("no"));
}
