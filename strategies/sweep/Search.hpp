#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "strategies/sweep/Sweep.hpp"

namespace placesim {

/// A dp x tp x pp mesh `placesim search` tries (the degrees only; strategies/placement/Mesh.hpp maps ranks).
struct CandidateMesh {
  std::int64_t dp = 1, tp = 1, pp = 1;
};

/// The most GPUs a search enumerates meshes for: 2^20 = 1,048,576, five times the largest training clusters built
/// (about 200,000 GPUs in 2025). Enumerating takes time in proportion to the GPU count.
constexpr std::int64_t kMaxSearchGpus = std::int64_t{1} << 20;
/// The most candidates a search analyses (each row stays in memory for the ranking, about 2 kB); the ones it
/// simulates are those its bound cannot rule out.
constexpr std::uint64_t kMaxSearchCandidates = 200'000;

/// Every mesh with dp x tp x pp = `devices` whose tp divides `gpus_per_node` (tensor parallelism stays inside a
/// node's NVLink domain), ordered by tp, then pp. Model divisibility (heads, layers, batch) is left to the validity
/// check, which records why a mesh does not fit the model. Throws InputError for `devices` beyond kMaxSearchGpus.
std::vector<CandidateMesh> enumerate_meshes(std::int64_t devices, std::int64_t gpus_per_node);

/// What `placesim search` varies. Every candidate is a mesh (dp, tp, pp, cp and for MoE models ep), a strategy
/// preset (the placement: ZeRO stage, FSDP, HSDP with dp_shard filling the node and dp_replicate across nodes,
/// offload), a schedule (1F1B, or interleaved with each chunk count that divides the stage's layers, up to
/// max_chunks), a micro-batch size and a recompute mode. Sequence parallelism and the other defaults follow the
/// candidate's training stack.
struct SearchSpace {
  std::int64_t devices = 0;
  std::int64_t gpus_per_node = 8;
  /// Empty: the presets of the experiment's stack ("stack": its data's `presets`), else every preset.
  std::vector<std::string> presets;
  std::vector<std::int64_t> micro_batches = {1, 2, 4, 8};
  /// Empty: the base's strategy.cp when it fixes one, else 1, 2, 4 and 8.
  std::vector<std::int64_t> cps;
  std::vector<std::string> recomputes = {"none", "selective", "full"};
  std::int64_t max_chunks = 8;
  SweepMode mode = SweepMode::Simulate;  ///< simulate ranks by step time; analyze only by a proxy (bytes)
  Fidelity fidelity = Fidelity::Flow;
  std::vector<std::string> figures;  ///< extra report paths each row carries (the ranking figure, say)
};

/// The figures a search's rows carry in `mode`: the sweep's defaults, then `extra` not already among them.
std::vector<std::string> search_figures(SweepMode mode, const std::vector<std::string>& extra);

/// The presets a search tries for `experiment` when none are given: its stack's (by name or file), else all.
/// `from` is set to where they come from.
std::vector<std::string> search_presets(const Json& experiment, const std::string& base_dir, std::string* from);

/// The sweep a search evaluates: `experiment` with one joint axis over the candidates (the strategy object, the
/// micro-batch size, the recompute mode), analyzed with the stack's limits enforced (filters.stack_can_run) and
/// each row carrying the step time's lower bound (compute.step_time_lower_bound_s). The experiment must fix
/// training.global_batch (so that every candidate trains the same batch) and must not fix strategy.microbatches (it
/// follows from the batch and the mesh); InputError otherwise, and when the candidates, counted before any is
/// evaluated, outnumber kMaxSearchCandidates.
SweepSpec search_sweep(const Json& experiment, const std::string& base_dir, const SearchSpace& space);

/// The figure a search ranks by and its direction: "simulation.step_time_s" (ascending) or "-simulation.mfu"
/// (a leading '-' ranks descending).
struct RankBy {
  std::string path;
  bool descending = false;
};
RankBy parse_rank_by(const std::string& text);
/// The default: the simulated step time in simulate mode; in analyze mode, which has no step-time model yet, the
/// bytes a GPU sends per step as a proxy (less communication, faster step, other things equal).
RankBy default_rank_by(SweepMode mode);

/// True when ranking by `by` puts candidates in the order of their step time (step time, tokens/s and MFU at a
/// fixed batch and GPU count, time or cost to train): then a candidate whose lower bound is at least the best
/// simulated step time cannot rank first, and is not simulated.
bool ranks_by_step_time(const RankBy& by);

/// The ok rows (parsed sweep rows) that carry the figure, best first; equal figures keep index order.
std::vector<Json> rank_rows(const std::vector<Json>& rows, const RankBy& by);

}  // namespace placesim
