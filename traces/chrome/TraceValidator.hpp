#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace placesim {

/// What a trace holds, as counted by the validator.
struct TraceCounts {
  using Thread = std::pair<std::int64_t, std::int64_t>;  ///< (pid, tid)

  std::size_t events = 0;                                       ///< all events in traceEvents
  std::map<Thread, std::map<std::string, std::size_t>> slices;  ///< complete slices (X, B/E pairs) per category
  std::size_t flows = 0;                                        ///< flows with both a start and a finish
  /// Per pid, per counter name: the largest sum of one event's args (the memory total, the bytes in flight).
  std::map<std::int64_t, std::map<std::string, double>> counter_max;
  std::map<std::int64_t, std::string> process_names;
  std::map<Thread, std::string> thread_names;

  /// Slices of category `cat` over all threads of process `pid`.
  std::size_t slices_of(std::int64_t pid, const std::string& cat) const;
};

/// The result of validating a trace: problems (empty = valid) and counts.
struct TraceCheck {
  std::vector<std::string> problems;  ///< one sentence each; at most 100, then a final "... N more"
  TraceCounts counts;
  bool valid() const { return problems.empty(); }
};

/// Checks the structural rules trace viewers (Perfetto in particular) rely on, in a Chrome trace event JSON file
/// (object or array form, plain or gzip): the file parses; every event has a known "ph", a pid, and (except
/// metadata) a non-negative numeric ts; per thread, timestamps never decrease in file order; complete ("X")
/// events have a non-negative dur and never overlap another X on their thread (placesim never nests slices, so
/// nesting counts as overlap too), not even when their end is computed as ts + dur in floating point, as speedscope
/// does (526.191 + 88.363 > 614.554); every B has its E; every flow start ("s") has exactly one finish ("f") with
/// the same cat and id, not earlier, and vice versa, each bound to a slice of its thread; counter args are all
/// numbers; every pid used has a process_name and every thread with events a thread_name.
/// Events are checked one at a time while parsing, so a large trace need not fit in memory as a JSON tree.
/// Throws InputError only when the file cannot be opened; a malformed file is a problem, not an exception.
TraceCheck validate_trace_file(const std::string& path);

/// The same for trace text in memory (hand-made traces in tests).
TraceCheck validate_trace_text(const std::string& text);

}  // namespace placesim
