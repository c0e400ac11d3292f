#pragma once
#include <cstdint>
#include <vector>

namespace placesim {

/// AllToAll: expert parallelism's dispatch or combine; its pairwise volumes are TaskGraph::a2a_tokens[split] tokens of
/// `elems` elements each (alltoall_pair_elems).
enum class CollectiveOp { AllReduce, AllGather, ReduceScatter, AllToAll };
const char* to_string(CollectiveOp op);

/// Collective classes: the names used in the analytic `communication.by_class` and the simulated
/// `simulation.bytes_sent.by_class`.
/// CpKv: context parallelism's keys and values (and their gradients): ring steps or all-gathers / reduce-scatters.
/// EpAllToAll: expert parallelism's token dispatch and combine (forward, backward and recompute).
/// ExpertGradSync: the routed experts' data-parallel collectives over the expert-data-parallel group (gradient
/// synchronisation, gathers of sharded expert parameters).
enum class CommClass { DpGradSync, ZeroGather, TpCollective, PpP2P, EmbeddingSync, CpKv, EpAllToAll, ExpertDataSync };
inline constexpr int kCommClasses = 8;
const char* to_string(CommClass c);
/// Whether reports list class `c`: the expert classes only for mixture-of-experts models (dense models' reports keep
/// the classes they always had).
inline bool reported_class(CommClass c, bool moe) {
  return moe || (c != CommClass::EpAllToAll && c != CommClass::ExpertDataSync);
}

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

/// All-to-all of expert parallelism over n members: in a dispatch every member sends member j `tokens[j]` tokens
/// (all members route alike), each of `per_token` elements; a combine returns them (member i sends tokens[i] tokens
/// to every member). A member's own share stays on the device and is not sent.
inline std::int64_t alltoall_pair_elems(const std::vector<std::int64_t>& tokens, std::int64_t per_token, int from,
                                        int to, bool combine) {
  if (from == to) return 0;
  return tokens[static_cast<std::size_t>(combine ? from : to)] * per_token;
}
/// Elements member `from` sends in such an all-to-all.
inline std::int64_t alltoall_elems_sent(const std::vector<std::int64_t>& tokens, std::int64_t per_token, int from,
                                        bool combine) {
  std::int64_t sum = 0;
  for (int j = 0; j < static_cast<int>(tokens.size()); ++j)
    sum += alltoall_pair_elems(tokens, per_token, from, j, combine);
  return sum;
}
/// Elements member `to` receives in such an all-to-all: what it sends in the reverse one (a dispatch's receipts are
/// the combine's sends, alltoall_pair_elems(i, to, combine) = alltoall_pair_elems(to, i, !combine)).
inline std::int64_t alltoall_elems_received(const std::vector<std::int64_t>& tokens, std::int64_t per_token, int to,
                                            bool combine) {
  return alltoall_elems_sent(tokens, per_token, to, !combine);
}

}  // namespace placesim
