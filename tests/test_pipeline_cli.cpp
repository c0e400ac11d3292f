// `placesim pipeline-sweep`: the table, the CSV and JSON-lines rows, and its input errors.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/FileHelpers.hpp"
#include "tests/Helpers.hpp"
#include "workloads/json/JsonReader.hpp"

using namespace placesim;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("placesim-" + std::to_string(getpid()) + "-" + name)).string();
}

}  // namespace

TEST_CASE("pipeline-sweep prints a table and writes CSV rows") {
  const std::string path = temp_path("sweep.csv");
  std::string output;
  int code = test::run_placesim("pipeline-sweep --stages 2..3 --schedules 1f1b,pipedream --out " + path, &output);
  INFO(output);
  REQUIRE(code == 0);
  CHECK(output.find("max delay") != std::string::npos);
  std::vector<std::string> lines = test::file_lines(path);
  std::filesystem::remove(path);
  REQUIRE(lines.size() == 1 + 4);
  CHECK(lines[0].rfind("schedule,stages,microbatches,steps,", 0) == 0);
  CHECK(lines[0].find("max_delay,mean_delay,max_block_updates_between,mean_block_updates_between,schedule_bubble_"
                      "fraction,idle_fraction,throughput_microbatches_per_s") != std::string::npos);
  CHECK(lines[1].rfind("1f1b,2,20,2,", 0) == 0);
  CHECK(lines[4].rfind("pipedream,3,30,2,", 0) == 0);
}

TEST_CASE("pipeline-sweep JSON lines carry the steady-state delay of PipeDream") {
  const std::string path = temp_path("sweep.jsonl");
  std::string output;
  int code = test::run_placesim(
      "pipeline-sweep --stages 4 --schedules pipedream --microbatches 40 --steps 1 "
      "--forward-s 1 --backward-s 1 --out " +
          path,
      &output);
  INFO(output);
  REQUIRE(code == 0);
  std::vector<std::string> lines = test::file_lines(path);
  std::filesystem::remove(path);
  REQUIRE(lines.size() == 1);
  Json row = Json::parse(lines[0]);
  CHECK(row["max_delay"].get<int>() == 4 * 4 - 2);
  CHECK(row["stashed_versions_peak"].get<int>() == 4);
  // 40 micro-batches in 2 x 40 + 2 x 3 seconds: the 1F1B pipeline of 4 stages fills and drains once.
  CHECK(row["throughput_microbatches_per_s"].get<double>() == 40.0 / 86);
}

TEST_CASE("pipeline-sweep refuses a bad stage list and an unknown schedule") {
  std::string output;
  CHECK(test::run_placesim("pipeline-sweep --stages 4..2", &output) == 2);
  CHECK(output.find("--stages=4..2: the range is empty") != std::string::npos);
  CHECK(test::run_placesim("pipeline-sweep --schedules 1f1b,gpip", &output) == 2);
  CHECK(output.find("gpip is not a schedule (did you mean gpipe?)") != std::string::npos);
  CHECK(test::run_placesim("pipeline-sweep --stages 4 --schedules interleaved --microbatches 6", &output) == 2);
  CHECK(output.find("pipeline.microbatches=6 leaves a last group of 2 micro-batches (groups of 4)") !=
        std::string::npos);
}
