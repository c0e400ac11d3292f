#include "strategies/Costs.hpp"

namespace placesim {

namespace {

// Adam in mixed precision reads parameters, gradients, master weights, momentum and variance and writes all but the
// gradients back: 2+2+4+4+4 read, 2+4+4+4 written = 30 bytes per element; SGD with momentum 2+2+4+4 + 2+4+4 = 22.
double optimizer_bytes_per_elem(const TrainingSpec& t) {
  double p = t.param_bytes();
  double state = t.optimizer_bytes_per_param;
  return p + t.grad_bytes() + state + p + state;
}

}  // namespace

StageCosts stage_costs(const Experiment& e, const ClusterSpec& c, const StageLayout& st) {
  StageCosts k;
  const auto& m = e.model;
  const double rate = c.accelerator.peak_flops(e.training.dtype) * c.accelerator.gemm_efficiency;
  k.optimizer_s_per_elem = optimizer_bytes_per_elem(e.training) / c.accelerator.hbm_bw_Bps;
  // Adam costs about 16 FLOP per element on the host (CPU-Adam style vectorised update).
  k.host_optimizer_s_per_elem = 16.0 / c.host_flops;
  if (m.opaque()) return k;
  const double tokens = static_cast<double>(m.seq_len * e.training.micro_batch);
  const double tp = static_cast<double>(e.strategy.tp);
  k.layer_forward_flops = layer_forward_flops_per_token(m) * tokens / tp;
  k.layer_backward_flops = 2 * k.layer_forward_flops;
  k.layer_recompute_flops = e.training.recompute == Recompute::Full        ? k.layer_forward_flops
                            : e.training.recompute == Recompute::Selective ? attention_core_flops_per_token(m) * tokens / tp
                                                                           : 0;
  k.layer_forward_s = k.layer_forward_flops / rate;
  k.layer_backward_s = k.layer_backward_flops / rate;
  k.layer_recompute_s = k.layer_recompute_flops / rate;
  if (st.stage == e.strategy.pp - 1) {
    k.extra_forward_flops = logit_forward_flops_per_token(m) * tokens / tp;
    k.extra_backward_flops = 2 * k.extra_forward_flops;
    k.extra_forward_s = k.extra_forward_flops / rate;
    k.extra_backward_s = k.extra_backward_flops / rate;
  }
  return k;
}

}  // namespace placesim
