// The layering of the source tree (docs/design.md): workloads and topology (specs) -> strategies -> traces -> sim.
// A file may include its own layer and the layers below it; only sim/ may include SimGrid. The rules are a pure
// function over (file, included header) pairs, checked on the real tree and on planted fixtures that break each rule.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace {

struct Include {
  std::string file;    ///< path relative to the source root, e.g. "strategies/expand/Expand.cpp"
  std::string header;  ///< what it includes: "sim/backend/Simulator.hpp", or "<simgrid/s4u.hpp>" for a system header
};

/// Rank of a top-level folder in the layering; -1 for folders outside it (tests, bench).
int layer_rank(const std::string& path) {
  const std::string top = path.substr(0, path.find('/'));
  if (top == "workloads") return 0;
  if (top == "topology") return 1;
  if (top == "strategies") return 2;
  if (top == "traces") return 3;
  if (top == "sim") return 4;
  return -1;
}

bool is_simgrid(const std::string& header) {
  return header.rfind("<simgrid/", 0) == 0 || header.rfind("<xbt", 0) == 0 || header == "<simgrid.hpp>";
}

/// One message per include that breaks a rule.
std::vector<std::string> layering_violations(const std::vector<Include>& includes) {
  std::vector<std::string> out;
  for (const auto& inc : includes) {
    const int from = layer_rank(inc.file);
    if (from < 0) continue;
    if (is_simgrid(inc.header)) {
      if (inc.file.rfind("sim/", 0) != 0) out.push_back(inc.file + " includes SimGrid (" + inc.header + ")");
      continue;
    }
    if (inc.header.front() == '<') continue;
    const int to = layer_rank(inc.header);
    if (to > from) out.push_back(inc.file + " includes the higher layer's " + inc.header);
  }
  return out;
}

std::vector<Include> tree_includes(const std::filesystem::path& root) {
  static const std::regex include_line(R"(^\s*#\s*include\s*([<"][^>"]+[>"]))");
  std::vector<Include> out;
  for (const char* top : {"workloads", "topology", "strategies", "traces", "sim"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root / top)) {
      const auto ext = entry.path().extension();
      if (ext != ".cpp" && ext != ".hpp") continue;
      const std::string file = std::filesystem::relative(entry.path(), root).generic_string();
      std::ifstream in(entry.path());
      std::string line;
      std::smatch m;
      while (std::getline(in, line)) {
        if (!std::regex_search(line, m, include_line)) continue;
        std::string header = m[1].str();
        if (header.front() == '"') header = header.substr(1, header.size() - 2);
        out.push_back({file, header});
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("layering: the source tree includes only downwards and SimGrid only in sim/") {
  const auto includes = tree_includes(PLACESIM_SOURCE_DIR);
  REQUIRE(includes.size() > 300);  // the scan saw the tree, not an empty folder
  const auto violations = layering_violations(includes);
  INFO((violations.empty() ? std::string() : violations.front()));
  CHECK(violations.empty());
}

TEST_CASE("layering: planted violations of each rule are rejected") {
  SECTION("a spec including sim/") {
    CHECK(layering_violations({{"workloads/model/Model.hpp", "sim/backend/Simulator.hpp"}}).size() == 1);
  }
  SECTION("traces including sim/") {
    CHECK(layering_violations({{"traces/report/Report.cpp", "sim/cli/Cli.hpp"}}).size() == 1);
  }
  SECTION("strategies including traces/") {
    CHECK(layering_violations({{"strategies/expand/Expand.cpp", "traces/report/Report.hpp"}}).size() == 1);
  }
  SECTION("topology including strategies/") {
    CHECK(layering_violations({{"topology/cluster/Cluster.hpp", "strategies/placement/Mesh.hpp"}}).size() == 1);
  }
  SECTION("SimGrid outside sim/") {
    CHECK(layering_violations({{"strategies/graph/TaskGraph.hpp", "<simgrid/s4u.hpp>"}}).size() == 1);
    CHECK(layering_violations({{"traces/chrome/ChromeTrace.cpp", "<xbt/log.h>"}}).size() == 1);
  }
  SECTION("allowed: downwards, same layer, SimGrid in sim/, system headers") {
    CHECK(layering_violations({{"sim/backend/Simulator.cpp", "<simgrid/s4u.hpp>"},
                               {"sim/cli/CmdSimulate.cpp", "traces/report/Report.hpp"},
                               {"traces/report/Report.hpp", "strategies/analytic/Analytic.hpp"},
                               {"strategies/placement/Strategy.hpp", "workloads/json/JsonReader.hpp"},
                               {"topology/cluster/Cluster.hpp", "workloads/json/JsonReader.hpp"},
                               {"strategies/expand/Expand.cpp", "<vector>"},
                               {"tests/test_cli.cpp", "sim/cli/Cli.hpp"}})
              .empty());
  }
}
