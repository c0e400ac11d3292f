#pragma once
// Reading a TaskGraph in the tests: its tasks of one kind, in id (= expansion) order.
#include <utility>
#include <variant>
#include <vector>

#include "strategies/graph/TaskGraph.hpp"

namespace placesim::test {

/// The tasks of `g` whose body is a `Body` (Compute, Collective, P2P, ...), with their ids, in id order.
template <class Body>
std::vector<std::pair<TaskId, const Body*>> tasks_of(const TaskGraph& g) {
  std::vector<std::pair<TaskId, const Body*>> out;
  for (TaskId id = 0; id < g.size(); ++id)
    if (const auto* body = std::get_if<Body>(&g[id].body)) out.emplace_back(id, body);
  return out;
}

}  // namespace placesim::test
