#include "strategies/analytic/StepBound.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "strategies/analytic/Costs.hpp"
#include "strategies/analytic/TpLayerTimes.hpp"
#include "strategies/placement/Layout.hpp"

namespace placesim {

namespace {

// The compute of one stage's device: per micro-batch, the forward and backward of the first model chunk's layers
// (the pipeline's fill and drain), and the optimizer step.
struct StageCompute {
  double per_microbatch = 0, first_chunk = 0, optimizer = 0;
};

// The share of the analytic TP collective time the bound counts: a margin for the simulation's collectives, which
// equal the analytic ones on one node (docs/validation.md section 1) but need not at every size.
constexpr double kTpCommShare = 0.9;

// Seconds of TP collectives a dense layer leaves on the device's chain, at kTpCommShare of their analytic time on the
// node's fabric (the simulation runs them at their NCCL-fitted time or slower: a group across nodes, contention); the
// same on every stage.
struct TpChain {
  double layer_s = 0;      ///< its forward's and backward's (not those beside a GEMM: in layer_backward_s already)
  double recompute_s = 0;  ///< a full recompute's: the forward's again
};

TpChain tp_chain(const Experiment& e, const ClusterSpec& c) {
  const TpExposure x = tp_exposure(e, c.accelerator, c.comm.intra_node);
  TpChain t;
  t.layer_s = kTpCommShare * (x.forward_s + (x.backward_s - x.backward_hidden_s));
  if (e.training.recompute == Recompute::Full) t.recompute_s = kTpCommShare * x.forward_s;
  return t;
}

double least(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::min_element(v.begin(), v.end());
}

StageCompute stage_compute(const Experiment& e, const ClusterSpec& c, const StageLayout& st, const TpChain& tp) {
  const StageCosts k = stage_costs(e, c, st);
  const double dense = static_cast<double>(st.n_layers - st.moe_layers);
  const double layer = k.layer_forward_s + k.layer_backward_s;
  double moe = 0;
  if (st.moe_layers > 0) {
    std::vector<double> experts(k.expert_forward_s.size());
    for (std::size_t j = 0; j < experts.size(); ++j)
      experts[j] = k.expert_forward_s[j] + (j < k.expert_backward_s.size() ? k.expert_backward_s[j] : 0);
    moe = k.moe_forward_s + k.moe_backward_s + least(experts);
  }
  // Full recompute of dense layers only (a model's MoE layers' recompute is left out: a bound may omit work).
  const double recomputed = st.moe_layers == 0 ? static_cast<double>(stage_recomputed_layers(e, st)) : 0;
  // An MoE layer without shared experts has no tensor-parallel MLP: its attention's collectives only.
  const double moe_tp = e.model.shared_experts == 0 ? tp.layer_s / 2 : tp.layer_s;
  StageCompute out;
  out.per_microbatch = dense * (layer + tp.layer_s) + static_cast<double>(st.moe_layers) * (moe + moe_tp) +
                       recomputed * (k.layer_recompute_s + tp.recompute_s) + k.embed_forward_s + k.embed_backward_s +
                       k.extra_forward_s + k.extra_backward_s;
  const double chunk_layers = st.chunk_layers.empty() ? 0 : static_cast<double>(st.chunk_layers.front());
  out.first_chunk = chunk_layers * (st.moe_layers > 0 ? std::min(layer, moe) : layer);
  if (e.strategy.placement.optimizer != Mode::Offloaded)
    out.optimizer = static_cast<double>(st.held_elems(e.strategy, State::Optimizer)) * k.optimizer_s_per_elem;
  return out;
}

}  // namespace

double step_time_lower_bound(const Experiment& e, const ClusterSpec& c) {
  const StrategySpec& s = e.strategy;
  if (!e.pipeline.is_null() || e.model.opaque() || s.schedule == Schedule::LocalSGD) return 0;
  const double microbatches = static_cast<double>(s.microbatches);
  if (!(microbatches > 0)) return 0;
  const bool fills = synchronous_schedule(s.schedule);
  double bound = 0, before = 0;  // before: the first chunks' passes of the stages before this one
  const TpChain tp = tp_chain(e, c);
  for (const StageLayout& st : stage_layouts(e)) {
    const StageCompute sc = stage_compute(e, c, st, tp);
    bound = std::max(bound, microbatches * sc.per_microbatch + sc.optimizer + (fills ? before : 0));
    before += sc.first_chunk;
  }
  return bound;
}

double step_time_lower_bound(const Experiment& e) {
  if (e.cluster.is_null()) return std::nan("");
  // A sweep or search evaluates thousands of points on one cluster: parse it once per thread.
  thread_local std::string key;
  thread_local ClusterSpec cluster;
  std::string text = e.cluster.dump();
  if (text != key) {
    cluster = parse_cluster(e.cluster);
    key = std::move(text);
  }
  return step_time_lower_bound(e, cluster);
}

}  // namespace placesim
