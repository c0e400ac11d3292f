#include <catch2/catch.hpp>

#include "workloads/json/JsonReader.hpp"
#include "workloads/json/Numbers.hpp"
#include "workloads/json/Units.hpp"

using namespace placesim;

namespace {

// The message of the InputError that `read` throws on a reader of `text` at path "x".
template <class Read>
std::string error_of(const char* text, Read read) {
  Json j = Json::parse(text);
  ObjectReader r(j, "x");
  try {
    read(r);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("ObjectReader reads present values and falls back on absent ones") {
  Json j = Json::parse(R"({"n": 2, "bw": "400Gbps", "f": 0.5, "zero": 0, "s": ["a", "b"]})");
  ObjectReader r(j, "x");
  CHECK(r.require_number("n") == 2);
  CHECK(r.get_positive("bw", 1, parse_bandwidth) == 50e9);
  CHECK(r.require_fraction("f") == 0.5);
  CHECK(r.require_non_negative("zero") == 0);
  CHECK(r.get_strings("s", {}) == std::vector<std::string>{"a", "b"});
  CHECK(r.get_positive("absent", 7) == 7);
  CHECK(r.get_non_negative("absent", 3) == 3);
  CHECK(r.get_fraction("absent", 1) == 1);
  CHECK(r.get_strings("none", {"kept"}) == std::vector<std::string>{"kept"});
  CHECK_NOTHROW(r.finish());
}

TEST_CASE("A required value that is missing is refused naming the field") {
  CHECK(error_of("{}", [](ObjectReader& r) { r.require("k"); }) == "x.k is required but missing");
  CHECK(error_of("{}", [](ObjectReader& r) { r.require_positive("k"); }) == "x.k is required but missing");
  CHECK(error_of("{}", [](ObjectReader& r) { r.require_non_negative("k"); }) == "x.k is required but missing");
  CHECK(error_of("{}", [](ObjectReader& r) { r.require_fraction("k"); }) == "x.k is required but missing");
  CHECK(error_of("{}", [](ObjectReader& r) { r.require_number("k"); }) == "x.k is required but missing");
}

TEST_CASE("A number must be a number, or a string its unit parser reads") {
  CHECK(error_of(R"({"k": "fast"})", [](ObjectReader& r) { r.get_number("k", 0); }) == "x.k=\"fast\" must be a number");
  CHECK(error_of(R"({"k": "fast"})", [](ObjectReader& r) { r.get_positive("k", 0); }) ==
        "x.k=\"fast\" must be a number");
  CHECK(error_of(R"({"k": "2 parsecs"})", [](ObjectReader& r) { r.get_number("k", 0, parse_time); }) ==
        "x.k=\"2 parsecs\": unknown time unit 'parsecs' (use s ms us ns)");
}

TEST_CASE("A positive number refuses zero and negatives, showing the value as written") {
  CHECK(error_of(R"({"k": 0})", [](ObjectReader& r) { r.get_positive("k", 1); }) == "x.k=0 must be positive");
  CHECK(error_of(R"({"k": -2.5})", [](ObjectReader& r) { r.require_positive("k"); }) == "x.k=-2.5 must be positive");
  CHECK(error_of(R"({"k": "0Gbps"})", [](ObjectReader& r) { r.get_positive("k", 1, parse_bandwidth); }) ==
        "x.k=\"0Gbps\" must be positive");
}

TEST_CASE("A non-negative number refuses negatives") {
  CHECK(error_of(R"({"k": -1})", [](ObjectReader& r) { r.get_non_negative("k", 0); }) == "x.k=-1 must not be negative");
  CHECK(error_of(R"({"k": "-1us"})", [](ObjectReader& r) { r.require_non_negative("k", parse_time); }) ==
        "x.k=\"-1us\" must not be negative");
}

TEST_CASE("A fraction must be above 0 and at most 1") {
  CHECK(error_of(R"({"k": 1.5})", [](ObjectReader& r) { r.get_fraction("k", 1); }) == "x.k=1.5 must be in (0, 1]");
  CHECK(error_of(R"({"k": 0})", [](ObjectReader& r) { r.require_fraction("k"); }) == "x.k=0 must be in (0, 1]");
}

TEST_CASE("An integer refuses fractional values, a positive integer also zero") {
  CHECK(error_of(R"({"k": 2.5})", [](ObjectReader& r) { r.get_int("k", 0); }) == "x.k=2.5 must be an integer");
  CHECK(error_of(R"({"k": 0})", [](ObjectReader& r) { r.get_positive_int("k", 1); }) ==
        "x.k=0 must be a positive integer");
  CHECK(error_of("{}", [](ObjectReader& r) { r.require_int("k"); }) == "x.k is required but missing");
}

TEST_CASE("A string must be a string") {
  CHECK(error_of(R"({"k": 3})", [](ObjectReader& r) { r.get_string("k", ""); }) == "x.k=3 must be a string");
  CHECK(error_of("{}", [](ObjectReader& r) { r.require_string("k"); }) == "x.k is required but missing");
}

TEST_CASE("A string list refuses a non-list and names a non-string item by index and value") {
  CHECK(error_of(R"({"sources": "one"})", [](ObjectReader& r) { r.get_strings("sources", {}); }) ==
        "x.sources=one must be a list of strings");
  CHECK(error_of(R"({"sources": ["a", 3]})", [](ObjectReader& r) { r.get_strings("sources", {}); }) ==
        "x.sources[1]=3 must be a string");
}

TEST_CASE("check() states a rule of its caller with the value as written") {
  CHECK(error_of(R"({"k": 0.5})", [](ObjectReader& r) { r.check(false, "k", "must be >= 1"); }) ==
        "x.k=0.5 must be >= 1");
  CHECK(error_of(R"({"k": "a"})", [](ObjectReader& r) { r.check(true, "k", "never said"); }) == "(no error)");
}

TEST_CASE("refuse_name suggests the nearest known name, or says where to look") {
  std::vector<std::string> known{"nvlink3", "nvlink4"};
  CHECK_THROWS_WITH(refuse_name("f", "nvlnk4", "a known fabric", known, " (see list)"),
                    "f=nvlnk4 is not a known fabric (did you mean 'nvlink4'?)");
  CHECK_THROWS_WITH(refuse_name("f", "ethernet", "a known fabric", known, " (see list)"),
                    "f=ethernet is not a known fabric (see list)");
}

TEST_CASE("Number formatters: printf's %g and a scale picked by magnitude") {
  CHECK(format_significant(1e6) == "1e+06");
  CHECK(format_significant(1024) == "1024");
  CHECK(format_significant(1.0 / 3, 10) == "0.3333333333");
  auto count = [](double v) { return format_scaled(v, {{1e9, 1e9, "%.2f B"}, {1e6, 1e6, "%.2f M"}, {0, 1, "%.0f"}}); };
  CHECK(count(175e9) == "175.00 B");
  CHECK(count(2.5e6) == "2.50 M");
  CHECK(count(512) == "512");
  CHECK(count(-3) == "-3");  // below every step: the last one
}

TEST_CASE("ObjectReader reads bounded integers and names the range it refuses") {
  const Json j = Json::parse(R"({"low": 0, "high": 1001, "frac": 2.5, "big": 3e9, "ok": 7})");
  ObjectReader r(j, "s");
  CHECK(r.get_int_in("ok", 1, 1, 1000) == 7);
  CHECK(r.get_int_in("absent", 42, 1) == 42);
  CHECK_THROWS_WITH(r.get_int_in("low", 1, 1), "s.low=0 must be an integer >= 1");
  CHECK_THROWS_WITH(r.get_int_in("high", 1, 1, 1000), "s.high=1001 must be an integer from 1 to 1000");
  CHECK_THROWS_WITH(r.get_int_in("frac", 1, 1), "s.frac=2.5 must be an integer >= 1");
  CHECK_THROWS_WITH(r.get_int_in("big", 1, 1), "s.big=3000000000.0 must be an integer >= 1");
  CHECK_THROWS_WITH(r.require_int_in("absent", 1), "s.absent is required but missing");
}

// Mistakes a user makes, each named as what it is.
TEST_CASE("A number given as a string is shown with its quotes, so the message says it is a string") {
  CHECK(error_of(R"({"seq_len": "4096"})", [](ObjectReader& r) { r.get_positive_int("seq_len", 1); }) ==
        "x.seq_len=\"4096\" must be a positive integer");
  CHECK(error_of(R"({"sp": "true"})", [](ObjectReader& r) { r.get_bool("sp", false); }) ==
        "x.sp=\"true\" must be true or false");
}

TEST_CASE("Every unknown key of an object is reported at once, each with its nearest known key") {
  CHECK(error_of(R"({"layers": 2, "hiden": 5, "head": 3})", [](ObjectReader& r) {
          r.get_int("layers", 1);
          r.get_int("hidden", 1);
          r.get_int("heads", 1);
          r.finish();
        }) == "unknown keys x.head (did you mean 'x.heads'?), x.hiden (did you mean 'x.hidden'?)");
}

TEST_CASE("A misspelt required key is named beside the missing one") {
  CHECK(error_of(R"({"layers": 2, "hiden": 5})", [](ObjectReader& r) {
          r.get_int("layers", 1);
          r.require("hidden");
        }) == "x.hidden is required but missing (x.hiden is given: a misspelling?)");
  // A key the parser already read is a known one, not a misspelling of the missing key.
  CHECK(error_of(R"({"forward_s": 1})", [](ObjectReader& r) {
          r.get_number("forward_s", 0);
          r.require("backward_s");
        }) == "x.backward_s is required but missing");
}

TEST_CASE("A name the word begins is suggested before one a letter away") {
  CHECK(nearest("h100", {"h200", "h100-sxm", "a100-80gb", "h100-sxm-96gb"}) == "h100-sxm");
  CHECK(nearest("h20", {"h200", "h100-sxm"}) == "h200");
  CHECK(nearest("b100", {"b200", "h100-sxm"}) == "b200");
}

TEST_CASE("A bare number read by a unit parser is refused when no SI value is plausible, suggesting units") {
  // 400 meant as 400 Gb/s would be a 400 B/s link: a step of 29,407,695 s for llama3-8b-fsdp.
  CHECK(error_of(R"({"k": 400})", [](ObjectReader& r) { r.get_positive("k", 1, parse_bandwidth); }) ==
        "x.k=400 is a bare number read as 400 B/s: give a unit, e.g. \"400Gbps\" or \"400GB/s\" (a bandwidth without "
        "a unit is in B/s and must be at least 1e6 B/s = 1 MB/s)");
  CHECK(error_of(R"({"k": "80"})", [](ObjectReader& r) { r.get_positive("k", 1, parse_bytes); }) ==
        "x.k=\"80\" is a bare number read as 80 B: give a unit, e.g. \"80GB\" or \"80GiB\" (a size without a unit is "
        "in B and must be at least 1e6 B = 1 MB)");
  CHECK(error_of(R"({"k": 2})", [](ObjectReader& r) { r.get_non_negative("k", 0, parse_time); }) ==
        "x.k=2 is a bare number read as 2 s: give a unit, e.g. \"2us\" or \"2ms\" (a time without a unit is in s and "
        "must be at most 0.01 s = 10 ms, as every time read so is a latency)");
  CHECK(error_of(R"({"k": 989})", [](ObjectReader& r) { r.get_positive("k", 1, parse_flops); }) ==
        "x.k=989 is a bare number read as 989 FLOP/s: give a unit, e.g. \"989TFLOPS\" or \"989GFLOPS\" (a FLOP/s "
        "without a unit is in FLOP/s and must be at least 1e9 FLOP/s = 1 GFLOP/s)");
}

TEST_CASE("A bare number plausible in SI units is read as such, at the bounds too") {
  Json j = Json::parse(R"({"bw": 1e6, "big": 5e10, "size": 1000000, "t": 0.01, "t0": 0, "tiny": 3e-6, "f": 1e9})");
  ObjectReader r(j, "x");
  CHECK(r.get_positive("bw", 1, parse_bandwidth) == 1e6);
  CHECK(r.get_positive("big", 1, parse_bandwidth) == 5e10);
  CHECK(r.get_positive("size", 1, parse_bytes) == 1e6);
  CHECK(r.get_non_negative("t", 1, parse_time) == 0.01);
  CHECK(r.get_non_negative("t0", 1, parse_time) == 0);
  CHECK(r.get_non_negative("tiny", 1, parse_time) == 3e-6);
  CHECK(r.get_positive("f", 1, parse_flops) == 1e9);
  // With a unit any size is taken as written.
  CHECK(parse_bandwidth("400 B/s", "x") == 400);
  CHECK(parse_time("2s", "x") == 2);
}
