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

double activation_layer_equivalents(const Experiment& e, const StageLayout& st) {
  const auto& s = e.strategy;
  const std::int64_t p = s.pp, m = s.microbatches, stage = st.stage;
  double layers = static_cast<double>(st.n_layers);
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
    // DualPipeV: 2p + 1 chunk passes of half a stage (the DeepSeek-V3 report's PP + 1 with PP = 2p).
    case Schedule::DualPipeV:
      if (!even_chunks(st)) return walked_peak(e, st, chunk_layer_loads(st));
      return layers * std::min(static_cast<double>(m), (2.0 * static_cast<double>(p) + 1) / 2);
    // DualPipe: PP + 1 passes of a whole stage (the DeepSeek-V3 report's Table 2); abstract pipelines only, as
    // check_schedule refuses it on models.
    case Schedule::DualPipe:
      return layers * static_cast<double>(std::min(m, p + 1));
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
