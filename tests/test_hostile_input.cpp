// Hostile input (issue 15): every user-caused failure is a refusal (exit 2) naming the field or position, never a
// crash, a wrapped number or a silent choice. One regression test per defect class found by the audit.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "tests/Helpers.hpp"
#include "workloads/json/JsonReader.hpp"

using namespace placesim;
using placesim::test::run_placesim;

namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = "/tmp/placesim-hostile-" + std::to_string(::getpid()) + "-" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

// Defect 1: 50,000 nested levels overflowed the stack (SIGSEGV) in the recursive merge-patch, copy and dump.
TEST_CASE("Deeply nested JSON is refused with its position, in files and in --set values") {
  const std::string deep = std::string(50000, '[') + std::string(50000, ']');
  for (const char* section : {"model", "strategy", "cluster", "pipeline"}) {
    INFO(section);
    const std::string model = std::string(section) == "model" ? "" : R"("model": "gpt-7.5b", )";
    std::string path = write_temp("deep.json", "{" + model + "\"" + section + "\": " + deep + "}");
    std::string out;
    CHECK(run_placesim("analyze " + path, &out) == 2);
    CHECK_THAT(out, Catch::Contains("JSON nested deeper than 200 levels is refused"));
  }
  std::string out;
  CHECK(run_placesim("analyze examples/llama3-8b-fsdp.json --set 'strategy.preset=" + deep + "'", &out) == 2);
  CHECK_THAT(out, Catch::Contains("--set value:1:201: JSON nested deeper than 200 levels"));
  // 200 levels are within the limit: the parser reads them and the field check refuses the value itself.
  CHECK_NOTHROW(check_json_structure(std::string(199, '[') + std::string(199, ']'), "x"));
}

// Defect 6: a key given twice in one object was silently last-wins.
TEST_CASE("A key given twice in one object is refused, naming the key and both positions") {
  std::string path = write_temp("dup.json", "{\"model\": \"gpt-7.5b\",\n \"strategy\": {\"dp\": 2,\n  \"dp\": 4}}");
  std::string out;
  CHECK(run_placesim("analyze " + path, &out) == 2);
  CHECK_THAT(out, Catch::Contains(":3:3: key \"dp\" appears twice in one object (first at 2:15)"));
  // The same key in different objects, or escaped alike, is no duplicate; an escaped duplicate is.
  CHECK_NOTHROW(check_json_structure(R"({"a": {"dp": 1}, "b": {"dp": 2}, "dp": 3})", "x"));
  CHECK_THROWS_WITH(check_json_structure(R"({"a\"b": 1, "a\"b": 2})", "x"),
                    Catch::Contains("key \"a\"b\" appears twice"));
  CHECK_NOTHROW(check_json_structure(R"(["dp", "dp"])", "x"));
}

// Defect 3 (one of its inputs): a number literal beyond double range ended as an internal error (exit 1).
TEST_CASE("A number beyond double range is refused, not an internal error") {
  std::string path = write_temp("huge.json", R"({"model": "gpt-7.5b", "strategy": {"dp": 1e309}})");
  std::string out;
  CHECK(run_placesim("analyze " + path, &out) == 2);
  CHECK_THAT(out, Catch::Contains("number overflow") && Catch::Contains("beyond the range of a double"));
}

// Defect 2 (its mesh and batch inputs): dp = tp = 2^40 reported 0 devices, micro_batch x dp = 2^66 a global batch 0.
TEST_CASE("Products of degrees and batch sizes that overflow are refused naming the fields") {
  std::string out;
  std::string path =
      write_temp("wrap.json", R"({"model": "gpt-7.5b", "strategy": {"dp": 1099511627776, "tp": 1099511627776}})");
  CHECK(run_placesim("analyze " + path, &out) == 2);
  CHECK_THAT(out, Catch::Contains("dp_replicate x dp_shard x tp x pp = 1 x 1099511627776 x 1099511627776 x 1 exceeds "
                                  "2147483647 devices"));
  path = write_temp("batch.json", R"({"model": "gpt-7.5b", "training": {"micro_batch": 8589934592},
                                     "strategy": {"dp": 2147483647, "microbatches": 8589934592}})");
  CHECK(run_placesim("analyze " + path, &out) == 2);
  CHECK_THAT(out, Catch::Contains("overflows a 64-bit count"));
}
