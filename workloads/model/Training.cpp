#include "workloads/model/Training.hpp"

#include <cstdio>

#include "workloads/json/EnumNames.hpp"
#include "workloads/json/Numbers.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

double default_optimizer_bytes(Optimizer optimizer, DType dtype, MasterWeights master) {
  bool mixed = dtype != DType::FP32 && master == MasterWeights::Optimizer;
  if (optimizer == Optimizer::Adam) return mixed ? 12 : 8;
  return mixed ? 8 : 4;
}

double optimizer_step_bytes(const TrainingSpec& t) {
  const bool mixed = t.dtype != DType::FP32;
  const bool copy16 = mixed && t.master_weights == MasterWeights::Optimizer;
  const bool foreach = t.optimizer_kernel == OptimizerKernel::Foreach;
  double bytes =
      foreach ? (t.optimizer == Optimizer::Adam ? 80 : 32) : 2 * t.optimizer_bytes_per_param + (copy16 ? 0 : 2 * 4) + 4;
  if (t.grad_clipping) bytes += foreach ? 4 + 8 : 4;
  if (t.dtype == DType::FP16) bytes += 8;
  if (copy16) bytes += 4 + t.param_bytes();
  const bool fp32_grads = t.grad_dtype == DType::FP32;
  bytes += fp32_grads ? 4 : t.grad_bytes() + 4 + t.grad_bytes();
  return bytes;
}

namespace {

// Each table lists its names in the order the field's error lists them.
constexpr EnumName<DType> kDTypeNames[] = {{DType::BF16, "bf16"}, {DType::FP16, "fp16"}, {DType::FP32, "fp32"}};
constexpr EnumName<Optimizer> kOptimizerNames[] = {{Optimizer::Adam, "adam"}, {Optimizer::SGD, "sgd"}};
constexpr EnumName<MasterWeights> kMasterWeightsNames[] = {{MasterWeights::Optimizer, "optimizer"},
                                                           {MasterWeights::Parameters, "parameters"}};
constexpr EnumName<OptimizerKernel> kOptimizerKernelNames[] = {{OptimizerKernel::Fused, "fused"},
                                                               {OptimizerKernel::Foreach, "foreach"}};
constexpr EnumName<Kernels> kKernelsNames[] = {
    {Kernels::Fused, "fused"}, {Kernels::Compiled, "compiled"}, {Kernels::Eager, "eager"}};
constexpr EnumName<AttentionKernel> kAttentionKernelNames[] = {
    {AttentionKernel::Fused, "fused"},   {AttentionKernel::Fa2, "fa2"},     {AttentionKernel::Flash1, "flash1"},
    {AttentionKernel::Triton, "triton"}, {AttentionKernel::Cudnn, "cudnn"}, {AttentionKernel::Fa3, "fa3"}};
constexpr EnumName<Fp8Scaling> kFp8ScalingNames[] = {{Fp8Scaling::Delayed, "delayed"},
                                                     {Fp8Scaling::Tensorwise, "tensorwise"},
                                                     {Fp8Scaling::Current, "current"},
                                                     {Fp8Scaling::Mxfp8, "mxfp8"}};
constexpr EnumName<LossKernel> kLossKernelNames[] = {
    {LossKernel::VocabParallel, "vocab-parallel"}, {LossKernel::PyTorch, "pytorch"}, {LossKernel::Fused, "fused"}};
constexpr EnumName<Recompute> kRecomputeNames[] = {{Recompute::None, "none"},
                                                   {Recompute::Selective, "selective"},
                                                   {Recompute::SelectiveOp, "selective-op"},
                                                   {Recompute::Full, "full"}};

}  // namespace

namespace {

RoutingSpec parse_routing(const Json& value, ErrorList* errors) {
  ObjectReader r(value, "training.routing", errors);
  RoutingSpec out;
  const std::string kind = r.get_choice("kind", {"balanced", "zipf", "hot"}, "balanced");
  std::int64_t seed = r.get_int("seed", 1);
  if (seed < 0) {
    r.refuse("seed", r.field("seed") + "=" + std::to_string(seed) + " must be a non-negative integer");
    seed = 1;
  }
  out.seed = static_cast<std::uint64_t>(seed);
  if (kind == "zipf") {
    out.kind = RoutingSpec::Kind::Zipf;
    r.require("zipf");
    out.zipf = r.get_non_negative("zipf", 0);
    r.check(out.zipf <= 10, "zipf", "must be a Zipf exponent from 0 (balanced) to 10");
  } else if (kind == "hot") {
    out.kind = RoutingSpec::Kind::Hot;
    r.require("hot_fraction");
    out.hot_fraction = r.get_non_negative("hot_fraction", 0);
    r.check(out.hot_fraction <= 1, "hot_fraction", "must be a fraction of the assignments from 0 to 1");
    out.hot_experts = r.get_positive_int("hot_experts", 1);
  }
  for (const char* key : {"zipf", "hot_fraction", "hot_experts"})
    if (r.has(key) && ((kind != "zipf" && std::string(key) == "zipf") || (kind != "hot" && std::string(key) != "zipf")))
      r.refuse(key, r.field(key) + " does not apply to " + r.field("kind") + "=" + kind);
  r.finish();
  return out;
}

}  // namespace

std::string to_string(const RoutingSpec& r) {
  char buf[96];
  switch (r.kind) {
    case RoutingSpec::Kind::Balanced:
      return "balanced";
    case RoutingSpec::Kind::Zipf:
      std::snprintf(buf, sizeof buf, "zipf %g (seed %llu)", r.zipf, static_cast<unsigned long long>(r.seed));
      return buf;
    case RoutingSpec::Kind::Hot:
      std::snprintf(buf, sizeof buf, "hot %lld experts x %g%% (seed %llu)", static_cast<long long>(r.hot_experts),
                    100 * r.hot_fraction, static_cast<unsigned long long>(r.seed));
      return buf;
  }
  return "?";
}

namespace {

// The number formats and the optimizer: dtype, grad_dtype, optimizer, master weights, its kernel and state size.
void read_precision(ObjectReader& r, const Json& value, TrainingSpec& t) {
  if (value.is_object() && value.contains("dtype") && value["dtype"].is_string()) {
    const std::string d = value["dtype"].get<std::string>();
    if (d == "fp8" || d == "float8" || d == "e4m3")
      r.refuse("dtype", r.field("dtype") + "=" + d +
                            ": FP8 training keeps 16-bit weights and runs the linear layers in FP8; write "
                            "\"dtype\": \"bf16\" with \"fp8\": true");
  }
  t.dtype = get_enum(r, "dtype", kDTypeNames, DType::BF16);
  t.grad_dtype = get_enum(r, "grad_dtype", kDTypeNames, t.dtype == DType::FP16 ? DType::FP16 : DType::FP32);
  if (t.dtype == DType::FP32 && t.grad_dtype != DType::FP32)
    r.refuse("grad_dtype", r.field("grad_dtype") + "=" + to_string(t.grad_dtype) +
                               " with training.dtype=fp32: fp32 training has fp32 gradients");
  t.optimizer = get_enum(r, "optimizer", kOptimizerNames, Optimizer::Adam);
  const bool master_weights_given = r.has("master_weights");
  t.master_weights = get_enum(r, "master_weights", kMasterWeightsNames, MasterWeights::Optimizer);
  if (master_weights_given && t.dtype == DType::FP32)
    r.refuse("master_weights", r.field("master_weights") + "=" + to_string(t.master_weights) +
                                   " with training.dtype=fp32: fp32 training has no master weights");
  t.optimizer_kernel = get_enum(r, "optimizer_kernel", kOptimizerKernelNames, OptimizerKernel::Fused);
  t.optimizer_bytes_per_param =
      r.get_number("optimizer_bytes_per_param", default_optimizer_bytes(t.optimizer, t.dtype, t.master_weights));
  if (t.optimizer_bytes_per_param < 0)
    r.refuse("optimizer_bytes_per_param", r.field("optimizer_bytes_per_param") + "=" +
                                              show(value["optimizer_bytes_per_param"]) + " must not be negative");
}

// The kernels: fused, compiled or eager layers, the attention and loss kernels, FP8 linears.
void read_kernels(ObjectReader& r, TrainingSpec& t) {
  t.kernels = get_enum(r, "kernels", kKernelsNames, Kernels::Fused);
  t.fused_norm = r.get_bool("fused_norm", false);
  t.attention_kernel = get_enum(r, "attention_kernel", kAttentionKernelNames, AttentionKernel::Fused);
  t.fp8 = r.get_bool("fp8", false);
  if (t.fp8 && t.dtype == DType::FP32)
    r.refuse("fp8", r.field("fp8") +
                        "=true runs the linear layers in FP8 beside 16-bit training, but training.dtype=fp32: set "
                        "training.dtype to bf16 (Transformer Engine's and torchao's FP8 recipes keep bf16 weights)");
  const bool fp8_scaling_given = r.has("fp8_scaling");
  t.fp8_scaling = get_enum(r, "fp8_scaling", kFp8ScalingNames, Fp8Scaling::Delayed);
  if (fp8_scaling_given && !t.fp8)
    r.refuse("fp8_scaling", r.field("fp8_scaling") + "=" + to_string(t.fp8_scaling) +
                                " without training.fp8=true: it says how FP8 linears scale their casts; set \"fp8\": "
                                "true or leave it out");
  t.loss_kernel = get_enum(r, "loss_kernel", kLossKernelNames, LossKernel::VocabParallel);
}

// The run's length: training.tokens or training.steps, at most one.
void read_length(ObjectReader& r, TrainingSpec& t) {
  if (r.has("tokens")) {
    const double tokens = r.get_number("tokens", 0);
    r.check(tokens > 0, "tokens", "must be a positive number of tokens to train on (e.g. 1e12)");
    t.tokens = tokens > 0 ? tokens : 0;
  }
  if (r.has("steps")) t.steps = r.get_positive_int("steps", 0);
  if (r.has("tokens") && r.has("steps"))
    r.refuse("steps", r.field("steps") + "=" + std::to_string(t.steps) + " and " + r.field("tokens") + "=" +
                          format_significant(t.tokens) +
                          " both give the run's length: keep one (tokens become steps of global_batch x seq_len "
                          "tokens)");
}

}  // namespace

const std::vector<std::string>& recompute_names() {
  static const std::vector<std::string> names = enum_names(kRecomputeNames);
  return names;
}

TrainingSpec parse_training(const Json& value, ErrorList* errors) {
  TrainingSpec t;
  ObjectReader r(value, "training", errors);
  t.global_batch = r.get_positive_int("global_batch", 0);
  t.micro_batch = r.get_positive_int("micro_batch", 1);
  read_precision(r, value, t);
  t.recompute = get_enum(r, "recompute", kRecomputeNames, Recompute::None);
  if (r.has("recompute_layers")) t.recompute_layers = r.get_positive_int("recompute_layers", 0);
  t.grad_accumulation_fusion = r.get_bool("grad_accumulation_fusion", true);
  t.grad_accumulation_cast = r.get_bool("grad_accumulation_cast", false);
  if (t.grad_accumulation_cast && (t.grad_accumulation_fusion || t.grad_dtype != DType::FP32 || t.dtype == DType::FP32))
    r.refuse("grad_accumulation_cast",
             r.field("grad_accumulation_cast") +
                 "=true casts 16-bit gradients into an fp32 buffer after each backward, which needs 16-bit "
                 "training, training.grad_dtype=fp32 and training.grad_accumulation_fusion=false");
  t.grad_clipping = r.get_bool("grad_clipping", true);
  t.launch_overhead_s = r.get_non_negative("launch_overhead", 0, parse_time);
  r.check(t.launch_overhead_s <= 1e-3, "launch_overhead",
          "is host time per kernel launch: at most 1 ms (e.g. \"10us\"); larger values are not a launch");
  t.host_time_per_microbatch_s = r.get_non_negative("host_time_per_microbatch", 0, parse_time);
  r.check(t.host_time_per_microbatch_s <= 10, "host_time_per_microbatch",
          "is the time a GPU waits for its host per micro-batch: at most 10 s (e.g. \"80ms\")");
  t.host_time_per_step_s = r.get_non_negative("host_time_per_step", 0, parse_time);
  r.check(t.host_time_per_step_s <= 60, "host_time_per_step",
          "is the time a GPU waits for its host per step: at most 60 s (e.g. \"0.2s\")");
  read_kernels(r, t);
  if (const Json* routing = r.child("routing"))
    t.routing = r.guarded("routing", RoutingSpec{}, [&] { return parse_routing(*routing, errors); });
  read_length(r, t);
  r.finish();
  return t;
}

std::string to_string(DType d) {
  return name_of(kDTypeNames, d, "fp32");
}
std::string to_string(OptimizerKernel k) {
  return name_of(kOptimizerKernelNames, k, "fused");
}
std::string to_string(Optimizer o) {
  return name_of(kOptimizerNames, o, "sgd");
}
std::string to_string(Recompute r) {
  return name_of(kRecomputeNames, r, "full");
}

std::string to_string(Kernels k) {
  return name_of(kKernelsNames, k, "fused");
}
std::string to_string(MasterWeights m) {
  return name_of(kMasterWeightsNames, m, "optimizer");
}
std::string to_string(LossKernel k) {
  return name_of(kLossKernelNames, k, "vocab-parallel");
}
std::string to_string(Fp8Scaling s) {
  return name_of(kFp8ScalingNames, s, "delayed");
}
std::string to_string(AttentionKernel k) {
  return name_of(kAttentionKernelNames, k, "fused");
}

}  // namespace placesim
