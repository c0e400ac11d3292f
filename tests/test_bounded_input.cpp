// Every input is a regular file of bounded size, read once (issue "nothing hung, bounded inputs"): a directory, FIFO
// or device is refused naming the path and what it is, before anything blocks or reads forever; a JSON input larger
// than kMaxJsonInputBytes is refused by its size; standard input stops at the same limit. Also: a key spelt with
// escapes is the key, --model-hf paths are the shell's, and sweep merge's advice matches what --resume accepts.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/FileHelpers.hpp"
#include "tests/Helpers.hpp"
#include "tests/SweepHelpers.hpp"
#include "traces/chrome/TraceValidator.hpp"
#include "traces/output/OutputFile.hpp"
#include "workloads/json/JsonReader.hpp"

using namespace placesim;
using test::lines_of;
using test::read;
using test::refusal_message;
using test::run_placesim;
using test::sweep_cli;
using test::TempDir;
using test::write;

namespace {

// Runs `placesim <arguments>` in folder `cwd` under coreutils' timeout: a read that blocks ends as exit code 124
// (timeout's), never as a hung test. (run_placesim puts the binary first: a harmless --version, then the command.)
int placesim_in(const std::string& cwd, const std::string& arguments, std::string* output) {
  return run_placesim("--version >/dev/null; cd '" + cwd + "' && timeout 120 " + PLACESIM_BINARY + " " + arguments,
                      output);
}

int cli(const std::string& arguments, std::string* output) {
  return placesim_in("/", arguments, output);
}

std::string fifo_in(const TempDir& dir) {
  const std::string path = dir / "fifo.json";
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  return path;
}

const char* kExperiment = R"({"model": "gpt-1.7b", "strategy": "dp"})";

}  // namespace

TEST_CASE("A FIFO given as input is refused without blocking", "[bounded-input]") {
  TempDir dir;
  const std::string fifo = fifo_in(dir);
  std::string out;
  // Nothing ever writes the FIFO: a reader that opened it would wait forever (exit 124 from timeout).
  REQUIRE(cli("check " + fifo, &out) == 2);
  CHECK_THAT(out, Catch::Contains("'" + fifo + "' is a FIFO (named pipe), not a regular file"));
  REQUIRE(cli("check --model-hf " + fifo, &out) == 2);
  CHECK_THAT(out, Catch::Contains("'" + fifo + "' is a FIFO"));
  REQUIRE(cli("sweep merge --check " + fifo, &out) == 2);
  CHECK_THAT(out, Catch::Contains("'" + fifo + "' is a FIFO"));
  // In the library, after the command line proved it returns: JSON inputs and streamed traces alike.
  CHECK_THAT(refusal_message([&] { read_json_file(fifo); }),
             Catch::Contains("is a FIFO (named pipe), not a regular file"));
  CHECK_THAT(refusal_message([&] { GzReadBuffer buffer(fifo); }), Catch::Contains("is a FIFO"));
  CHECK_THAT(refusal_message([&] { validate_trace_file(fifo); }), Catch::Contains("is a FIFO"));
}

TEST_CASE("A directory given as input is refused as a directory, not as malformed JSON", "[bounded-input]") {
  TempDir dir;
  std::filesystem::create_directory(dir / "in");
  std::string out;
  CHECK(cli("check " + dir / "in", &out) == 2);
  CHECK_THAT(out, Catch::Contains("'" + dir / "in" + "' is a directory, not a regular file"));
  CHECK_THAT(out, !Catch::Contains("malformed JSON"));
  CHECK_THAT(refusal_message([&] { read_text_file(dir.path); }), Catch::Contains("is a directory"));
}

TEST_CASE("Devices are refused before a byte is read, wherever a file is named", "[bounded-input]") {
  TempDir dir;
  std::string out;
  CHECK(cli("check /dev/zero", &out) == 2);
  CHECK_THAT(out, Catch::Contains("'/dev/zero' is a character device, not a regular file"));
  CHECK(cli("check --model-hf /dev/zero", &out) == 2);
  CHECK_THAT(out, Catch::Contains("'/dev/zero' is a character device"));
  for (const char* device : {"/dev/zero", "/dev/urandom"}) {
    write(dir / "cluster.json", std::string(R"({"model": "gpt-1.7b", "strategy": "dp", "cluster": {"preset":
        "dgx-a100", "accelerator": {"preset": "a100-80gb", "profile": ")") +
                                    device + "\"}}}");
    CHECK(cli("check " + dir / "cluster.json", &out) == 2);
    CHECK_THAT(out, Catch::Contains("'" + std::string(device) + "' is a character device"));
  }
  // A profiler trace has no size limit (it is streamed), but a device is no trace either.
  write(
      dir / "node.json",
      R"({"model": "gpt-1.7b", "strategy": {"preset": "dp", "dp": 8}, "cluster": {"preset": "dgx-a100", "nodes": 1}})");
  CHECK(cli("calibrate --trace /dev/zero " + dir / "node.json" + " --out " + dir / "p.json", &out) == 2);
  CHECK_THAT(out, Catch::Contains("'/dev/zero' is a character device"));
  CHECK(cli("compare /dev/urandom " + dir / "node.json", &out) == 2);
  CHECK_THAT(out, Catch::Contains("'/dev/urandom' is a character device"));
  // --resume on a device would read it forever (refused by --resume, or earlier as an output).
  write(dir / "sweep.json", std::string("{") + test::kSmallBase + R"(, "axes": {"strategy.dp": [1, 2]}})");
  CHECK(cli("sweep " + dir / "sweep.json" + " --out /dev/zero --resume --quiet", &out) == 2);
  CHECK_THAT(out, Catch::Contains("'/dev/zero'"));
}

TEST_CASE("A JSON input larger than the limit is refused by its size; the largest JSON shipped is within it",
          "[bounded-input]") {
  TempDir dir;
  // Sparse: the size is stat's, no 64 MiB is written.
  const std::string big = dir / "big.json";
  write(big, "{}");
  REQUIRE(::truncate(big.c_str(), static_cast<off_t>(kMaxJsonInputBytes + 1)) == 0);
  std::string out;
  CHECK(cli("check " + big, &out) == 2);
  CHECK_THAT(out, Catch::Contains("'" + big + "' holds " + std::to_string(kMaxJsonInputBytes + 1) +
                                  " bytes; an input read whole may hold at most " + std::to_string(kMaxJsonInputBytes) +
                                  " bytes (64 MiB)"));
  CHECK(cli("check --model-hf " + big, &out) == 2);
  CHECK_THAT(out, Catch::Contains("holds " + std::to_string(kMaxJsonInputBytes + 1) + " bytes"));
  // Exactly at the limit the size passes; the zeros are then malformed JSON.
  REQUIRE(::truncate(big.c_str(), static_cast<off_t>(kMaxJsonInputBytes)) == 0);
  CHECK_THAT(refusal_message([&] { read_json_file(big); }), !Catch::Contains("bytes; an input read whole"));
  // Every JSON file of the source tree is within the limit, and the largest reads.
  std::uintmax_t largest = 0;
  std::string largest_path;
  for (const char* top : {"docs", "examples", "sim", "strategies", "tests", "topology", "traces", "workloads"})
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(std::string(PLACESIM_SOURCE_DIR) + "/" + top))
      if (entry.is_regular_file() && entry.path().extension() == ".json" && entry.file_size() > largest) {
        largest = entry.file_size();
        largest_path = entry.path().string();
      }
  INFO(largest_path);
  CHECK(largest > 1'000'000);  // the golden reports of tens of thousands of lines were found
  CHECK(largest <= kMaxJsonInputBytes);
  CHECK_NOTHROW(read_json_file(largest_path));
}

TEST_CASE("Standard input is read up to the same limit, then refused", "[bounded-input]") {
  TempDir dir;
  write(dir / "e.json", kExperiment);
  std::string out;
  CHECK(cli("check - < " + dir / "e.json", &out) == 0);
  CHECK(cli("simulate - < /dev/zero", &out) == 2);
  CHECK_THAT(out, Catch::Contains("standard input gives more than " + std::to_string(kMaxJsonInputBytes) +
                                  " bytes; an input read whole may hold at most"));
}

TEST_CASE("A key written with escapes is the key: given twice it is refused, naming both spellings",
          "[bounded-input]") {
  auto structure = [](const std::string& text) { return refusal_message([&] { check_json_structure(text, "x"); }); };
  CHECK(structure(R"({"l\u0061yers": 4, "layers": 8})") ==
        "x:1:20: key \"layers\" appears twice in one object (first at 1:2 as \"l\\u0061yers\", here as \"layers\"); "
        "JSON parsers keep only the last, so say it once");
  CHECK_THAT(structure(R"({"layers": 4, "l\u0061yers": 8})"),
             Catch::Contains("key \"layers\" appears twice in one object (first at 1:2 as \"layers\", here as "
                             "\"l\\u0061yers\")"));
  // A surrogate pair is one character (U+1F600), as the parser decodes it; a line feed escaped two ways is one key.
  CHECK_THAT(structure("{\"\\ud83d\\ude00\": 1, \"\xF0\x9F\x98\x80\": 2}"), Catch::Contains("appears twice"));
  CHECK_THAT(structure(R"({"a\nb": 1, "a\u000ab": 2})"),
             Catch::Contains("key \"a\\u000ab\" appears twice in one object (first at 1:2 as \"a\\nb\""));
  // Different keys stay different; escapes the parser refuses are left to it.
  CHECK(structure(R"({"\u00e9": 1, "e": 2, "\u00c9": 3})") == "(no error)");  // é, e, É
  CHECK_THAT(structure(R"({"\u00e9": 1, "\u00E9": 2})"), Catch::Contains("appears twice"));
  CHECK(structure(R"({"\u12": 1, "\ud800": 2, "\ud800": 3})") != "(no error)");  // two equal (bad) spellings
  CHECK_THAT(refusal_message([] { parse_json_text(R"({"\u12": 1})", "x"); }), Catch::Contains("malformed JSON"));
  // Through the command line: an experiment with the escaped duplicate.
  TempDir dir;
  write(dir / "e.json", R"({"model": {"preset": "gpt-1.7b", "l\u0061yers": 4, "layers": 8}, "strategy": "dp"})");
  std::string out;
  CHECK(cli("check " + dir / "e.json", &out) == 2);
  CHECK_THAT(out, Catch::Contains(dir / "e.json" + ":1:52: key \"layers\" appears twice"));
}

TEST_CASE("A --model-hf path is the shell's, relative to the current folder; a refusal names the file tried",
          "[bounded-input]") {
  TempDir dir;
  std::filesystem::create_directory(dir / "in");
  write(dir / "in/exp.json", kExperiment);
  std::string out;
  // The flag is the shell's: in/nope.json from the folder holding in/, not in/in/nope.json.
  CHECK(placesim_in(dir.path, "check in/exp.json --model-hf in/nope.json", &out) == 2);
  CHECK_THAT(out, Catch::Contains("cannot open '" + dir / "in/nope.json" + "': No such file or directory"));
  CHECK_THAT(out, !Catch::Contains("in/in/"));
  std::filesystem::copy_file(std::string(PLACESIM_SOURCE_DIR) + "/tests/data/hf/qwen3-4b.json", dir / "in/q.json");
  CHECK(placesim_in(dir.path, "check in/exp.json --model-hf in/q.json", &out) == 0);
  CHECK(placesim_in(dir.path + "/in", "check exp.json --model-hf q.json", &out) == 0);
  // Inside an experiment a relative hf_config is the experiment folder's: the message names that path.
  write(dir / "in/hf.json", R"({"model": {"hf_config": "nope.json"}, "strategy": "dp"})");
  CHECK(placesim_in(dir.path, "check in/hf.json", &out) == 2);
  CHECK_THAT(out, Catch::Contains("cannot open 'in/nope.json': No such file or directory"));
  write(dir / "in/hf.json", R"({"model": {"hf_config": "q.json"}, "strategy": "dp"})");
  CHECK(placesim_in(dir.path, "check in/hf.json", &out) == 0);
}

namespace {

// 4 tp x 5 dp = 20 points, in 3 shard files s0..s2; returns " s0 s1 s2".
std::string three_shards(const TempDir& dir) {
  write(dir / "sweep.json", std::string("{") + test::kSmallBase +
                                R"(, "axes": {"strategy.tp": [1, 2, 4, 8], "strategy.dp": [1, 2, 4, 8, 16]}})");
  std::string shards;
  for (int i = 0; i < 3; ++i) {
    const std::string out = dir / ("s" + std::to_string(i) + ".jsonl");
    REQUIRE(sweep_cli(dir / "sweep.json" + " --shard " + std::to_string(i) + "/3 --out " + out + " --quiet") == 0);
    shards += " " + out;
  }
  return shards;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

}  // namespace

TEST_CASE("sweep merge refuses a row with a key twice, naming the shard file and line", "[bounded-input]") {
  TempDir dir;
  const std::string shards = three_shards(dir);
  auto lines = lines_of(read(dir / "s1.jsonl"));
  // Row 2 of shard 1 is point 4; a second "index" claims point 7 for the readers that keep the last key.
  lines[1].insert(lines[1].size() - 1, ",\"index\":7");
  write(dir / "s1.jsonl", joined(lines));
  std::string out;
  CHECK(sweep_cli("merge --check" + shards, &out) == 2);
  CHECK_THAT(out,
             Catch::Contains(dir / "s1.jsonl" + ":2: a damaged row (key \"index\" appears twice, at columns 2 and " +
                             std::to_string(lines[1].size() - 9) + ": JSON readers would keep one or the other)"));
}

TEST_CASE("sweep merge's advice for a line cut mid-file is what --resume then accepts", "[bounded-input]") {
  TempDir dir;
  const std::string shards = three_shards(dir);
  const std::string whole = read(dir / "s1.jsonl");
  auto lines = lines_of(whole);
  // A task killed in the middle of line 3, then rows appended after the cut (a run that did not truncate it).
  lines[2] = lines[2].substr(0, 60);
  write(dir / "s1.jsonl", joined(lines));
  std::string out;
  CHECK(sweep_cli("merge --check" + shards, &out) == 2);
  CHECK_THAT(out, Catch::Contains(dir / "s1.jsonl" + ":3: a damaged row (not one complete JSON object"));
  CHECK_THAT(out, Catch::Contains("1 damaged line(s), which --resume does not repair") &&
                      Catch::Contains("delete them (sed -i '3d' " + dir / "s1.jsonl" +
                                      "), then resume shard 1/3 with --shard 1/3 --resume"));
  CHECK_THAT(out, Catch::Contains("delete its damaged lines (above), then resume it with --shard 1/3 --resume"));
  // Not before: --resume refuses the cut line.
  CHECK(sweep_cli(dir / "sweep.json --shard 1/3 --out " + dir / "s1.jsonl --resume --quiet", &out) == 2);
  // The advice, followed, completes the shard: the merge then holds every point once.
  REQUIRE(run_placesim("--version >/dev/null; sed -i '3d' " + dir / "s1.jsonl", &out) == 0);
  REQUIRE(sweep_cli(dir / "sweep.json --shard 1/3 --out " + dir / "s1.jsonl --resume --quiet", &out) == 0);
  CHECK(sweep_cli("merge --check" + shards, &out) == 0);
  // A cut last line alone keeps its advice: --resume drops it.
  write(dir / "s1.jsonl", whole.substr(0, whole.size() - 30));
  CHECK(sweep_cli("merge --check" + shards, &out) == 2);
  CHECK_THAT(out, Catch::Contains("a cut last line (its task was killed while writing); resume that shard"));
  CHECK_THAT(out, !Catch::Contains("damaged"));
  REQUIRE(sweep_cli(dir / "sweep.json --shard 1/3 --out " + dir / "s1.jsonl --resume --quiet", &out) == 0);
  CHECK(read(dir / "s1.jsonl") == whole);
  // A line of garbage mid-file is damage too (read past, not taken for another version's rows).
  write(dir / "s1.jsonl", whole + "hello\n");
  CHECK(sweep_cli("merge --check" + shards, &out) == 2);
  CHECK_THAT(out, Catch::Contains(":8: a damaged row") && Catch::Contains("sed -i '8d'"));
}
