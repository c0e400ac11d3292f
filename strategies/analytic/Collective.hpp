#pragma once
#include <cstdint>

namespace placesim {

/// Collective classes: the names used in the analytic `communication.by_class` and the simulated
/// `simulation.bytes_sent.by_class`.
/// CpKv: context parallelism's keys and values (and their gradients): ring steps or all-gathers / reduce-scatters.
enum class CommClass { DpGradSync, ZeroGather, TpCollective, PpP2P, EmbeddingSync, CpKv };
inline constexpr int kCommClasses = 6;
const char* to_string(CommClass c);

/// Elements each of `n` ranks holds of a unit of `elems` elements. Units are padded up to a multiple of `n`, as
/// FSDP pads its flat parameters and ZeRO its partitions, so every rank holds the same amount.
inline std::int64_t shard_elems(std::int64_t elems, std::int64_t n) {
  return (elems + n - 1) / n;
}

/// Elements one rank sends in a ring all-gather or reduce-scatter of a (padded) `elems` buffer over `n` ranks:
/// (n-1) steps of one shard each.
inline std::int64_t ring_gather_elems_sent(std::int64_t elems, std::int64_t n) {
  return n <= 1 ? 0 : (n - 1) * shard_elems(elems, n);
}
/// Elements one rank sends in a ring all-reduce: a reduce-scatter then an all-gather, 2(n-1) shards.
inline std::int64_t ring_allreduce_elems_sent(std::int64_t elems, std::int64_t n) {
  return 2 * ring_gather_elems_sent(elems, n);
}

}  // namespace placesim
