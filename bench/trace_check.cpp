// Validates a Chrome trace file (plain or gzip) with placesim's structural validator (the rules Perfetto relies
// on) and prints its problems and counts. The last line is "threads N": threads holding slices, which is the
// profile count speedscope shows as "(1/N)". Exit code 0 when valid, 1 when not, 2 on bad usage.
//
//   trace_check TRACE.json[.gz]
#include <cstdio>
#include <exception>

#include "traces/chrome/TraceValidator.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: trace_check TRACE.json[.gz]\n");
    return 2;
  }
  try {
    placesim::TraceCheck check = placesim::validate_trace_file(argv[1]);
    for (const auto& p : check.problems) std::printf("problem: %s\n", p.c_str());
    std::size_t slices = 0;
    for (const auto& [thread, by_cat] : check.counts.slices)
      for (const auto& [cat, n] : by_cat) slices += n;
    std::printf("events %zu, slices %zu, flows %zu, processes %zu\n", check.counts.events, slices, check.counts.flows,
                check.counts.process_names.size());
    std::printf("threads %zu\n", check.counts.slices.size());
    return check.valid() ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trace_check: %s\n", e.what());
    return 2;
  }
}
