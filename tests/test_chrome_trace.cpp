#include <catch2/catch.hpp>

#include "tests/SyntheticPipeline.hpp"
#include "tests/TraceFixtures.hpp"
#include "traces/chrome/ChromeTrace.hpp"
#include "traces/chrome/TraceValidator.hpp"
#include "traces/output/OutputFile.hpp"
#include "workloads/json/Error.hpp"

using namespace placesim;
using placesim::test::ScratchFile;
using placesim::test::two_stage_record;

namespace {

const int kCompute = trace_tid(Stream::Compute), kDpComm = trace_tid(Stream::DpComm);
const int kSend = trace_tid(Stream::PpSend), kRecv = trace_tid(Stream::PpRecv);

TraceCheck write_and_check(const SimulationRecord& r, const TraceOptions& options, const std::string& name,
                           TraceSummary* summary = nullptr) {
  ScratchFile file(name);
  TraceSummary s = write_chrome_trace(file.path, r, Json{{"experiment", "two-stage"}}, options);
  if (summary) *summary = s;
  return validate_trace_file(file.path);
}

Json written(const SimulationRecord& r, const TraceOptions& options, Json other = Json{}) {
  ScratchFile file("trace.json");
  write_chrome_trace(file.path, r, other, options);
  return Json::parse(read_text_file(file.path));
}

/// Events of one phase and name (any name when empty) on one process.
std::vector<Json> events(const Json& trace, const std::string& ph, int pid, const std::string& name = "") {
  std::vector<Json> found;
  for (const Json& e : trace.at("traceEvents"))
    if (e.at("ph") == ph && e.at("pid") == pid && (name.empty() || e.at("name") == name)) found.push_back(e);
  return found;
}

std::string problems(const TraceCheck& c) {
  std::string all;
  for (const auto& p : c.problems) all += p + "\n";
  return all;
}

}  // namespace

TEST_CASE("the trace of a two-stage pipeline passes the validator in both details") {
  for (TraceDetail detail : {TraceDetail::Coarse, TraceDetail::Fine}) {
    TraceSummary summary;
    TraceCheck check = write_and_check(two_stage_record(), TraceOptions{{}, detail}, "valid.json", &summary);
    INFO(problems(check));
    CHECK(check.valid());
    CHECK(summary.devices == 2);
    CHECK(summary.threads == 8);  // compute, dp-comm, pp-send, pp-recv on each device
    CHECK(check.counts.thread_names.size() == 8);
    CHECK(check.counts.process_names.at(trace_pid(0)) == "node0/gpu0 [dp0 pp0 tp0]");
    CHECK(check.counts.process_names.at(trace_pid(1)) == "node0/gpu1 [dp0 pp1 tp0]");
    CHECK(check.counts.thread_names.at({trace_pid(1), kRecv}) == "pp-recv");
  }
}

TEST_CASE("compute events per device are micro-batches times layers times passes") {
  TraceCheck check = write_and_check(two_stage_record(), TraceOptions{}, "compute.json");
  for (int device : {0, 1}) {
    const auto& compute = check.counts.slices.at({trace_pid(device), kCompute});
    CHECK(compute.at("forward") == 2 * 2);  // 2 micro-batches x 2 layers
    CHECK(compute.at("backward") == 2 * 2);
    CHECK(compute.at("optimizer") == 1);
    CHECK(check.counts.slices_of(trace_pid(device), "forward") == 4);
  }
}

TEST_CASE("a p2p transfer shows on the sender and the receiver joined by a flow") {
  TraceSummary summary;
  TraceCheck check = write_and_check(two_stage_record(), TraceOptions{}, "p2p.json", &summary);
  const auto& slices = check.counts.slices;
  CHECK(slices.at({trace_pid(0), kSend}).at("p2p") == 2);
  CHECK(slices.at({trace_pid(1), kRecv}).at("p2p") == 2);
  CHECK(slices.at({trace_pid(1), kSend}).at("p2p") == 1);
  CHECK(slices.at({trace_pid(0), kRecv}).at("p2p") == 1);
  CHECK(check.counts.flows == 3);  // coarse detail: P2P flows only
  CHECK(summary.flows == 3);

  Json trace = written(two_stage_record(), TraceOptions{});
  auto starts = events(trace, "s", trace_pid(0));
  auto finishes = events(trace, "f", trace_pid(1));
  REQUIRE(starts.size() == 2);
  REQUIRE(finishes.size() == 2);
  CHECK(starts[0].at("id") == finishes[0].at("id"));
  CHECK(starts[0].at("tid") == kSend);
  CHECK(finishes[0].at("tid") == kRecv);
  CHECK(finishes[0].at("bp") == "e");
  CHECK(starts[0].at("cat") == "p2p");
  auto recv = events(trace, "X", trace_pid(1), "recv send act mb0");
  REQUIRE(recv.size() == 1);
  CHECK(recv[0].at("args").at("from") == 0);
  CHECK(recv[0].at("ts").get<double>() == Approx(2000.0));
  CHECK(recv[0].at("dur").get<double>() == Approx(500.0));
}

TEST_CASE("fine detail shows every collective step with a flow to the receiver's next step") {
  TraceCheck check = write_and_check(two_stage_record(), TraceOptions{{}, TraceDetail::Fine}, "fine.json");
  INFO(problems(check));
  CHECK(check.valid());
  CHECK(check.counts.slices.at({trace_pid(0), kDpComm}).at("collective") == 3);
  CHECK(check.counts.slices.at({trace_pid(1), kDpComm}).at("collective") == 3);
  CHECK(check.counts.flows == 3 + 4);  // 3 P2P + steps 0→1 and 1→2 from each of the 2 devices

  Json trace = written(two_stage_record(), TraceOptions{{}, TraceDetail::Fine});
  auto step1 = events(trace, "X", trace_pid(1), "allreduce dp grp@gpu0 step1 1.0 MB");
  REQUIRE(step1.size() == 1);
  CHECK(step1[0].at("args").at("step") == 1);
  CHECK(step1[0].at("args").at("algorithm") == "ring");
  CHECK(step1[0].at("args").at("collective") == 7);
  CHECK(step1[0].at("args").at("bytes") == 1000000);
}

TEST_CASE("coarse detail merges the steps of a collective on a device into one event") {
  TraceCheck check = write_and_check(two_stage_record(), TraceOptions{}, "coarse.json");
  CHECK(check.counts.slices.at({trace_pid(0), kDpComm}).at("collective") == 1);
  Json trace = written(two_stage_record(), TraceOptions{});
  auto merged = events(trace, "X", trace_pid(0), "allreduce dp grp@gpu0 (3 steps)");
  REQUIRE(merged.size() == 1);
  CHECK(merged[0].at("ts").get<double>() == Approx(10000.0));
  CHECK(merged[0].at("dur").get<double>() == Approx(2800.0));
  const Json& args = merged[0].at("args");
  CHECK(args.at("bytes") == 3000000);
  CHECK(args.at("steps") == 3);
  CHECK(args.at("first_step") == 0);
  CHECK(args.at("last_step") == 2);
  CHECK(args.at("class") == "dp_grad_sync");
}

TEST_CASE("the memory counter peaks at the cumulative memory peak including same-instant transients") {
  TraceCheck check = write_and_check(two_stage_record(), TraceOptions{}, "memory.json");
  for (int device : {0, 1}) CHECK(check.counts.counter_max.at(trace_pid(device)).at("memory") == 6500);
  Json trace = written(two_stage_record(), TraceOptions{});
  auto memory = events(trace, "C", trace_pid(0), "memory");
  REQUIRE(memory.size() == 2 + 4 + 1 + 4 + 2);  // one point per MemoryEvent of the device
  CHECK(memory.back().at("args") ==
        Json{{"parameters", 1000}, {"gradients", 1000}, {"optimizer", 4000}, {"activations", 0}});
}

TEST_CASE("bytes in flight add up the transfers running on a device") {
  TraceCheck check = write_and_check(two_stage_record(), TraceOptions{{}, TraceDetail::Fine}, "flight.json");
  CHECK(check.counts.counter_max.at(trace_pid(0)).at("bytes in flight") == 3e6);  // grad recv + step 0
  CHECK(check.counts.counter_max.at(trace_pid(1)).at("bytes in flight") == 3e6);  // grad send + step 0
  Json trace = written(two_stage_record(), TraceOptions{{}, TraceDetail::Fine});
  auto flight = events(trace, "C", trace_pid(0), "bytes in flight");
  REQUIRE(!flight.empty());
  CHECK(flight.back().at("args").at("bytes") == 0);
  // A change at each start and end: 4 for the two act sends, 6 for the three steps, 2 for the grad receive.
  CHECK(flight.size() == 4 + 6 + 2);
}

TEST_CASE("gzip output round-trips to the plain output") {
  ScratchFile plain("trace.json"), gz("trace.json.gz");
  write_chrome_trace(plain.path, two_stage_record(), Json{}, TraceOptions{});
  write_chrome_trace(gz.path, two_stage_record(), Json{}, TraceOptions{});
  std::string raw;
  {
    std::FILE* f = std::fopen(gz.path.c_str(), "rb");
    REQUIRE(f);
    char magic[2] = {};
    CHECK(std::fread(magic, 1, 2, f) == 2);
    std::fclose(f);
    raw.assign(magic, 2);
  }
  CHECK(raw == "\x1f\x8b");
  CHECK(read_text_file(gz.path) == read_text_file(plain.path));
  CHECK(validate_trace_file(gz.path).valid());
}

TEST_CASE("the same record gives byte-identical traces") {
  ScratchFile a("a.json"), b("b.json");
  for (TraceDetail detail : {TraceDetail::Coarse, TraceDetail::Fine}) {
    write_chrome_trace(a.path, two_stage_record(), Json{{"experiment", "x"}}, TraceOptions{{}, detail});
    write_chrome_trace(b.path, two_stage_record(), Json{{"experiment", "x"}}, TraceOptions{{}, detail});
    CHECK(read_text_file(a.path) == read_text_file(b.path));
  }
}

TEST_CASE("timestamps are microseconds with three decimals") {
  ScratchFile file("units.json");
  write_chrome_trace(file.path, two_stage_record(), Json{}, TraceOptions{});
  std::string text = read_text_file(file.path);
  CHECK(text.find("\"name\":\"fwd L1 mb0\"") != std::string::npos);
  // fwd L1 mb0 runs 1-2 ms and fwd L0 mb1 starts at 2 ms: written 1 ns short (see the floating-point test below).
  CHECK(text.find("\"ts\":1000.000,\"dur\":999.999,\"name\":\"fwd L1 mb0\"") != std::string::npos);
  CHECK(text.find("\"ts\":13000.000,\"dur\":1000.000,\"name\":\"adam\"") != std::string::npos);  // nothing after
  CHECK(text.find("\"displayTimeUnit\":\"ms\"") != std::string::npos);
}

TEST_CASE("a device selection keeps only its processes and the flows whose both ends it shows") {
  TraceSummary summary;
  TraceCheck check = write_and_check(two_stage_record(), TraceOptions{{1}, TraceDetail::Fine}, "one.json", &summary);
  INFO(problems(check));
  CHECK(check.valid());
  CHECK(summary.devices == 1);
  CHECK(check.counts.process_names.size() == 1);
  CHECK(check.counts.process_names.count(trace_pid(1)) == 1);
  CHECK(check.counts.flows == 0);
  CHECK(check.counts.slices.at({trace_pid(1), kRecv}).at("p2p") == 2);  // receives from device 0 still show
  CHECK(check.counts.slices.at({trace_pid(1), kSend}).at("p2p") == 1);
  CHECK(check.counts.slices.count({trace_pid(0), kCompute}) == 0);
}

TEST_CASE("overlapping receives spill onto a second pp-recv thread") {
  SimulationRecord r = two_stage_record();
  r.devices.push_back(DeviceInfo{0, 2, 0, 0, 2});
  TaskRecord grad = r.tasks.back();  // device 1 → 0, 10.2-10.6 ms
  grad.task = 1000;
  grad.device = 2;
  grad.start_s = 10.3e-3;
  grad.end_s = 10.7e-3;
  r.tasks.push_back(grad);
  TraceSummary summary;
  TraceCheck check = write_and_check(r, TraceOptions{}, "spill.json", &summary);
  INFO(problems(check));
  CHECK(check.valid());
  const int second_lane = trace_tid(Stream::PpRecv, 1);
  CHECK(second_lane == static_cast<int>(Stream::PpRecv) + 1 + 16);  // lane 1 of the pp-recv stream
  CHECK(check.counts.thread_names.at({trace_pid(0), second_lane}) == "pp-recv #2");
  CHECK(check.counts.slices.at({trace_pid(0), kRecv}).at("p2p") == 1);
  CHECK(check.counts.slices.at({trace_pid(0), second_lane}).at("p2p") == 1);
  CHECK(check.counts.flows == 4);
}

TEST_CASE("rounding to nanoseconds cannot make neighbouring events overlap") {
  SimulationRecord r = two_stage_record();
  // fwd L0 mb0 ends 0.2 ns after fwd L1 mb0 starts, as accumulated floating sums do; rounded, the end goes up to
  // 1000001 ns and the start down to 1000000 ns: a 1 ns overlap the writer must clamp.
  r.tasks[0].end_s = 1e-3 + 0.6e-9;
  r.tasks[1].start_s = 1e-3 + 0.4e-9;
  TraceSummary summary;
  TraceCheck check = write_and_check(r, TraceOptions{}, "clamp.json", &summary);
  INFO(problems(check));
  CHECK(check.valid());
  CHECK(summary.threads == 8);  // no spill lane
  CHECK(check.counts.slices.at({trace_pid(0), kCompute}).at("forward") == 4);
  auto second = events(written(r, TraceOptions{}), "X", trace_pid(0), "fwd L1 mb0");
  REQUIRE(second.size() == 1);
  CHECK(second[0].at("ts").get<double>() == 1000.001);
  CHECK(second[0].at("dur").get<double>() == 999.998);  // ends at 2 ms, where the next forward starts: 1 ns short
}

TEST_CASE("a slice ending where the next starts is written 1 ns short so floating-point viewers never nest them") {
  // In doubles 526.191 + 88.363 = 614.5540000000001 > 614.554: speedscope, which adds ts + dur, would open the second
  // slice inside the first and never close the first. One such sum in nine rounds up like this.
  SimulationRecord r = two_stage_record();
  r.tasks.resize(2);  // fwd L0 mb0 and fwd L1 mb0 on device 0
  r.tasks[0].start_s = 526.191e-6;
  r.tasks[0].end_s = r.tasks[1].start_s = 614.554e-6;
  r.tasks[1].end_s = 700e-6;
  REQUIRE(526.191 + 88.363 > 614.554);
  TraceCheck check = write_and_check(r, TraceOptions{}, "touch.json");
  INFO(problems(check));
  CHECK(check.valid());
  Json trace = written(r, TraceOptions{});
  auto first = events(trace, "X", trace_pid(0), "fwd L0 mb0"), second = events(trace, "X", trace_pid(0), "fwd L1 mb0");
  REQUIRE(first.size() == 1);
  REQUIRE(second.size() == 1);
  CHECK(first[0].at("ts").get<double>() == 526.191);
  CHECK(first[0].at("dur").get<double>() == 88.362);
  CHECK(first[0].at("ts").get<double>() + first[0].at("dur").get<double>() < second[0].at("ts").get<double>());
  CHECK(second[0].at("ts").get<double>() == 614.554);
  CHECK(second[0].at("dur").get<double>() == 85.446);  // the last slice of its thread keeps its full length
}

TEST_CASE("processes sort by mesh position pp then dp then tp") {
  SimulationRecord r = two_stage_record();
  r.devices = {DeviceInfo{0, 0, 0, 0, 1}, DeviceInfo{0, 1, 0, 0, 0}};  // device 0 is now the later stage
  Json trace = written(r, TraceOptions{});
  auto sort_index = [&](int pid) {
    return events(trace, "M", pid, "process_sort_index").at(0).at("args").at("sort_index");
  };
  CHECK(sort_index(trace_pid(1)) == 0);
  CHECK(sort_index(trace_pid(0)) == 1);
  auto thread_index = events(trace, "M", trace_pid(0), "thread_sort_index");
  REQUIRE(thread_index.size() == 4);
  CHECK(thread_index[0].at("args").at("sort_index") == 0);  // compute first
}

TEST_CASE("event args carry the fields that are set and omit the rest") {
  Json trace = written(two_stage_record(), TraceOptions{});
  auto fwd = events(trace, "X", trace_pid(0), "fwd L1 mb1");
  REQUIRE(fwd.size() == 1);
  CHECK(fwd[0].at("cat") == "forward");
  CHECK(fwd[0].at("args") == Json{{"task", 4}, {"layer", 1}, {"microbatch", 1}, {"stage", 0}, {"flops", 1000000000}});
  auto adam = events(trace, "X", trace_pid(0), "adam");
  REQUIRE(adam.size() == 1);
  CHECK(adam[0].at("cat") == "optimizer");
  CHECK(adam[0].at("args").count("layer") == 0);
  CHECK(adam[0].at("args").count("bytes") == 0);
}

TEST_CASE("otherData carries the caller's fields and placesim's") {
  Json trace = written(two_stage_record(), TraceOptions{}, Json{{"experiment", "two-stage"}});
  const Json& other = trace.at("otherData");
  CHECK(other.at("experiment") == "two-stage");
  CHECK(other.at("placesim_version") == PLACESIM_VERSION);
  CHECK(other.at("step_time_s").get<double>() == Approx(0.014));
  CHECK(other.at("trace_detail") == "coarse");
  CHECK(other.at("threads") == 8);
  CHECK(other.at("flows") == 3);
}

TEST_CASE("an unwritable trace path is an input error naming the path") {
  CHECK_THROWS_WITH(write_chrome_trace("/nonexistent-dir/t.json", two_stage_record(), Json{}, TraceOptions{}),
                    Catch::Contains("/nonexistent-dir/t.json"));
  CHECK_THROWS_AS(write_chrome_trace("/nonexistent-dir/t.json", two_stage_record(), Json{}, TraceOptions{}),
                  InputError);
}

TEST_CASE("a synthetic 16-GPU pipeline gives exact counts and flows in fine detail") {
  // pp 4 x tp 2 x dp 2, 16 micro-batches, 2 layers per stage, recompute: per device 16 x 2 x 3 compute tasks and
  // the optimizer, 16 x 2 x 3 x 2 TP all-reduces of 2 steps each, 2 DP buckets of 2 steps each.
  test::PipelineShape shape{4, 2, 2, 16, 2};
  SimulationRecord r = test::synthetic_pipeline(shape);
  TraceSummary summary;
  TraceCheck check = write_and_check(r, TraceOptions{{}, TraceDetail::Fine}, "pipeline.json", &summary);
  INFO(problems(check));
  REQUIRE(check.valid());
  for (int device = 0; device < 16; ++device) {
    CHECK(check.counts.slices_of(trace_pid(device), "forward") == 16 * 2);
    CHECK(check.counts.slices_of(trace_pid(device), "recompute") == 16 * 2);
    CHECK(check.counts.slices.at({trace_pid(device), kCompute}).size() == 4);
    CHECK(check.counts.slices.at({trace_pid(device), trace_tid(Stream::TpComm)}).at("collective") == 192 * 2);
  }
  // Flows: each TP collective's step 0 feeds the peer's step 1 (192 per device), the same for each DP bucket
  // (2 per device), and every P2P: activations from stages 0-2 and gradients from stages 1-3, 16 each per device.
  CHECK(check.counts.flows == 16 * 192 + 16 * 2 + 2 * 3 * 4 * 16);
  CHECK(summary.flows == check.counts.flows);
}

TEST_CASE("coarse gzipped traces cost under 20 bytes per event") {
  // At this rate one pipeline of a 1024-GPU GPT-3 run (2.5 million coarse events for dp0, 0.3 million for
  // dp0+tp0; see bench/trace_size.cpp) stays under 50 MB.
  SimulationRecord r = test::synthetic_pipeline(test::PipelineShape{4, 2, 2, 32, 3});
  ScratchFile file("size.json.gz");
  TraceSummary s = write_chrome_trace(file.path, r, Json{}, TraceOptions{});
  double events = static_cast<double>(s.slices + 2 * s.flows + s.counter_events);
  CHECK(s.slices == 16 * (32 * 3 * 3 + 1 + 32 * 3 * 3 * 2 + 2) + 2 * 2 * 3 * 4 * 32);
  CHECK(static_cast<double>(std::filesystem::file_size(file.path)) / events < 20);
}
