#include "strategies/placement/Experiment.hpp"

#include "strategies/placement/ClusterFit.hpp"
#include "strategies/placement/DataPlan.hpp"
#include "strategies/placement/StackApply.hpp"
#include "topology/cluster/Cluster.hpp"

namespace placesim {

namespace {

// The cluster's accelerator given the profile file `path` (a calibration's).
void set_accelerator_profile(Json& cluster, const std::string& path) {
  if (cluster.is_string()) cluster = Json{{"preset", cluster}};
  if (!cluster.is_object()) return;  // refused by parse_cluster, naming the field
  // The cluster preset's own accelerator, so that check_calibration_accelerator compares the cluster's, not the
  // calibration's.
  if (!cluster.contains("accelerator")) cluster["accelerator"] = parse_cluster(cluster).accelerator.name;
  Json& acc = cluster["accelerator"];
  if (acc.is_string()) acc = Json{{"preset", acc}};
  if (acc.is_object() && acc.contains("profile"))
    throw InputError("cluster.accelerator.profile and calibration both set the accelerator's profile: keep one");
  if (acc.is_object()) acc["profile"] = path;
}

// The experiment with its "calibration" file applied (Experiment::calibration): the accelerator's profile and the
// training fields the experiment does not write. `info` receives what was applied.
Json with_calibration(const Json& value, const std::string& base_dir, Json& info) {
  const Json* name = value.is_object() && value.contains("calibration") ? &value["calibration"] : nullptr;
  if (!name) return value;
  if (!name->is_string() || name->get<std::string>().empty())
    throw InputError("calibration must be the path of a calibration file (placesim calibrate --trace ... --out FILE)");
  std::filesystem::path path = name->get<std::string>();
  if (path.is_relative() && !base_dir.empty()) path = std::filesystem::path(base_dir) / path;
  path = std::filesystem::absolute(path);
  const Json file = read_json_file(path.string());
  if (!file.is_object() || !file.contains("accelerator") || !file["accelerator"].is_string() ||
      !file.contains("training") || !file["training"].is_object())
    throw InputError("calibration=" + name->get<std::string>() +
                     ": not a trace calibration (no \"accelerator\" or \"training\"); write one with placesim "
                     "calibrate --trace TRACE --experiment EXP --out FILE");
  Json out = value;
  out.erase("calibration");
  Json& training = out["training"];
  if (training.is_null()) training = Json::object();
  if (!training.is_object())
    throw InputError("training must be an object when a calibration sets its host time (got " + training.dump() + ")");
  Json applied = Json::array();
  for (const auto& [key, v] : file["training"].items()) {
    if (training.contains(key)) continue;  // the experiment's own value wins
    training[key] = v;
    applied.push_back("training." + key);
  }
  if (out.contains("cluster")) set_accelerator_profile(out["cluster"], path.string());
  info = Json{
      {"file", name->get<std::string>()},
      {"accelerator", file["accelerator"]},
      {"from_trace", file.contains("fit") && file["fit"].is_object() ? file["fit"].value("from_trace", Json::array())
                                                                     : Json::array()},
      {"training", applied}};
  return out;
}

}  // namespace

void check_calibration_accelerator(const Experiment& e, const std::string& cluster_accelerator) {
  if (e.calibration.is_null()) return;
  const std::string measured = e.calibration.value("accelerator", "");
  if (measured != cluster_accelerator)
    throw InputError("calibration=" + e.calibration.value("file", "") + " was measured on " + measured +
                     ", but the cluster's accelerator is " + cluster_accelerator +
                     ": a trace calibrates the accelerator it ran on (set cluster.accelerator to " + measured +
                     ", or calibrate from a trace of " + cluster_accelerator + ")");
}

namespace {

// The training, strategy and stack sections, read together (see parse_run_sections).
void read_run_sections(Experiment& e, const Json* training, const Json* strategy, const Json* stack,
                       const std::string& base_dir, ErrorList* errors) {
  // The stack and the strategy preset shape both sections: when they cannot be read, neither section is.
  const bool read = read_section(errors, "strategy", [&] {
    RunSections run = parse_run_sections(training, strategy, stack, base_dir, errors);
    e.training = std::move(run.training);
    if (strategy != nullptr) e.strategy = std::move(run.strategy);
    e.stack = std::move(run.stack);
    e.stack_from = std::move(run.stack_from);
    e.provenance = std::move(run.provenance);
  });
  if (!read) errors->fail("training");
}

// Every section of an experiment, unresolved. With `errors` a section that fails is recorded and the others read.
Experiment read_sections(const Json& given, const std::string& base_dir, ErrorList* errors) {
  Json calibration;
  Json value = given;
  read_section(errors, "calibration", [&] { value = with_calibration(given, base_dir, calibration); });
  ObjectReader r(value, "", errors);
  Experiment e;
  e.calibration = std::move(calibration);
  if (value.contains("calibration")) r.skip("calibration");  // its file failed, recorded above
  e.name = r.get_string("name", "experiment");
  r.skip("description");
  if (const Json* p = r.child("pipeline")) e.pipeline = *p;
  if (const Json* c = r.child("cluster")) e.cluster = *c;
  if (const Json* c = r.child("convergence"))
    read_section(errors, "convergence", [&] { e.convergence = parse_convergence(*c); });
  if (const Json* run = r.child("run")) read_section(errors, "run", [&] { e.run = parse_run(*run, errors); });
  const bool abstract = !e.pipeline.is_null();
  if (const Json* m = r.child("model"))
    read_section(errors, "model", [&] { e.model = parse_model(*m, base_dir, errors); });
  else if (!abstract)
    r.refuse("model", "model is required but missing (a preset name such as \"gpt3-175b\" or an object)");
  const Json* training = r.child("training");
  const Json* strategy = r.child("strategy");
  const Json* stack = r.child("stack");
  if (strategy == nullptr && !abstract)
    r.refuse("strategy", "strategy is required but missing (a preset name such as \"zero3\" or an object)");
  if (strategy != nullptr || training != nullptr) read_run_sections(e, training, strategy, stack, base_dir, errors);
  r.finish();
  return e;
}

// Whether the checks across sections may run: the model, training and strategy sections were read, and the mesh's
// degrees parsed (the checks read them through products such as "tp x cp x dp", which name no failed field). The
// micro-batch count and global batch resolve() derives then fail with what they derive from.
bool checks_apply(ErrorList& errors) {
  if (errors.failed("model") || errors.failed("training") || errors.failed("strategy")) return false;
  for (const char* degree :
       {"strategy.dp", "strategy.tp", "strategy.pp", "strategy.cp", "strategy.ep", "strategy.mesh"})
    if (errors.failed_within(degree)) return false;
  if (errors.failed("training.global_batch") || errors.failed("training.micro_batch") ||
      errors.failed("strategy.microbatches")) {
    errors.fail("training.global_batch");
    errors.fail("strategy.microbatches");
  }
  return true;
}

}  // namespace

Experiment parse_experiment(const Json& value, const std::string& base_dir) {
  Experiment e = read_sections(value, base_dir, nullptr);
  if (e.pipeline.is_null()) resolve(e);
  return e;
}

bool read_experiment(const Json& value, const std::string& base_dir, ErrorList& errors, Experiment& e,
                     std::optional<ClusterSpec>& cluster) {
  e = read_sections(value, base_dir, &errors);
  cluster.reset();
  if (!e.cluster.is_null()) read_section(&errors, "cluster", [&] { cluster = parse_cluster(e.cluster, &errors); });
  if (errors.failed_within("cluster")) cluster.reset();
  // resolve() derives what check_validity reads: the commands' checks join only after it finished.
  return e.pipeline.is_null() && checks_apply(errors) && errors.attempt([&] { resolve(e); }) && !errors.empty();
}

namespace {

// Expert parallelism against the model and the mesh.
void check_experts(const Experiment& e) {
  const StrategySpec& s = e.strategy;
  const ModelSpec& m = e.model;
  if (!m.moe()) {
    if (s.ep > 1)
      throw InputError("strategy.ep=" + std::to_string(s.ep) + " places routed experts, but model " + m.name +
                       " has none (model.experts is not given)");
    if (e.training.routing.kind != RoutingSpec::Kind::Balanced)
      throw InputError("training.routing spreads tokens over experts, but model " + m.name + " has none");
    return;
  }
  const std::int64_t stage_ranks = s.tp * s.cp * s.dp;
  if (stage_ranks % s.ep != 0)
    throw InputError("strategy.ep=" + std::to_string(s.ep) +
                     " must divide the ranks of a pipeline stage, tp x cp x dp = " + std::to_string(s.tp) + " x " +
                     std::to_string(s.cp) + " x " + std::to_string(s.dp) + " = " + std::to_string(stage_ranks) +
                     " (the expert groups reshape those ranks)");
  if (m.experts % s.ep != 0)
    throw InputError("strategy.ep=" + std::to_string(s.ep) + " must divide model.experts=" + std::to_string(m.experts) +
                     " (each ep rank holds experts / ep whole experts)");
  if (s.tp > 1 && !s.sp)
    throw InputError("strategy.tp=" + std::to_string(s.tp) +
                     " with a mixture-of-experts model needs strategy.sp=true: the experts are not tensor-parallel, so "
                     "each tp rank routes its sequence-parallel share of the tokens (Megatron-Core refuses MoE with "
                     "tp > 1 and no sequence parallelism)");
  if (s.schedule == Schedule::PipeDream || s.schedule == Schedule::PipeDream2BW || s.schedule == Schedule::LocalSGD)
    throw InputError("strategy.schedule=" + to_string(s.schedule) +
                     " is not modelled for mixture-of-experts models yet (their inline weight updates do not "
                     "synchronise the routed experts); use gpipe, 1f1b or interleaved");
  if (e.training.recompute == Recompute::SelectiveOp)
    throw InputError(
        "training.recompute=selective-op is not modelled for mixture-of-experts models (which of an MoE "
        "layer's matmuls it recomputes is not defined here); use full, selective or none");
  for (State st : {State::Parameters, State::Gradients, State::Optimizer})
    for (AxisSet axis : {kShardAxis, kReplicateAxis})
      if (s.placement.mode(st, axis) == Mode::Offloaded)
        throw InputError("strategy.placement." + to_string(st) +
                         "=offloaded is not modelled for mixture-of-experts models (the routed experts' host copies "
                         "are not derived yet)");
  for (const DataCollective& c : expert_plan(s))
    if (c.when != DataWhen::Step && c.when != DataWhen::AfterStep)
      throw InputError("strategy.placement (" + short_form(s.placement) + ") with strategy.ep=" + std::to_string(s.ep) +
                       " leaves " + std::to_string(s.edp()) +
                       " ranks holding the same experts (edp = tp x cp x dp / ep), over which the routed experts' " +
                       c.purpose + " would run " + to_string(c.when) +
                       ", per unit: not modelled yet. Use ep = tp x cp x dp (edp 1), or a placement "
                       "that shards only the optimizer (Megatron's distributed optimizer, ZeRO-1) or nothing (DDP)");
  if (s.placement.activations == Mode::Offloaded)
    throw InputError(
        "strategy.placement.activations=offloaded is not modelled for mixture-of-experts models (their "
        "layers' activations differ by kind and expert rank); use materialized or replicated");
  if (e.training.routing.kind == RoutingSpec::Kind::Hot && e.training.routing.hot_experts > m.experts)
    throw InputError("training.routing.hot_experts=" + std::to_string(e.training.routing.hot_experts) +
                     " is more than model.experts=" + std::to_string(m.experts));
}

// Master weights as the parameters (PyTorch FSDP's stacks) with a layout that copies 16-bit weights (offloaded
// parameters or optimizer, hpZ's secondary shard, stashed versions) is not modelled. A stack applies them only where
// there are no such copies ("no weight copies"), so only a written value reaches this refusal.
void check_master_weights(const Experiment& e) {
  const StrategySpec& s = e.strategy;
  const TrainingSpec& t = e.training;
  if (t.master_weights != MasterWeights::Parameters) return;
  std::string copies;
  if (s.placement.parameters == Mode::Offloaded) copies = "strategy.placement.parameters=offloaded";
  if (s.placement.optimizer == Mode::Offloaded)
    copies = "strategy.placement.optimizer=offloaded (the host's step updates master weights it holds)";
  if (s.placement.secondary) copies = "the hpZ secondary shard (strategy.placement.parameters.secondary)";
  if (s.pp > 1 && (s.schedule == Schedule::PipeDream || s.schedule == Schedule::PipeDream2BW))
    copies = "schedule=" + to_string(s.schedule) + "'s stashed weight versions";
  if (!copies.empty())
    throw InputError("training.master_weights=parameters with " + copies +
                     " is not modelled (their copies are 16-bit parameters with the master weights in the optimizer "
                     "state); use training.master_weights=optimizer");
}

// torch.optim's multi-tensor step (optimizer_kernel=foreach) steps fp32 parameters in place with its own state.
void check_optimizer_kernel(const Experiment& e) {
  const TrainingSpec& t = e.training;
  if (t.optimizer_kernel != OptimizerKernel::Foreach) return;
  const bool in_place = t.dtype == DType::FP32 || t.master_weights == MasterWeights::Parameters;
  const double own_bytes = default_optimizer_bytes(t.optimizer, t.dtype, t.master_weights);
  if (!in_place)
    throw InputError(
        "training.optimizer_kernel=foreach is torch.optim's multi-tensor step on fp32 parameters, but "
        "the master weights are in the optimizer state (training.master_weights=optimizer" +
        std::string(
            e.provenance.written("training.master_weights") ? "" : ", " + e.provenance.who("training.master_weights")) +
        "): set training.master_weights=parameters, or optimizer_kernel=fused");
  if (t.optimizer_bytes_per_param != own_bytes)
    throw InputError(
        "training.optimizer_kernel=foreach counts torch.optim's passes over its own state (Adam's two fp32 "
        "moments, SGD's momentum: " +
        std::to_string(static_cast<int>(own_bytes)) +
        " bytes a parameter), but training.optimizer_bytes_per_param sets another size: leave one of "
        "them out");
}

}  // namespace

namespace {

// The micro-batch count from the global batch (or the reverse), within the counts placesim multiplies exactly.
void resolve_batch(Experiment& e) {
  StrategySpec& s = e.strategy;
  TrainingSpec& t = e.training;
  std::int64_t per_microbatch_step = 0;
  if (__builtin_mul_overflow(t.micro_batch, s.dp, &per_microbatch_step))
    throw InputError("training.micro_batch x strategy.dp = " + std::to_string(t.micro_batch) + " x " +
                     std::to_string(s.dp) + " overflows a 64-bit count");
  if (t.global_batch > 0) {
    if (t.global_batch % per_microbatch_step != 0)
      throw InputError("training.global_batch=" + std::to_string(t.global_batch) +
                       " is not a multiple of training.micro_batch x strategy.dp = " + std::to_string(t.micro_batch) +
                       " x " + std::to_string(s.dp));
    std::int64_t m = t.global_batch / per_microbatch_step;
    if (s.microbatches > 0 && s.microbatches != m)
      throw InputError("strategy.microbatches=" + std::to_string(s.microbatches) +
                       " contradicts training.global_batch=" + std::to_string(t.global_batch) +
                       " / (micro_batch x dp) = " + std::to_string(m));
    s.microbatches = m;
  } else {
    if (s.microbatches == 0) s.microbatches = 1;
    if (__builtin_mul_overflow(s.microbatches, per_microbatch_step, &t.global_batch))
      throw InputError(
          "strategy.microbatches x training.micro_batch x strategy.dp = " + std::to_string(s.microbatches) + " x " +
          std::to_string(t.micro_batch) + " x " + std::to_string(s.dp) + " overflows a 64-bit count");
  }
  if (s.microbatches > kMaxMicrobatches)
    throw InputError("strategy.microbatches = " + std::to_string(s.microbatches) +
                     " micro-batches per step per pipeline is more than the " + std::to_string(kMaxMicrobatches) +
                     " placesim accepts");
  // One micro-batch's activation tensor (tokens x hidden) is the largest element count the memory, traffic and task
  // sizes multiply; bounding it keeps their 64-bit products exact.
  if (!e.model.opaque() && static_cast<long double>(e.model.seq_len) * t.micro_batch * e.model.hidden >
                               static_cast<long double>(kMaxCountedElems))
    throw InputError("model.seq_len x training.micro_batch x model.hidden = " + std::to_string(e.model.seq_len) +
                     " x " + std::to_string(t.micro_batch) + " x " + std::to_string(e.model.hidden) +
                     " elements in one activation tensor is more than the 2^50 (1.1e15) placesim counts exactly");
}

// Recompute and the activation placement say the same thing twice; make them agree, and check what a recompute
// mode or a recomputed layer count is modelled with.
void resolve_recompute(Experiment& e) {
  StrategySpec& s = e.strategy;
  TrainingSpec& t = e.training;
  // An explicit training.recompute wins over the placement (which may come from a preset such as megatron-3d).
  const Provenance& given = e.provenance;
  if (given.present("training.recompute") && t.recompute == Recompute::None &&
      s.placement.activations == Mode::Materialized)
    s.placement.activations = Mode::Replicated;
  if (t.recompute != Recompute::None && s.placement.activations == Mode::Replicated)
    s.placement.activations = Mode::Materialized;
  if (s.placement.activations == Mode::Materialized && t.recompute == Recompute::None) t.recompute = Recompute::Full;
  if (t.recompute == Recompute::SelectiveOp && e.model.mla())
    throw InputError(
        "training.recompute=selective-op is not modelled for multi-head latent attention (model.kv_lora_rank=" +
        std::to_string(e.model.kv_lora_rank) +
        "): which of its projections torchtitan's op-level AC keeps is not defined here; use full, "
        "selective or none");
  if (t.recompute_layers > 0) {
    const std::string what = "training.recompute_layers=" + std::to_string(t.recompute_layers);
    if (t.recompute != Recompute::Full)
      throw InputError(what + " needs training.recompute=full (it is " + to_string(t.recompute) +
                       (given.present("training.recompute") ? "" : ", from the " + s.preset + " preset's activations") +
                       "): it is the number of layers of each model chunk fully recomputed, the others keeping every "
                       "activation");
    if (e.model.opaque() || e.model.moe())
      throw InputError(what + " is modelled for dense transformer layers only" +
                       std::string(e.model.moe() ? " (this model has MoE layers)" : " (this model is opaque)"));
    if (s.cp > 1)
      throw InputError(what + " with strategy.cp=" + std::to_string(s.cp) + " is not modelled; recompute every layer");
    if (s.placement.activations == Mode::Offloaded)
      throw InputError(what + " with offloaded activations is not modelled");
  }
}

// The kernels' and precisions' fields against each other and the model.
void resolve_kernels(Experiment& e) {
  StrategySpec& s = e.strategy;
  TrainingSpec& t = e.training;
  const Provenance& given = e.provenance;
  if (!given.present("training.loss_kernel"))
    t.loss_kernel = t.kernels == Kernels::Fused ? LossKernel::VocabParallel : LossKernel::PyTorch;
  check_master_weights(e);
  check_optimizer_kernel(e);
  if (t.grad_accumulation_cast &&
      (s.placement.gradients != Mode::Replicated || s.placement.replicate.gradients != Mode::Replicated))
    throw InputError(
        "training.grad_accumulation_cast=true is DeepSpeed's BF16_Optimizer, which keeps the whole fp32 "
        "gradient on every data-parallel rank (ZeRO stage 0 or 1); strategy.placement.gradients is " +
        to_string(s.placement.gradients) + ": replicate the gradients or drop the field");
  if (t.fused_norm && t.kernels != Kernels::Eager)
    throw InputError("training.fused_norm=true has no meaning with training.kernels=" + to_string(t.kernels) +
                     (given.written("training.kernels") ? "" : " (" + given.who("training.kernels") + ")") +
                     ": fused and compiled kernels fuse every norm already");
  if (t.fp8 && e.model.opaque())
    throw InputError(
        "training.fp8=true runs the layers' linear GEMMs in FP8, but the model is opaque (model.parameters, no "
        "layer shapes): describe it by its shape (family, layers, hidden, heads, ...) or a preset for FP8 to apply");
  // torchao's Float8 TP plan: torchtitan gathers the linear layers' inputs in FP8 whenever tensorwise Float8 meets
  // its (DTensor, sequence-parallel) TP.
  if (!given.present("strategy.tp_fp8_gather"))
    s.tp_fp8_gather = t.fp8 && t.fp8_scaling == Fp8Scaling::Tensorwise && s.tp_copies && s.sp && s.tp > 1;
  else if (s.tp_fp8_gather && !t.fp8)
    throw InputError(
        "strategy.tp_fp8_gather=true all-gathers the linear layers' FP8 inputs (torchao's Float8 TP "
        "plan), but training.fp8=false: set training.fp8=true or drop strategy.tp_fp8_gather");
  else if (s.tp_fp8_gather && (!s.sp || s.tp == 1))
    throw InputError("strategy.tp_fp8_gather=true changes the bytes of the sequence-parallel all-gathers, but " +
                     std::string(s.tp == 1 ? "strategy.tp=1 has none" : "strategy.sp=false (all-reduces) has none") +
                     ": set strategy.sp=true with tp > 1, or drop strategy.tp_fp8_gather");
  if (t.fp8 && t.fp8_scaling == Fp8Scaling::Tensorwise && e.model.moe())
    throw InputError(
        "training.fp8_scaling=tensorwise" +
        std::string(given.written("training.fp8_scaling") ? "" : " (" + given.who("training.fp8_scaling") + ")") +
        " is torchao's Float8Linear, which does not run the experts' grouped GEMMs; this model has MoE "
        "layers: set training.fp8_scaling=delayed (Transformer Engine's grouped linear) or training.fp8 "
        "false");
  if (t.attention_kernel != AttentionKernel::Fused && !e.model.flash_attention)
    throw InputError("training.attention_kernel=" + to_string(t.attention_kernel) +
                     " names a fused attention kernel, but model.flash_attention=false (scores stored)");
}

}  // namespace

// Flags a stack sets for every plan, left without effect where the placement has nothing for them to change; written
// by the user there, refused: param_gather_overlap without an after-step parameter gather, grad_allreduce without a
// reduce-scatter at the step.
void check_inert_flags(const Experiment& e) {
  const StrategySpec& s = e.strategy;
  const Placement& p = s.placement;
  auto refused = [&](bool set, const char* field, bool acts) { return set && !acts && e.provenance.written(field); };
  if (refused(s.param_gather_overlap, "strategy.param_gather_overlap", s.gathers_after_step()))
    throw InputError(
        "strategy.param_gather_overlap=true overlaps the all-gather of the updated parameter shards "
        "with the next step's forward, but placement " +
        short_form(p) +
        " gathers none after the step (it needs the optimizer sharded and the parameters replicated, "
        "as the megatron-core preset's distributed optimizer): drop it");
  if (refused(s.grad_allreduce, "strategy.grad_allreduce", s.reduce_scatters_at_step()))
    throw InputError(
        "strategy.grad_allreduce=true all-reduces the accumulated gradients where the sharded optimizer "
        "needs only their reduce-scatter, but placement " +
        short_form(p) + " has " +
        (p.sharded_axes(State::Gradients) != kNoAxes ? "its gradients sharded" : "no sharded optimizer") +
        " (it needs replicated gradients and a sharded optimizer, as zero1): drop it");
}

void resolve(Experiment& e) {
  resolve_batch(e);
  StrategySpec& s = e.strategy;
  if (s.noam == 0) s.noam = s.pp;
  check_experts(e);
  check_inert_flags(e);
  resolve_recompute(e);
  resolve_kernels(e);
}

namespace {

// A state's modes as the input writes them: one string when both data axes agree, else one per axis.
Json state_modes_json(const Placement& p, State state) {
  Mode shard = p.mode(state, kShardAxis), across = p.mode(state, kReplicateAxis);
  const bool secondary = state == State::Parameters && p.secondary;
  if (shard == across && !secondary) return to_string(shard);
  Json j{{"dp_shard", to_string(shard)}, {"dp_replicate", to_string(across)}};
  if (secondary) j["secondary"] = "dp_shard";
  return j;
}

}  // namespace

Json strategy_to_json(const StrategySpec& s) {
  Json j{{"preset", s.preset},
         {"dp", s.dp},
         {"tp", s.tp},
         {"pp", s.pp},
         {"sp", s.sp},
         {"tp_overlap", s.tp_overlap},
         {"p2p", to_string(s.p2p)},
         {"devices", s.devices()},
         {"schedule", to_string(s.schedule)},
         {"microbatches", s.microbatches},
         {"chunks", s.chunks},
         {"noam", s.noam},
         {"bucket_bytes", s.bucket_bytes},
         {"collective", to_string(s.collective)},
         {"placement",
          {{"parameters", state_modes_json(s.placement, State::Parameters)},
           {"gradients", state_modes_json(s.placement, State::Gradients)},
           {"optimizer", state_modes_json(s.placement, State::Optimizer)},
           {"activations", to_string(s.placement.activations)}}},
         {"placement_short", short_form(s.placement)}};
  if (s.schedule == Schedule::Interleaved) j["microbatch_group"] = s.interleave_group();
  // FSDP2's settings for parameters gathered per unit (no effect on other placements).
  j["reshard_after_forward"] = s.reshard_after_forward;
  if (s.reshard_after_backward) j["reshard_after_backward"] = true;
  j["prefetch_forward"] = s.prefetch_forward;
  j["prefetch_backward"] = s.prefetch_backward;
  j["gather_copies"] = s.gather_copies;
  if (s.flat_params) j["flat_params"] = true;
  if (s.tp_copies) j["tp_copies"] = true;
  if (s.ep_overlap) j["ep_overlap"] = true;
  // Echoed where they act: a stack sets them for every plan, and an echo read back as input would be refused where
  // they cannot act.
  if (s.param_gather_overlap && s.gathers_after_step()) j["param_gather_overlap"] = true;
  if (s.grad_allreduce && s.reduce_scatters_at_step()) j["grad_allreduce"] = true;
  if (s.tp_fp8_gather) j["tp_fp8_gather"] = true;
  if (!s.layers_per_stage.empty()) j["layers_per_stage"] = s.layers_per_stage;
  // The split data axis appears only when it is split, so one-axis reports read as before.
  if (s.dp_replicate > 1)
    j["mesh"] = {{"dp_replicate", s.dp_replicate}, {"dp_shard", s.dp_shard}, {"tp", s.tp}, {"pp", s.pp}};
  if (s.ep > 1) {
    j["ep"] = s.ep;
    j["edp"] = s.edp();
  }
  if (s.cp > 1) {
    j["cp"] = s.cp;
    j["cp_comm"] = to_string(s.cp_comm);
    j["cp_impl"] = to_string(s.cp_impl);
    if (j.contains("mesh")) j["mesh"]["cp"] = s.cp;
  }
  return j;
}

Json model_to_json(const ModelSpec& m) {
  Json j{{"name", m.name}, {"parameters", total_parameters(m)}};
  if (m.opaque()) {
    j["opaque"] = true;
    if (m.opaque_layers > 0) j["layers"] = m.opaque_layers;
    return j;
  }
  j["family"] = to_string(m.family);
  j["layers"] = m.layers;
  j["hidden"] = m.hidden;
  j["heads"] = m.heads;
  j["kv_heads"] = m.kv_heads;
  j["ffn"] = m.ffn;
  j["vocab"] = m.vocab;
  j["seq_len"] = m.seq_len;
  if (!m.seq_len_source.empty()) j["seq_len_source"] = m.seq_len_source;
  if (m.max_positions > 0) j["max_positions"] = m.max_positions;
  j["gated_mlp"] = m.gated_mlp;
  j["bias"] = m.bias;
  j["learned_positions"] = m.learned_positions;
  j["tied_embeddings"] = m.tied_embeddings;
  j["dropout"] = m.dropout;
  j["flash_attention"] = m.flash_attention;
  if (m.head_dim_size > 0) j["head_dim"] = m.head_dim_size;
  if (m.mla()) {
    j["q_lora_rank"] = m.q_lora_rank;
    j["kv_lora_rank"] = m.kv_lora_rank;
    j["qk_rope_head_dim"] = m.qk_rope_head_dim;
    j["v_head_dim"] = m.v_head_dim;
  }
  if (m.moe()) {
    j["active_parameters"] = active_parameters(m);
    j["experts"] = m.experts;
    j["top_k"] = m.top_k;
    j["moe_ffn"] = m.moe_ffn;
    j["shared_experts"] = m.shared_experts;
    if (m.shared_experts > 0) j["shared_ffn"] = m.shared_ffn;
    j["moe_layer_count"] = moe_layers_in(m, 0, m.layers);
    if (!m.moe_layer_list.empty())
      j["moe_layers"] = m.moe_layer_list;
    else if (m.moe_every > 1)
      j["moe_layers"] = m.moe_every;
    if (m.first_dense_layers > 0) j["first_dense_layers"] = m.first_dense_layers;
    j["capacity_factor"] = m.capacity_factor;
    if (m.pad_to_capacity) j["pad_to_capacity"] = true;
  }
  return j;
}

Json training_to_json(const TrainingSpec& t, const Provenance& given) {
  Json j{{"global_batch", t.global_batch},
         {"micro_batch", t.micro_batch},
         {"dtype", to_string(t.dtype)},
         {"grad_dtype", to_string(t.grad_dtype)},
         {"optimizer", to_string(t.optimizer)},
         {"optimizer_kernel", to_string(t.optimizer_kernel)},
         {"optimizer_bytes_per_param", t.optimizer_bytes_per_param},
         {"recompute", to_string(t.recompute)},
         {"grad_accumulation_fusion", t.grad_accumulation_fusion},
         {"grad_clipping", t.grad_clipping}};
  if (t.recompute_layers > 0) j["recompute_layers"] = t.recompute_layers;
  if (t.tokens > 0) j["tokens"] = t.tokens;
  if (t.steps > 0) j["steps"] = t.steps;
  if (t.grad_accumulation_cast) j["grad_accumulation_cast"] = true;
  if (t.launch_overhead_s > 0) j["launch_overhead"] = t.launch_overhead_s;
  if (t.host_time_per_microbatch_s > 0) j["host_time_per_microbatch"] = t.host_time_per_microbatch_s;
  if (t.host_time_per_step_s > 0) j["host_time_per_step"] = t.host_time_per_step_s;
  j["kernels"] = to_string(t.kernels);
  if (t.fused_norm) j["fused_norm"] = true;
  if (t.attention_kernel != AttentionKernel::Fused) j["attention_kernel"] = to_string(t.attention_kernel);
  if (t.fp8) {
    j["fp8"] = true;
    j["fp8_scaling"] = to_string(t.fp8_scaling);
  }
  if (t.master_weights == MasterWeights::Parameters) j["master_weights"] = to_string(t.master_weights);
  if (given.present("training.loss_kernel")) j["loss_kernel"] = to_string(t.loss_kernel);
  return j;
}

}  // namespace placesim
