// Trace size at GPT-3 scale: a synthetic 1024-GPU run (dp 8 × tp 8 × pp 16, 192 micro-batches, 6 layers per
// stage, recompute) written as a Chrome trace for a device selection. Prints events, bytes and seconds.
//
//   trace_size OUT.json.gz [SELECTION] [coarse|fine] [dp-to-record] [tp-to-record]
//
// Only the devices of dp-to-record / tp-to-record (default 0 / all) get tasks, to keep the record in memory.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/SyntheticPipeline.hpp"
#include "traces/chrome/ChromeTrace.hpp"
#include "traces/chrome/TraceOptions.hpp"

int main(int argc, char** argv) {
  using namespace placesim;
  if (argc < 2) {
    std::fprintf(stderr, "usage: trace_size OUT.json.gz [SELECTION] [coarse|fine] [DP] [TP]\n");
    return 2;
  }
  const std::string out = argv[1], selection = argc > 2 ? argv[2] : "dp0+tp0";
  test::PipelineShape shape{
      16, 8, 8, 192, 6, true, 2, argc > 4 ? std::stoi(argv[4]) : 0, argc > 5 ? std::stoi(argv[5]) : -1};
  auto t0 = std::chrono::steady_clock::now();
  SimulationRecord record = test::synthetic_pipeline(shape);
  auto t1 = std::chrono::steady_clock::now();
  TraceOptions options{parse_device_selection(selection, record.devices),
                       parse_trace_detail(argc > 3 ? argv[3] : "coarse")};
  TraceSummary s = write_chrome_trace(out, record, Json{{"experiment", "synthetic GPT-3 1024 GPUs"}}, options);
  auto t2 = std::chrono::steady_clock::now();
  auto seconds = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  std::size_t events = s.slices + 2 * s.flows + s.counter_events;
  std::uintmax_t bytes = std::filesystem::file_size(out);
  std::printf("record: %zu tasks, %zu memory events (%.1f s)\n", record.tasks.size(), record.memory.size(),
              seconds(t0, t1));
  std::printf("trace %s %s: %zu devices, %zu threads, %zu slices, %zu flows, %zu counter events\n", selection.c_str(),
              to_string(options.detail), s.devices, s.threads, s.slices, s.flows, s.counter_events);
  std::printf("%zu events, %.1f MB written (%.1f bytes/event) in %.1f s\n", events, bytes / 1e6,
              static_cast<double>(bytes) / static_cast<double>(events), seconds(t1, t2));
  return 0;
}
