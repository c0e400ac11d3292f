#pragma once
#include <vector>

#include "strategies/placement/Experiment.hpp"
#include "strategies/placement/Layout.hpp"
#include "topology/cluster/Cluster.hpp"

namespace placesim {

/// Durations of the compute tasks of one pipeline stage on one device, per micro-batch.
struct StageCosts {
  double layer_forward_s = 0, layer_backward_s = 0, layer_recompute_s = 0;  ///< one layer
  /// The fused attention kernel's part of layer_forward_s (and of layer_recompute_s under a full recompute) and of
  /// layer_backward_s: with ring context parallelism, cp steps of 1/cp each.
  double layer_attention_forward_s = 0, layer_attention_backward_s = 0;
  /// A layer's weight-gradient kernels (the W pass of a split backward), and the cost the TP collectives hidden
  /// behind them add to layer_backward_s (the input-gradient pass B runs them exposed instead).
  double layer_weight_s = 0, layer_backward_hidden_s = 0;
  double layer_forward_flops = 0, layer_backward_flops = 0, layer_recompute_flops = 0;
  double extra_forward_s = 0, extra_backward_s = 0;  ///< logits and loss (last stage)
  double extra_forward_flops = 0, extra_backward_flops = 0;
  double embed_forward_s = 0, embed_backward_s = 0;  ///< embedding lookup (first stage)
  /// Mixture of experts: an MoE layer's dense part (attention, router, shared experts), as the layer_* fields.
  double moe_forward_s = 0, moe_backward_s = 0, moe_recompute_s = 0;
  double moe_attention_forward_s = 0, moe_attention_backward_s = 0;
  double moe_forward_flops = 0, moe_backward_flops = 0, moe_recompute_flops = 0;
  double moe_weight_s = 0;  ///< the dense part's weight-gradient kernels (its W pass)
  /// Per ep rank j: its routed experts' forward, backward (and full recompute) of one MoE layer and micro-batch,
  /// on the token-expert pairs routed to it (ExpertRouting::computed(j)), and the weight-gradient GEMMs of the
  /// backward (their W pass).
  std::vector<double> expert_forward_s, expert_backward_s, expert_recompute_s, expert_forward_flops, expert_weight_s;
  double optimizer_s_per_elem = 0;       ///< device optimizer step, per parameter element
  double host_optimizer_s_per_elem = 0;  ///< host CPU optimizer step, per parameter element
};

/// Costs of stage `st` of experiment `e` on the accelerator of the stage's first GPU (the cluster's, unless
/// cluster.accelerators names another for its node).
StageCosts stage_costs(const Experiment& e, const ClusterSpec& c, const StageLayout& st);
/// The first GPU of pipeline stage `stage` (devices are t + tp x (lane + lanes x stage)).
int stage_first_gpu(const Experiment& e, int stage);

}  // namespace placesim
