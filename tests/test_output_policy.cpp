// The output policy: no output replaces an input, another output or a file placesim did not write; a killed write
// leaves the old file; devices are written in place; a failed write to stdout is an error.
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <utility>
#include <vector>

#include "FileHelpers.hpp"
#include "Helpers.hpp"
#include "traces/output/OutputFile.hpp"
#include "traces/output/OutputPolicy.hpp"

using namespace placesim;

namespace {

const char* kExperiment = R"({"model": {"layers": 4, "hidden": 256, "heads": 4, "vocab": 1000, "seq_len": 128},
  "training": {"global_batch": 8, "micro_batch": 1}, "strategy": {"preset": "dp", "dp": 8},
  "cluster": {"preset": "dgx-a100", "nodes": 1}})";

const char* kSweep = R"({"base": {"model": {"layers": 4, "hidden": 256, "heads": 4, "vocab": 1000, "seq_len": 128},
  "training": {"global_batch": 8, "micro_batch": 1}, "strategy": {"preset": "dp", "dp": 8},
  "cluster": {"preset": "dgx-a100", "nodes": 1}},
  "axes": {"training.micro_batch": [1, 2]}, "mode": "analyze"})";

// Runs placesim; the exit code, and the output in `out`.
int run(const std::string& arguments, std::string* out) {
  return test::run_placesim(arguments, out);
}

}  // namespace

TEST_CASE("output policy: an output naming an input is refused and the input survives", "[output-policy]") {
  test::TempDir dir;
  const std::string e = dir / "e.json";
  test::write(e, kExperiment);
  std::string out;
  for (const std::string& command :
       {"simulate " + e + " --quiet --report " + e, "analyze " + e + " --out " + e, "check " + e + " --out " + e}) {
    INFO(command);
    const int rc = run(command, &out);
    if (command.rfind("check", 0) == 0 && rc != 2) continue;  // check may have no --out: refused as unknown, also 2
    CHECK(rc == 2);
    CHECK(test::read(e) == kExperiment);
  }
  CHECK(run("simulate " + e + " --quiet --report " + e, &out) == 2);
  CHECK(out.find("--report=" + e + " is the input " + e) != std::string::npos);
  // verify's verdict and converge's curves, each naming both paths.
  for (const auto& [command, flag] : std::vector<std::pair<std::string, std::string>>{
           {"verify " + e + " --out " + e, "--out"},
           {"converge " + e + " --steps 2 --out-csv " + e, "--out-csv"},
           {"converge " + e + " --steps 2 --out-jsonl " + e, "--out-jsonl"}}) {
    INFO(command);
    CHECK(run(command, &out) == 2);
    CHECK(out.find(flag + "=" + e + " is the input " + e) != std::string::npos);
    CHECK(test::read(e) == kExperiment);
  }
  // A calibration's measurements file, and a spelling of the same path through "./".
  test::write(dir / "m.json", test::read(std::string(PLACESIM_SOURCE_DIR) + "/examples/calibrate-measured.json"));
  const std::string measured = test::read(dir / "m.json");
  CHECK(run("calibrate " + dir / "m.json" + " --out " + dir.path + "/./m.json", &out) == 2);
  CHECK(test::read(dir / "m.json") == measured);
}

TEST_CASE("output policy: two outputs naming one file are refused", "[output-policy]") {
  test::TempDir dir;
  test::write(dir / "e.json", kExperiment);
  std::string out;
  CHECK(run("simulate " + dir / "e.json" + " --quiet --report " + dir / "x" + " --trace " + dir / "x", &out) == 2);
  CHECK(out.find("--report=" + dir / "x" + " and --trace=" + dir / "x" + " name the same file") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "x"));
}

TEST_CASE("output policy: sweeps keep their sweep file, results and notes", "[output-policy]") {
  test::TempDir dir;
  const std::string s = dir / "s.json";
  test::write(s, kSweep);
  std::string out;
  // --out and --csv naming one file; --csv or --out naming the sweep (with --force too).
  CHECK(run("sweep " + s + " --out " + dir / "r.jsonl" + " --csv " + dir / "r.jsonl", &out) == 2);
  CHECK_FALSE(std::filesystem::exists(dir / "r.jsonl"));
  CHECK(run("sweep " + s + " --out " + dir / "r.jsonl" + " --csv " + s, &out) == 2);
  CHECK(run("sweep " + s + " --out " + s + " --force", &out) == 2);
  CHECK(test::read(s) == kSweep);
  // Two shards, merged: not over the sweep file, not over a file placesim did not write.
  REQUIRE(run("sweep " + s + " --out " + dir / "a.jsonl" + " --shard 0/2", &out) == 0);
  REQUIRE(run("sweep " + s + " --out " + dir / "b.jsonl" + " --shard 1/2", &out) == 0);
  CHECK(run("sweep merge " + s + " " + dir / "a.jsonl" + " " + dir / "b.jsonl" + " --sweep " + s, &out) == 2);
  CHECK(test::read(s) == kSweep);
  test::write(dir / "notes.txt", "my notes\n");
  CHECK(run("sweep merge " + dir / "notes.txt" + " " + dir / "a.jsonl" + " " + dir / "b.jsonl", &out) == 2);
  CHECK(out.find("notes.txt exists and is not an output placesim wrote") != std::string::npos);
  CHECK(test::read(dir / "notes.txt") == "my notes\n");
  // placesim's own merged rows may be replaced by the same merge again.
  REQUIRE(run("sweep merge " + dir / "m.jsonl" + " " + dir / "a.jsonl" + " " + dir / "b.jsonl", &out) == 0);
  CHECK(run("sweep merge " + dir / "m.jsonl" + " " + dir / "a.jsonl" + " " + dir / "b.jsonl", &out) == 0);
}

TEST_CASE("output policy: an edited Slurm script is not replaced", "[output-policy]") {
  test::TempDir dir;
  const std::string s = dir / "s.json";
  test::write(s, kSweep);
  std::string out;
  REQUIRE(run("sweep " + s + " --out " + dir / "r.jsonl" + " --slurm", &out) == 0);
  REQUIRE(run("sweep " + s + " --out " + dir / "r.jsonl" + " --slurm", &out) == 0);  // the same script again
  const std::string script = dir / "r.sbatch";
  REQUIRE(std::filesystem::exists(script));
  const std::string edited = test::read(script) + "# module load my-cuda\n";
  test::write(script, edited);
  CHECK(run("sweep " + s + " --out " + dir / "r.jsonl" + " --slurm", &out) == 2);
  CHECK(out.find("differs from the script this sweep writes") != std::string::npos);
  CHECK(test::read(script) == edited);
}

TEST_CASE("output policy: a killed write leaves the old file, and the next run no temporary", "[output-policy]") {
  test::TempDir dir;
  const std::string path = dir / "trace.json";
  test::write(path, "old placesim trace");
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // writes half a trace and dies as kill -9 would: no destructor, no close
    OutputFile out(path);
    out.write(std::string(3 << 20, 'x'));
    ::kill(::getpid(), SIGKILL);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(WIFSIGNALED(status));
  CHECK(test::read(path) == "old placesim trace");
  CHECK(std::filesystem::exists(path + ".tmp" + std::to_string(child)));
  {
    OutputFile out(path);
    out.write("new");
    out.close();
  }
  CHECK(test::read(path) == "new");
  int left = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path))
    left += entry.path().filename().string().find(".tmp") != std::string::npos;
  CHECK(left == 0);
}

TEST_CASE("output policy: a device is written in place and stays a device", "[output-policy]") {
  test::TempDir dir;
  test::write(dir / "e.json", kExperiment);
  const std::string device = dir / "null";
  if (::mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
    WARN("cannot create a device node here (not root): skipped");
    return;
  }
  std::string out;
  CHECK(run("analyze " + dir / "e.json" + " --out " + device, &out) == 0);
  CHECK(run("simulate " + dir / "e.json" + " --quiet --report " + device + " --trace " + dir / "t.json", &out) == 0);
  struct stat st {};
  REQUIRE(::stat(device.c_str(), &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
}

TEST_CASE("output policy: a failed write to stdout is exit 2", "[output-policy]") {
  test::TempDir dir;
  test::write(dir / "e.json", kExperiment);
  std::string out;
  // (run_placesim sends stderr where stdout goes: the message is lost to /dev/full, the exit code is not.)
  CHECK(run("analyze " + dir / "e.json" + " > /dev/full", &out) == 2);
  CHECK(run("presets --json > /dev/full", &out) == 2);
  CHECK(run("analyze " + dir / "e.json" + " >&-", &out) == 2);
  // With --report - the summary goes to stderr; a failed write there is exit 2 too (nowhere left for a message).
  auto exit_code = [](const std::string& arguments) {
    const int status = std::system((std::string(PLACESIM_BINARY) + " " + arguments).c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  const std::string simulate = "simulate " + dir / "e.json" + " --report - > /dev/null";
  CHECK(exit_code(simulate + " 2> /dev/null") == 0);
  CHECK(exit_code(simulate + " 2> /dev/full") == 2);
}

TEST_CASE("output policy: written_by_placesim tells placesim's outputs from others", "[output-policy]") {
  test::TempDir dir;
  test::write(dir / "r.json", R"({"placesim_version": "0.22.0"})");
  test::write(dir / "rows.jsonl", R"({"index":0,"sweep":"0123456789abcdef","version":"0.22.0"})"
                                  "\n");
  test::write(dir / "t.csv", "index,status,step_time_s\n0,ok,1.5\n");
  test::write(dir / "notes.csv", "my notes, with spaces\n");
  test::write(dir / "e.json", kExperiment);
  test::write(dir / "t.json", R"({"traceEvents":[{"ph":"M"}]})");
  test::write(dir / "p.svg", "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>\n");
  CHECK(written_by_placesim(dir / "t.json"));
  CHECK(written_by_placesim(dir / "p.svg"));
  CHECK(written_by_placesim(dir / "r.json"));
  CHECK(written_by_placesim(dir / "rows.jsonl"));
  CHECK(written_by_placesim(dir / "t.csv"));
  CHECK_FALSE(written_by_placesim(dir / "notes.csv"));
  CHECK_FALSE(written_by_placesim(dir / "e.json"));
  CHECK_THROWS_WITH(check_outputs({{"--out", dir / "e.json"}}, {}, false, "--force"),
                    Catch::Contains("give --force to replace it"));
  CHECK_NOTHROW(check_outputs({{"--out", dir / "e.json"}}, {}, true, "--force"));
}
