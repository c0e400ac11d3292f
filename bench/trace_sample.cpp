// A small synthetic placesim trace, without running a simulation: a 16-GPU run (dp 2 × tp 2 × pp 4, 8 micro-batches)
// written as a Chrome trace and, optionally, an SVG overview. (tests/speedscope_check.sh checks a simulated trace by
// default; this one can be passed to it.)
// Prints the number of threads in the trace: the profile count speedscope shows as "(1/N)".
//
//   trace_sample OUT.json [OUT.svg]
#include <cstdio>
#include <string>

#include "tests/SyntheticPipeline.hpp"
#include "traces/chrome/ChromeTrace.hpp"
#include "traces/svg/Svg.hpp"

int main(int argc, char** argv) {
  using namespace placesim;
  if (argc < 2) {
    std::fprintf(stderr, "usage: trace_sample OUT.json [OUT.svg]\n");
    return 2;
  }
  SimulationRecord record = test::synthetic_pipeline(test::PipelineShape{});
  Json other{{"experiment", "synthetic 16-GPU pipeline"}};
  TraceSummary s = write_chrome_trace(argv[1], record, other, TraceOptions{});
  if (argc > 2) write_timeline_svg(argv[2], record, SvgOptions{TraceOptions{}, "synthetic 16-GPU pipeline"});
  std::printf("%zu\n", s.threads);
  return 0;
}
