#include "strategies/analytic/StepBound.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "strategies/placement/Collective.hpp"
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

// The share of a pipeline send's shortest possible duration (its bytes over the fastest link it may take) the bound
// counts: a margin, as for the TP collectives.
constexpr double kP2pShare = 0.9;

// Seconds of blocking pipeline sends on a stage's chain per micro-batch and send. Under Megatron-LM's or DeepSpeed's
// exchanges of GPipe and 1F1B (one model chunk) every forward's send of its output and every backward's send of its
// input gradient is a call of its own that the device waits for (the expander's p2p_call): a middle stage sends twice
// per micro-batch, the first and last stage once. A send moves the stage boundary's activation (split over the TP
// group under sp or scatter-gather) and lasts at least its bytes over the fastest link it may take: the NIC when
// every stage fills whole nodes, else NVLink or the NIC (raw or as simulated with NCCL's figures). 0 otherwise.
double p2p_send_s(const Experiment& e, const ClusterSpec& c) {
  const StrategySpec& s = e.strategy;
  const bool one_chunk = s.schedule == Schedule::GPipe || s.schedule == Schedule::OneFOneB;
  if (s.pp <= 1 || s.p2p == PipelineP2P::Async || !one_chunk || s.chunks > 1 || e.model.opaque()) return 0;
  const std::int64_t x = local_seq_len(e) * e.training.micro_batch * e.model.hidden;
  const bool piece = s.sp || s.scatter_gather();
  const double bytes = static_cast<double>(piece ? shard_elems(x, s.tp) : x) * e.training.activation_bytes();
  const ClusterSpec net = simulated_network(c);
  double bw = std::max(c.nic_bw_Bps, net.nic_bw_Bps);
  if (static_cast<double>(s.tp) * static_cast<double>(s.data_ranks()) < c.gpus_per_node)
    bw = std::max({bw, c.nvlink_bw_Bps, net.nvlink_bw_Bps});
  return kP2pShare * bytes / bw;
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
  const double send = p2p_send_s(e, c);
  for (const StageLayout& st : stage_layouts(e)) {
    const StageCompute sc = stage_compute(e, c, st, tp);
    const double sends = (st.stage > 0 ? 1 : 0) + (st.stage + 1 < s.pp ? 1 : 0);
    bound = std::max(bound, microbatches * (sc.per_microbatch + sends * send) + sc.optimizer + (fills ? before : 0));
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
