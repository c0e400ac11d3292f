// The sweep machinery below the command: the process pool of simulate mode, the progress display and the plot script.
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
#include <functional>
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

namespace {

// What `body` writes to std::cerr, captured.
std::string stderr_of(const std::function<void()>& body) {
  std::ostringstream captured;
  auto* saved = std::cerr.rdbuf(captured.rdbuf());
  body();
  std::cerr.rdbuf(saved);
  return captured.str();
}

}  // namespace

TEST_CASE("ProcessPool feeds stdin and collects stdout and exit status of each child") {
  ProcessPool pool;
  std::string big(1 << 20, 'x');  // larger than a pipe buffer: input and output must be pumped together
  for (std::size_t i = 0; i < big.size(); i += 1000) big[i] = '\n';
  pool.start(1, {"/bin/cat"}, big, "");
  pool.start(2, {"/bin/sh", "-c", "echo err >&2; exit 3"}, "", "");
  pool.start(3, {"/bin/sh", "-c", "pwd"}, "", "/tmp");
  pool.start(4, {"/nonexistent/simulator"}, "ignored", "");
  std::map<std::uint64_t, ChildResult> results;
  for (int rounds = 0; pool.running() > 0 && rounds < 10000; ++rounds)
    for (auto& [id, r] : pool.wait(100)) results[id] = r;
  REQUIRE(results.size() == 4);
  CHECK(results[1].exit_code == 0);
  CHECK(results[1].out == big);
  CHECK(results[2].exit_code == 3);
  CHECK(results[2].err == "err\n");
  CHECK(results[3].out == "/tmp\n");
  CHECK(results[4].exit_code == 127);
}

TEST_CASE("Progress prints plain lines when stderr is not a terminal") {
  const std::string captured = stderr_of([] {
    Progress progress("placesim sweep", 10, false, 0.0);  // interval 0: a line on every advance
    progress.advance(5);
    progress.advance(5);
    progress.finish();
  });
  std::vector<std::string> lines = lines_of(captured);
  REQUIRE(lines.size() == 2);
  CHECK_THAT(lines[0], Catch::StartsWith("placesim sweep:  50.0% 5/10 points, "));
  CHECK_THAT(lines[0], Catch::Contains("points/s, ETA "));
  CHECK_THAT(lines[1], Catch::StartsWith("placesim sweep: 100.0% 10/10 points, "));
  CHECK_THAT(lines[1], Catch::Contains(", took "));
  CHECK(captured.find('\r') == std::string::npos);
}

// A search learns after each batch how many candidates its bound still lets through: the total shrinks (never below
// what is done), and the percentage and ETA follow it.
TEST_CASE("Progress takes a new total and counts against it") {
  std::vector<std::string> lines = lines_of(stderr_of([] {
    Progress progress("placesim search", 100, false, 0.0);
    progress.advance(2);
    progress.set_total(8);  // 6 left
    progress.advance(2);
    progress.set_total(1);  // below the 4 done: 4
    progress.advance(0);
  }));
  REQUIRE(lines.size() == 3);
  CHECK_THAT(lines[0], Catch::StartsWith("placesim search:   2.0% 2/100 points, "));
  CHECK_THAT(lines[1], Catch::StartsWith("placesim search:  50.0% 4/8 points, "));
  CHECK_THAT(lines[2], Catch::StartsWith("placesim search: 100.0% 4/4 points, "));
  CHECK_THAT(lines[2], Catch::Contains(", took "));
}

TEST_CASE("Durations print as seconds, minutes or hours") {
  CHECK(format_duration(7.2) == "7 s");
  CHECK(format_duration(245) == "4:05");
  CHECK(format_duration(3723) == "1:02:03");
  CHECK(format_duration(-1) == "?");
}

TEST_CASE("plot_sweep.py draws a PNG and an SVG from sweep results") {
  test::TempDir dir;
  test::write(dir / "sweep.json",
              R"({"base": {"model": "gpt-1.7b", "training": {"global_batch": 512}, "strategy": "dp"},
      "axes": {"strategy.preset": ["dp", "zero1", "zero3"], "strategy.dp": {"from": 1, "to": 64, "times": 2}}})");
  REQUIRE(test::sweep_cli(dir / "sweep.json" + " --out " + dir / "r.jsonl" + " --quiet") == 0);
  std::string script = std::string(PLACESIM_SOURCE_DIR) + "/traces/sweep/plot_sweep.py";
  std::string command = "/usr/bin/python3 " + script + " " + dir / "r.jsonl" +
                        " --x strategy.dp --y memory.total_bytes " + "--hue strategy.preset --out " + dir / "plot.png" +
                        " --out " + dir / "plot.svg 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe);
  char buffer[4096];
  std::string output;
  for (std::size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
  INFO(output);
  REQUIRE(WEXITSTATUS(::pclose(pipe)) == 0);
  std::string png = test::read(dir / "plot.png");
  REQUIRE(png.size() > 1000);
  CHECK(png.substr(1, 3) == "PNG");
  CHECK_THAT(test::read(dir / "plot.svg"), Catch::Contains("<svg"));
  CHECK_THAT(test::read(dir / "plot.svg"), Catch::Contains("zero3"));  // the legend names every strategy
}
