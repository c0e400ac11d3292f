// `placesim sweep` end to end: the issue's sweep file, sharding, a SIGKILL and --resume, CSV, simulate mode's
// process per point, and the plot script.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "sim/sweep/Progress.hpp"
#include "sim/sweep/Subprocess.hpp"
#include "tests/FileHelpers.hpp"
#include "tests/Helpers.hpp"
#include "tests/SweepHelpers.hpp"

using namespace placesim;
using test::lines_of;
using test::read;
using test::sweep_cli;
using test::TempDir;
using test::write;

namespace {

// A sweep of 1680 x `scale` points over a small model (every point analyzes in microseconds).
std::string scalable_sweep(int scale) {
  return R"({"base": {"model": "gpt-1.7b", "training": {"micro_batch": 1}, "strategy": "megatron-3d"},
    "axes": {"strategy.tp": [1, 2, 4, 8], "strategy.pp": [1, 2, 4], "strategy.dp": {"from": 1, "to": 64, "times": 2},
             "strategy.preset": ["megatron-3d", "zero1", "zero2", "zero3", "zero-offload"],
             "training.micro_batch": [1, 2, 4, 8],
             "training.global_batch": {"from": 256, "to": )" +
         std::to_string(256 * scale) + R"(, "step": 256}}})";
}

const char* kIssueSweep = R"({"base": {"model": "llama3-70b", "cluster": {"preset": "dgx-h100", "nodes": 64},
    "training": {"global_batch": 1024, "micro_batch": 1}, "strategy": {"preset": "megatron-3d"}},
    "axes": {"strategy.tp": [1, 2, 4, 8], "strategy.pp": [1, 2, 4, 8, 16], "strategy.dp": [4, 8, 16, 32, 64, 128],
             "strategy.preset": ["megatron-3d", "zero1"]}, "mode": "analyze"})";

// Starts `placesim args...` with output discarded; returns its pid.
pid_t spawn_placesim(const std::vector<std::string>& args) {
  std::vector<std::string> all = {PLACESIM_BINARY};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, PLACESIM_BINARY, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(rc == 0);
  return pid;
}

// The first line where two results differ, for a failure message (Catch would print whole files otherwise).
std::string first_difference(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (std::size_t k = 0; k < std::min(a.size(), b.size()); ++k)
    if (a[k] != b[k]) return "line " + std::to_string(k + 1) + ":\n  " + a[k] + "\n  " + b[k];
  return a.size() == b.size() ? "none" : "lengths " + std::to_string(a.size()) + " and " + std::to_string(b.size());
}

std::uintmax_t size_of(const std::string& path) {
  std::error_code ec;
  auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : n;
}

// Runs a sweep and SIGKILLs it once `min_bytes` of results are written. True if it was killed mid-way, false if it
// finished first.
bool kill_midway(const std::string& sweep, const std::string& out, std::uintmax_t min_bytes) {
  pid_t pid = spawn_placesim({"sweep", sweep, "--out", out, "--jobs", "1", "--quiet"});
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return false;  // finished before the kill
    if (size_of(out) >= min_bytes) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

// Splits one CSV record (RFC 4180 quoting, no newlines inside fields).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

}  // namespace

TEST_CASE("placesim sweep runs the issue's sweep file: 240 rows and every mismatched mesh invalid with its reason") {
  TempDir dir;
  write(dir / "sweep.json", kIssueSweep);
  std::string output;
  REQUIRE(sweep_cli(dir / "sweep.json" + " --out " + dir / "r.jsonl" + " --quiet", &output) == 0);
  std::vector<std::string> lines = lines_of(read(dir / "r.jsonl"));
  REQUIRE(lines.size() == 240);
  int mismatched = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    Json row = Json::parse(lines[i]);
    CHECK(row["index"] == i);  // the final file is in index order
    const Json& p = row["point"];
    int devices = p["strategy.tp"].get<int>() * p["strategy.pp"].get<int>() * p["strategy.dp"].get<int>();
    if (devices != 512) {
      ++mismatched;
      CHECK(row["status"] == "invalid");
      CHECK_THAT(row["reason"].get<std::string>(), Catch::Contains("does not match the cluster's 512 GPUs"));
    }
  }
  CHECK(mismatched == 206);
  REQUIRE(sweep_cli(dir / "sweep.json" + " --count", &output) == 0);
  CHECK(output == "240 points; 240 in shard 0/1\n");
}

TEST_CASE("placesim sweep --shard i/N over N shards covers every point exactly once") {
  TempDir dir;
  write(dir / "sweep.json", scalable_sweep(1));
  REQUIRE(sweep_cli(dir / "sweep.json" + " --out " + dir / "all.jsonl" + " --jobs 2 --quiet") == 0);
  std::vector<std::string> all = lines_of(read(dir / "all.jsonl"));
  REQUIRE(all.size() == 1680);
  const int shards = 7;
  std::set<std::uint64_t> indices;
  std::string files;
  for (int i = 0; i < shards; ++i) {
    std::string out = dir / ("s" + std::to_string(i) + ".jsonl");
    REQUIRE(sweep_cli(dir / "sweep.json" + " --shard " + std::to_string(i) + "/" + std::to_string(shards) + " --out " +
                      out + " --jobs 2 --quiet") == 0);
    for (const auto& line : lines_of(read(out))) {
      Json row = Json::parse(line);
      auto index = row["index"].get<std::uint64_t>();
      CHECK(index % shards == static_cast<std::uint64_t>(i));
      CHECK(row["shard"] == std::to_string(i) + "/7");  // every row names its shard
      CHECK(indices.insert(index).second);              // never in two shards
    }
    files += " " + out;
  }
  CHECK(indices.size() == 1680);
  // The merge writes them in index order without the shard keys: byte-identical to the whole run.
  REQUIRE(sweep_cli("merge " + dir / "merged.jsonl" + files + " --sweep " + dir / "sweep.json") == 0);
  std::vector<std::string> merged = lines_of(read(dir / "merged.jsonl"));
  INFO("first difference: " << first_difference(merged, all));
  bool same = merged == all;
  CHECK(same);
  std::string output;
  CHECK(sweep_cli(dir / "sweep.json" + " --shard 7/7 --out " + dir / "x.jsonl", &output) == 2);
  CHECK_THAT(output, Catch::Contains("--shard=7/7: i must be below N"));
}

TEST_CASE("A sweep killed with SIGKILL and resumed writes the same lines as an uninterrupted run") {
  TempDir dir;
  int scale = 40;  // 67,200 points; grown if the sweep finishes before it can be killed
  bool killed = false;
  for (int attempt = 0; attempt < 4 && !killed; ++attempt, scale *= 4) {
    write(dir / "sweep.json", scalable_sweep(scale));
    std::filesystem::remove(dir / "killed.jsonl");
    killed = kill_midway(dir / "sweep.json", dir / "killed.jsonl", 2 << 20);
  }
  REQUIRE(killed);
  const std::size_t total = 1680u * static_cast<std::size_t>(scale / 4);
  std::string partial = read(dir / "killed.jsonl");
  std::size_t written = lines_of(partial).size();
  INFO("killed after " << written << " complete lines of " << total);
  CHECK(written > 0);
  CHECK(written < total);
  std::string output;
  // Without --resume the file is protected.
  CHECK(sweep_cli(dir / "sweep.json" + " --out " + dir / "killed.jsonl", &output) == 2);
  CHECK_THAT(output, Catch::Contains("pass --resume to continue"));
  REQUIRE(sweep_cli(dir / "sweep.json" + " --out " + dir / "killed.jsonl" + " --resume --jobs 2", &output) == 0);
  CHECK_THAT(output, Catch::Contains("already in"));
  REQUIRE(sweep_cli(dir / "sweep.json" + " --out " + dir / "whole.jsonl" + " --jobs 2 --quiet") == 0);
  std::string resumed = read(dir / "killed.jsonl"), whole = read(dir / "whole.jsonl");
  std::vector<std::string> a = lines_of(resumed), b = lines_of(whole);
  REQUIRE(b.size() == total);
  INFO("first difference: " << first_difference(a, b));
  bool same_set = std::set<std::string>(a.begin(), a.end()) == std::set<std::string>(b.begin(), b.end());
  CHECK(same_set);
  CHECK(a.size() == b.size());
  bool same_bytes = resumed == whole;  // both end sorted by index: byte-identical
  CHECK(same_bytes);
}

TEST_CASE("placesim sweep writes byte-identical results for any --jobs") {
  TempDir dir;
  write(dir / "sweep.json", scalable_sweep(4));
  REQUIRE(sweep_cli(dir / "sweep.json" + " --out " + dir / "one.jsonl" + " --jobs 1 --quiet") == 0);
  REQUIRE(sweep_cli(dir / "sweep.json" + " --out " + dir / "three.jsonl" + " --jobs 3 --quiet") == 0);
  std::string one = read(dir / "one.jsonl");
  CHECK(lines_of(one).size() == 4 * 1680);
  std::string three = read(dir / "three.jsonl");
  INFO("first difference: " << first_difference(lines_of(one), lines_of(three)));
  bool same = one == three;
  CHECK(same);
}

TEST_CASE("placesim sweep --resume refuses a results file written by another sweep") {
  TempDir dir;
  write(dir / "a.json", R"({"base": {"model": "gpt-1.7b", "strategy": "dp"}, "axes": {"strategy.dp": [1, 2, 4]}})");
  write(dir / "b.json", R"({"base": {"model": "gpt-1.7b", "strategy": "dp"}, "axes": {"strategy.dp": [1, 8, 4]}})");
  REQUIRE(sweep_cli(dir / "a.json" + " --out " + dir / "r.jsonl" + " --quiet") == 0);
  std::string output;
  CHECK(sweep_cli(dir / "b.json" + " --out " + dir / "r.jsonl" + " --resume", &output) == 2);
  CHECK_THAT(output, Catch::Contains("r.jsonl:1: point 0 was written by another sweep file"));
  CHECK(sweep_cli(dir / "b.json" + " --out " + dir / "r.jsonl" + " --force --quiet") == 0);
  CHECK_THAT(read(dir / "r.jsonl"), Catch::Contains("\"strategy.dp\":8"));
  // A cut last line (a kill during a write) is dropped and its point evaluated again.
  std::string whole = read(dir / "r.jsonl");
  write(dir / "r.jsonl", whole.substr(0, whole.size() - 20));
  REQUIRE(sweep_cli(dir / "b.json" + " --out " + dir / "r.jsonl" + " --resume --quiet") == 0);
  CHECK(read(dir / "r.jsonl") == whole);
}

TEST_CASE("placesim sweep --csv writes the same rows as the JSONL") {
  TempDir dir;
  write(dir / "sweep.json", kIssueSweep);
  REQUIRE(sweep_cli(dir / "sweep.json" + " --out " + dir / "r.jsonl" + " --csv " + dir / "r.csv" + " --quiet") == 0);
  std::vector<std::string> jsonl = lines_of(read(dir / "r.jsonl")), csv = lines_of(read(dir / "r.csv"));
  REQUIRE(csv.size() == jsonl.size() + 1);
  std::vector<std::string> header = csv_fields(csv[0]);
  CHECK(header == std::vector<std::string>{"index", "strategy.tp", "strategy.pp", "strategy.dp", "strategy.preset",
                                           "status", "reason", "memory.total_bytes", "memory.model_states_bytes",
                                           "communication.bytes_per_step", "compute.model_flops_per_step",
                                           "device_memory_bytes"});
  for (std::size_t k = 0; k < jsonl.size(); ++k) {
    Json row = Json::parse(jsonl[k]);
    std::vector<std::string> f = csv_fields(csv[k + 1]);
    REQUIRE(f.size() == header.size());
    CHECK(f[0] == row["index"].dump());
    CHECK(f[1] == row["point"]["strategy.tp"].dump());
    CHECK(f[4] == row["point"]["strategy.preset"].get<std::string>());
    CHECK(f[5] == row["status"].get<std::string>());
    CHECK(f[6] == row.value("reason", std::string()));
    CHECK(f[7] == (row.contains("memory.total_bytes") ? row["memory.total_bytes"].dump() : ""));
    CHECK(f[9] == (row.contains("communication.bytes_per_step") ? row["communication.bytes_per_step"].dump() : ""));
  }
}

TEST_CASE("Simulate mode runs one simulator process per point and maps its exit codes") {
  TempDir dir;
  // Stands in for `placesim simulate - --report - [--report-figures LIST] --fidelity F`: reads the point's experiment
  // on stdin and answers by its tp --
  // a report carrying its own pid for tp 1 and 2, a refusal (exit 2) for tp 4, a crash for tp 8.
  write(dir / "simulator.sh", R"(#!/bin/sh
[ "$1 $2" = "simulate --help" ] && exit 0
[ "$1" = "--version" ] && echo "placesim )" PLACESIM_VERSION R"(" && exit 0
fidelity=$6
if [ "$5" = "--report-figures" ]; then
  [ "$1 $2 $3 $4 $7" = "simulate - --report - --fidelity" ] || exit 9
  case "$6" in simulation.step_time_s*) ;; *) exit 9;; esac
  fidelity=$8
else
  [ "$1 $2 $3 $4 $5" = "simulate - --report - --fidelity" ] || exit 9
fi
step=1.5
[ "$fidelity" = "analytic" ] && step=1.25
input=$(cat)
case "$input" in
  *'"tp":4'*) echo "placesim simulate: error: strategy.tp=4 refused by the test simulator" >&2; exit 2;;
  *'"tp":8'*) kill -9 $$;;
esac
tp=$(printf '%s' "$input" | grep -o '"tp":[0-9]*' | cut -d: -f2)
echo "{\"simulation\": {\"step_time_s\": $step, \"mfu\": 0.25, \"tokens_per_s\": 1000, \"pid\": $$, \"tp\": $tp}}"
)");
  ::chmod((dir / "simulator.sh").c_str(), 0755);
  write(dir / "sweep.json", R"({"base": {"model": "gpt-1.7b", "training": {"global_batch": 16}, "strategy": "dp"},
      "axes": {"strategy.tp": [1, 2, 4, 8, 5], "strategy.dp": [1, 2, 4]}, "mode": "simulate",
      "figures": ["simulation.step_time_s", "simulation.pid", "simulation.tp", "memory.total_bytes"]})");
  std::string output;
  int rc = sweep_cli(
      dir / "sweep.json" + " --out " + dir / "r.jsonl" + " --jobs 2 --quiet --simulator " + dir / "simulator.sh",
      &output);
  CHECK(rc == 1);  // the crashed points are errors
  CHECK_THAT(output, Catch::Contains("15 points: 6 ok, 6 invalid, 0 filtered, 3 errors"));
  std::set<int> pids;
  for (const auto& line : lines_of(read(dir / "r.jsonl"))) {
    Json row = Json::parse(line);
    int tp = row["point"]["strategy.tp"].get<int>();
    INFO(line);
    if (tp <= 2) {
      CHECK(row["status"] == "ok");
      CHECK(row["simulation.step_time_s"] == 1.5);
      CHECK(row["simulation.tp"] == tp);  // the child read this point's experiment
      CHECK(row.contains("memory.total_bytes"));
      pids.insert(row["simulation.pid"].get<int>());
    } else if (tp == 4) {
      CHECK(row["status"] == "invalid");
      CHECK(row["reason"] == "simulate: strategy.tp=4 refused by the test simulator");
    } else if (tp == 8) {
      CHECK(row["status"] == "error");
      CHECK_THAT(row["reason"].get<std::string>(), Catch::StartsWith("simulator was killed by signal 9"));
    } else {
      CHECK(row["status"] == "invalid");  // tp 5 does not divide 24 heads: refused before any simulation
      CHECK_THAT(row["reason"].get<std::string>(), Catch::Contains("strategy.tp=5 does not divide model.heads=24"));
      CHECK_FALSE(row.contains("simulation.pid"));
    }
  }
  CHECK(pids.size() == 6);  // one process per simulated point
  // A sweep chooses its simulations' fidelity (flow by default, as above).
  write(dir / "analytic.json", R"({"base": {"model": "gpt-1.7b", "training": {"global_batch": 16}, "strategy": "dp"},
      "axes": {"strategy.tp": [1, 2]}, "mode": "simulate", "fidelity": "analytic",
      "figures": ["simulation.step_time_s"]})");
  CHECK(sweep_cli(dir / "analytic.json" + " --out " + dir / "a.jsonl --quiet --simulator " + dir / "simulator.sh",
                  &output) == 0);
  for (const auto& line : lines_of(read(dir / "a.jsonl"))) {
    CHECK(Json::parse(line)["simulation.step_time_s"] == 1.25);
    CHECK(Json::parse(line)["fidelity"] == "analytic");
  }
  // Resuming that file at another fidelity would mix two fidelities' rows: refused.
  write(dir / "analytic.json", R"({"base": {"model": "gpt-1.7b", "training": {"global_batch": 16}, "strategy": "dp"},
      "axes": {"strategy.tp": [1, 2]}, "mode": "simulate", "fidelity": "flow",
      "figures": ["simulation.step_time_s"]})");
  CHECK(sweep_cli(
            dir / "analytic.json" + " --out " + dir / "a.jsonl --resume --quiet --simulator " + dir / "simulator.sh",
            &output) == 2);
  CHECK_THAT(output, Catch::Contains("a.jsonl:1: point 0 was written by another sweep file"));
  write(dir / "analyze-fidelity.json", R"({"base": {"model": "gpt-1.7b", "strategy": "dp"},
      "axes": {"strategy.tp": [1, 2]}, "fidelity": "analytic"})");
  CHECK(sweep_cli(dir / "analyze-fidelity.json" + " --out " + dir / "x.jsonl", &output) == 2);
  CHECK_THAT(output, Catch::Contains("fidelity=analytic applies to \"mode\": \"simulate\" only"));
  // A placesim that cannot simulate is refused before any point runs.
  write(dir / "nosim.sh", "#!/bin/sh\necho \"placesim: unknown command 'simulate'\" >&2\nexit 2\n");
  ::chmod((dir / "nosim.sh").c_str(), 0755);
  CHECK(sweep_cli(dir / "sweep.json" + " --out " + dir / "n.jsonl --simulator " + dir / "nosim.sh", &output) == 2);
  CHECK_THAT(output, Catch::Contains("this placesim cannot simulate a point"));
  // Nor is a simulator of another version: every row carries one.
  write(dir / "old.sh", "#!/bin/sh\n[ \"$1\" = --version ] && echo 'placesim 0.18.0' && exit 0\nexit 0\n");
  ::chmod((dir / "old.sh").c_str(), 0755);
  CHECK(sweep_cli(dir / "sweep.json" + " --out " + dir / "o.jsonl --simulator " + dir / "old.sh", &output) == 2);
  CHECK_THAT(output, Catch::Contains("/old.sh is 'placesim 0.18.0', this is placesim " PLACESIM_VERSION
                                     ": every row carries one version"));
}
