#pragma once
#include "strategies/placement/Experiment.hpp"
#include "topology/hardware/Accelerator.hpp"

namespace placesim {

/// Seconds of a pass by the kind of kernel the model costs them as: GEMMs (gemm_time_s, fp8_gemm_time_s; an unfused
/// attention's score and value products too), fused attention kernels (flash_attention_time_s), memory-bound kernels
/// (the rest: element-wise, normalization, casts, copies) and the host-bound launch floor (training.launch_overhead:
/// what the pass lasts beyond its kernels). They sum to the pass's time. A profiler trace's kernels are classed the
/// same way (traces/profiler), so that the two can be compared class by class.
struct ClassSeconds {
  double gemm = 0, attention = 0, memory = 0, launch = 0;
  double total() const { return gemm + attention + memory + launch; }
};

/// Compute time of one pass over a unit of the model. recompute_s is part of the backward phase, reported apart.
struct PassTimes {
  double forward_s = 0, backward_s = 0, recompute_s = 0;
  /// The passes' times by kernel class.
  ClassSeconds forward_classes, backward_classes, recompute_classes;
  /// The fused attention kernel's share of forward_s and backward_s (and of recompute_s when it is the forward):
  /// what context parallelism's ring splits into steps.
  double attention_forward_s = 0, attention_backward_s = 0;
  /// The weight-gradient kernels' share of backward_s (the linears' weight-gradient GEMMs and bias reductions): the
  /// W pass of the schedules that split the backward (zero-bubble).
  double weight_s = 0;
};

/// FLOPs of one layer's fused causal attention forward for one micro-batch on one device: 4 x head_dim per query-key
/// pair and head, (micro_batch x heads / tp) heads, seq_len^2 / (2 cp) pairs (causal; with context parallelism the
/// 2 cp balanced chunks give every rank the same share).
double attention_forward_flops(const Experiment& e);

/// One transformer layer, one micro-batch, on one device (its tp shard) of experiment e.
PassTimes layer_times(const Experiment& e, const AcceleratorSpec& acc);
/// The dense part of one MoE layer (attention, router, shared experts as one MLP), one micro-batch, one device.
PassTimes moe_dense_times(const Experiment& e, const AcceleratorSpec& acc);
/// The routed experts of one MoE layer on a device that computes `pairs` token-expert pairs for one micro-batch.
PassTimes expert_times(const Experiment& e, const AcceleratorSpec& acc, double pairs);
/// The output (logit) layer with the loss, and the embedding lookup, on one device (vocab split over tp).
PassTimes logit_times(const Experiment& e, const AcceleratorSpec& acc);
PassTimes embedding_times(const Experiment& e, const AcceleratorSpec& acc);
/// One optimizer step over `elements` parameters held on the device (memory-bound: bytes read+written / HBM bw).
double optimizer_step_s(double elements, const Experiment& e, const AcceleratorSpec& acc);
/// Same on the host CPU for offloaded optimizers (host FLOP/s and memory bandwidth given by the caller).
double host_optimizer_step_s(double elements, const Experiment& e, double host_flops, double host_mem_bw_Bps);

/// A (batched) matrix multiply C[m x n] = A[m x k] B[k x n], `batch` independent ones.
struct GemmShape {
  double m = 0, n = 0, k = 0, batch = 1;
};

/// Time of one GEMM under acc.profile (see ComputeProfile). `extra_bytes` adds memory traffic the kernel also moves
/// (an fp32 gradient accumulated in place).
double gemm_time_s(const GemmShape& g, DType dtype, const AcceleratorSpec& acc, double extra_bytes = 0);
/// The same GEMM on FP8 tensor cores (training.fp8): the profile's model at acc.peak_fp8_flops, bytes counted as for
/// 16-bit operands. The built-in Hopper profiles were fitted to FP8 cuBLASLt sweeps at the FP8 peak with this same
/// model (topology/profiles/measurements/h100-sxm.json, h200.json), so it reproduces them; B200's was fitted to bf16
/// and is applied to FP8 (no FP8 sweep found). An InputError naming training.fp8 when the accelerator has no FP8
/// peak.
/// The same GEMM on MX block-scaled FP8 tensor cores (training.fp8_scaling mxfp8): the FP8 model at peak_fp8_flops x
/// mxfp8_gemm_factor; refused (InputError) on an accelerator without MX tensor cores.
double mxfp8_gemm_time_s(const GemmShape& g, const AcceleratorSpec& acc, double extra_bytes = 0);
double fp8_gemm_time_s(const GemmShape& g, const AcceleratorSpec& acc, double extra_bytes = 0);
/// Time of a memory-bound kernel moving `bytes` (read + written).
double elementwise_time_s(double bytes, const AcceleratorSpec& acc);
/// Speed of training.attention_kernel `k` over the profile's own kernel (acc.profile.attention.kernel) at sequence
/// length `seq` and head dimension `head_dim`: 1 for fused and for the profile's kernel; else the ratio of the two
/// kernels' forward + backward throughputs in the first benchmark of the profile that measured both (the passes' times
/// weighted 1 : 2.5 by FLOPs where a benchmark gives them apart), at each measured length and head dimension, linear in
/// log2 of the sequence length and of the head dimension between them, clamped outside. A kernel the profile lists as
/// a stand-in runs at its stand-in's speed. A kernel no benchmark measured: an InputError naming the field.
double attention_kernel_speed(AttentionKernel k, const AcceleratorSpec& acc, double seq, double head_dim);
/// The profile's stand-in for kernel `k` (a kernel costed at another's measured speed), or null.
const AttentionStandIn* attention_stand_in(AttentionKernel k, const ComputeProfile& p);
/// The profile kernel's forward + backward throughput at `seq` and `head_dim` over its throughput at the reference
/// point (attention.reference_seq, reference_head_dim), from the first benchmark that measured it, interpolated and
/// clamped as attention_kernel_speed (FlashAttention-2 release curves on A100: 155 / 165 at 2k and head dimension 128,
/// 140 / 165 at 2k and 64). 1 when no benchmark measured it (the efficiency then holds at every length).
double fused_attention_shape(const ComputeProfile& p, double seq, double head_dim);
/// Time of a fused (flash) attention kernel doing `flops` at sequence length `seq` and head dimension `head_dim`:
/// the profile's efficiency times fused_attention_shape, times `speed` (attention_kernel_speed of an older kernel).
double flash_attention_time_s(double flops, DType dtype, const AcceleratorSpec& acc, double seq, double head_dim,
                              double speed = 1);

/// Backward GEMM times of the two column-parallel linears of a layer (QKV and the first MLP matrix), against which
/// Megatron-LM overlaps the tensor-parallel collectives of the backward pass.
struct ColumnLinearBackward {
  double qkv_dgrad_s = 0, qkv_wgrad_s = 0, fc1_dgrad_s = 0, fc1_wgrad_s = 0;
};
ColumnLinearBackward column_linear_backward(const Experiment& e, const AcceleratorSpec& acc);

}  // namespace placesim
