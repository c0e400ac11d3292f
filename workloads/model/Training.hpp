#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "workloads/json/JsonReader.hpp"

namespace placesim {

enum class DType { BF16, FP16, FP32 };
enum class Optimizer { Adam, SGD };
/// Activation recomputation: none; selective (Korthikanti et al.: the attention core, free with fused attention);
/// selective-op (torchtitan's op-level selective AC, `selective_ac_option = "op"`: every op of a block but the matmuls,
/// the attention kernel and the reduce-scatters is recomputed, and every second matmul: the element-wise ops and the
/// 2nd, 4th, 6th matmul of the forward); full (every layer's forward again, from its input).
enum class Recompute { None, Selective, Full, SelectiveOp };
/// How a layer's element-wise work runs: fused (Megatron-Core's / Transformer Engine's fused norm, rotary, SwiGLU and
/// bias-dropout-add kernels: each reads its inputs and writes its output once), compiled (torch.compile: Inductor
/// fuses the same chains; costed as fused), or eager (PyTorch eager as torchtitan's Llama and Hugging Face's models
/// write it: RMSNorm as eight kernels in fp32, rotary embedding through fp32 complex numbers, SiLU and the gate
/// product apart, grouped keys and values copied to every query head, dropout apart from the residual add).
enum class Kernels { Fused, Compiled, Eager };
/// The fused-attention kernel (model.flash_attention): fused = the accelerator profile's calibrated kernel
/// (FlashAttention-2 for the built-in A100 and H100 profiles, measured at sequence 8192); flash1 = FlashAttention v1's
/// CUDA kernels (flash-attn < 2.0); triton = FlashAttention's Triton implementation (flash_attn_triton.py, which
/// MosaicML llm-foundry runs as attn_impl: triton); cudnn = cuDNN's fused attention (what Transformer Engine selects on
/// Hopper); fa3 = FlashAttention-3 (Hopper only). Each runs at its measured speed relative to FlashAttention-2 at the
/// same sequence length and head dimension (ComputeModel's attention_kernel_speed).
enum class AttentionKernel { Fused, Flash1, Triton, Cudnn, Fa3, Fa2 };
/// Where mixed precision keeps its fp32 master weights: in the optimizer state beside 16-bit parameters (Megatron-LM,
/// DeepSpeed: 2 + 12 bytes per parameter with Adam), or as the parameters themselves, cast to 16 bits when used
/// (PyTorch FSDP's MixedPrecision/MixedPrecisionPolicy: the sharded fp32 parameter is what the optimizer updates;
/// 4 + 8 bytes with Adam, 16-bit copies only gathered).
enum class MasterWeights { Optimizer, Parameters };
/// How the optimizer step runs on the device (training.optimizer_kernel; optimizer_step_bytes):
/// - fused: one kernel reads and writes each parameter's state once (apex FusedAdam in Megatron-LM and DeepSpeed,
///   torch.optim.AdamW(fused=True));
/// - foreach: torch.optim's multi-tensor step, its default on CUDA (torchtitan's and most PyTorch trainers'): one
///   pass over memory per arithmetic op of the update (_multi_tensor_adamw, _multi_tensor_sgd). Only for the fp32
///   parameters stepped in place (master_weights = parameters, or fp32 training) with the default state size.
enum class OptimizerKernel { Fused, Foreach };
/// The cross entropy over the output head's logits (see loss_saved_bytes/loss_transient_bytes and logit_times):
/// - vocab-parallel: Megatron-LM's vocab-parallel cross entropy in fp32 (megatron/core/tensor_parallel/
///   cross_entropy.py): keeps the fp32 softmax (4 bytes a logit), its backward scales it in place and casts the
///   gradient back to 16 bits (2 bytes). The default under fused kernels;
/// - pytorch: F.cross_entropy on the logits cast to fp32 (torchtitan's cross_entropy_loss): keeps the fp32
///   log-softmax (4), its backward holds nll_loss's and log_softmax's fp32 gradients (8). The default under eager
///   and compiled kernels;
/// - fused: a fused cross-entropy kernel on the 16-bit logits with fp32 arithmetic inside (flash-attn's
///   CrossEntropyLoss, xentropy_cuda_lib, which MosaicML llm-foundry runs as its default loss_fn
///   fused_crossentropy): keeps the 16-bit logits and one fp32 log-sum-exp per token (2 bytes a logit), its backward
///   writes the 16-bit gradient (2); forward two reads of the logits (max, sum of exponentials), backward one read and
///   one write.
enum class LossKernel { VocabParallel, PyTorch, Fused };
/// How FP8 linears scale their casts (training.fp8_scaling), which decides the memory-bound passes around each GEMM:
/// - delayed: Transformer Engine's delayed scaling (NeMo and Megatron-Core `fp8`): each cast takes its scale from
///   earlier steps' amax, so one fused cast-transpose reads a 16-bit tensor and writes its FP8 copy and transpose;
///   a step casts its weights once and keeps them while its micro-batches reuse them;
/// - tensorwise: torchao's Float8Linear with dynamic tensorwise scaling (torchtitan's and OLMo-core's `float8`): each
///   cast first reduces the tensor's amax (a read), then casts (a read and an FP8 write), every forward casts the
///   weight afresh, and the backward's GEMMs copy three FP8 operands into the layout torch._scaled_mm takes (the
///   weight, the output gradient and the saved input, a read and a write of one byte each).
/// - current: Transformer Engine's Float8CurrentScaling (NeMo's and Megatron-Bridge's "FP8-CS"): each cast first
///   reduces the tensor's amax (a read, nvte_compute_amax), computes the scale, then casts with the transpose (a read
///   and two FP8 writes, nvte_quantize_v2); a step casts its weights once, as under delayed.
/// - mxfp8: Transformer Engine's MXFP8BlockScaling (Blackwell; Megatron-Bridge's "FP8-MX"): one E8M0 scale per 32
///   consecutive elements, taken from the block's own amax inside the cast kernel (no amax pass, no history); one
///   kernel reads a 16-bit tensor and writes its rowwise and its columnwise FP8 copy with their scales (the two
///   directions' blocks differ, so both are quantized from the 16-bit data; Blackwell's GEMMs take either layout, no
///   transpose); a step casts its weights once; the GEMMs run on the accelerator's MX tensor cores
///   (AcceleratorSpec::mxfp8_gemm_factor).
enum class Fp8Scaling { Delayed, Tensorwise, Current, Mxfp8 };
/// Elements per MXFP8 scale (one E8M0 byte per 32 consecutive elements, the OCP MX format's block).
inline constexpr double kMxfp8Block = 32;

/// Skewed routing of a mixture-of-experts model, a what-if (placesim does not train a router): every source rank
/// routes alike, in every MoE layer and micro-batch. Expert i takes a share p_i of the token-expert assignments:
/// - balanced (the default; Megatron-Core's benchmarks force it): p_i = 1 / experts;
/// - zipf: p_i proportional to rank_i^-zipf, the ranks a permutation of the experts drawn from `seed`;
/// - hot: hot_fraction of the assignments go to hot_experts experts drawn from `seed`, the rest uniformly to all.
/// No expert can take more than every token (p_i <= 1 / top_k); the excess goes to the others in proportion.
struct RoutingSpec {
  enum class Kind { Balanced, Zipf, Hot };
  Kind kind = Kind::Balanced;
  double zipf = 0;
  std::int64_t hot_experts = 1;
  double hot_fraction = 0;
  std::uint64_t seed = 1;
  bool operator==(const RoutingSpec&) const = default;
};

/// How a step is trained. Bytes per parameter follow mixed-precision practice (ZeRO §3): 16-bit parameters with
/// fp32 optimizer state (Adam: master weights, momentum, variance = 12 bytes). Gradients are held and reduced in
/// grad_dtype: fp32 under bf16 (Megatron-LM's main-grad buffer, forced to fp32 for bf16, which it also all-reduces;
/// torchtitan's FSDP2 reduce_dtype), the parameters' dtype otherwise (fp16 as in ZeRO's 2 + 2 + 12 bytes).
struct TrainingSpec {
  std::int64_t global_batch = 0;  ///< samples per step; 0 = micro_batch * dp * microbatches
  std::int64_t micro_batch = 1;
  DType dtype = DType::BF16;
  DType grad_dtype = DType::FP32;  ///< gradient memory, gradient collectives and offload copies
  Optimizer optimizer = Optimizer::Adam;
  double optimizer_bytes_per_param = 12;  ///< K of the ZeRO paper
  MasterWeights master_weights = MasterWeights::Optimizer;
  OptimizerKernel optimizer_kernel = OptimizerKernel::Fused;
  Recompute recompute = Recompute::None;
  /// With recompute full: the first this many layers of each model chunk (virtual pipeline stage) are recomputed and
  /// the others keep every activation, as Megatron-LM's --recompute-method block --recompute-num-layers N; 0 = all.
  std::int64_t recompute_layers = 0;
  /// Weight-gradient GEMMs accumulate into the gradient buffer themselves (Megatron-LM since 2022-02,
  /// --gradient-accumulation-fusion); false: each writes a fresh gradient that a separate kernel adds in (earlier
  /// Megatron-LM, e.g. the April 2021 code of Narayanan et al.; plain PyTorch autograd)
  bool grad_accumulation_fusion = true;
  /// Without fusion: each micro-batch's 16-bit gradients are kept until the backward ends and are then cast to an
  /// fp32 temporary and added into the fp32 buffer (DeepSpeed's BF16_Optimizer.update_hp_grads,
  /// hp_grad.add_(lp.grad.to(fp32))): 18 bytes a parameter moved instead of Megatron's in-place add's 10, and the
  /// 16-bit gradients resident beside the fp32 ones.
  bool grad_accumulation_cast = false;
  /// The step clips gradients by their global norm (Megatron-LM's default --clip-grad 1.0): one more pass over them.
  bool grad_clipping = true;
  /// Host time to issue one kernel (Python, the framework's dispatcher, the launch), seconds; 0 = not modelled (the
  /// default: no component measurement of it is built in). A layer's pass takes the longer of its GPU time and its
  /// kernels x this: a CPU that cannot issue kernels as fast as the GPU runs them leaves the GPU idle (eager mode with
  /// small kernels; CUDA graphs and torch.compile cut it).
  double launch_overhead_s = 0;
  /// Host time the GPUs wait for, seconds; 0 = not modelled (the default: no component measurement of it is built
  /// in). Per micro-batch: before each micro-batch's first forward on a device, after that device's previous work
  /// (data loading, a host synchronisation, framework work outside the kernels that the GPU cannot run ahead of).
  /// Per step: once at the start of the step on every device. For a user who measured their own stack's gaps.
  double host_time_per_microbatch_s = 0;
  double host_time_per_step_s = 0;
  Kernels kernels = Kernels::Fused;
  /// Under eager kernels, the RMSNorm is one fused kernel each way all the same (torchtitan's norm_type =
  /// "fused_rmsnorm", a Triton kernel; Apex's or Transformer Engine's norm).
  bool fused_norm = false;
  AttentionKernel attention_kernel = AttentionKernel::Fused;
  /// FP8 linear layers, as Transformer Engine's FP8 recipe (NeMo and Megatron-Core `fp8`) and torchao's Float8Linear
  /// (torchtitan `float8`) run them beside 16-bit training: the transformer layers' linear GEMMs (forward, input
  /// gradient and weight gradient; the experts' too) at the accelerator's FP8 peak, each input and each output
  /// gradient cast to FP8 with its transpose by a memory-bound kernel, the weights once per step (per micro-batch when
  /// they are gathered per use). Attention, norms, the output layer and the router stay in `dtype`; parameters,
  /// gradients and every collective are as without FP8, and the memory figures leave out the weights' FP8 copies
  /// (ComputeModel's linear_*_s).
  bool fp8 = false;
  Fp8Scaling fp8_scaling = Fp8Scaling::Delayed;
  LossKernel loss_kernel = LossKernel::VocabParallel;
  RoutingSpec routing;  ///< mixture-of-experts models: how tokens spread over the experts
  /// The length of the training run, for its time to train, energy and cost (at most one is given; 0 = not given):
  /// tokens, or steps. Tokens become steps = ceil(tokens / (global_batch x model.seq_len)).
  double tokens = 0;
  std::int64_t steps = 0;

  int param_bytes() const { return dtype == DType::FP32 ? 4 : 2; }
  /// Bytes of a parameter element held between steps (a shard or a replica): fp32 when it is the master weight.
  int held_param_bytes() const { return master_weights == MasterWeights::Parameters ? 4 : param_bytes(); }
  int grad_bytes() const { return grad_dtype == DType::FP32 ? 4 : 2; }
  /// Bytes of gradient memory per element held: the gradient, and its 16-bit copy with grad_accumulation_cast.
  int held_grad_bytes() const { return grad_bytes() + (grad_accumulation_cast ? param_bytes() : 0); }
  int activation_bytes() const { return param_bytes(); }
  /// Equal in every field (a search's candidates of different presets may resolve to the same training).
  bool operator==(const TrainingSpec&) const = default;
};

/// Memory traffic of one optimizer step, bytes per parameter element, as Megatron-LM's mixed-precision optimizer
/// runs it (megatron/optimizer/optimizer.py, Float16OptimizerWithFloat16Params.step, with apex FusedAdam):
/// - the optimizer kernel reads and writes its state (2K; K holds the fp32 master weights in mixed precision, and
///   in fp32 the parameter is read and written besides, 2 x 4) and reads the fp32 gradient (4);
/// - with grad_clipping the gradient norm reads the gradient once more (4);
/// - fp16 only: unscaling by the loss scale with the inf/nan check reads and writes the gradient (8);
/// - mixed precision: the master weights are copied into the 16-bit model parameters (4 + 2); with the master weights
///   as the parameters (master_weights = parameters) there is no copy and the fp32 parameter is read and written
///   beside the state (2 x 4, K then excludes it), as in fp32;
/// - the gradient buffer is made ready for the next step: fp32 gradients (grad_dtype, the main-grad buffer) are
///   read in place and the buffer is zeroed (4); 16-bit gradients are first copied to fp32 (2 + 4) and their buffer
///   is zeroed (2), with or without fused accumulation (Float16OptimizerWithFloat16Params copies main_grad.float()).
/// Mixed-precision Adam: bf16 42 (fp32 gradients), fp16 54 (fp16 gradients); fp32 Adam 36.
/// With optimizer_kernel = foreach (torch.optim's multi-tensor step on fp32 parameters) the kernel's 2K + 8 + 4 become
/// one pass per op: AdamW 80 (weight decay's scale of the parameter 8; lerp of the first moment toward the gradient
/// 12; the second moment scaled 8 and the squared gradient added 12; its square root into a temporary 8, divided by
/// the bias correction 8, plus eps 8; addcdiv into the parameter 16), SGD with momentum 32 (the buffer scaled 8, the
/// gradient added 12, the parameter stepped 12); and torch's clip_grad_norm_ scales every gradient by the clip
/// coefficient after reading them for the norm (4 + 8, where Megatron scales only when it clips).
double optimizer_step_bytes(const TrainingSpec& t);

/// Optimizer state bytes per parameter: Adam 12 (mixed) / 8 (fp32, or mixed with the master weights as the
/// parameters); SGD with momentum 8 / 4 alike.
double default_optimizer_bytes(Optimizer optimizer, DType dtype, MasterWeights master = MasterWeights::Optimizer);

/// Parses the "training" section; with `errors`, field errors are collected there (see ObjectReader).
TrainingSpec parse_training(const Json& value, ErrorList* errors = nullptr);

std::string to_string(DType d);
/// "balanced", "zipf 1.2 (seed 1)", "hot 2 experts x 10% (seed 1)".
std::string to_string(const RoutingSpec& r);
std::string to_string(Optimizer o);
std::string to_string(OptimizerKernel k);
std::string to_string(Recompute r);
/// The words training.recompute takes, in the order its refusal lists them.
const std::vector<std::string>& recompute_names();
std::string to_string(Kernels k);
std::string to_string(AttentionKernel k);
std::string to_string(MasterWeights m);
std::string to_string(LossKernel k);
std::string to_string(Fp8Scaling s);

}  // namespace placesim
