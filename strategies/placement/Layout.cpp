#include "strategies/placement/Layout.hpp"

#include <algorithm>

#include "strategies/placement/Collective.hpp"
#include "strategies/placement/DataPlan.hpp"
#include "strategies/placement/Routing.hpp"

namespace placesim {

std::int64_t StageLayout::sharded_elems(std::int64_t n) const {
  return (n_layers - moe_layers) * shard_elems(layer_elems, n) + moe_layers * shard_elems(moe_layer_elems, n) +
         shard_elems(embed_elems, n) + shard_elems(head_elems, n);
}

std::int64_t StageLayout::expert_padded(std::int64_t edp) const {
  return moe_layers * expert_layer_padded(edp);
}

std::int64_t StageLayout::expert_layer_padded(std::int64_t edp) const {
  return shard_elems(expert_elems, edp) * edp;
}

// The embedding rides with the first layer and the head with the last (they are gathered and reduced together).
std::int64_t StageLayout::max_unit_elems() const {
  if (bucket_elems > 0) return std::min(bucket_elems, elems());
  const std::int64_t layer = std::max(n_layers > moe_layers ? layer_elems : 0, moe_layers > 0 ? moe_layer_elems : 0);
  return layer + std::max(embed_elems, head_elems);
}

std::int64_t held_share(const StrategySpec& s, State state, std::int64_t whole, std::int64_t padded) {
  for (Mode m : {s.placement.mode(state, kShardAxis), s.placement.mode(state, kReplicateAxis)})
    if (m == Mode::Materialized || m == Mode::Offloaded) return 0;
  const std::int64_t n = s.degree(s.placement.sharded_axes(state));
  return n == 1 ? whole : padded / n;
}

std::int64_t secondary_share(const StrategySpec& s, std::int64_t padded) {
  return s.placement.secondary && s.degree(kShardAxis) > 1 ? padded / s.degree(kShardAxis) : 0;
}

std::int64_t StageLayout::held_elems(const StrategySpec& s, State state) const {
  return held_share(s, state, elems(), padded_elems(s.data_ranks()));
}

std::int64_t stashed_version_elems(const Experiment& e, const StageLayout& st) {
  return st.held_elems(e.strategy, State::Parameters);
}

std::vector<std::int64_t> stage_layer_counts(std::int64_t layers, std::int64_t stages) {
  const std::int64_t ceil = (layers + stages - 1) / stages;
  std::vector<std::int64_t> counts(static_cast<std::size_t>(stages), ceil);
  std::int64_t surplus = ceil * stages - layers;
  for (std::int64_t k = 0; k < surplus; ++k) {
    std::int64_t stage = k % 2 == 0 ? k / 2 : stages - 1 - k / 2;
    --counts[static_cast<std::size_t>(stage)];
  }
  return counts;
}

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

std::vector<StageLayout> opaque_layouts(const Experiment& e) {
  const auto& s = e.strategy;
  // An opaque model is split evenly: one unit per stage, or its declared layers split over the stages. Without
  // layers nothing says how it is gathered or reduced: in buckets of strategy.bucket_bytes, as DDP and DeepSpeed do,
  // so a transient buffer is one bucket, not the whole stage.
  std::int64_t layers = e.model.opaque_layers > 0 ? e.model.opaque_layers : s.pp;
  auto params = static_cast<std::int64_t>(e.model.opaque_parameters);
  // A bucket is bucket_bytes of parameters, rounded down to a multiple of dp so that every full bucket shards
  // without padding: the buckets' shards then add up to the stage's shard exactly (one flat buffer, padded once).
  const std::int64_t bucket_params = static_cast<std::int64_t>(s.bucket_bytes / e.training.param_bytes());
  const std::int64_t n = s.data_ranks();
  const std::int64_t bucket = e.model.opaque_layers > 0 ? 0 : std::max<std::int64_t>(n, bucket_params / n * n);
  std::vector<StageLayout> out(static_cast<std::size_t>(s.pp));
  for (int i = 0; i < s.pp; ++i) {
    auto& st = out[static_cast<std::size_t>(i)];
    st.stage = i;
    // Under dualpipe a stage holds a stage of each direction's copy: twice the layers.
    const std::int64_t v = chunks_per_stage(e.strategy), copies = bidirectional(s.schedule) ? 2 : 1;
    st.n_layers = copies * (layers / s.pp);
    st.first_layer = i * (layers / s.pp);
    st.layer_elems = ceil_div(ceil_div(params, layers), s.tp);
    st.bucket_elems = bucket;
    const std::int64_t per_chunk = std::max<std::int64_t>(1, st.n_layers / v);
    for (std::int64_t k = 0; k < v; ++k) {
      const int vstage = virtual_stage_of(s.schedule, s.pp, static_cast<int>(k), i);
      st.chunk_layers.push_back(per_chunk);
      st.chunk_first.push_back(model_position(s.schedule, s.pp, vstage) * per_chunk);
    }
  }
  return out;
}

}  // namespace

std::vector<std::int64_t> virtual_stage_layers(const Experiment& e) {
  if (e.model.opaque()) return {};
  const auto& s = e.strategy;
  std::vector<std::int64_t> counts = s.layers_per_stage;
  if (counts.empty())
    counts = v_shaped(s.schedule) ? v_stage_layer_counts(e.model.layers, s.pp)
                                  : stage_layer_counts(e.model.layers, model_stages(s));
  // Under dualpipe the second direction's virtual stages hold a second copy, split as the first.
  if (bidirectional(s.schedule)) {
    const std::vector<std::int64_t> one = counts;  // (inserting a vector's own range into it is undefined)
    counts.insert(counts.end(), one.begin(), one.end());
  }
  return counts;
}

std::vector<std::int64_t> v_stage_layer_counts(std::int64_t layers, std::int64_t stages) {
  const std::int64_t ceil = (layers + stages - 1) / stages, surplus = ceil * stages - layers;
  std::vector<std::int64_t> counts(static_cast<std::size_t>(2 * stages));
  for (std::int64_t s = 0; s < stages; ++s) {
    const std::int64_t n = ceil - (s < surplus ? 1 : 0);
    counts[static_cast<std::size_t>(s)] = n - n / 2;               // chunk 0: virtual stage s
    counts[static_cast<std::size_t>(2 * stages - 1 - s)] = n / 2;  // chunk 1: virtual stage 2 stages - 1 - s
  }
  return counts;
}

std::vector<StageLayout> stage_layouts(const Experiment& e) {
  if (e.model.opaque()) return opaque_layouts(e);
  const ModelSpec& m = e.model;
  const auto& s = e.strategy;
  LayerParams lp = layer_params(m);
  const std::vector<std::int64_t> counts = virtual_stage_layers(e);
  const std::int64_t v = chunks_per_stage(e.strategy);
  std::int64_t layer = lp.tp_sharded / s.tp + lp.tp_replicated;
  std::int64_t word = ceil_div(word_embedding_params(m), s.tp);
  std::vector<StageLayout> out(static_cast<std::size_t>(s.pp));
  const LayerParams moe = moe_layer_params(m);
  for (int i = 0; i < s.pp; ++i) {
    out[static_cast<std::size_t>(i)].stage = i;
    out[static_cast<std::size_t>(i)].layer_elems = layer;
    if (m.moe()) {
      out[static_cast<std::size_t>(i)].moe_layer_elems = moe.tp_sharded / s.tp + moe.tp_replicated;
      out[static_cast<std::size_t>(i)].expert_elems = m.experts / s.ep * expert_params(m);
    }
  }
  std::int64_t first = 0;
  for (std::int64_t k = 0; k < s.pp * v; ++k) {                          // virtual stages in model order
    if (starts_model(s.schedule, s.pp, static_cast<int>(k))) first = 0;  // dualpipe: the second copy
    auto& st = out[static_cast<std::size_t>(stage_of_virtual(s.schedule, s.pp, static_cast<int>(k)))];
    const std::int64_t n = counts[static_cast<std::size_t>(k)];
    if (st.chunk_layers.empty()) st.first_layer = first;
    st.chunk_layers.push_back(n);
    st.chunk_first.push_back(first);
    st.n_layers += n;
    st.moe_layers += moe_layers_in(m, first, n);
    first += n;
  }
  for (StageLayout& st : out) {
    if (holds_embedding(s, st.stage)) st.embed_elems = word + position_embedding_params(m);
    if (holds_head(s, st.stage)) st.head_elems += final_norm_params(m) + ceil_div(output_head_params(m), s.tp);
  }
  StageLayout& last = out[static_cast<std::size_t>(head_stage(s))];
  if (m.tied_embeddings && head_stage(s) != 0) {
    // Megatron-LM keeps a copy of the tied word embedding on the last stage and all-reduces its gradient with
    // the first stage's (the embedding_sync class), so both copies see the full gradient. In a V the first stage
    // holds both ends of the model and its one copy.
    last.head_elems += word;
    last.tied_copy_elems = word;
    out.front().tied_copy_elems = word;
  }
  return out;
}

std::int64_t cp_kv_elems(const Experiment& e) {
  const ModelSpec& m = e.model;
  // MLA: every head's K (head_dim + rope) and V (v_head_dim). PyTorch's CP exchanges SDPA's inputs, which torchtitan
  // has repeated to the query heads (repeat_kv): every head's K and V.
  const std::int64_t heads = e.strategy.cp_impl == CpImpl::PyTorch ? m.heads : m.kv_heads;
  const std::int64_t kv = m.mla() ? m.heads * (m.qk_head_dim() + m.v_dim()) : 2 * heads * m.head_dim();
  return local_seq_len(e) * e.training.micro_batch * (kv / e.strategy.tp);
}

std::int64_t cp_out_elems(const Experiment& e) {
  const ModelSpec& m = e.model;
  return local_seq_len(e) * e.training.micro_batch * (m.heads * m.v_dim() / e.strategy.tp);
}

double cp_grad_send_bytes(const Experiment& e) {
  return 4 * static_cast<double>(cp_kv_elems(e));
}

double cp_layer_bytes(const Experiment& e, bool backward) {
  if (e.strategy.cp == 1 || e.model.opaque()) return 0;
  const double block = static_cast<double>(cp_kv_elems(e)) * e.training.activation_bytes();
  const double forward = static_cast<double>(e.strategy.cp - 1) * block;
  if (!backward) return forward;
  // PyTorch: the K/V again, and the K/V gradients' cp fp32 sends around the ring.
  if (e.strategy.cp_impl == CpImpl::PyTorch)
    return forward + static_cast<double>(e.strategy.cp) * cp_grad_send_bytes(e);
  return 2 * forward;
}

double cp_buffer_bytes(const Experiment& e, bool backward) {
  if (e.strategy.cp == 1 || e.model.opaque()) return 0;
  const double block = static_cast<double>(cp_kv_elems(e)) * e.training.activation_bytes();
  const double cp = static_cast<double>(e.strategy.cp);
  if (e.strategy.cp_impl == CpImpl::PyTorch) {
    const double kv = static_cast<double>(cp_kv_elems(e)), out = static_cast<double>(cp_out_elems(e));
    const double blocks = (e.strategy.cp_comm == CpComm::AllGather ? cp : 2) * block;
    // Forward: the merged output and the block's output in fp32; backward: the query's gradient in fp32, the K/V
    // gradients accumulated in fp32, the one received and the concatenated one sent.
    return blocks + (backward ? 4 * out + 3 * 4 * kv : 2 * 4 * out);
  }
  if (e.strategy.cp_comm == CpComm::Ring) return (backward ? 4 : cp - 1) * block;
  return (backward ? 2 * cp : cp) * block;
}

CpMergeWork cp_merge_work(const Experiment& e, bool backward) {
  CpMergeWork w;
  if (e.strategy.cp == 1 || e.model.opaque() || e.strategy.cp_impl != CpImpl::PyTorch) return w;
  const double cp = static_cast<double>(e.strategy.cp), el = e.training.activation_bytes();
  const double n = static_cast<double>(cp_out_elems(e)), k = static_cast<double>(cp_kv_elems(e));
  // Rank r's steps i = 1 .. cp - 1 are partial (its second query chunk alone) for i > r: cp - 1 - r of them, r full
  // ones; averaged over the ranks (cp - 1) / 2 of each. A partial step does half the arithmetic and then copies the
  // whole fp32 tensor back together (_partial_update: torch.cat of its chunks, 4 bytes read and written).
  const double half = (cp - 1) / 2;
  if (!backward) {
    // key/value.contiguous() and torch.cat([K, V]) before each of the cp - 1 exchanges: 2 el a K/V element each.
    w.bytes = 2 * el * k * cp;
    // Step 0 keeps the block's output in fp32 (el + 4); each later step casts its block to fp32 (el + 4), then
    // out - block (12), sigmoid(lse difference) x that (8), out - that (12); results() casts back (4 + el).
    const double full = el + 4 + 32;
    w.bytes += n * (2 * (el + 4) + half * full + half * (full / 2 + 8));
    w.kernels = 2 + (cp - 1) + 2 + half * 9 + half * 11 + 2;
    return w;
  }
  // zeros_like for the query's and K/V's fp32 gradients (4 bytes written each); key/value.contiguous() and the K/V
  // cat before each of the cp - 1 exchanges (2 el each).
  w.bytes = 4 * n + 4 * k + 2 * el * k * cp;
  // K/V gradients: step 0 adds its block's (bf16 into fp32: 8 + el); steps 1 .. cp - 1 add into the received sum,
  // a half block then the cat for i <= r; each step concatenates the fp32 K and V gradients to send them (8).
  w.bytes += k * ((8 + el) + half * (8 + el) + half * ((8 + el) / 2 + 8) + 8 * cp);
  // The query's gradient: full adds at steps i <= r ((cp + 1) / 2 of them on average), half adds and the cat after;
  // the casts back to el at the end (4 + el for the query's and K/V's gradients).
  w.bytes += n * ((cp + 1) / 2 * (8 + el) + half * ((8 + el) / 2 + 8)) + (n + k) * (4 + el);
  w.kernels = 3 + 2 + (cp - 1) + 2 + half * 2 + half * 4 + cp + (cp + 1) / 2 + half * 2 + 2;
  return w;
}

namespace {

// What torchtitan's op-level selective AC keeps of a layer (torchtitan/models/llama/parallelize_llama.py,
// _apply_ac_to_transformer_block with selective_ac_option = "op", at 9dec370): the block's input (the checkpoint's
// argument); the outputs of the ops in its _save_list -- the attention kernel (its output and the fp32 log-sum-exp per
// head) and the reduce-scatters (with sp, the two row-parallel outputs' shards) -- and of every matmul but the 2nd,
// 4th, 6th of the forward. The matmuls in forward order: Q, K, V, the attention projection (row-parallel), then
// w1, w3, w2 (gated; w2 row-parallel) or fc1, fc2 (fc2 row-parallel): Q, V, w1 and w2 are kept (gated), Q, V and
// fc1 otherwise. A row-parallel matmul's output is a partial sum of the whole width on each tp rank; the others are
// split over tp. Every other tensor of the block is recomputed in the backward, one layer at a time.
double selective_op_bytes(const Experiment& e, double sbh, double sb, double f) {
  const ModelSpec& m = e.model;
  const double el = e.training.activation_bytes(), tp = static_cast<double>(e.strategy.tp);
  const double h = static_cast<double>(m.hidden), heads = static_cast<double>(m.heads);
  const double sp_div = e.strategy.sp ? tp : 1.0;
  const double q = heads * static_cast<double>(m.head_dim()), v = static_cast<double>(m.kv_heads * m.head_dim());
  const double kept_split = q + v + f + heads * static_cast<double>(m.v_dim());  // Q, V, w1 / fc1, attention out
  const double kept_whole = m.gated_mlp ? h : 0.0;                               // w2's partial sums
  const double reduce_scatters = e.strategy.sp && e.strategy.tp > 1 ? 2.0 * h / tp : 0.0;
  return el * sbh / sp_div + el * sb * (kept_split / tp + kept_whole + reduce_scatters) + 4.0 * sb * heads / tp;
}

// A layer's stored activations with an MLP of inner size f (tp-sharded; 0: none) and `routed` token-expert pairs
// through experts of moe_ffn (not tp-sharded), the layer recomputed as `recompute` says (training.recompute_layers
// leaves some layers of a full recompute keeping everything: none).
double activation_bytes_of(const Experiment& e, double f, double routed, Recompute recompute) {
  const ModelSpec& m = e.model;
  const auto& t = e.training;
  const double tp = static_cast<double>(e.strategy.tp);
  const double el = t.activation_bytes();
  // Context parallelism: each rank holds its 1/cp of the sequence.
  const double sbh =
      static_cast<double>(local_seq_len(e)) * static_cast<double>(t.micro_batch) * static_cast<double>(m.hidden);
  const double sb = sbh / static_cast<double>(m.hidden);
  // Q (heads x qk dim), K and V (GQA: kv_heads; MLA: every head, qk and v dims), the projection's input.
  const double q = static_cast<double>(m.heads * m.qk_head_dim());
  const double kv = m.mla() ? static_cast<double>(m.heads * (m.qk_head_dim() + m.v_dim()))
                            : 2.0 * static_cast<double>(m.kv_heads * m.head_dim());
  const double o = static_cast<double>(m.heads * m.v_dim());
  const double sp_div = e.strategy.sp ? tp : 1.0;
  if (recompute == Recompute::Full) return el * sbh / sp_div;  // only each layer's input is kept
  if (recompute == Recompute::SelectiveOp) return selective_op_bytes(e, sbh, sb, f);
  // Kept whole by every tp rank unless sequence-parallel: two norm inputs, QKV input, MLP input, dropout masks.
  double replicated = 4.0 * el * sbh + (m.dropout ? 2.0 * sbh : 0.0);
  // Split over tp: Q, K, V, the attention projection's input, the MLP activation's input(s) and fc2's input.
  double sharded = el * sb * (q + kv) + el * sb * o + el * sb * f * (m.gated_mlp ? 2.0 : 1.0) + el * sb * f;
  // Each routed pair: the expert's input row, its activation's input(s) and its second matrix's input.
  const double fe = static_cast<double>(m.moe_ffn);
  const double experts = el * routed * (static_cast<double>(m.hidden) + fe * (m.gated_mlp ? 3.0 : 2.0));
  // Transformer Engine's FP8 linears (training.fp8 with delayed or current scaling, Megatron-Core's TE spec) save the
  // FP8 cast of their input for the backward, not the 16-bit input (TransformerEngine 71bbefb, pytorch/module/linear.py
  // "Discard row-wise data since it is not needed in backward pass"; module/layernorm_linear.py keeps the bf16 norm
  // input and the FP8 norm output): the QKV and MLP inputs (the norms' outputs) and fc2's input take 1 byte an element.
  // The projection keeps the attention output the attention kernel saves and, under Transformer Engine's scaling, its
  // FP8 copy besides (Megatron-Core's save_original_input, which avoids it, needs another recipe). torchao's tensorwise
  // Float8Linear saves the 16-bit input: no change there. Under MXFP8 a saved FP8 tensor (its columnwise copy, the
  // layout the weight gradient reads) carries its E8M0 scales, a byte per 32 elements.
  if (t.fp8 && t.fp8_scaling != Fp8Scaling::Tensorwise &&
      (recompute == Recompute::None || recompute == Recompute::Selective)) {
    const double b8 = t.fp8_scaling == Fp8Scaling::Mxfp8 ? 1.0 + 1.0 / kMxfp8Block : 1.0;
    replicated -= 2.0 * (el - b8) * sbh;
    sharded += -(el - b8) * sb * f + b8 * sb * o;
  }
  // Attention scores: softmax output, and with dropout its mask and output (5as^2b for GPT).
  double scores = 0;
  if (recompute == Recompute::None && !m.flash_attention) {
    double as2b = static_cast<double>(m.heads) * static_cast<double>(m.seq_len) * sb;
    scores = m.dropout ? (2.0 * el + 1.0) * as2b : el * as2b;
  }
  // Eager kernels keep more for the backward (training.kernels, unless op-level recompute drops the element-wise
  // outputs): each RMSNorm its fp32 copy of the input (saved by pow and the rsqrt product) and the normalised 16-bit
  // output before the weight (saved by the weight product) where a fused norm keeps its 16-bit input; grouped K and V
  // copied to every query head (saved by the attention); SwiGLU's SiLU output (saved by the gate product).
  const bool eager_saves =
      t.kernels == Kernels::Eager && (recompute == Recompute::None || recompute == Recompute::Selective);
  if (eager_saves) {
    if (decomposed_rms_norm(m, t)) replicated += 2 * 4.0 * sbh;  // (4 + el - el) bytes; fp32: (4 + 4 - 4)
    if (m.grouped_kv()) sharded += 2.0 * el * sb * static_cast<double>((m.heads - m.kv_heads) * m.head_dim());
    if (m.gated_mlp) sharded += el * sb * f;
  }
  return replicated / sp_div + (sharded + scores) / tp + experts;
}

double logits_per_microbatch(const Experiment& e) {
  if (e.model.opaque()) return 0;
  return static_cast<double>(local_seq_len(e)) * static_cast<double>(e.training.micro_batch) *
         static_cast<double>(ceil_div(e.model.vocab, e.strategy.tp));
}

}  // namespace

double loss_saved_bytes(const Experiment& e) {
  if (e.training.loss_kernel == LossKernel::Fused)  // the 16-bit logits and an fp32 log-sum-exp per token
    return e.training.activation_bytes() * logits_per_microbatch(e) +
           (e.model.opaque() ? 0.0 : 4.0 * local_seq_len(e) * e.training.micro_batch);
  return 4.0 * logits_per_microbatch(e);
}

double loss_transient_bytes(const Experiment& e) {
  switch (e.training.loss_kernel) {
    case LossKernel::PyTorch:
      return 8.0 * logits_per_microbatch(e);
    case LossKernel::Fused:
      return e.training.activation_bytes() * logits_per_microbatch(e);
    case LossKernel::VocabParallel:
      break;
  }
  return 2.0 * logits_per_microbatch(e);
}

double layer_activation_bytes(const Experiment& e) {
  if (e.model.opaque()) return 0;
  return activation_bytes_of(e, static_cast<double>(e.model.ffn), 0, e.training.recompute);
}

double kept_layer_activation_bytes(const Experiment& e) {
  if (e.model.opaque()) return 0;
  return activation_bytes_of(e, static_cast<double>(e.model.ffn), 0, Recompute::None);
}

bool partial_recompute(const Experiment& e) {
  return e.training.recompute == Recompute::Full && e.training.recompute_layers > 0;
}

std::int64_t recomputed_layers(const Experiment& e, std::int64_t chunk_layers) {
  if (e.training.recompute != Recompute::Full) return 0;
  if (e.training.recompute_layers == 0) return chunk_layers;
  return std::min(chunk_layers, e.training.recompute_layers);
}

std::int64_t stage_recomputed_layers(const Experiment& e, const StageLayout& st) {
  std::int64_t n = 0;
  for (std::int64_t c : st.chunk_layers) n += recomputed_layers(e, c);
  return n;
}

double chunk_layers_activation_bytes(const Experiment& e, std::int64_t chunk_layers) {
  const double r = static_cast<double>(recomputed_layers(e, chunk_layers));
  if (!partial_recompute(e)) return static_cast<double>(chunk_layers) * layer_activation_bytes(e);
  return r * layer_activation_bytes(e) + (static_cast<double>(chunk_layers) - r) * kept_layer_activation_bytes(e);
}

double stage_layer_activation_bytes(const Experiment& e, const StageLayout& st) {
  if (partial_recompute(e) && st.n_layers > 0) {  // dense layers only (resolve refuses MoE)
    double sum = 0;
    for (std::int64_t c : st.chunk_layers) sum += chunk_layers_activation_bytes(e, c);
    return sum / static_cast<double>(st.n_layers);
  }
  if (st.moe_layers == 0 || st.n_layers == 0) return layer_activation_bytes(e);
  const std::int64_t most = expert_routing(e).busiest();
  const double dense = static_cast<double>(st.n_layers - st.moe_layers) * layer_activation_bytes(e);
  return (dense + static_cast<double>(st.moe_layers) * moe_layer_activation_bytes(e, most)) /
         static_cast<double>(st.n_layers);
}

double moe_layer_activation_bytes(const Experiment& e, std::int64_t routed) {
  const ModelSpec& m = e.model;
  return activation_bytes_of(e, static_cast<double>(m.shared_experts * m.shared_ffn), static_cast<double>(routed),
                             e.training.recompute);
}

double offloaded_activation_layers(const Experiment& e, const StageLayout& st) {
  if (e.model.opaque()) return std::max(0.0, static_cast<double>(st.n_layers - chunks_per_stage(e.strategy)));
  double out = 0;  // every chunk keeps its last layer (a chunk without layers keeps none)
  for (std::int64_t n : st.chunk_layers) out += static_cast<double>(std::max<std::int64_t>(0, n - 1));
  return out;
}

std::int64_t sequence_parallel_grad_elems(const Experiment& e, const StageLayout& st) {
  const bool last = holds_head(e.strategy, st.stage);
  // MoE layers: their norms, the router and MLA's down projections (Megatron marks them sequence-parallel).
  return (st.n_layers - st.moe_layers) * layer_params(e.model).tp_replicated +
         st.moe_layers * moe_layer_params(e.model).tp_replicated + (last ? final_norm_params(e.model) : 0);
}

std::int64_t mirror_grad_elems(const Experiment& e, const StageLayout& st) {
  if (!bidirectional(e.strategy.schedule)) return 0;
  const std::int64_t experts = st.moe_layers == 0 ? 0
                                                  : held_share(expert_view(e.strategy), State::Optimizer,
                                                               st.expert_total(), st.expert_padded(e.strategy.edp()));
  return st.held_elems(e.strategy, State::Optimizer) + experts;
}

}  // namespace placesim
