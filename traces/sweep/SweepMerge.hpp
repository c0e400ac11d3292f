#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace placesim {

/// The identity a sweep row carries after its index (SweepRows): `{"index":N[,"shard":"i/M"],"sweep":"H",
/// "version":"V","points":P,"point":...`.
struct RowIdentity {
  std::uint64_t index = 0;
  std::string shard;  ///< "i/M", empty when the row was written by a whole sweep (no shard key)
  std::string sweep, version;
  std::uint64_t points = 0;
  std::string device_memory;  ///< the --device-memory bytes the points were checked against, as written ("" if none)
  std::size_t shard_begin = 0, shard_end = 0;  ///< the bytes of `,"shard":"i/M"` in the line (equal when absent)
};

/// The identity of a results line, or nullopt when the line does not start as a row of placesim 0.19 or later does.
std::optional<RowIdentity> row_identity(std::string_view line);

/// What `sweep merge` checks and writes.
struct MergeOptions {
  std::vector<std::string> shards;        ///< the results files to merge (shard files, or any results files)
  std::string out;                        ///< the merged file; empty: only check
  std::optional<std::string> sweep_hash;  ///< when given (--sweep FILE): every row must be of this sweep
  std::optional<std::uint64_t> sweep_points;
};

/// What a successful merge found.
struct MergeSummary {
  std::uint64_t points = 0;       ///< the sweep's points, every one present once
  std::uint64_t shard_count = 1;  ///< M of the rows' "i/M" (1 when unsharded)
  std::string sweep, version;
  std::uint64_t ok = 0, invalid = 0, filtered = 0, error = 0;
};

/// Checks that the files hold every point of one sweep exactly once — all rows of the same sweep hash, placesim
/// version, point count and shard count, each file one shard, no cut last line, no index twice, none missing — and,
/// when `out` is set, writes the rows in index order to it (atomically), each without its shard key: the merged file
/// is byte-identical to the one a whole sweep writes. Every problem found is listed in one InputError: missing
/// indices (as ranges) by the shard that owns them and its file, with how to resume it.
MergeSummary merge_results(const MergeOptions& options);

/// "3, 11-19, 27" for ascending indices; at most `limit` items, then ", ... (N more)".
std::string index_ranges(const std::vector<std::uint64_t>& indices, std::size_t limit = 12);

}  // namespace placesim
