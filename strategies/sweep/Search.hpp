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
/// The most candidates a search evaluates in analyze mode, and in simulate mode (one simulator process each). Every
/// row stays in memory for the ranking (about 10 kB each): 100,000 analysed candidates take about 20 s and 1 GB,
/// 10,000 simulated ones hours. A default search over 16,384 GPUs has 1,296 candidates, over 720,720 GPUs 16,128.
constexpr std::uint64_t kMaxSearchCandidates = 100'000, kMaxSimulatedCandidates = 10'000;

/// Every mesh with dp x tp x pp = `devices` whose tp divides `gpus_per_node` (tensor parallelism stays inside a
/// node's NVLink domain), ordered by tp, then pp. Model divisibility (heads, layers, batch) is left to the validity
/// check, which records why a mesh does not fit the model. Throws InputError for `devices` beyond kMaxSearchGpus.
std::vector<CandidateMesh> enumerate_meshes(std::int64_t devices, std::int64_t gpus_per_node);

/// What `placesim search` varies.
struct SearchSpace {
  std::int64_t devices = 0;
  std::int64_t gpus_per_node = 8;
  std::vector<std::string> presets = {"megatron-3d", "megatron-core", "zero1", "zero2", "zero3", "zero-offload"};
  std::vector<std::int64_t> micro_batches = {1, 2, 4, 8};
  SweepMode mode = SweepMode::Simulate;  ///< simulate ranks by step time; analyze only by a proxy (bytes)
  Fidelity fidelity = Fidelity::Flow;
  std::vector<std::string> figures;  ///< extra report paths each row carries (the ranking figure, say)
};

/// The sweep a search evaluates: `experiment` with a joint axis over the meshes, then the presets, then the
/// micro-batch sizes. The experiment must fix training.global_batch (so that every candidate trains the same batch)
/// and must not fix strategy.microbatches (it follows from the batch and the mesh); InputError otherwise, and when the
/// candidates, counted before any is evaluated, outnumber kMaxSearchCandidates (kMaxSimulatedCandidates to simulate).
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

/// The ok rows (parsed sweep rows) that carry the figure, best first; equal figures keep index order.
std::vector<Json> rank_rows(const std::vector<Json>& rows, const RankBy& by);

}  // namespace placesim
