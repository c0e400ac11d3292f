#include "strategies/graph/TaskGraph.hpp"

#include <algorithm>

namespace placesim {

TaskId TaskGraph::add(TaskBody body, int stage) {
  Task t;
  t.body = std::move(body);
  t.stage = stage;
  t.mem_first = static_cast<std::uint32_t>(deltas.size());
  return boost::add_vertex(std::move(t), graph);
}

void TaskGraph::depend(TaskId before, TaskId after) {
  boost::add_edge(before, after, graph);
}

void TaskGraph::set_memory(TaskId task, const std::vector<MemDelta>& on_start, const std::vector<MemDelta>& on_end) {
  Task& t = graph[task];
  t.mem_first = static_cast<std::uint32_t>(deltas.size());
  t.mem_on_start = static_cast<std::uint32_t>(on_start.size());
  t.mem_on_end = static_cast<std::uint32_t>(on_end.size());
  deltas.insert(deltas.end(), on_start.begin(), on_start.end());
  deltas.insert(deltas.end(), on_end.begin(), on_end.end());
}

int TaskGraph::add_group(std::vector<int> members) {
  groups.push_back(std::move(members));
  return static_cast<int>(groups.size()) - 1;
}

std::vector<int> task_devices(const TaskGraph& g, const Task& t) {
  return std::visit(
      [&](const auto& b) -> std::vector<int> {
        using B = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<B, Collective>)
          return g.groups[static_cast<std::size_t>(b.group)];
        else if constexpr (std::is_same_v<B, P2P>)
          return {b.src};
        else
          return {b.device};
      },
      t.body);
}

Stream task_stream(const Task& t) {
  struct Visitor {
    Stream operator()(const Compute&) const { return Stream::Compute; }
    Stream operator()(const Collective& c) const { return c.stream; }
    Stream operator()(const P2P& p) const { return p.cls == CommClass::CpKv ? Stream::CpComm : Stream::PpSend; }
    Stream operator()(const Offload& o) const { return o.to_host ? Stream::D2H : Stream::H2D; }
    Stream operator()(const HostCompute&) const { return Stream::Host; }
  };
  return std::visit(Visitor{}, t.body);
}

double task_bytes_sent(const TaskGraph& g, const Task& t, int device) {
  if (const auto* c = std::get_if<Collective>(&t.body)) {
    const auto& members = g.groups[static_cast<std::size_t>(c->group)];
    auto n = static_cast<std::int64_t>(members.size());
    if (c->op == CollectiveOp::AllToAll) {
      const int pos = static_cast<int>(std::find(members.begin(), members.end(), device) - members.begin());
      if (pos == static_cast<int>(n)) return 0;
      return static_cast<double>(
                 alltoall_elems_sent(g.a2a_tokens[static_cast<std::size_t>(c->split)], c->elems, pos, c->combine)) *
             c->elem_bytes * c->repeat;
    }
    std::int64_t elems =
        c->op == CollectiveOp::AllReduce ? ring_allreduce_elems_sent(c->elems, n) : ring_gather_elems_sent(c->elems, n);
    return static_cast<double>(elems) * c->elem_bytes * c->repeat;
  }
  if (const auto* p = std::get_if<P2P>(&t.body)) return p->src == device ? p->bytes : 0;
  return 0;
}

}  // namespace placesim
