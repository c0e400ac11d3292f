// Every error of an experiment file at once: field errors and unknown keys of every section, then the checks across
// fields whose inputs parsed; one message, capped, naming the file.
#include <catch2/catch.hpp>
#include <fstream>

#include "strategies/analytic/ExperimentFile.hpp"
#include "strategies/placement/Experiment.hpp"
#include "tests/FileHelpers.hpp"
#include "tests/Helpers.hpp"

using namespace placesim;
using placesim::test::run_placesim;

namespace {

// The errors parse_experiment collects for `text` (none: the experiment parsed).
std::vector<std::string> errors_of(const std::string& text, const std::string& origin = "exp.json") {
  ErrorList errors(origin);
  try {
    parse_experiment(Json::parse(text), PLACESIM_SOURCE_DIR, errors);
  } catch (const InputErrors& e) {
    return e.messages;
  }
  return {};
}

// What parse_experiment with a list throws for `text`, as the command line prints it after "error: ".
std::string message_of(const std::string& text, const std::string& origin = "exp.json") {
  ErrorList errors(origin);
  try {
    parse_experiment(Json::parse(text), PLACESIM_SOURCE_DIR, errors);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

// gpt-7.5b has 32 heads (the 7.5B GPT of Narayanan et al., arXiv 2104.04473 table 1: 36 layers, hidden 4096);
// 32 = 3 x 10 + 2, so tp 3 does not divide them. Its seq_len is written as a string and "dpp" is a typo of "dp".
const char* kThreeErrors = R"({"model": {"preset": "gpt-7.5b", "seq_len": "8192"},
                               "strategy": {"preset": "megatron-3d", "tp": 3, "dpp": 2}})";
const char* kSeqLenError = R"(model.seq_len="8192" must be a positive integer)";
const char* kDppError = "unknown key strategy.dpp (did you mean 'strategy.dp'?)";
const char* kTpError = "invalid strategy: strategy.tp=3 does not divide model.heads=32";

}  // namespace

TEST_CASE("A field error, a cross-field rule and an unknown key come out together, each naming its field") {
  CHECK(errors_of(kThreeErrors) == std::vector<std::string>{kSeqLenError, kDppError, kTpError});
  CHECK(message_of(kThreeErrors) ==
        std::string("exp.json: 3 errors:\n  ") + kSeqLenError + "\n  " + kDppError + "\n  " + kTpError);
}

TEST_CASE("Without a list the first error alone is thrown, as a sweep's point reports it") {
  CHECK_THROWS_WITH(test::experiment(kThreeErrors), kSeqLenError);
}

TEST_CASE("Errors in different sections are all reported, in the order of the file's sections") {
  CHECK(errors_of(R"({"model": "gpt-7.5b", "training": {"dtype": "fp33"}, "strategy": {"dp": 8},
                      "cluster": {"preset": "dgx-a100", "nodes": "2"}})") ==
        std::vector<std::string>{"training.dtype=fp33 is not one of: bf16 fp16 fp32 (did you mean 'fp32'?)",
                                 "cluster.nodes=\"2\" must be an integer >= 1"});
  // An unknown strategy preset leaves the other sections, and the strategy's own fields, still read.
  CHECK(errors_of(R"({"model": "gpt-7.5b", "strategy": {"preset": "zero9", "tp": "two"},
                      "training": {"micro_batch": 0}})") ==
        std::vector<std::string>{"strategy.preset=zero9 is not a strategy preset (did you mean 'zero1'?)",
                                 "training.micro_batch=0 must be a positive integer",
                                 "strategy.tp=\"two\" must be a positive integer"});
}

TEST_CASE("A cross-field check whose input failed to parse is skipped, not run on a fallback") {
  // 100 samples are not a multiple of micro_batch x dp = 3 x 8 = 24: with micro_batch parsed, the rule runs.
  CHECK(errors_of(R"({"model": "gpt-7.5b", "training": {"micro_batch": 3, "global_batch": 100, "dtype": 3},
                      "strategy": {"dp": 8}})") ==
        std::vector<std::string>{"training.dtype=3 must be a string",
                                 "training.global_batch=100 is not a multiple of training.micro_batch x strategy.dp = "
                                 "3 x 8"});
  // With micro_batch unreadable the rule is not judged on its fallback (1 x 8 would not divide 100 either).
  CHECK(errors_of(R"({"model": "gpt-7.5b", "training": {"micro_batch": "two", "global_batch": 100, "dtype": 3},
                      "strategy": {"dp": 8}})") ==
        std::vector<std::string>{"training.micro_batch=\"two\" must be a positive integer",
                                 "training.dtype=3 must be a string"});
  // gpt-7.5b's 36 layers hold pp 4; an unreadable layer count would read as 0 and refuse pp 4 for it.
  CHECK(errors_of(R"({"model": {"preset": "gpt-7.5b", "layers": "many"}, "strategy": {"pp": 4, "dp": "x"}})") ==
        std::vector<std::string>{"model.layers=\"many\" must be a positive integer",
                                 "strategy.dp=\"x\" must be a positive integer"});
}

TEST_CASE("One error keeps the single-line message of one InputError") {
  CHECK(message_of(R"({"model": {"preset": "gpt-7.5b", "seq_len": "8192"}, "strategy": "megatron-3d"})") ==
        kSeqLenError);
}

TEST_CASE("Past 20 errors the message counts the rest") {
  Json strategy = Json::object();
  for (int k = 0; k < 30; ++k) strategy["unknown_" + std::to_string(k)] = k;
  const std::string text = Json{{"model", "gpt-7.5b"}, {"strategy", strategy}}.dump();
  const std::vector<std::string> lines = test::lines_of(message_of(text));
  REQUIRE(lines.size() == 1 + kShownErrors + 1);
  CHECK(lines.front() == "exp.json: 30 errors:");
  for (std::size_t i = 1; i <= kShownErrors; ++i) CHECK_THAT(lines[i], Catch::StartsWith("  unknown key strategy."));
  CHECK(lines.back() == "  ... and 10 more");
}

TEST_CASE("The same message found twice is one error") {
  ErrorList errors("exp.json");
  errors.add("a.b=1 must be 2");
  errors.add("a.b=1 must be 2");
  CHECK(errors.size() == 1);
}

TEST_CASE("A check is dropped only when it names a failed field, not a longer name that begins with it") {
  ErrorList errors("exp.json");
  errors.fail("strategy.tp");
  CHECK_FALSE(errors.add_check("strategy.tp=3 does not divide model.heads=32"));
  CHECK_FALSE(errors.add_check("training.micro_batch x strategy.tp = 1 x 3"));
  CHECK(errors.add_check("strategy.tp_overlap=true needs a tp group"));
  errors.fail("model");  // a section: named as the head of its fields, not as a word
  CHECK_FALSE(errors.add_check("model.heads=32 is not divisible by model.kv_heads=5"));
  CHECK(errors.add_check("the model shape is too large"));
}

TEST_CASE("check and analyze print every error under the file's name and exit 2") {
  test::TempDir dir;
  const std::string path = dir / "three.json";
  test::write(path, kThreeErrors);
  for (const char* command : {"check", "analyze"}) {
    std::string out;
    CHECK(run_placesim(std::string(command) + " " + path, &out) == 2);
    CHECK(out == std::string("placesim ") + command + ": error: " + path + ": 3 errors:\n  " + kSeqLenError + "\n  " +
                     kDppError + "\n  " + kTpError + "\n");
  }
  std::string out;
  test::write(path, R"({"model": {"preset": "gpt-7.5b", "seq_len": "8192"}, "strategy": "megatron-3d"})");
  CHECK(run_placesim("check " + path, &out) == 2);
  CHECK(out == std::string("placesim check: error: ") + kSeqLenError + "\n");
}
