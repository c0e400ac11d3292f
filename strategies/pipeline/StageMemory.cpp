#include "strategies/pipeline/StageMemory.hpp"

#include <algorithm>

#include "strategies/pipeline/PipelineSchedule.hpp"

namespace placesim {

namespace {

bool even_chunks(const StageLayout& st) {
  return std::all_of(st.chunk_layers.begin(), st.chunk_layers.end(),
                     [&](std::int64_t n) { return n == st.chunk_layers.front(); });
}

std::vector<double> chunk_layer_loads(const StageLayout& st) {
  return std::vector<double>(st.chunk_layers.begin(), st.chunk_layers.end());
}

// One layer's load for each layer of each chunk (paired_walked_peak in layers).
std::vector<std::vector<double>> unit_layer_loads(const StageLayout& st) {
  std::vector<std::vector<double>> out;
  for (std::int64_t n : st.chunk_layers) out.emplace_back(static_cast<std::size_t>(n), 1.0);
  return out;
}

}  // namespace

double walked_peak(const Experiment& e, const StageLayout& st, const std::vector<double>& chunk_load) {
  double level = 0, peak = 0;
  for (const PipeOp& op : stage_order(shape_of(e.strategy, 1), strategy_shape_fields(), static_cast<int>(st.stage))) {
    if (op.chunk < 0) continue;
    const double load = chunk_load[static_cast<std::size_t>(op.chunk)];
    if (op.kind == PipeOpKind::Forward)
      peak = std::max(peak, level += load);
    else if (op.kind == PipeOpKind::Weight || (op.kind == PipeOpKind::Backward && !op.split))
      level -= load;
  }
  return peak;
}

namespace {

// What one part of an op does to the stage's activations: `transient` held while it runs, `change` at its end.
struct PartMemory {
  double transient = 0, change = 0;
};

// The loss's bytes of the walk: on the stage and chunk with the output head only.
struct LossBytes {
  double saved = 0, transient = 0;
};

bool holds_head(const Experiment& e, const StageLayout& st, int chunk) {
  const auto& s = e.strategy;
  const int pp = static_cast<int>(s.pp);
  return st.head_elems > 0 && ends_model(s.schedule, pp, static_cast<int>(pp * chunks_per_stage(s)),
                                         virtual_stage_of(s.schedule, pp, chunk, static_cast<int>(st.stage)));
}

// One op in parts, as the expansion runs it (expand_pair's order): per layer, four parts for an MoE layer and one
// for any other. A forward holds a layer's activations from its first part (from its last, with the output layer,
// whose loss it leaves too); a backward frees the loss in its first part, holding the loss's gradients while it runs,
// and a layer's activations at its last part (a split backward leaves them to its weight gradient).
std::vector<PartMemory> op_parts(const Experiment& e, const StageLayout& st, const PipeOp& op,
                                 const std::vector<double>& loads, LossBytes loss) {
  const bool head = holds_head(e, st, op.chunk), forward = op.kind == PipeOpKind::Forward;
  const bool frees = op.kind == PipeOpKind::Weight || (op.kind == PipeOpKind::Backward && !op.split);
  std::vector<PartMemory> parts;
  for (std::size_t k = 0; k < std::max<std::size_t>(loads.size(), 1); ++k) {
    // A chunk of no layers is one group carrying the embedding or the head. The forward walks its layers first to
    // last, the backward last to first.
    const std::size_t l = forward || loads.empty() ? k : loads.size() - 1 - k;
    const double load = loads.empty() ? 0 : loads[l];
    const auto layer = st.chunk_first[static_cast<std::size_t>(op.chunk)] + static_cast<std::int64_t>(l);
    const int n = !loads.empty() && op.kind != PipeOpKind::Weight && is_moe_layer(e.model, layer) ? 4 : 1;
    const bool with_head = head && l + 1 == std::max<std::size_t>(loads.size(), 1);
    for (int p = 0; p < n; ++p) {
      PartMemory m;
      if (forward && p == (with_head ? n - 1 : 0)) m.change = load + (with_head ? loss.saved : 0);
      if (!forward && with_head && op.kind == PipeOpKind::Backward && p == 0) {
        m.transient = loss.transient;
        m.change = -loss.saved;
      }
      if (frees && p == n - 1) m.change -= load;
      parts.push_back(m);
    }
  }
  return parts;
}

}  // namespace

double paired_walked_peak(const Experiment& e, const StageLayout& st,
                          const std::vector<std::vector<double>>& layer_loads, double loss_saved,
                          double loss_transient) {
  const std::vector<PipeOp> order =
      stage_order(shape_of(e.strategy, 1), strategy_shape_fields(), static_cast<int>(st.stage));
  const LossBytes loss{loss_saved, loss_transient};
  double level = 0, peak = 0;
  const auto run = [&](const PartMemory& m) {
    peak = std::max(peak, level + m.transient);
    peak = std::max(peak, level += m.change);
  };
  for (std::size_t i = 0; i < order.size(); ++i) {
    const PipeOp& op = order[i];
    if (op.chunk < 0) continue;
    const std::vector<PartMemory> a = op_parts(e, st, op, layer_loads[static_cast<std::size_t>(op.chunk)], loss);
    const bool paired = op.pairs_next && op.kind == PipeOpKind::Forward && i + 1 < order.size() &&
                        order[i + 1].kind == PipeOpKind::Backward;
    if (!paired) {
      for (const PartMemory& m : a) run(m);
      continue;
    }
    const PipeOp& next = order[++i];
    const std::vector<PartMemory> b = op_parts(e, st, next, layer_loads[static_cast<std::size_t>(next.chunk)], loss);
    for (std::size_t n = 0; n < std::max(a.size(), b.size()); ++n) {
      if (n < a.size()) run(a[n]);
      if (n < b.size()) run(b[n]);
    }
  }
  return peak;
}

double activation_layer_equivalents(const Experiment& e, const StageLayout& st) {
  const auto& s = e.strategy;
  const std::int64_t p = s.pp, m = s.microbatches, stage = st.stage;
  double layers = static_cast<double>(st.n_layers);
  // Megatron-Core's combined 1F1B: one more warm-up forward, each steady-state pair overlapping layer by layer.
  if (s.ep_overlap) return paired_walked_peak(e, st, unit_layer_loads(st));
  if (p == 1) return layers;
  switch (s.schedule) {
    case Schedule::GPipe:
      return layers * static_cast<double>(m);
    case Schedule::OneFOneB:
    case Schedule::PipeDream2BW:
      return layers * static_cast<double>(std::min(m, p - stage));
    case Schedule::PipeDream:
      return layers * static_cast<double>(std::min({m, s.noam, p - stage}));
    case Schedule::LocalSGD:
      return layers * static_cast<double>(std::min({m, s.replicas, p - stage}));
    case Schedule::Interleaved:
      return interleaved_peak(e, st, true);
    // Every stage holds p (ZB-H1) or 2p - 1 (ZB-H2) micro-batches at its peak (Qi et al., arXiv 2401.10241,
    // Table 1), counting a micro-batch from its forward to its weight gradient.
    case Schedule::ZbH1:
      return layers * static_cast<double>(std::min(m, p));
    case Schedule::ZbH2:
      return layers * static_cast<double>(std::min(m, 2 * p - 1));
    // ZB-V: 2p chunk passes of half a stage each (Qi et al., arXiv 2405.15362). Uneven chunks: the order walked.
    case Schedule::ZbV:
      if (!even_chunks(st)) return walked_peak(e, st, chunk_layer_loads(st));
      return layers * static_cast<double>(std::min(m, p));
    // DualPipeV: 2p + 1 chunk passes of half a stage (the DeepSeek-V3 report's PP + 1 with PP = 2p) where each chunk
    // is one layer; with more, a pair's backward frees its layers while its forward adds its own, layer by layer.
    // DualPipe: PP + 1 passes of one direction's chunk (the report's Table 2) where each chunk is one layer; the
    // same walk.
    case Schedule::DualPipeV:
    case Schedule::DualPipe:
      return paired_walked_peak(e, st, unit_layer_loads(st));
    // Interleaved zero bubble: no closed form published; the order walked.
    case Schedule::InterleavedZb:
      return walked_peak(e, st, chunk_layer_loads(st));
  }
  return layers;
}

namespace {

// The interleaved schedule's op order on stage st: visit(chunk, forward) for each chunk-forward and chunk-backward,
// warm-up forwards first, then a forward and a backward in turn.
template <class Visit>
void walk_interleaved(const Experiment& e, const StageLayout& st, Visit&& visit) {
  const auto& s = e.strategy;
  const std::int64_t total = s.microbatches * s.chunks;
  if (total > kMaxInterleavedPasses)
    throw InputError("strategy.microbatches x strategy.chunks = " + std::to_string(s.microbatches) + " x " +
                     std::to_string(s.chunks) + " chunk-forwards per step is more than the " +
                     std::to_string(kMaxInterleavedPasses) + " the interleaved schedule is evaluated for");
  const int m = static_cast<int>(s.microbatches), v = static_cast<int>(s.chunks), n = static_cast<int>(total);
  const int group = static_cast<int>(s.interleave_group());
  const int warm = interleaved_warmup(st.stage, static_cast<int>(s.pp), m, v, group);
  auto chunk = [&](int k, bool forward) {
    const int c = interleaved_slot(k, m, v, group).chunk;
    return forward ? c : v - 1 - c;
  };
  for (int k = 0; k < warm; ++k) visit(chunk(k, true), true);
  for (int k = 0; k < n; ++k) {
    if (warm + k < n) visit(chunk(warm + k, true), true);
    visit(chunk(k, false), false);
  }
}

}  // namespace

double interleaved_peak(const Experiment& e, const StageLayout& st, bool weighted,
                        const std::vector<double>* chunk_weights) {
  const auto& s = e.strategy;
  // Even chunks: the warm-up's chunk-forwards plus the one of the steady state, each a chunk's layers.
  if (!chunk_weights && even_chunks(st) && s.microbatches <= kMaxMicrobatches / s.chunks) {
    const std::int64_t total = s.microbatches * s.chunks;
    const std::int64_t warm = 2 * (s.pp - st.stage - 1) + (s.chunks - 1) * s.interleave_group();
    const double passes = static_cast<double>(std::min(warm + 1, total));
    return weighted ? passes * static_cast<double>(st.chunk_layers.front()) : passes;
  }
  // A chunk-forward holds its chunk's layers until its backward.
  auto load = [&](int chunk) {
    if (chunk_weights) return (*chunk_weights)[static_cast<std::size_t>(chunk)];
    return weighted ? static_cast<double>(st.chunk_layers[static_cast<std::size_t>(chunk)]) : 1.0;
  };
  double level = 0, peak = 0;
  walk_interleaved(e, st, [&](int chunk, bool forward) {
    if (forward)
      peak = std::max(peak, level += load(chunk));
    else
      level -= load(chunk);
  });
  return peak;
}

std::optional<double> interleaved_peak_with_loss(const Experiment& e, const StageLayout& st,
                                                 const std::vector<double>& chunk_bytes, double saved,
                                                 double transient) {
  const auto& s = e.strategy;
  if (s.schedule != Schedule::Interleaved || s.pp == 1 || st.stage != s.pp - 1 || even_chunks(st)) return std::nullopt;
  // The head sits in the last chunk: its forward leaves the loss's saved tensors until the chunk's backward, whose
  // head part adds the transient gradients while the chunk's layers are still held.
  const int head = static_cast<int>(s.chunks) - 1;
  double level = 0, peak = 0;
  int losses = 0;
  walk_interleaved(e, st, [&](int chunk, bool forward) {
    const double layers = chunk_bytes[static_cast<std::size_t>(chunk)];
    if (forward) {
      level += layers;
      if (chunk == head) ++losses;
      peak = std::max(peak, level + losses * saved);
    } else {
      if (chunk == head) {
        peak = std::max(peak, level + losses * saved + transient);
        --losses;
      }
      level -= layers;
    }
  });
  return peak;
}

double kept_activation_layers(const Experiment& e, const StageLayout& st) {
  if (st.n_layers == 0) return 0;
  // chunk-micro-batches in flight, one layer each
  if (e.strategy.schedule == Schedule::Interleaved && e.strategy.pp > 1) return interleaved_peak(e, st, false);
  return activation_layer_equivalents(e, st) / static_cast<double>(st.n_layers);
}

}  // namespace placesim
