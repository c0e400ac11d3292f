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
};

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
/// TP communication; full recompute repeats the forward's collectives in its recompute pass.
PassTimes layer_times_with_tp_comm(const Experiment& e, const AcceleratorSpec& acc, const FabricProfile& tp_fabric);

}  // namespace placesim
