#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "tests/Helpers.hpp"
#include "workloads/json/JsonReader.hpp"

namespace placesim::test {

int run_placesim(const std::string& arguments, std::string* output) {
  std::string command = std::string(PLACESIM_BINARY) + " " + arguments + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return -1;
  std::array<char, 4096> buffer{};
  std::string text;
  std::size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) text.append(buffer.data(), n);
  int status = pclose(pipe);
  if (output) *output = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Json simulate_report(const std::string& experiment, const std::string& arguments) {
  static int runs = 0;
  const std::string path =
      "/tmp/placesim-report-" + std::to_string(::getpid()) + "-" + std::to_string(runs++) + ".json";
  std::ofstream(path) << experiment;
  std::string out;
  const int rc = run_placesim("simulate " + path + " --report " + path + ".report " + arguments, &out);
  INFO(out.substr(0, 3000));
  REQUIRE(rc == 0);
  return read_json_file(path + ".report");
}

Json simulate_exact(const std::string& name, const std::string& experiment) {
  const std::string path = "/tmp/placesim-" + name + "-" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << experiment;
  std::string out;
  const int rc = run_placesim("simulate " + path + " --report " + path + ".report", &out);
  INFO(out.substr(0, 3000));
  REQUIRE(rc == 0);
  CHECK_THAT(out, Catch::Contains("14 of 14 exact figures identical"));
  Json report = read_json_file(path + ".report");
  for (const auto& row : report["validation"])
    if (row["figure"].get<std::string>().find("bound") == std::string::npos) CHECK(row["difference"] == 0);
  return report;
}

}  // namespace placesim::test
