#include "traces/profiler/KinetoExport.hpp"

#include <algorithm>
#include <map>

#include "strategies/analytic/TaskClasses.hpp"
#include "traces/profiler/Intervals.hpp"
#include "workloads/json/EnumNames.hpp"

namespace placesim {

namespace {

constexpr int kMainThread = 1, kBackwardThread = 2;

// Events of one rank's trace, with the correlation and External ids Kineto links them by.
class KinetoWriter {
 public:
  explicit KinetoWriter(int device) : device_(device) {}

  // A kernel on `stream` launched from `thread`; returns its External id.
  long kernel(const std::string& name, const char* category, double start_s, double dur_s, int stream, int thread,
              long external = 0) {
    if (external == 0) external = ++id_;
    const long correlation = ++id_;
    const double launch = std::max(0.0, us(start_s) - 2);
    events_.push_back(Json{{"ph", "X"},
                           {"cat", "cuda_runtime"},
                           {"name", "cudaLaunchKernel"},
                           {"pid", 1},
                           {"tid", thread},
                           {"ts", launch},
                           {"dur", 1},
                           {"args", Json{{"correlation", correlation}, {"External id", external}}}});
    events_.push_back(
        Json{{"ph", "X"},
             {"cat", category},
             {"name", name},
             {"pid", device_},
             {"tid", stream},
             {"ts", us(start_s)},
             {"dur", us(dur_s)},
             {"args",
              Json{{"device", device_}, {"stream", stream}, {"correlation", correlation}, {"External id", external}}}});
    return external;
  }
  // A host span (a cpu_op or user annotation) on `thread`, with `args` and a fresh External id; returns the id.
  long host(const std::string& name, const char* category, double start_s, double dur_s, int thread,
            Json args = Json::object()) {
    const long external = ++id_;
    args["External id"] = external;
    events_.push_back(Json{{"ph", "X"},
                           {"cat", category},
                           {"name", name},
                           {"pid", 1},
                           {"tid", thread},
                           {"ts", us(start_s)},
                           {"dur", us(dur_s)},
                           {"args", std::move(args)}});
    return external;
  }
  Json events() { return std::move(events_); }

 private:
  static double us(double s) { return s * 1e6; }
  int device_;
  long id_ = 0;
  Json events_ = Json::array();
};

// The "Collective name" PyTorch's record_param_comms gives each (torch.distributed's c10d op names).
constexpr EnumName<CollectiveOp> kCollectiveNames[] = {{CollectiveOp::AllReduce, "allreduce"},
                                                       {CollectiveOp::AllGather, "_allgather_base"},
                                                       {CollectiveOp::ReduceScatter, "_reduce_scatter_base"},
                                                       {CollectiveOp::AllToAll, "all_to_all"}};

// The NCCL kernel that runs each.
constexpr EnumName<CollectiveOp> kNcclKernels[] = {
    {CollectiveOp::AllReduce, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"},
    {CollectiveOp::AllGather, "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"},
    {CollectiveOp::ReduceScatter,
     "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"},
    {CollectiveOp::AllToAll, "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)"}};

const char* collective_name(CollectiveOp op) {
  return name_of(kCollectiveNames, op, "");
}

const char* nccl_kernel(CollectiveOp op) {
  return name_of(kNcclKernels, op, "");
}

// The compute task's kernels back to back over [start, end): GEMM, attention, memory-bound, optimizer, each taking
// its share of the task's work (`work`: its seconds alone, by class). Where the device's communication (`comm`,
// merged) runs, the task ran at a lower rate (overlap interference): the rate there is what makes the whole task's
// work fit its simulated span, 1 elsewhere.
void compute_kernels(KinetoWriter& w, const TaskClassSeconds& work, double start, double end,
                     const std::vector<Interval>& comm, int thread) {
  // The task's segments with their rates.
  std::vector<std::pair<Interval, bool>> segments;  // (span, overlapped)
  double at = start, overlapped = 0;
  for (auto it = first_ending_after(comm, start); it != comm.end() && it->start < end; ++it) {
    const double a = std::max(start, it->start), b = std::min(end, it->end);
    if (a > at) segments.push_back({{at, a}, false});
    segments.push_back({{a, b}, true});
    overlapped += b - a;
    at = b;
  }
  if (end > at) segments.push_back({{at, end}, false});
  const double total = work.total(), span = end - start;
  double alone_rate = 1, overlap_rate = 1;
  if (overlapped > 0 && total > span - overlapped) {
    overlap_rate = std::min(1.0, (total - (span - overlapped)) / overlapped);
  } else if (span > 0) {
    alone_rate = overlap_rate = total / span;  // stretched (or shortened) evenly
  }
  // Walks the segments, returning the time at which `done` work has been done.
  std::size_t seg = 0;
  double seg_at = start, done_at_seg = 0;
  auto time_at = [&](double done) {
    while (seg < segments.size()) {
      const auto& [sp, over] = segments[seg];
      const double rate = over ? overlap_rate : alone_rate;
      const double capacity = (sp.end - seg_at) * rate;
      if (done - done_at_seg <= capacity || seg + 1 == segments.size())
        return rate > 0 ? std::min(sp.end, seg_at + (done - done_at_seg) / rate) : sp.end;
      done_at_seg += capacity;
      ++seg;
      seg_at = segments[seg].first.start;
    }
    return end;
  };
  const int stream = 7;
  double done = 0, t0 = start;
  auto put = [&](const char* name, double seconds) {
    if (seconds <= 0) return;
    done += seconds;
    const double t1 = time_at(done);
    w.kernel(name, "kernel", t0, t1 - t0, stream, thread);
    t0 = t1;
  };
  put("sim_gemm_bf16_kernel", work.passes.gemm);
  put("sim_flash_attention_kernel", work.passes.attention);
  put("sim_vectorized_elementwise_kernel", work.passes.memory);
  put("sim_multi_tensor_apply_kernel<adam>", work.optimizer);
}

void collective_kernels(KinetoWriter& w, const TaskGraph& g, const Collective& c, double start, double end, int stream,
                        int thread) {
  const double n = static_cast<double>(g.groups[static_cast<std::size_t>(c.group)].size());
  const double elems = static_cast<double>(c.elems);
  double in = elems, out = elems;
  if (c.op == CollectiveOp::AllGather) in = elems / n;
  if (c.op == CollectiveOp::ReduceScatter) out = elems / n;
  const double each = (end - start) / c.repeat;
  for (int r = 0; r < c.repeat; ++r) {
    const double at = start + r * each;
    const long op = w.host("record_param_comms", "cpu_op", at, 0, thread,
                           Json{{"Collective name", collective_name(c.op)},
                                {"In msg nelems", in},
                                {"Out msg nelems", out},
                                {"Group size", n},
                                {"dtype", c.elem_bytes == 4 ? "Float" : "BFloat16"}});
    w.kernel(nccl_kernel(c.op), "kernel", at, each, stream, thread, op);
  }
}

// A device's collectives, each as one span (its steps at fine detail: the first start to the last end, per
// collective id) with its first record, and when the device communicated at all (merged).
struct DeviceComm {
  std::map<std::uint64_t, std::pair<double, double>> spans;
  std::map<std::uint64_t, const TaskRecord*> first;
  std::vector<Interval> busy;
};

DeviceComm device_comm(const SimulationRecord& record, const TaskGraph& graph, int device) {
  DeviceComm d;
  std::vector<Interval> comm;
  for (const TaskRecord& t : record.tasks) {
    if (t.device != device) continue;
    const Task& task = graph[static_cast<TaskId>(t.task)];
    if (std::get_if<Collective>(&task.body)) {
      const std::uint64_t key = t.collective ? t.collective : (std::uint64_t{1} << 63) + t.task;
      auto [it, fresh] = d.spans.try_emplace(key, t.start_s, t.end_s);
      if (!fresh) it->second = {std::min(it->second.first, t.start_s), std::max(it->second.second, t.end_s)};
      if (fresh) d.first[key] = &t;
    }
    if (std::get_if<Collective>(&task.body) || std::get_if<P2P>(&task.body)) comm.push_back({t.start_s, t.end_s});
  }
  d.busy = merged(std::move(comm));
  return d;
}

}  // namespace

Json kineto_trace(const SimulationRecord& record, const TaskGraph& graph, const Experiment& e,
                  const AcceleratorSpec& acc, int device) {
  const TaskClassifier classes(e, acc);
  KinetoWriter w(device);
  const double step = record.step_time_s;
  w.host("ProfilerStep#1", "user_annotation", 0, step, kMainThread);
  const DeviceComm comm = device_comm(record, graph, device);
  double optimizer_start = step, optimizer_end = 0;
  for (const TaskRecord& t : record.tasks) {
    if (t.device != device) continue;
    const Task& task = graph[static_cast<TaskId>(t.task)];
    const int thread = t.backward ? kBackwardThread : kMainThread;
    if (const auto* c = std::get_if<Compute>(&task.body)) {
      if (c->kind == TaskKind::Optimizer) {
        optimizer_start = std::min(optimizer_start, t.start_s);
        optimizer_end = std::max(optimizer_end, t.end_s);
      }
      compute_kernels(w, classes.split(*c, c->seconds), t.start_s, t.end_s, comm.busy, thread);
    } else if (const auto* p = std::get_if<P2P>(&task.body)) {
      const long op = w.host("record_param_comms", "cpu_op", t.start_s, 0, thread,
                             Json{{"Collective name", p->src == device ? "send" : "recv"},
                                  {"In msg nelems", p->bytes / 2},
                                  {"Out msg nelems", p->bytes / 2},
                                  {"Group size", 2},
                                  {"dtype", "BFloat16"}});
      w.kernel("ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)", "kernel", t.start_s,
               t.end_s - t.start_s, 7 + static_cast<int>(t.stream), thread, op);
    } else if (std::get_if<Offload>(&task.body)) {
      w.kernel(t.stream == Stream::H2D ? "Memcpy HtoD (Pinned -> Device)" : "Memcpy DtoH (Device -> Pinned)",
               "gpu_memcpy", t.start_s, t.end_s - t.start_s, 7 + static_cast<int>(t.stream), kMainThread);
    } else if (std::get_if<HostCompute>(&task.body)) {
      w.host("host work", "user_annotation", t.start_s, t.end_s - t.start_s, kMainThread);
    }
  }
  for (const auto& [key, span] : comm.spans) {
    const TaskRecord& t = *comm.first.at(key);
    const auto& c = std::get<Collective>(graph[static_cast<TaskId>(t.task)].body);
    collective_kernels(w, graph, c, span.first, span.second, 7 + static_cast<int>(t.stream),
                       t.backward ? kBackwardThread : kMainThread);
  }
  if (optimizer_end > optimizer_start)
    w.host("Optimizer.step#AdamW.step", "user_annotation", optimizer_start, optimizer_end - optimizer_start,
           kMainThread);
  return Json{{"schemaVersion", 1},
              {"distributedInfo", Json{{"rank", device}, {"world_size", e.strategy.devices()}}},
              {"deviceProperties", Json::array({Json{{"id", device}, {"name", acc.title}}})},
              {"traceName", e.name + " (placesim simulation)"},
              {"placesim_version", PLACESIM_VERSION},
              {"traceEvents", w.events()}};
}

}  // namespace placesim
