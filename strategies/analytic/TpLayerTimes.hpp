#pragma once
#include "strategies/analytic/ComputeModel.hpp"
#include "topology/hardware/CommProfile.hpp"

namespace placesim {

/// Seconds of tensor-parallel communication one layer leaves on the critical path, per pass.
struct TpExposure {
  double forward_s = 0, backward_s = 0;
  /// The part of backward_s the collectives overlapped with GEMMs cost: their excess over their GEMM and the
  /// contention they cause (0 without tp_overlap, when they are plainly exposed).
  double backward_hidden_s = 0;
  double bytes = 0;  ///< size of one collective's full buffer: micro_batch x seq x hidden activations
  /// Size of one sequence-parallel all-gather's full buffer: `bytes`, halved with FP8 gathers (tp_fp8_gather).
  double gather_bytes = 0;
  /// The compute-stream copies PyTorch's functional collectives make around the layer's sequence-parallel
  /// collectives of a batch-first tensor (strategy.tp_copies), per pass; 0 when not costed. funcol's
  /// all_gather_tensor with gather_dim 1 (torchtitan's Shard(1) on [batch, seq, hidden]) gathers along dim 0 and
  /// then runs torch.cat(torch.chunk(...), dim=1); reduce_scatter_tensor with scatter_dim 1 first runs
  /// torch.cat(torch.chunk(..., dim=1)): each reads and writes the collective's full buffer. They are counted as
  /// the collectives are: forward 2 all-gathers and 2 reduce-scatters; backward the 2 re-gathers, the 2 all-gathers
  /// of output gradients and 2 reduce-scatters; a full recompute the forward's 4. Megatron's [seq, batch, hidden]
  /// gathers along dim 0 and copies nothing.
  double copies_forward_s = 0, copies_backward_s = 0, copies_recompute_s = 0;
};

/// Bytes an element of the layers' sequence-parallel all-gathers: 1 with strategy.tp_fp8_gather, else the
/// activations' dtype.
double tp_gather_elem_bytes(const Experiment& e);

/// Exposed TP collectives of one layer under Megatron-LM's overlap rules (Korthikanti et al., arXiv 2205.05198, §4.2):
///   without SP: forward 2 all-reduces, exposed; backward 2 all-reduces of input gradients, each overlapped with
///               the weight-gradient GEMM of its column-parallel linear (exposed: the excess over that GEMM).
///   with SP:    forward 2 all-gathers + 2 reduce-scatters, exposed; backward 2 all-gathers of output gradients
///               (exposed), and per column-parallel linear an all-gather of its input overlapped with the
///               data-gradient GEMM and a reduce-scatter of its input gradient overlapped with the weight-gradient one.
/// A collective hidden behind a GEMM still costs acc.profile.overlap_penalty of its time (SM and HBM contention).
/// Without e.strategy.tp_overlap (Megatron-LM before 2021-08) the backward's collectives are all exposed.
/// All-reduces use NVLink SHARP where `tp_fabric` has it, otherwise rings. tp = 1 costs nothing.
TpExposure tp_exposure(const Experiment& e, const AcceleratorSpec& acc, const FabricProfile& tp_fabric);

/// Layer times as Megatron-LM measures them (the figures of Korthikanti et al. Table 4): layer_times plus the exposed
/// TP communication (and the copies of strategy.tp_copies); full recompute repeats the forward's collectives in its
/// recompute pass.
PassTimes layer_times_with_tp_comm(const Experiment& e, const AcceleratorSpec& acc, const FabricProfile& tp_fabric);

}  // namespace placesim
