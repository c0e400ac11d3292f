#include "strategies/analytic/TpLayerTimes.hpp"

#include <algorithm>

namespace placesim {

TpExposure tp_exposure(const Experiment& e, const AcceleratorSpec& acc, const FabricProfile& tp_fabric) {
  const int tp = static_cast<int>(e.strategy.tp);
  if (tp <= 1 || e.model.opaque()) return {};
  TpExposure x;
  x.bytes =
      static_cast<double>(e.training.micro_batch * local_seq_len(e) * e.model.hidden) * e.training.activation_bytes();
  x.gather_bytes = x.bytes * tp_gather_elem_bytes(e) / e.training.activation_bytes();
  if (e.strategy.costs_tp_copies()) {
    const double gather = elementwise_time_s(2 * x.gather_bytes, acc), scatter = elementwise_time_s(2 * x.bytes, acc);
    x.copies_forward_s = 2 * gather + 2 * scatter;
    x.copies_backward_s = 4 * gather + 2 * scatter;
    if (e.training.recompute == Recompute::Full) x.copies_recompute_s = x.copies_forward_s;
  }
  const auto time = [&](CollectiveKind kind, CollectiveAlgorithm algorithm) {
    return collective_time_s(kind, algorithm, kind == CollectiveKind::AllGather ? x.gather_bytes : x.bytes, tp,
                             tp_fabric);
  };
  const ColumnLinearBackward col = column_linear_backward(e, acc);
  const double penalty = acc.profile.overlap_penalty;
  const bool overlap = e.strategy.tp_overlap;
  const auto hidden_behind = [penalty, overlap](double comm_s, double gemm_s) {
    if (!overlap) return comm_s;
    return std::max(0.0, comm_s - gemm_s) + penalty * std::min(comm_s, gemm_s);
  };
  if (!e.strategy.sp) {
    const auto algorithm = tp_fabric.has_nvls() ? CollectiveAlgorithm::Nvls : CollectiveAlgorithm::Ring;
    const double all_reduce = time(CollectiveKind::AllReduce, algorithm);
    x.forward_s = 2 * all_reduce;
    const double hidden = hidden_behind(all_reduce, col.qkv_wgrad_s) + hidden_behind(all_reduce, col.fc1_wgrad_s);
    x.backward_s = hidden;
    x.backward_hidden_s = overlap ? hidden : 0;
    return x;
  }
  const double gather = time(CollectiveKind::AllGather, CollectiveAlgorithm::Ring);
  const double scatter = time(CollectiveKind::ReduceScatter, CollectiveAlgorithm::Ring);
  x.forward_s = 2 * (gather + scatter);
  const double hidden = hidden_behind(gather, col.qkv_dgrad_s) + hidden_behind(scatter, col.qkv_wgrad_s) +
                        hidden_behind(gather, col.fc1_dgrad_s) + hidden_behind(scatter, col.fc1_wgrad_s);
  x.backward_s = 2 * gather + hidden;
  x.backward_hidden_s = overlap ? hidden : 0;
  return x;
}

double tp_gather_elem_bytes(const Experiment& e) {
  return e.strategy.tp_fp8_gather ? 1.0 : static_cast<double>(e.training.activation_bytes());
}

PassTimes layer_times_with_tp_comm(const Experiment& e, const AcceleratorSpec& acc, const FabricProfile& tp_fabric) {
  PassTimes t = layer_times(e, acc);
  const TpExposure x = tp_exposure(e, acc, tp_fabric);
  t.forward_s += x.forward_s + x.copies_forward_s;
  t.backward_s += x.backward_s + x.copies_backward_s;
  if (e.training.recompute == Recompute::Full) t.recompute_s += x.forward_s + x.copies_recompute_s;
  return t;
}

}  // namespace placesim
