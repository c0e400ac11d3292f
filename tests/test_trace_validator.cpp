#include <catch2/catch.hpp>

#include "tests/TraceFixtures.hpp"
#include "traces/chrome/TraceValidator.hpp"
#include "traces/output/OutputFile.hpp"

using namespace placesim;

namespace {

/// A valid hand-made trace: one process, two threads, a flow between them, a counter; `extra` events are appended.
std::string trace(const std::string& extra = "") {
  return R"({"traceEvents":[
{"ph":"M","pid":1,"name":"process_name","args":{"name":"gpu0"}},
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"compute"}},
{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"pp-send"}},
{"ph":"M","pid":1,"tid":1,"name":"thread_sort_index","args":{"sort_index":0}},
{"ph":"X","pid":1,"tid":1,"ts":0,"dur":10,"name":"fwd","cat":"forward"},
{"ph":"X","pid":1,"tid":2,"ts":2,"dur":4,"name":"send","cat":"p2p"},
{"ph":"s","pid":1,"tid":2,"ts":4,"id":1,"cat":"p2p","name":"p2p"},
{"ph":"X","pid":1,"tid":1,"ts":10,"dur":5,"name":"bwd","cat":"backward"},
{"ph":"f","pid":1,"tid":1,"ts":12,"id":1,"cat":"p2p","name":"p2p","bp":"e"},
{"ph":"B","pid":1,"tid":1,"ts":20,"name":"opt","cat":"optimizer"},
{"ph":"E","pid":1,"tid":1,"ts":25},
{"ph":"C","pid":1,"ts":0,"name":"memory","args":{"parameters":100,"activations":20}},
{"ph":"C","pid":1,"ts":5,"name":"memory","args":{"parameters":100,"activations":50}})" +
         extra + "\n],\"displayTimeUnit\":\"ms\"}";
}

/// Exactly one problem, containing `text`.
void one_problem(const TraceCheck& check, const std::string& text) {
  std::string all;
  for (const auto& p : check.problems) all += p + "\n";
  INFO(all);
  CHECK(check.problems.size() == 1);
  CHECK(all.find(text) != std::string::npos);
}

}  // namespace

TEST_CASE("a valid hand-made trace passes and is counted") {
  TraceCheck check = validate_trace_text(trace());
  INFO((check.problems.empty() ? std::string() : check.problems.front()));
  CHECK(check.valid());
  CHECK(check.counts.events == 13);
  CHECK(check.counts.slices.at({1, 1}).at("forward") == 1);
  CHECK(check.counts.slices.at({1, 1}).at("optimizer") == 1);  // a B/E pair
  CHECK(check.counts.slices_of(1, "p2p") == 1);
  CHECK(check.counts.flows == 1);
  CHECK(check.counts.counter_max.at(1).at("memory") == 150);
  CHECK(check.counts.process_names.at(1) == "gpu0");
  CHECK(check.counts.thread_names.at({1, 2}) == "pp-send");
}

TEST_CASE("the array form of the format is accepted") {
  std::string text = R"([{"ph":"M","pid":1,"name":"process_name","args":{"name":"p"}},
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"t"}},
{"ph":"X","pid":1,"tid":1,"ts":0,"dur":1,"name":"a","cat":"forward"}])";
  TraceCheck check = validate_trace_text(text);
  CHECK(check.valid());
  CHECK(check.counts.slices_of(1, "forward") == 1);
}

TEST_CASE("overlapping complete events on one thread are reported") {
  one_problem(validate_trace_text(trace(R"(,{"ph":"X","pid":1,"tid":2,"ts":5,"dur":2,"name":"late","cat":"p2p"})")),
              "overlapping 'send'");
}

TEST_CASE("a nested complete event counts as an overlap") {
  one_problem(validate_trace_text(trace(R"(,{"ph":"X","pid":1,"tid":2,"ts":4,"dur":1,"name":"inner","cat":"p2p"})")),
              "overlapping");
}

TEST_CASE("events touching end to start do not overlap") {
  CHECK(validate_trace_text(trace(R"(,{"ph":"X","pid":1,"tid":2,"ts":6,"dur":1,"name":"next","cat":"p2p"})")).valid());
}

TEST_CASE("a slice whose floating-point end passes the next start on its thread is reported") {
  // Exactly touching in decimal, but 526.191 + 88.363 = 614.5540000000001 in doubles: speedscope nests the two.
  std::string touching = R"(,{"ph":"X","pid":1,"tid":2,"ts":526.191,"dur":88.363,"name":"first","cat":"p2p"})"
                         R"(,{"ph":"X","pid":1,"tid":2,"ts":614.554,"dur":1,"name":"second","cat":"p2p"})";
  one_problem(validate_trace_text(trace(touching)),
              "where 'first' ends on the same thread (pid 1 tid 2), but that end "
              "computed as ts + dur in floating point is later");
}

TEST_CASE("an unmatched flow start is reported") {
  one_problem(validate_trace_text(trace(R"(,{"ph":"s","pid":1,"tid":2,"ts":5,"id":2,"cat":"p2p","name":"p2p"})")),
              "flow p2p id 2 starts but never finishes");
}

TEST_CASE("an unmatched flow finish is reported") {
  one_problem(
      validate_trace_text(trace(R"(,{"ph":"f","pid":1,"tid":1,"ts":25,"id":3,"cat":"p2p","name":"p2p","bp":"e"})")),
      "flow p2p id 3 finishes but never starts");
}

TEST_CASE("flows match by category as well as id") {
  auto check = validate_trace_text(trace(R"(,{"ph":"s","pid":1,"tid":2,"ts":5,"id":1,"cat":"other","name":"x"})"));
  one_problem(check, "flow other id 1 starts but never finishes");
}

TEST_CASE("a flow finishing before it starts is reported") {
  std::string text = trace(R"(,{"ph":"X","pid":1,"tid":2,"ts":30,"dur":4,"name":"recv2","cat":"p2p"},
{"ph":"f","pid":1,"tid":2,"ts":31,"id":9,"cat":"p2p","name":"p2p","bp":"e"},
{"ph":"X","pid":1,"tid":1,"ts":40,"dur":5,"name":"send2","cat":"p2p"},
{"ph":"s","pid":1,"tid":1,"ts":42,"id":9,"cat":"p2p","name":"p2p"})");
  one_problem(validate_trace_text(text), "before it starts");
}

TEST_CASE("a flow event outside every slice of its thread is reported") {
  std::string text = trace(R"(,{"ph":"s","pid":1,"tid":2,"ts":8,"id":4,"cat":"p2p","name":"p2p"},
{"ph":"f","pid":1,"tid":1,"ts":25,"id":4,"cat":"p2p","name":"p2p","bp":"e"})");
  one_problem(validate_trace_text(text), "binds to no slice");
}

TEST_CASE("a non-numeric counter value is reported") {
  one_problem(validate_trace_text(trace(R"(,{"ph":"C","pid":1,"ts":9,"name":"memory","args":{"parameters":"100"}})")),
              "counter arg 'parameters' is \"100\", not a number");
}

TEST_CASE("a B without its E and an E without its B are reported") {
  one_problem(validate_trace_text(trace(R"(,{"ph":"B","pid":1,"tid":2,"ts":40,"name":"open","cat":"p2p"})")),
              "B 'open' at 40.000 us on pid 1 tid 2 has no matching E");
  one_problem(validate_trace_text(trace(R"(,{"ph":"E","pid":1,"tid":2,"ts":40})")), "E without a matching B");
}

TEST_CASE("timestamps going back on a thread are reported") {
  one_problem(validate_trace_text(trace(R"(,{"ph":"i","pid":1,"tid":1,"ts":1,"name":"mark","s":"t"})")),
              "is before the previous event of its thread");
}

TEST_CASE("negative and missing timestamps are reported") {
  one_problem(validate_trace_text(trace(R"(,{"ph":"X","pid":1,"tid":1,"ts":-1,"dur":0,"name":"n","cat":"x"})")),
              "negative ts");
  one_problem(validate_trace_text(trace(R"(,{"ph":"X","pid":1,"tid":1,"dur":0,"name":"n","cat":"x"})")),
              "ts missing or not a number");
}

TEST_CASE("threads and processes without names are reported") {
  one_problem(validate_trace_text(trace(R"(,{"ph":"X","pid":1,"tid":7,"ts":0,"dur":1,"name":"a","cat":"x"})")),
              "pid 1 tid 7 has events but no thread_name");
  one_problem(validate_trace_text(trace(R"(,{"ph":"C","pid":2,"ts":0,"name":"memory","args":{"a":1}})")),
              "pid 2 has events but no process_name");
}

TEST_CASE("unknown phases missing pids and negative durations are reported") {
  one_problem(validate_trace_text(trace(R"(,{"ph":"Q","pid":1,"tid":1,"ts":30})")), "unknown or missing ph");
  one_problem(validate_trace_text(trace(R"(,{"ph":"X","tid":1,"ts":30,"dur":1})")), "no integer pid");
  one_problem(validate_trace_text(trace(R"(,{"ph":"X","pid":1,"tid":1,"ts":30,"dur":-1})")),
              "non-negative numeric dur");
}

TEST_CASE("malformed JSON and a missing event array are reported") {
  CHECK_FALSE(validate_trace_text(trace().substr(0, 200)).valid());
  CHECK(validate_trace_text(trace().substr(0, 200)).problems.front().find("not valid JSON") != std::string::npos);
  one_problem(validate_trace_text(R"({"events":[]})"), "no traceEvents array");
}

TEST_CASE("a gzip-compressed trace file is validated like a plain one") {
  placesim::test::ScratchFile file("hand.json.gz");
  {
    OutputFile out(file.path);
    out.write(trace(R"(,{"ph":"E","pid":1,"tid":2,"ts":40})"));
    out.close();
  }
  one_problem(validate_trace_file(file.path), "E without a matching B");
}

TEST_CASE("many problems are capped with a count of the rest") {
  std::string extra;
  for (int i = 0; i < 150; ++i) extra += R"(,{"ph":"E","pid":1,"tid":2,"ts":40})";
  TraceCheck check = validate_trace_text(trace(extra));
  REQUIRE(check.problems.size() == 101);
  CHECK(check.problems.back() == "... 50 more problems");
}

TEST_CASE("events that need no thread may omit tid") {
  CHECK(validate_trace_text(trace(R"(,{"ph":"i","pid":1,"ts":30,"name":"global mark","s":"g"})")).valid());
  one_problem(validate_trace_text(trace(R"(,{"ph":"X","pid":1,"ts":30,"dur":1,"name":"a","cat":"x"})")),
              "no integer tid");
}
