// The layering of the source tree (docs/design.md): workloads and topology (specs) -> strategies -> traces -> sim.
// A file may include its own layer and the layers below it; only sim/ may include SimGrid; the rooms (subfolders) of
// a layer include each other in one direction (strategies: placement <- graph <- pipeline <- analytic <- the rest). The
// rules are a pure function over (file, included header) pairs, checked on the real tree and on planted fixtures that
// break each rule.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
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

/// The room (subfolder) of a path inside a layer, "strategies/placement" for "strategies/placement/Layout.cpp"; "" for
/// a file directly in a layer's folder or outside the layering.
std::string room(const std::string& path) {
  if (layer_rank(path) < 0) return "";
  const auto first = path.find('/');
  const auto second = path.find('/', first + 1);
  return second == std::string::npos ? "" : path.substr(0, second);
}

/// The loops between the rooms of one layer: each a list of rooms where each includes a header of the next and the
/// last one of the first. Rooms include each other in one direction, so a new include that closes a loop fails here.
std::vector<std::vector<std::string>> room_loops(const std::vector<Include>& includes) {
  std::map<std::string, std::set<std::string>> edges;
  for (const auto& inc : includes) {
    const std::string from = room(inc.file), to = inc.header.front() == '<' ? "" : room(inc.header);
    if (!from.empty() && !to.empty() && from != to && layer_rank(from) == layer_rank(to)) edges[from].insert(to);
  }
  // Tarjan's strongly connected components: a component of more than one room is a loop.
  std::map<std::string, int> index, low;
  std::vector<std::string> stack;
  std::set<std::string> on_stack;
  std::vector<std::vector<std::string>> loops;
  int next = 0;
  std::function<void(const std::string&)> visit = [&](const std::string& v) {
    index[v] = low[v] = next++;
    stack.push_back(v);
    on_stack.insert(v);
    for (const auto& w : edges[v]) {
      if (!index.count(w)) {
        visit(w);
        low[v] = std::min(low[v], low[w]);
      } else if (on_stack.count(w)) {
        low[v] = std::min(low[v], index[w]);
      }
    }
    if (low[v] != index[v]) return;
    std::vector<std::string> component;
    for (std::string w; w != v;) {
      w = stack.back();
      stack.pop_back();
      on_stack.erase(w);
      component.push_back(w);
    }
    if (component.size() > 1) loops.push_back(component);
  };
  std::vector<std::string> rooms;
  for (const auto& [from, to] : edges) rooms.push_back(from);
  for (const auto& r : rooms)
    if (!index.count(r)) visit(r);
  return loops;
}

std::string joined(const std::vector<std::string>& rooms) {
  std::string out;
  for (const auto& r : rooms) out += (out.empty() ? "" : ", ") + r;
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

TEST_CASE("layering: the rooms of a layer include each other in one direction") {
  const auto loops = room_loops(tree_includes(PLACESIM_SOURCE_DIR));
  INFO((loops.empty() ? std::string() : "a loop between " + joined(loops.front())));
  CHECK(loops.empty());
}

TEST_CASE("layering: a planted loop between rooms is found") {
  // graph -> analytic -> placement -> graph, and a room including itself or a lower layer's room (no loop).
  const auto loops = room_loops({{"strategies/graph/TaskGraph.hpp", "strategies/analytic/Collective.hpp"},
                                 {"strategies/analytic/Costs.cpp", "strategies/placement/Layout.hpp"},
                                 {"strategies/placement/Layout.cpp", "strategies/graph/Record.hpp"},
                                 {"strategies/expand/Expand.cpp", "strategies/expand/Expander.hpp"},
                                 {"strategies/expand/Expand.cpp", "workloads/json/JsonReader.hpp"}});
  REQUIRE(loops.size() == 1);
  CHECK(loops.front().size() == 3);
  CHECK(room_loops({{"strategies/graph/TaskGraph.hpp", "strategies/placement/Placement.hpp"},
                    {"strategies/analytic/Costs.cpp", "strategies/graph/Record.hpp"}})
            .empty());
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
