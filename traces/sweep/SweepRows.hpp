#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strategies/sweep/SweepPoint.hpp"

namespace placesim {

/// Formats sweep results, one JSON object per line with keys in a fixed order:
///
///   {"index":12,"sweep":"9f2c4e1a0b3d5e67","version":"0.22.0","points":240,"point":{"strategy.tp":2,...},
///    "status":"ok","memory.total_bytes":...}
///   {"index":13,"shard":"1/4","sweep":"...","version":"...","points":240,"point":{...},"status":"invalid",
///    "reason":"invalid strategy: strategy.pp=16 does not divide ..."}
///
/// Every row names its sweep (SweepSpec::hash), the placesim version that wrote it and the sweep's point count, and,
/// when written by a shard i/N with N > 1, the shard: enough for `sweep merge` to check that a set of files holds
/// every point of one sweep exactly once, and for --resume to refuse a file of another sweep. `point` holds the axis
/// values in axis order. Filtered points are rows too (status "filtered", the filter as reason). A figure is a dotted
/// path into the point's report; it is present when the point was analyzed (ok, or invalid only because its memory
/// does not fit) or simulated, and the report has it.
class SweepRows {
 public:
  /// Rows of `spec` written by `shard` (0/1: the whole sweep, no shard key), every point checked against
  /// `device_memory_bytes` when > 0 (--device-memory: part of the rows' identity, as it changes their verdicts).
  explicit SweepRows(const SweepSpec& spec, const Shard& shard = {}, double device_memory_bytes = 0);

  /// The row of an evaluated point, ending in '\n'. `simulated` is the point's simulate report or null.
  std::string line(std::uint64_t index, const std::vector<std::size_t>& coords, const PointOutcome& outcome,
                   const Experiment& e, const Analysis& a, const Json* simulated) const;
  /// The start of every row of point `index`, up to and including `"status":"` — what --resume compares to make
  /// sure a results file belongs to this sweep, shard and placesim version.
  std::string prefix(std::uint64_t index, const std::vector<std::size_t>& coords) const;

 private:
  const SweepSpec& spec_;
  std::string identity_;  ///< the keys between the index and the point's values: shard, sweep, version, points
  /// Per axis and path: "\"path\":" (the values are dumped as rows are written: an axis may hold 10^7 of them).
  std::vector<std::vector<std::string>> key_text_;
  std::vector<std::string> figure_keys_;  ///< ",\"figure\":" per figure
};

/// The placesim version every row carries (PLACESIM_VERSION).
const char* placesim_version();

/// The value at a dotted path ("memory.per_stage.0.total_bytes": numbers index lists) of a JSON document, or null
/// when absent.
const Json* find_path(const Json& document, const std::string& path);

/// The value of figure `path` for an analyzed point; from the analysis directly for the figures the analyze report
/// derives from it, else from the full report. Null when the report has no such path.
Json analytic_figure(const std::string& path, const Experiment& e, const Analysis& a);

/// Throws InputError naming the figure when an analyze-mode sweep asks for a path the analyze report never has.
void check_figures(const SweepSpec& spec);

/// The CSV form of results: a header (index, the axis paths, status, reason, the figures), then one row per
/// results line. Strings are quoted when they hold a comma, quote or newline (RFC 4180); lists and objects are
/// written as JSON text; an absent value is an empty cell. Both end in '\n'.
std::string csv_header(const SweepSpec& spec);
std::string csv_row(const SweepSpec& spec, std::string_view line);

}  // namespace placesim
