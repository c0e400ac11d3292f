#include "sim/backend/TaskNames.hpp"

#include <algorithm>

#include "workloads/json/Units.hpp"

namespace placesim {

namespace {

std::string layers(int first, int count) {
  if (first < 0 || count == 0) return "";  // count 0: a virtual stage's embedding or head alone
  return count <= 1 ? " L" + std::to_string(first)
                    : " L" + std::to_string(first) + "-" + std::to_string(first + count - 1);
}

std::string part(const Compute& c) {
  if (c.part == ModelPart::Embedding) return " embedding";
  if (c.part == ModelPart::Head) return " head";
  if (c.part == ModelPart::Experts) return " experts";
  return layers(c.layer, c.layers);
}

std::string microbatch(int mb) {
  return mb < 0 ? "" : " mb" + std::to_string(mb);
}

struct Describer {
  const TaskGraph& g;
  int device;
  TaskRecord& r;

  void operator()(const Compute& c) const {
    const char* verb = c.kind == TaskKind::Forward      ? "fwd"
                       : c.kind == TaskKind::Backward   ? "bwd"
                       : c.kind == TaskKind::Recompute  ? "recompute"
                       : c.kind == TaskKind::WeightGrad ? "wgrad"
                                                        : "optimizer step";
    r.kind = c.kind;
    r.name = verb + part(c) + microbatch(c.microbatch);
    r.backward = c.kind == TaskKind::Backward || c.kind == TaskKind::Recompute;
    r.layer = c.layer;
    r.layers = c.layers;
    r.microbatch = c.microbatch;
    r.chunk = c.chunk;
    r.weight_version = c.weight_version;
    r.flops = c.flops;
  }
  void operator()(const Collective& c) const {
    r.kind = TaskKind::Collective;
    r.comm_class = c.cls;
    // The group by its lowest device (stable whatever order groups were made in, and moved with a folded step).
    const auto& members = g.groups[static_cast<std::size_t>(c.group)];
    r.group_first = *std::min_element(members.begin(), members.end());
    r.layer = c.layer;
    r.layers = c.layers;
    r.microbatch = c.microbatch;
    r.chunk = c.chunk;
    r.backward = c.backward;
    r.bytes = task_bytes_sent(g, *this->task, device);
    // A ring names its whole buffer; an all-to-all, whose members send unequal amounts, what this device sends (in one
    // all-to-all when repeated). Each sends to every peer directly.
    const bool alltoall = c.op == CollectiveOp::AllToAll;
    const std::string op = alltoall ? std::string("alltoall ") + (c.combine ? "combine" : "dispatch") : to_string(c.op);
    const std::string cls = alltoall && c.cls == CommClass::EpAllToAll ? "ep" : to_string(c.cls);
    const double bytes = alltoall ? r.bytes / c.repeat : static_cast<double>(c.elems) * c.elem_bytes;
    r.name = op + " " + cls + " grp@gpu" + std::to_string(r.group_first) + layers(c.layer, c.layers) +
             microbatch(c.microbatch) + " " + format_bytes(bytes) +
             (c.repeat > 1 ? " x" + std::to_string(c.repeat) : "");
    r.algorithm = alltoall ? "direct" : "ring";
  }
  void operator()(const P2P& p) const {
    r.kind = TaskKind::P2P;
    r.comm_class = p.cls;
    if (p.cls == CommClass::CpKv)
      r.name = std::string(p.backward ? "cp send kv+dkv" : "cp send kv") + microbatch(p.microbatch) + " -> gpu" +
               std::to_string(p.dst);
    else
      r.name = std::string(p.backward ? "send grad" : "send act") + microbatch(p.microbatch) + " -> gpu" +
               std::to_string(p.dst);
    r.microbatch = p.microbatch;
    r.chunk = p.chunk;
    r.bytes = p.bytes;
    r.peer = p.dst;
    r.backward = p.backward;
    r.algorithm = "direct";
  }
  void operator()(const Offload& o) const {
    r.kind = TaskKind::Offload;
    r.name = std::string(o.to_host ? "d2h " : "h2d ") + to_string(o.state) + " " + format_bytes(o.bytes);
    r.bytes = o.bytes;
  }
  void operator()(const HostCompute& h) const {
    r.kind = TaskKind::HostCompute;
    r.name = !h.wait                 ? std::string("cpu optimizer step")
             : h.wait_microbatch < 0 ? std::string("host time (step)")
                                     : "host time mb" + std::to_string(h.wait_microbatch);
    r.flops = h.flops;
    r.microbatch = h.microbatch;
  }
  const Task* task = nullptr;
};

}  // namespace

TaskRecord describe_task(const TaskGraph& g, TaskId id, int device) {
  TaskRecord r;
  const Task& t = g[id];
  r.task = id;
  r.device = device;
  r.stream = task_stream(t);
  r.stage = t.stage;
  Describer d{g, device, r};
  d.task = &t;
  std::visit(d, t.body);
  return r;
}

}  // namespace placesim
