#include "strategies/analytic/Costs.hpp"

#include "strategies/analytic/ComputeModel.hpp"
#include "strategies/analytic/TpLayerTimes.hpp"
#include "strategies/placement/Layout.hpp"
#include "strategies/placement/Routing.hpp"

namespace placesim {

namespace {

// PyTorch's context parallelism's element-wise kernels of one layer and pass (cp_merge_work): each launched kernel's
// latency and the bytes at the memory-bound rate.
double cp_merge_s(const Experiment& e, const AcceleratorSpec& acc, bool backward) {
  const CpMergeWork w = cp_merge_work(e, backward);
  if (w.kernels <= 0) return 0;
  return elementwise_time_s(w.bytes, acc) + (w.kernels - 1) * acc.profile.kernel_latency_s;
}

// What a transformer layer's passes pay beside its own kernels, shared by the dense and the MoE layers: the
// tensor-parallel collectives' exposure and copies, and context parallelism's merge kernels.
struct LayerOverheads {
  TpExposure tp;
  double cp_merge_forward = 0, cp_merge_backward = 0, cp_merge_recompute = 0;
};

// The dense layer's FLOPs and times; returns the overheads the MoE layer pays as well.
LayerOverheads add_dense_layer(const Experiment& e, const ClusterSpec& c, double tokens, double tp, StageCosts& k) {
  const auto& m = e.model;
  const AcceleratorSpec& acc = c.accelerator;
  // FLOPs (for MFU and the trace) from the model's formulas; times from the calibrated per-operation model.
  k.layer_forward_flops = layer_forward_flops_per_token(m) * tokens / tp;
  k.layer_backward_flops = 2 * k.layer_forward_flops;
  k.layer_recompute_flops = recompute_flops_per_token(m, e.training.recompute) * tokens / tp;
  PassTimes layer = layer_times(e, acc);
  k.layer_forward_s = layer.forward_s;
  k.layer_attention_forward_s = layer.attention_forward_s;
  k.layer_attention_backward_s = layer.attention_backward_s;
  // The collectives Megatron overlaps with the backward's GEMMs run beside the compute in the graph; what they cost
  // the critical path (their excess over their own GEMM, which Megatron waits for, and their SM and HBM contention)
  // is added to the compute, as Megatron-LM's layer timers measure it (Korthikanti et al. §4.2, calibrated).
  LayerOverheads o;
  o.tp = tp_exposure(e, acc, c.comm.intra_node);
  k.layer_backward_s = layer.backward_s + o.tp.backward_hidden_s;
  k.layer_weight_s = layer.weight_s;
  k.layer_backward_hidden_s = o.tp.backward_hidden_s;
  k.layer_recompute_s = layer.recompute_s;
  // PyTorch's copies around the sequence-parallel collectives (strategy.tp_copies) are compute-stream kernels of the
  // layer: the backward takes the re-gathers' and its own collectives' copies, a full recompute its forward's.
  k.layer_forward_s += o.tp.copies_forward_s;
  k.layer_backward_s += o.tp.copies_backward_s;
  k.layer_recompute_s += o.tp.copies_recompute_s;
  // PyTorch's context parallelism merges the blocks' outputs and accumulates their gradients with element-wise kernels
  // on the compute stream (a layer's work, in its task); a full recompute runs the forward's merges again (op-level
  // selective AC keeps the attention's output).
  o.cp_merge_forward = cp_merge_s(e, acc, false);
  o.cp_merge_backward = cp_merge_s(e, acc, true);
  o.cp_merge_recompute = e.training.recompute == Recompute::Full ? o.cp_merge_forward : 0;
  k.layer_forward_s += o.cp_merge_forward;
  k.layer_backward_s += o.cp_merge_backward;
  k.layer_recompute_s += o.cp_merge_recompute;
  if (e.training.recompute == Recompute::Selective) {
    // The attention core is re-run inside the backward kernel sequence: one task, not two.
    k.layer_backward_s += k.layer_recompute_s;
    k.layer_backward_flops += k.layer_recompute_flops;
    k.layer_recompute_s = 0;
    k.layer_recompute_flops = 0;
  }
  return o;
}

// The MoE layer's dense part (attention, router, shared experts): FLOPs and times.
void add_moe_dense_part(const Experiment& e, const AcceleratorSpec& acc, const LayerOverheads& o, double tokens,
                        double tp, StageCosts& k) {
  const auto& m = e.model;
  const PassTimes moe = moe_dense_times(e, acc);
  k.moe_forward_flops = moe_dense_forward_flops_per_token(m) * tokens / tp;
  k.moe_backward_flops = 2 * k.moe_forward_flops;
  k.moe_forward_s = moe.forward_s;
  k.moe_attention_forward_s = moe.attention_forward_s;
  k.moe_attention_backward_s = moe.attention_backward_s;
  k.moe_backward_s = moe.backward_s + o.tp.backward_hidden_s;
  k.moe_weight_s = moe.weight_s;
  k.moe_recompute_s = moe.recompute_s;
  // Without shared experts an MoE layer's MLP is not tensor-parallel: its attention's collectives only (as the
  // expansion counts them).
  const double half = m.shared_experts == 0 ? 0.5 : 1.0;
  k.moe_forward_s += half * o.tp.copies_forward_s;
  k.moe_backward_s += half * o.tp.copies_backward_s;
  k.moe_recompute_s += half * o.tp.copies_recompute_s;
  k.moe_forward_s += o.cp_merge_forward;
  k.moe_backward_s += o.cp_merge_backward;
  k.moe_recompute_s += o.cp_merge_recompute;
  if (e.training.recompute == Recompute::Full) k.moe_recompute_flops = k.moe_forward_flops;
  if (e.training.recompute == Recompute::Selective) {  // the attention core, inside the backward (as above)
    k.moe_recompute_flops = attention_core_flops_per_token(m) * tokens / tp;
    k.moe_backward_s += moe.recompute_s;
    k.moe_backward_flops += k.moe_recompute_flops;
    k.moe_recompute_s = 0;
    k.moe_recompute_flops = 0;
  }
}

// Every local expert's times and forward FLOPs, for the tokens routed to it.
void add_experts(const Experiment& e, const AcceleratorSpec& acc, StageCosts& k) {
  const ExpertRouting routing = expert_routing(e);
  for (int j = 0; j < static_cast<int>(routing.tokens_to.size()); ++j) {
    const double pairs = static_cast<double>(routing.computed(j));
    const PassTimes x = expert_times(e, acc, pairs);
    k.expert_forward_s.push_back(x.forward_s);
    k.expert_backward_s.push_back(x.backward_s);
    k.expert_weight_s.push_back(x.weight_s);
    k.expert_recompute_s.push_back(x.recompute_s);
    k.expert_forward_flops.push_back(pairs * expert_forward_flops_per_token(e.model));
  }
}

}  // namespace

int stage_first_gpu(const Experiment& e, int stage) {
  return static_cast<int>(e.strategy.tp * e.strategy.data_ranks() * stage);
}

StageCosts stage_costs(const Experiment& e, const ClusterSpec& c, const StageLayout& st) {
  // Mixed hardware: the stage's accelerator is its first GPU's.
  if (c.mixed()) {
    const int node = stage_first_gpu(e, st.stage) / c.gpus_per_node;
    if (c.node_kind[static_cast<std::size_t>(node)] >= 0) {
      ClusterSpec own = c;
      own.accelerator = c.node_accelerator(node);
      own.node_kind.clear();
      return stage_costs(e, own, st);
    }
  }
  StageCosts k;
  const auto& m = e.model;
  const AcceleratorSpec& acc = c.accelerator;
  k.optimizer_s_per_elem = optimizer_step_s(1e9, e, acc) / 1e9;
  k.host_optimizer_s_per_elem =
      host_optimizer_step_s(1e9, e, c.host_flops, c.host_memory_bw_Bps / c.gpus_per_node) / 1e9;
  if (m.opaque()) return k;
  const double tokens = static_cast<double>(local_seq_len(e) * e.training.micro_batch);
  const double tp = static_cast<double>(e.strategy.tp);
  const LayerOverheads overheads = add_dense_layer(e, c, tokens, tp, k);
  if (m.moe()) {
    add_moe_dense_part(e, acc, overheads, tokens, tp, k);
    add_experts(e, acc, k);
  }
  if (holds_head(e.strategy, st.stage)) {
    PassTimes logits = logit_times(e, acc);
    k.extra_forward_s = logits.forward_s;
    k.extra_backward_s = logits.backward_s;
    k.extra_forward_flops = logit_forward_flops_per_token(m) * tokens / tp;
    k.extra_backward_flops = 2 * k.extra_forward_flops;
  }
  if (holds_embedding(e.strategy, st.stage)) {
    PassTimes embedding = embedding_times(e, acc);
    k.embed_forward_s = embedding.forward_s;
    k.embed_backward_s = embedding.backward_s;
  }
  return k;
}

}  // namespace placesim
