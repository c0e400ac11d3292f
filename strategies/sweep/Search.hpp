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

/// Every mesh with dp x tp x pp = `devices` whose tp divides `gpus_per_node` (tensor parallelism stays inside a
/// node's NVLink domain), ordered by tp, then pp. Model divisibility (heads, layers, batch) is left to the validity
/// check, which records why a mesh does not fit the model.
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
/// and must not fix strategy.microbatches (it follows from the batch and the mesh); InputError otherwise.
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
