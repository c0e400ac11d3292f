// Hostile input: every user-caused failure is a refusal (exit 2) naming the field or position, never a
// crash, a wrapped number or a silent choice. One regression test per defect class found by the audit.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "strategies/sweep/SweepPoint.hpp"
#include "tests/CliHelpers.hpp"
#include "tests/FileHelpers.hpp"
#include "tests/Helpers.hpp"
#include "workloads/json/JsonReader.hpp"

using namespace placesim;
using placesim::test::cli_output;
using placesim::test::run_placesim;
using placesim::test::write_temp;

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
  CHECK_THAT(
      out, Catch::Contains("dp_replicate x dp_shard x cp x tp x pp = 1 x 1099511627776 x 1 x 1099511627776 x 1 exceeds "
                           "2147483647 devices"));
  path = write_temp("batch.json", R"({"model": "gpt-7.5b", "training": {"micro_batch": 8589934592},
                                     "strategy": {"dp": 2147483647, "microbatches": 8589934592}})");
  CHECK(run_placesim("analyze " + path, &out) == 2);
  CHECK_THAT(out, Catch::Contains("overflows a 64-bit count"));
}

// Defect 2 (model sizes): hidden = 2^31 reported 2.98e12 parameters (the true count is about 5.5e20) with exit 0.
TEST_CASE("Model shapes whose counts overflow 64 bits are refused naming the fields") {
  const std::string fsdp = "analyze examples/llama3-8b-fsdp.json ";
  CHECK_THAT(cli_output(fsdp + "--set model.hidden=2147483648", 2),
             Catch::Contains("model.hidden=2147483648 is above the largest model dimension placesim accepts "
                             "(2147483647)"));
  CHECK_THAT(cli_output(fsdp + "--set model.layers=4611686018427387904", 2),
             Catch::Contains("model.layers=4611686018427387904 is above the largest model dimension"));
  // Every dimension within 2^31 - 1, the product beyond 2^50: 32 layers x 3 x 2^20 x 2^24 MLP parameters = 1.7e15.
  CHECK_THAT(cli_output(fsdp + "--set model.hidden=1048576 --set model.ffn=16777216", 2),
             Catch::Contains("model.layers=32, model.hidden=1048576, model.ffn=16777216, model.vocab=128256 "
                             "gives about") &&
                 Catch::Contains("parameters, more than the 2^50 (1.1e15) placesim counts exactly"));
  // One micro-batch's activations: 2^31 - 1 tokens x 8 x 4096 = 7.0e13 is fine, x 2^20 x 4096 is not.
  CHECK_THAT(cli_output(fsdp + "--set model.seq_len=2147483647 --set training.micro_batch=1048576 "
                               "--set training.global_batch=16777216",
                        2),
             Catch::Contains("model.seq_len x training.micro_batch x model.hidden = 2147483647 x 1048576 x 4096"));
  cli_output(fsdp + "--set model.parameters=1e16", 2);
}

// Defect 3 (times): seq_len = 1e9 stalled SimGrid, a bandwidth of 1e-300 gave non-finite times after the whole run.
TEST_CASE("Absurd task lengths are refused before simulating, naming the fields") {
  std::string out;
  const std::string big_memory = R"( --set 'cluster.accelerator={"preset": "a100-80gb", "hbm_bytes": "1e6TB"}')";
  CHECK(run_placesim("simulate examples/small-3d-1f1b.json --quiet --set model.seq_len=1000000000 "
                     "--set model.learned_positions=false" +
                         big_memory,
                     &out) == 2);
  CHECK_THAT(out, Catch::Contains("compute task of layer") && Catch::Contains("model.seq_len=1000000000") &&
                      Catch::Contains("more than the 1e+06 s placesim simulates"));
  CHECK(run_placesim(R"(simulate examples/small-3d-1f1b.json --quiet --set 'cluster.nic_bw="1e-290GB/s"')", &out) == 2);
  CHECK_THAT(out, Catch::Contains("at cluster.nic_bw=9.6e-282 B/s would last") &&
                      Catch::Contains("check the bandwidth and its unit"));
}

// Defect 4 (sizes): a sweep of 32 axes x 9e6 values built every value (5.7 GB) before counting its points.
TEST_CASE("A sweep too large to enumerate is refused from its axis sizes, before any value is built") {
  std::string axes;
  for (int a = 0; a < 32; ++a)
    axes += std::string(a ? ", " : "") + "\"x" + std::to_string(a) + "\": {\"from\": 1, \"to\": 9000000, \"step\": 1}";
  std::string path = write_temp("huge-sweep.json", R"({"base": {"model": "gpt-7.5b"}, "axes": {)" + axes + "}}");
  std::string out;
  CHECK(run_placesim("sweep " + path + " --count", &out) == 2);
  CHECK_THAT(out, Catch::Contains("axes: the sweep has 9e+06 x 9e+06 x") &&
                      Catch::Contains("points, more than the 2^53 that can be enumerated"));
  // Few points but too many values in all: two axes of 9e6 values are refused by their sum.
  path = write_temp("wide-sweep.json",
                    R"({"base": {"model": "gpt-7.5b"}, "axes": {"a": {"from": 1, "to": 9000000, "step": 1},
                        "b": {"from": 1, "to": 9000000, "step": 1}}})");
  CHECK(run_placesim("sweep " + path + " --count", &out) == 2);
  CHECK_THAT(out, Catch::Contains("axes: the axes hold 1.8e+07 values together, more than the 10000000"));
}

// Defect 4 (sizes): 65,536 devices at one micro-batch each simulated silently for over 10 minutes (1.07e9 ring flows).
TEST_CASE("A step whose simulation would take hours is refused with the estimate, unless --force") {
  std::string out;
  CHECK(run_placesim("simulate examples/small-3d-1f1b.json --quiet --set cluster.nodes=8192 --set strategy.dp=8192 "
                     "--set training.global_batch=8192 --symmetry off",
                     &out) == 2);
  CHECK_THAT(out, Catch::Contains("simulating this step would take about") && Catch::Contains("s of host time") &&
                      Catch::Contains("flows and") && Catch::Contains("Use --force"));
}

// Defect 5: output paths were checked only after the simulation, and a failed trace write was an internal error.
TEST_CASE("Output paths are checked before any work, and a failed write is a refusal") {
  std::string out;
  for (const char* flag : {"--trace", "--report", "--svg"}) {
    INFO(flag);
    CHECK(run_placesim(std::string("simulate examples/gpt3-175b-3d.json ") + flag + " /nonexistent-dir/x", &out) == 2);
    CHECK_THAT(out, Catch::Contains(std::string(flag) + "=/nonexistent-dir/x: its directory '/nonexistent-dir' does "
                                                        "not exist"));
    CHECK(out.find("simulated in") == std::string::npos);  // refused before simulating
  }
  CHECK(run_placesim("analyze examples/small-3d-1f1b.json --out /tmp", &out) == 2);
  CHECK_THAT(out, Catch::Contains("--out=/tmp: is a directory, not a file"));
  // /dev/full accepts the open and fails every write: the trace's close reports it as a refusal (exit 2).
  CHECK(run_placesim("simulate examples/small-3d-1f1b.json --quiet --trace /dev/full", &out) == 2);
  CHECK_THAT(out, Catch::Contains("writing '/dev/full' failed: No space left on device"));
}

// Found by the fuzzer (tests/fuzz): a --set value that is not JSON is taken as a string, and one with bytes that are
// not UTF-8 made every later dump() of it (the error message, the report) throw nlohmann's type_error: exit 1.
TEST_CASE("A --set value that is not valid UTF-8 is refused naming the byte") {
  CHECK(invalid_utf8_at("plain ascii") == std::string::npos);
  CHECK(invalid_utf8_at("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80") == std::string::npos);  // é, €, an emoji
  CHECK(invalid_utf8_at("ab\xFF") == 2);                                                     // never a lead byte
  CHECK(invalid_utf8_at("ab\xC3") == 2);                                                     // cut short
  CHECK(invalid_utf8_at("\xC0\xAF") == 0);                                                   // overlong '/'
  CHECK(invalid_utf8_at("x\xED\xA0\x80") == 1);                                              // a UTF-16 surrogate
  CHECK(invalid_utf8_at("\xF4\x90\x80\x80") == 0);                                           // past U+10FFFF
  CHECK_THROWS_WITH(parse_cli_value("fi\xB2"
                                    "delity"),
                    "--set value: byte 3 is not valid UTF-8");
  std::string out;
  CHECK(run_placesim("analyze examples/small-3d-1f1b.json --set 'model.name=ab\xFF'", &out) == 2);
  CHECK_THAT(out, Catch::Contains("--set value: byte 3 is not valid UTF-8"));
  // Nor a field path: its keys are written back into the experiment (found by the fuzzer too).
  Json experiment = Json::object();
  CHECK_THROWS_WITH(set_path(experiment, "strategy.m\xF9sh", Json(1)), "--set field path: byte 11 is not valid UTF-8");
  CHECK(run_placesim("analyze examples/small-3d-1f1b.json --set 'strategy.m\xF9sh=1'", &out) == 2);
  CHECK_THAT(out, Catch::Contains("--set field path: byte 11 is not valid UTF-8"));
  // A message about another bad value never fails itself: invalid bytes print as replacement characters.
  CHECK(show(Json::array({std::string("a\xFF")})) == "[\"a\xEF\xBF\xBD\"]");
}

// Found by the fuzzer: a sweep whose base had a misspelt top-level key ("treining") and whose first point failed on
// another field (so the load-time check, which parses the first point, never reached the unknown key) passed its other
// points on the section-cached path, while parsing them whole refused them. The base's keys are now checked on their
// own, and the cached path leaves any other top-level key to the whole parser.
TEST_CASE("A sweep base with an unknown top-level key is refused, whatever its first point") {
  const std::string text = R"({"base": {"model": "gpt-7.5b", "strategy": "zero3", "treining": {"global_batch": 32}},
                               "axes": {"strategy.schedule": ["bogus", "1f1b"]}})";
  CHECK_THROWS_WITH(parse_sweep_text(text, "typo.json", ""),
                    Catch::Contains("base: unknown key treining (did you mean 'training'?)"));
  // The evaluator itself, given such a spec, agrees on both paths (a bogus value would now be refused at load).
  SweepSpec spec = parse_sweep_text(R"({"base": {"model": "gpt-7.5b", "strategy": "zero3"},
                                        "axes": {"strategy.schedule": ["gpipe", "1f1b"]}})",
                                    "typo.json", "");
  spec.base["treining"] = Json{{"global_batch", 32}};
  for (bool reuse : {true, false}) {
    INFO("reuse_sections " << reuse);
    PointEvaluator ev(spec, 0, reuse);
    const PointOutcome o = ev.evaluate(1);
    CHECK(o.status == PointStatus::Invalid);
    CHECK(o.reason == "unknown key treining (did you mean 'training'?)");
  }
}

// Found by the fuzzer's boundary seeds: 4 x n_embd of a GPT-2 config without n_inner, and from + k x step of an
// integer sweep range, were signed 64-bit overflows (UB; a wrapped value in a release build).
TEST_CASE("Integer products in a GPT-2 import and in sweep ranges never wrap") {
  std::string config =
      write_temp("gpt2-config.json", R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 4611686018427387904,
      "n_head": 2, "vocab_size": 100, "n_positions": 64})");
  std::string out;
  CHECK(run_placesim("analyze --model-hf " + config + " --strategy dp", &out) == 2);
  CHECK_THAT(out, Catch::Contains("model.hidden=4611686018427387904 is above the largest model dimension"));
  // Without n_inner the MLP is 4 x hidden, as before (GPT-2 small: 3072).
  config = write_temp("gpt2-small.json", R"({"model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12,
      "vocab_size": 50257, "n_positions": 1024, "n_inner": null})");
  CHECK(run_placesim("analyze --model-hf " + config + " --strategy dp", &out) == 0);
  CHECK_THAT(out, Catch::Contains("\"ffn\": 3072"));
  CHECK_THROWS_WITH(parse_sweep_text(R"({"base": {"model": "gpt-7.5b", "strategy": "dp"},
      "axes": {"training.global_batch": {"from": 1, "to": 9223372036854775807, "step": 9223372036854775807}}})",
                                     "range.json", ""),
                    Catch::Contains("axes.training.global_batch: value 2 of the range (from 1 by 9223372036854775807) "
                                    "is beyond 64-bit integers"));
  CHECK_THROWS_WITH(parse_sweep_text(R"({"base": {"model": "gpt-7.5b", "strategy": "dp"},
      "axes": {"training.global_batch": {"from": 1, "to": 1e19, "times": 10}}})",
                                     "range.json", ""),
                    Catch::Contains("axes.training.global_batch: value 20 of the range is beyond 64-bit integers"));
  CHECK_THROWS_WITH(parse_sweep_text(R"({"base": {"model": "gpt-7.5b", "strategy": "dp"},
      "axes": {"training.global_batch": {"from": 18446744073709551615, "to": 18446744073709551615, "step": 1}}})",
                                     "range.json", ""),
                    Catch::Contains("18446744073709551615 is beyond 64-bit signed integers"));
}
