#pragma once
#include "strategies/placement/Experiment.hpp"
#include "topology/hardware/Accelerator.hpp"

namespace placesim {

/// Compute time of one pass over a unit of the model. recompute_s is part of the backward phase, reported apart.
struct PassTimes {
  double forward_s = 0, backward_s = 0, recompute_s = 0;
  /// The fused attention kernel's share of forward_s and backward_s (and of recompute_s when it is the forward):
  /// what context parallelism's ring splits into steps.
  double attention_forward_s = 0, attention_backward_s = 0;
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
double fp8_gemm_time_s(const GemmShape& g, const AcceleratorSpec& acc, double extra_bytes = 0);
/// Time of a memory-bound kernel moving `bytes` (read + written).
double elementwise_time_s(double bytes, const AcceleratorSpec& acc);
/// Speed of training.attention_kernel `k` over FlashAttention-2's on `accelerator` at sequence length `seq` and head
/// dimension `head_dim` (1 for fused: the profile's kernel): measured forward + backward throughput of causal attention
/// (FlashAttention-2 release benchmarks, A100 and H100; head dimensions 64 and 128, sequences 512 to 16k), linear in
/// log2 of the sequence length and of the head dimension between the points, clamped outside them. The Triton kernel
/// was measured on A100 only: on Hopper (h100*, h200, h800) FlashAttention v1's measured speed stands for it. cudnn
/// and fa3 (Hopper only): the FlashAttention-3 paper's forward and backward panels on H100, set against its own
/// FlashAttention-2 bars, the passes' times weighted 1 : 2.5 by FLOPs. Other accelerators: an InputError naming the
/// field.
double attention_kernel_speed(AttentionKernel k, const std::string& accelerator, double seq, double head_dim);
/// Ampere accelerators (a100-*, a800: the GA100 die), whose attention follows the A100 measurements.
bool ampere_attention_curves(const std::string& accelerator);
/// Hopper accelerators, whose attention_kernel_speed for triton is FlashAttention v1's.
bool hopper_attention_curves(const std::string& accelerator);
/// The sequence length at which a profile's flash_attention_efficiency holds, with attention_reference_head_dim.
constexpr double kAttentionReferenceSeq = 8192;
/// The head dimension at which a profile's flash_attention_efficiency holds: 64 on A100 (the built-in profile's
/// measurement, Azure's 'Flash Attention 2.0' table), 128 otherwise (the H100, H200 and B200 measurements).
double attention_reference_head_dim(const std::string& accelerator);
/// FlashAttention-2's forward + backward throughput at `seq` and `head_dim` over its throughput at the reference point
/// (kAttentionReferenceSeq, attention_reference_head_dim), from the same release benchmarks as attention_kernel_speed
/// (causal, 16k tokens per batch; A100 curves for a100*, H100 curves for Hopper), interpolated and clamped alike: 155 /
/// 165 at 2k and head dimension 128 on A100, 140 / 165 at 2k and 64. 1 on other accelerators (B200, GB200: no curve
/// measured; their efficiency holds at every length).
double fused_attention_shape(const std::string& accelerator, double seq, double head_dim);
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
