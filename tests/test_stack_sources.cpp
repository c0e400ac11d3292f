// Each built-in stack's settings against what its cited sources say. The expected rows below were read from the
// sources themselves (the commit, file and line each stack file cites), not from the stack files: a stack file that
// drifts from its source, gains a setting without one or loses one fails here.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "workloads/stack/Stack.hpp"

using namespace placesim;

namespace {

struct Expected {
  const char* field;
  const char* value;   ///< JSON text
  const char* when;    ///< the condition ("" = always)
  const char* anchor;  ///< what the setting's source must cite
};

void check_stack(const std::string& name, const std::vector<Expected>& rows) {
  INFO("stack " << name);
  const auto stack = find_stack(name, "stack", "");
  REQUIRE(stack->settings.size() == rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const StackSetting& s = stack->settings[i];
    INFO("setting " << i << ": " << rows[i].field);
    CHECK(s.field == rows[i].field);
    CHECK(s.value == Json::parse(rows[i].value));
    CHECK(s.when == rows[i].when);
    CHECK_THAT(s.source, Catch::Contains(rows[i].anchor));
  }
}

// Megatron-LM's defaults shared by its stacks: fused kernels (megatron/arguments.py: the fusions' --no-* flags are
// store_false), apex FusedAdam under the mixed-precision optimizer (fp32 master weights in the optimizer state), TE's
// DelayedScaling for FP8, blocking batched p2p (p2p_communication.py _communicate), TE attention for CP.
std::vector<Expected> megatron(bool fusion, bool overlap) {
  return {{"training.kernels", R"("fused")", "", "--no-masked-softmax-fusion"},
          {"training.grad_accumulation_fusion", fusion ? "true" : "false", "", "83b1e42f"},
          {"training.optimizer_kernel", R"("fused")", "", "FusedAdam"},
          {"training.master_weights", R"("optimizer")", "16-bit", "Float16OptimizerWithFloat16Params"},
          {"training.fp8_scaling", R"("delayed")", "fp8", "DelayedScaling"},
          {"strategy.tp_overlap", overlap ? "true" : "false", "", "16c90445"},
          {"strategy.p2p", R"("megatron")", "", "batch_isend_irecv"},
          {"strategy.cp_impl", R"("te")", "", "TEDotProductAttention"}};
}

}  // namespace

TEST_CASE("Megatron-LM 2021 (arXiv 2104.04473): no fused accumulation before 83b1e42f, no TP overlap before 16c90445") {
  check_stack("megatron-lm-2021", megatron(false, false));
}

TEST_CASE("Megatron-LM 2022: fused accumulation (83b1e42f, 2022-02) and the backward TP overlap (16c90445, 2021-09)") {
  check_stack("megatron-lm-2022", megatron(true, true));
}

// What a Megatron-Core stack cannot run: each (when, what its reason must cite), in order.
void check_limits(const std::string& name, const std::vector<std::pair<const char*, const char*>>& rows) {
  INFO("stack " << name);
  const auto stack = find_stack(name, "stack", "");
  REQUIRE(stack->cannot_run.size() == rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CHECK(stack->cannot_run[i].when == rows[i].first);
    CHECK_THAT(stack->cannot_run[i].why, Catch::Contains(rows[i].second));
  }
}

TEST_CASE("Megatron-Core 0.9: Megatron-LM 2022 with sequence parallelism wherever tp > 1") {
  std::vector<Expected> rows = megatron(true, true);
  rows.insert(rows.begin() + 5, {"strategy.sp", "true", "tp > 1", "--sequence-parallel"});
  check_stack("megatron-core-0.9", rows);
  // Its schedules: no pipelining, 1F1B, interleaved (get_forward_backward_func, read at core_v0.9.0 L25-110); the
  // combined 1F1B's flag is not in the tag (git grep overlap_moe_expert_parallel_comm core_v0.9.0: no hits).
  check_limits("megatron-core-0.9", {{"pp > 1 and not 1f1b and not interleaved", "core_v0.9.0 L25-110"},
                                     {"ep overlap", "first ships in core_v0.14.0"}});
}

// Read at core_v0.14.0 (23e00ed0): arguments.py L1224 (--fp8-recipe default 'delayed'), L1929-1940 (the fusions'
// store_false flags), L1996 (--sequence-parallel), L1998 (--no-gradient-accumulation-fusion); optimizer/__init__.py
// L11-15 (TE's or apex's FusedAdam); optimizer.py L583-615; layers.py L536 (the dgrad all-reduce async_op=True);
// model_parallel_config.py L260-265; transformer_config.py L1303-1330 (the combined 1F1B's asserts).
TEST_CASE("Megatron-Core 0.14: 0.9's defaults read again at core_v0.14.0, and where its combined 1F1B runs") {
  check_stack("megatron-core-0.14",
              {{"training.kernels", R"("fused")", "", "L1929-1940: --no-masked-softmax-fusion"},
               {"training.grad_accumulation_fusion", "true", "", "L1998: --no-gradient-accumulation-fusion"},
               {"training.optimizer_kernel", R"("fused")", "", "Transformer Engine's FusedAdam, else apex FusedAdam"},
               {"training.master_weights", R"("optimizer")", "16-bit", "fp32_from_float16_groups"},
               {"training.fp8_scaling", R"("delayed")", "fp8", "--fp8-recipe default 'delayed'"},
               {"strategy.sp", "true", "tp > 1", "L1996"},
               {"strategy.tp_overlap", "true", "", "async_op=True before the weight-gradient GEMM"},
               {"strategy.p2p", R"("megatron")", "", "batch_p2p_comm = True, overlap_p2p_comm = False"},
               {"strategy.cp_impl", R"("te")", "", "TEDotProductAttention"}});
  check_limits("megatron-core-0.14",
               {{"pp > 1 and not 1f1b and not interleaved", "get_forward_backward_func L40-131"},
                {"ep overlap and pp > 1 and not interleaved", "virtual_pipeline_model_parallel_size"},
                {"ep overlap and full recompute", "disable full recomputation"},
                {"ep overlap and not 16-bit", "only supported with bf16 or fp16"}});
}

TEST_CASE("NeMo 24.07: bf16 gradient reduction (grad_sync_dtype) and overlapped exchanges with virtual stages") {
  std::vector<Expected> rows = megatron(true, true);
  rows.insert(rows.begin() + 5, {"strategy.sp", "true", "tp > 1", "--sequence-parallel"});
  rows.erase(rows.begin() + 7);  // the unconditional p2p comes after NeMo's conditional one
  rows.push_back({"training.grad_dtype", R"("bf16")", "bf16", "grad_sync_dtype=bf16"});
  rows.push_back({"strategy.p2p", R"("async")", "pp > 1 and interleaved", "overlap_p2p_comm = True"});
  rows.push_back({"strategy.p2p", R"("megatron")", "", "batch_p2p_comm = True"});
  rows.push_back({"strategy.param_gather_overlap", "true", "", "overlap_param_sync: true"});
  check_stack("nemo-24.07", rows);
  check_limits("nemo-24.07", {{"pp > 1 and not 1f1b and not interleaved", "core_v0.8.0 L24-108"},
                              {"ep overlap", "Megatron-Core 0.8 has no such flag"}});
}

TEST_CASE("Megatron-DeepSpeed (BLOOM's code): DeepSpeed's pipeline engine and BF16_Optimizer, no fusion or overlap") {
  check_stack("megatron-deepspeed",
              {{"training.kernels", R"("fused")", "", "8387ae17 megatron/arguments.py"},
               {"training.grad_accumulation_fusion", "false", "", "commented out"},
               {"training.grad_accumulation_cast", "true", "bf16 and replicated gradients", "hp_grad.add_(lp.grad"},
               {"training.optimizer_kernel", R"("fused")", "", "FusedAdam"},
               {"training.master_weights", R"("optimizer")", "16-bit", "_setup_for_real_optimizer"},
               {"strategy.tp_overlap", "false", "", "f90b8877"},
               {"strategy.p2p", R"("deepspeed")", "pp > 1 and 1f1b", "asserts async_op False"},
               {"strategy.bucket_bytes", "1e15", "", "ReduceGrads"},
               {"strategy.grad_allreduce", "true", "bf16 and replicated gradients and pp > 1", "_bf16_reduce_grads"}});
  const auto s = find_stack("megatron-deepspeed", "stack", "");
  CHECK(s->family == "deepspeed");
  REQUIRE(s->cannot_run.size() == 2);
  CHECK_THAT(s->cannot_run[0].why, Catch::Contains("zero_optimization_stage() < 2"));
}

TEST_CASE("DeepSpeed ZeRO: 16-bit ZeRO-2/3 gradients, the BF16_Optimizer under ZeRO-1, 5e8-element buckets") {
  check_stack(
      "deepspeed-zero",
      {{"training.kernels", R"("fused")", "", "arXiv 1910.02054"},
       {"training.grad_accumulation_fusion", "false", "", "stage_1_and_2.py and stage3.py"},
       {"training.grad_dtype", R"("bf16")", "bf16 and sharded gradients", "2 + 2 + K"},
       {"training.grad_accumulation_cast", "true", "bf16 and replicated gradients", "_do_optimizer_sanity_check"},
       {"training.optimizer_kernel", R"("fused")", "", "FusedAdam"},
       {"training.master_weights", R"("optimizer")", "16-bit", "K = 12"},
       {"strategy.tp_overlap", "false", "", "f90b8877"},
       {"strategy.p2p", R"("deepspeed")", "pp > 1 and 1f1b", "asserts async_op False"},
       {"strategy.bucket_bytes", "1e15", "pp > 1", "ReduceGrads"},
       {"strategy.bucket_bytes", "1e9", "", "reduce_bucket_size and allgather_bucket_size 5e8"},
       {"strategy.grad_allreduce", "true", "bf16 and replicated gradients and pp > 1", "dist.all_reduce"}});
}

// Read at huggingface/nanotron e24d248 (src/ as at c252843, the Ultra-Scale Playbook benchmarks'): functional.py
// L335/L578 and gradient_accumulator.py L204-223 (the fp32 add after the backward), trainer.py L502-519 (ZeRO-1's one
// all-reduce, reduce_scatter=False) and L845-852 (DDP's 25 MB buckets), helpers.py L328-338 (fused AdamW),
// llama.py L874-880 (fp32 sharded cross entropy), functional.py L266-345 / L474-581 (async backward TP).
TEST_CASE("nanotron e24d248: fp32 accumulation after the backward, all-reduced gradients, DDP's buckets") {
  check_stack("nanotron",
              {{"training.grad_accumulation_fusion", "false", "", "fp32_grad.add_(half_param.grad)"},
               {"strategy.grad_allreduce", "true", "replicated gradients", "reduce_scatter=False"},
               {"strategy.bucket_bytes", "1e15", "replicated gradients and sharded optimizer", "L502-519"},
               {"strategy.bucket_bytes", "5e7", "", "bucket_cap_mb"},
               {"training.optimizer_kernel", R"("fused")", "", "AdamW(fused=True)"},
               {"training.loss_kernel", R"("vocab-parallel")", "", "vocabulary-sharded fp32 cross entropy"},
               {"strategy.tp_overlap", "true", "", "tp_linear_async_communication"}});
  CHECK(find_stack("nanotron", "stack", "")->family == "nanotron");
}

TEST_CASE("torchtitan 9dec370: eager, FSDP2 mixed precision, foreach AdamW, tensorwise Float8, its TP, CP and AC") {
  check_stack("torchtitan-2024-12",
              {{"training.kernels", R"("eager")", "", "compile = false"},
               {"training.master_weights", R"("parameters")", "no weight copies", "MixedPrecisionPolicy"},
               {"training.optimizer_kernel", R"("foreach")", "in-place optimizer", "foreach = not fused"},
               {"training.fp8_scaling", R"("tensorwise")", "fp8", "default 'dynamic'"},
               {"strategy.cp_impl", R"("pytorch")", "", "create_context_parallel_ctx"},
               {"strategy.reshard_after_forward", "false", "pp > 1 and gathered parameters and synchronous",
                "reshard_after_forward = False for every block when pp_enabled"},
               {"strategy.cp_comm", R"("all-gather")", "", "default 'allgather'"},
               {"strategy.sp", "true", "tp > 1", "SequenceParallel()"},
               {"strategy.tp_overlap", "false", "", "enable_async_tensor_parallel"},
               {"strategy.tp_copies", "true", "", "all_gather_tensor(gather_dim=1)"}});
  const auto s = find_stack("torchtitan-2024-12", "stack", "");
  REQUIRE(s->words.size() == 1);
  CHECK(s->words[0].word == "selective");
  CHECK(s->words[0].means == "selective-op");
  CHECK_THAT(s->words[0].source, Catch::Contains("selective_ac_option = 'op'"));
}

TEST_CASE("llm-foundry 5e85bd6: FSDP1 flat parameters, eager MPT, Triton attention, fused cross entropy") {
  check_stack("llm-foundry", {{"training.kernels", R"("eager")", "", "no compile_config"},
                              {"training.master_weights", R"("parameters")", "no weight copies", "FlatParameter"},
                              {"training.optimizer_kernel", R"("foreach")", "in-place optimizer", "DecoupledAdamW"},
                              {"training.fp8_scaling", R"("delayed")", "fp8", "amp_fp8"},
                              {"strategy.flat_params", "true", "", "FSDP1"},
                              {"training.attention_kernel", R"("triton")", "", "--attn_impl triton"},
                              {"training.loss_kernel", R"("fused")", "", "fused_crossentropy"}});
}

TEST_CASE("fms-fsdp 4ffb9bd: FSDP1 with bfSixteen's bf16 reduction, eager unless compiled") {
  check_stack("fms-fsdp", {{"training.kernels", R"("eager")", "", "use_torch_compile False"},
                           {"training.master_weights", R"("parameters")", "no weight copies", "FlatParameter"},
                           {"training.optimizer_kernel", R"("foreach")", "in-place optimizer", "torch.optim.AdamW"},
                           {"training.grad_dtype", R"("bf16")", "bf16", "bfSixteen"},
                           {"strategy.flat_params", "true", "", "FullyShardedDataParallel (FSDP1)"}});
}

TEST_CASE("OLMo-core e27ba7455: compiled model and loss, fused AdamW, torchao Float8") {
  check_stack("olmo-core", {{"training.kernels", R"("compiled")", "", "compile_model=True"},
                            {"training.master_weights", R"("parameters")", "no weight copies", "MixedPrecisionPolicy"},
                            {"training.optimizer_kernel", R"("fused")", "in-place optimizer", "fused=True"},
                            {"training.fp8_scaling", R"("tensorwise")", "fp8", "Float8Config"},
                            {"training.loss_kernel", R"("fused")", "", "compile_loss=True"}});
}

TEST_CASE("Every built-in stack has a test above") {
  const std::vector<std::string> covered = {
      "megatron-lm-2021", "megatron-lm-2022",   "megatron-core-0.9", "megatron-core-0.14", "nemo-24.07",
      "megatron-deepspeed", "deepspeed-zero", "torchtitan-2024-12", "llm-foundry",     "fms-fsdp",   "olmo-core",
      "nanotron"};
  CHECK(builtin_stack_names().size() == covered.size());
  for (const std::string& name : builtin_stack_names())
    CHECK(std::find(covered.begin(), covered.end(), name) != covered.end());
}
