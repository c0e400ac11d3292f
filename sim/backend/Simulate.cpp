#include "sim/backend/Simulate.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>

#include "sim/backend/Generations.hpp"
#include "sim/backend/Runner.hpp"
#include "strategies/analytic/Costs.hpp"
#include "strategies/analytic/LayerTimes.hpp"
#include "strategies/analytic/Validity.hpp"
#include "strategies/pipeline/PipelineMetrics.hpp"
#include "strategies/pipeline/PipelineSchedule.hpp"
#include "strategies/placement/ClusterFit.hpp"
#include "strategies/placement/Mesh.hpp"
#include "traces/report/SimReport.hpp"
#include "workloads/json/Numbers.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

namespace {

// Mixed hardware: each stage's model states against the smallest memory of the accelerators it runs on (refused when
// they exceed it); a bound with every transient buffer above it is noted (the simulated peak decides, as on one
// accelerator). Without --device-memory, the device memory checked later is the largest stage's.
void check_stage_memory(Experiment& e, ClusterSpec& c) {
  // --device-memory stands for every device (the cluster's own accelerator's memory is what callers default to).
  if (e.device_memory_bytes > 0 && e.device_memory_bytes != c.accelerator.hbm_bytes) return;
  const Analysis a = analyze(e);
  double largest = 0;
  for (const StageAnalysis& st : a.stages) {
    const AcceleratorSpec& smallest = smallest_accelerator(e, c, st.stage);
    const double capacity = smallest.hbm_bytes;
    const std::string& holder = smallest.name;
    largest = std::max(largest, capacity);
    const std::string stage = "stage " + std::to_string(st.stage);
    if (st.memory.model_states() > capacity)
      throw InputError("memory: " + stage + " does not fit its " + holder + " GPUs: its model states need " +
                       format_bytes(st.memory.model_states()) + " of " + format_bytes(capacity) +
                       " (cluster.accelerators places it there)");
    if (st.memory.total() > capacity)
      c.mixed_note += "; " + stage + "'s bound with every transient buffer, " + format_bytes(st.memory.total()) +
                      ", exceeds its " + holder + "'s " + format_bytes(capacity);
  }
  e.device_memory_bytes = largest;
}

}  // namespace

SimulationInput resolve_simulation(Experiment e) {
  if (e.cluster.is_null())
    throw InputError("cluster is required to simulate: add e.g. \"cluster\": {\"preset\": \"dgx-a100\", \"nodes\": 2}");
  ClusterSpec c = parse_cluster(e.cluster);
  check_calibration_accelerator(e, c.accelerator.name);
  check_cluster_mesh(e, cluster_fit(c));
  apply_generations(e, c);
  if (c.mixed()) check_stage_memory(e, c);
  if (e.device_memory_bytes <= 0) e.device_memory_bytes = c.accelerator.hbm_bytes;
  return SimulationInput{std::move(e), std::move(c)};
}

namespace {

// Schedules the expansion supports for model experiments beyond validity: asynchronous pipelines update weights per
// micro-batch on one pipeline replica; LocalSGD's replicas are an abstract-pipeline study.
void check_simulatable(const Experiment& e) {
  const auto& s = e.strategy;
  if (s.schedule == Schedule::LocalSGD)
    throw InputError(
        "strategy.schedule=localsgd is simulated for abstract pipelines only (an experiment with a "
        "\"pipeline\" section instead of model and cluster)");
  bool async = s.schedule == Schedule::PipeDream || s.schedule == Schedule::PipeDream2BW;
  if (!async) return;
  if (s.cp > 1)
    throw InputError("strategy.schedule=" + to_string(s.schedule) + " is simulated with strategy.cp=1 only (got cp=" +
                     std::to_string(s.cp) + "): its inline weight updates do not synchronise a context-parallel group");
  if (e.model.tied_embeddings && s.pp > 1)
    throw InputError("strategy.schedule=" + to_string(s.schedule) +
                     " with model.tied_embeddings=true and strategy.pp > 1: "
                     "the tied copies on the first and last stage would diverge; set model.tied_embeddings=false");
  if (s.placement.optimizer == Mode::Offloaded)
    throw InputError("strategy.schedule=" + to_string(s.schedule) +
                     " with strategy.placement.optimizer=offloaded is not simulated");
}

// Rates measured on the 2-core development machine (docs/benchmarks.md): host seconds per SimGrid flow and per timer,
// resident bytes per graph task (graph, records, memory deltas), trace bytes per recorded task event.
// A ring hop may run over several channels (one flow each): the flow count is a lower bound by up to 2x, which the
// per-flow rate absorbs.
constexpr double kSecondsPerFlow = 20e-6, kSecondsPerTimer = 2e-6;
// Flows are created just in time and freed when they end, so they add no memory that grows with their count.
constexpr double kBaseMemoryBytes = 60e6, kBytesPerTask = 1500, kTraceBytesPerEvent = 400;
// A TaskRecord with its name (a folded step copies one per device it stands for).
constexpr double kBytesPerRecordCopy = 250;

std::string seconds_text(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, s >= 10 && s < 1e6 ? "%.0f s" : "%.3g s", s);
  return buf;
}

// Walks a graph's tasks for estimate_simulation: the SimGrid activities and records each makes, and the longest task
// and transfer.
class EstimateWalk {
 public:
  EstimateWalk(const TaskGraph& g, const ClusterSpec& c, const SimOptions& o, const std::vector<int>& stands_for,
               SimulationEstimate& est)
      : g_(g), c_(c), o_(o), stands_for_(stands_for), est_(est) {
    // The slowest bandwidth a transfer between devices may take: the NIC when the step spans nodes, else NVLink.
    const bool multi_node = c.nodes > 1;
    device_bw_ = multi_node ? std::min(c.nic_bw_Bps, c.nvlink_bw_Bps) : c.nvlink_bw_Bps;
    device_bw_field_ = multi_node && c.nic_bw_Bps < c.nvlink_bw_Bps ? "cluster.nic_bw" : "cluster.nvlink_bw";
  }

  double events() const { return events_; }

  void task(TaskId id) {
    std::visit(
        [&](const auto& b) {
          using B = std::decay_t<decltype(b)>;
          if constexpr (std::is_same_v<B, Compute>) {
            est_.timers += 1;
            events_ += recorded(b.device);
            compute(b.seconds, std::string(to_string(b.kind)) + " compute task" +
                                   (b.layer >= 0 ? " of layer " + std::to_string(b.layer) : std::string()));
          } else if constexpr (std::is_same_v<B, HostCompute>) {
            est_.timers += 1;
            events_ += recorded(b.device);
            compute(b.seconds, b.wait ? "host time" : "host optimizer step");
          } else if constexpr (std::is_same_v<B, P2P>) {
            est_.flows += 1;
            events_ += recorded(b.src);  // recorded on the sender
            transfer(b.bytes, device_bw_, device_bw_field_, "a point-to-point transfer");
          } else if constexpr (std::is_same_v<B, Offload>) {
            est_.flows += 1;
            events_ += recorded(b.device);
            transfer(b.bytes, c_.pcie_bw_Bps, "cluster.pcie_bw", "an offload copy");
          } else {
            collective(b, g_[id]);
          }
        },
        g_[id].body);
  }

 private:
  // Records (trace events) a task of `device` leaves: one if recorded, or its folded copies.
  double recorded(int device) const {
    if (!stands_for_.empty())
      return device >= 0 && static_cast<std::size_t>(device) < stands_for_.size()
                 ? stands_for_[static_cast<std::size_t>(device)]
                 : 0;
    return o_.record.empty() || (device >= 0 && static_cast<std::size_t>(device) < o_.record.size() &&
                                 o_.record[static_cast<std::size_t>(device)]);
  }

  void transfer(double bytes, double bw, const std::string& field, const std::string& what) {
    const double s = bytes / bw;
    if (!(s <= est_.longest_transfer_s)) {
      est_.longest_transfer_s = s;
      est_.longest_transfer =
          what + " of " + format_significant(bytes, 3) + " B at " + field + "=" + format_significant(bw, 3) + " B/s";
    }
  }

  void compute(double seconds, const std::string& what) {
    if (!(seconds <= est_.longest_compute_s)) {
      est_.longest_compute_s = seconds;
      est_.longest_compute = what;
    }
  }

  bool one_node(const std::vector<int>& members) const {
    const double gpn = c_.gpus_per_node;
    bool one = true;
    for (int x : members) one = one && std::floor(x / gpn) == std::floor(members.front() / gpn);
    return one;
  }

  // An all-to-all decomposed is a flow per ordered pair and round (an upper bound: pairs without tokens send
  // nothing); each member's sends leave through its own link.
  void alltoall(const Collective& b, const Task& task) {
    const auto& members = g_.groups[static_cast<std::size_t>(b.group)];
    const auto n = static_cast<double>(members.size());
    const bool same_node = one_node(members);
    const bool decomposed = detail::decomposes(o_.fidelity, same_node);
    if (decomposed)
      est_.flows += n * (n - 1) * b.repeat;
    else
      est_.timers += 1;
    const int per_member = o_.fine && decomposed ? b.repeat : 1;
    for (int x : members) events_ += recorded(x) * per_member;
    if (b.split < 0 || static_cast<std::size_t>(b.split) >= g_.a2a_tokens.size() ||
        g_.a2a_tokens[static_cast<std::size_t>(b.split)].size() != members.size())
      return;  // the simulator refuses it
    double sent = 0;
    for (int x : members) sent = std::max(sent, task_bytes_sent(g_, task, x));
    transfer(sent, same_node ? c_.nvlink_bw_Bps : device_bw_, same_node ? "cluster.nvlink_bw" : device_bw_field_,
             "an all-to-all");
  }

  void collective(const Collective& b, const Task& task) {
    const auto& members = g_.groups[static_cast<std::size_t>(b.group)];
    const int n = static_cast<int>(members.size());
    if (n <= 1) {
      events_ += recorded(members.front());
      return;
    }
    if (b.op == CollectiveOp::AllToAll) return alltoall(b, task);
    // A folded step runs the simulated blocks' ranks of the ring only.
    const auto ranks = static_cast<double>(
        std::count_if(members.begin(), members.end(), [&](int x) { return o_.folding.simulated(x); }));
    const bool same_node = one_node(members);
    // Decomposed into ring steps (an upper bound: latency-bound and NVLS collectives stay one timer).
    const bool decomposed = detail::decomposes(o_.fidelity, same_node);
    if (decomposed)
      est_.flows += static_cast<double>(detail::ring_steps(b.op, n)) * b.repeat * ranks;
    else
      est_.timers += 1;
    // Fine detail records each ring step of a decomposed collective; an exact delay is one record a member.
    const int per_member = o_.fine && decomposed ? detail::ring_steps(b.op, n) * b.repeat : 1;
    for (int x : members) events_ += recorded(x) * per_member;
    const double bytes = static_cast<double>(b.elems) * b.elem_bytes;
    transfer(bytes * detail::ring_steps(b.op, n) / n * b.repeat, same_node ? c_.nvlink_bw_Bps : device_bw_,
             same_node ? "cluster.nvlink_bw" : device_bw_field_, "a collective");
  }

  const TaskGraph& g_;
  const ClusterSpec& c_;
  const SimOptions& o_;
  const std::vector<int>& stands_for_;
  SimulationEstimate& est_;
  double events_ = 0;
  double device_bw_ = 0;
  std::string device_bw_field_;
};

}  // namespace

SimulationEstimate estimate_simulation(const TaskGraph& g, const ClusterSpec& c, const SimOptions& o, bool trace,
                                       const std::vector<int>& stands_for) {
  SimulationEstimate est;
  est.tasks = static_cast<double>(g.size());
  EstimateWalk walk(g, c, o, stands_for, est);
  for (TaskId id = 0; id < g.size(); ++id) walk.task(id);
  const double events = walk.events();
  est.seconds = est.flows * kSecondsPerFlow + est.timers * kSecondsPerTimer;
  // Folded records copied to the devices they stand for cost memory beyond the graph's tasks.
  est.memory_bytes =
      kBaseMemoryBytes + est.tasks * kBytesPerTask + (stands_for.empty() ? 0.0 : events * kBytesPerRecordCopy);
  est.trace_bytes = trace ? events * kTraceBytesPerEvent : 0;
  return est;
}

namespace {

// Refuses absurd task lengths (always) and a simulation past the size limits (unless forced); warns past the
// smaller thresholds on stderr before the run starts, so a user waiting knows why.
void check_estimate(const SimulationEstimate& est, const Experiment& e, const ClusterSpec& c, bool force) {
  if (!(est.longest_compute_s <= kMaxTaskSeconds))
    throw InputError("one " + est.longest_compute + " would last " + seconds_text(est.longest_compute_s) +
                     " (model.seq_len=" + std::to_string(e.model.seq_len) +
                     ", model.hidden=" + std::to_string(e.model.hidden) + ", training.micro_batch=" +
                     std::to_string(e.training.micro_batch) + " on cluster.accelerator " + c.accelerator.name + " at " +
                     format_significant(c.accelerator.peak_bf16_flops, 3) + " FLOP/s): more than the " +
                     seconds_text(kMaxTaskSeconds) + " placesim simulates; check those fields and their units");
  if (!(est.longest_transfer_s <= kMaxTaskSeconds))
    throw InputError(est.longest_transfer + " would last " + seconds_text(est.longest_transfer_s) + ": more than the " +
                     seconds_text(kMaxTaskSeconds) + " placesim simulates; check the bandwidth and its unit");
  std::vector<std::string> over, warn;
  auto limit = [&](double v, double hard, double soft, const std::string& what) {
    if (v > hard)
      over.push_back(what);
    else if (v > soft)
      warn.push_back(what);
  };
  limit(est.seconds, kMaxSimSeconds, kWarnSimSeconds, "about " + seconds_text(est.seconds) + " of host time");
  limit(est.memory_bytes, kMaxSimMemoryBytes, kWarnSimMemoryBytes,
        "about " + format_bytes(est.memory_bytes) + " of memory");
  limit(est.trace_bytes, kMaxTraceBytes, kWarnTraceBytes,
        "a trace of about " + format_bytes(est.trace_bytes) + " before compression (narrow it with --trace-devices)");
  auto joined = [](const std::vector<std::string>& parts) {
    std::string s;
    for (const auto& p : parts) s += (s.empty() ? "" : ", ") + p;
    return s;
  };
  const std::string counts = format_significant(est.flows, 3) + " flows and " + format_significant(est.timers, 3) +
                             " timers from " + format_significant(est.tasks, 3) + " tasks";
  if (!over.empty() && !force)
    throw InputError(
        "simulating this step would take " + joined(over) + " (" + counts + "), beyond placesim's limits (" +
        seconds_text(kMaxSimSeconds) + ", " + format_bytes(kMaxSimMemoryBytes) + " of memory, a " +
        format_bytes(kMaxTraceBytes) +
        " trace). Use --force (placesim simulate) to simulate anyway, --fidelity analytic to make collectives single "
        "timers, or analyze it instead");
  for (const auto& parts : {over, warn})
    if (!parts.empty())
      std::cerr << "warning: simulating this step will take " << joined(parts) << " (" << counts << ")\n";
}

}  // namespace

ClusterSpec frame_cluster(const ClusterSpec& c, const Folding& folding, std::int64_t job_devices) {
  if (folding.rotation == 0) return c;
  ClusterSpec frame = c;
  const auto devices = static_cast<int>(std::min<std::int64_t>(job_devices, c.devices()));
  frame.slow.clear();
  frame.speed_spread.sigma = 0;
  for (int g = 0; g < devices; ++g)
    if (const double speed = c.straggler_speed(g); speed != 1)
      frame.slow["gpu " + std::to_string(folding.frame(g))] = speed;
  frame.degraded.clear();
  for (const auto& [name, left] : c.degraded) {
    ClusterSpec::DegradedLink link = c.degraded_link(name);
    if (link.gpu < 0 || link.gpu >= devices) {
      frame.degraded[name] = left;  // a rail is every node's
      continue;
    }
    link.gpu = folding.frame(link.gpu);
    frame.degraded[c.degraded_key(link)] = left;
  }
  return frame;
}

void check_expandable(const Experiment& e, const SimulateSettings& settings, double share) {
  const double tasks = estimated_compute_tasks(e, settings.expand) * share;
  if (settings.force || tasks <= kMaxComputeTasks) return;
  char count[64];
  std::snprintf(count, sizeof count, "%.3g", tasks);
  throw InputError("the step would expand to about " + std::string(count) + " compute tasks (" +
                   std::to_string(std::llround(static_cast<double>(e.strategy.devices()) * share)) + " devices x " +
                   std::to_string(e.strategy.microbatches) + " micro-batches x " + std::to_string(e.strategy.chunks) +
                   " chunks x passes x layer groups of " + std::to_string(layer_group_size(e, settings.expand)) +
                   " layers), more than the limit of 2e+07; that takes minutes and gigabytes. Use --force to "
                   "simulate anyway, or analyze it instead");
}

void unfold_result(SimResult& result, const Folding& folding, const std::vector<char>& wanted) {
  if (!folding.active()) return;
  const auto devices = result.devices.size();
  const std::vector<DeviceStats> simulated = std::move(result.devices);
  result.devices.clear();
  for (std::size_t x = 0; x < devices; ++x)
    result.devices.push_back(simulated[static_cast<std::size_t>(folding.source(static_cast<int>(x)))]);
  // Per simulated (frame) device, the real wanted devices it stands for.
  std::vector<std::vector<int>> stands_for(devices);
  for (std::size_t x = 0; x < devices && x < wanted.size(); ++x)
    if (wanted[x])
      stands_for[static_cast<std::size_t>(folding.source(static_cast<int>(x)))].push_back(static_cast<int>(x));
  auto& rec = result.record;
  std::vector<TaskRecord> tasks;
  for (auto& t : rec.tasks)
    for (int x : stands_for[static_cast<std::size_t>(t.device)]) {
      TaskRecord moved = t;
      const int k = folding.block(x) - folding.block(t.device);  // the move from the frame device to x, in blocks
      moved.device = x;
      // Names carry devices: a send's receiver, a collective's group (its lowest device) and ring peer.
      auto rename = [&](const std::string& token, const std::string& by) {
        if (const auto at = moved.name.find(token); at != std::string::npos) moved.name.replace(at, token.size(), by);
      };
      auto to_lane = [&](int device, int lane) { return device + (lane - folding.lane(device)) * folding.tp; };
      if (moved.kind == TaskKind::Collective && moved.group_lanes > 0) {
        // The device's own copy of the group starts at lane bx; the representative's at br. A ring peer keeps its
        // offset from the device within the group.
        const int e = moved.group_lanes, lx = folding.lane(x), lr = folding.lane(t.device);
        const int bx = lx / e * e, br = lr / e * e;
        if (moved.group_first >= 0) {
          const int first = to_lane(moved.group_first, folding.lane(moved.group_first) + bx - br);
          rename(" grp@gpu" + std::to_string(moved.group_first) + " ", " grp@gpu" + std::to_string(first) + " ");
          moved.group_first = first;
        }
        if (moved.peer >= 0) {
          const int offset = ((folding.lane(moved.peer) - br + (lx - bx) - (lr - br)) % e + e) % e;
          moved.peer = to_lane(moved.peer, bx + offset);
        }
        if (bx != br) moved.collective += static_cast<std::uint64_t>(bx / e) << 40;  // another copy's collective
      } else if (moved.peer >= 0) {
        const int peer = folding.shift(moved.peer, k);
        if (moved.kind == TaskKind::P2P)
          rename(" -> gpu" + std::to_string(moved.peer), " -> gpu" + std::to_string(peer));
        moved.peer = peer;
      }
      tasks.push_back(std::move(moved));
    }
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const TaskRecord& a, const TaskRecord& b) { return a.end_s < b.end_s; });
  rec.tasks = std::move(tasks);
  std::vector<MemoryEvent> memory;
  for (const auto& m : rec.memory)
    for (int x : stands_for[static_cast<std::size_t>(m.device)]) {
      MemoryEvent moved = m;
      moved.device = x;
      memory.push_back(moved);
    }
  std::stable_sort(memory.begin(), memory.end(),
                   [](const MemoryEvent& a, const MemoryEvent& b) { return a.time_s < b.time_s; });
  rec.memory = std::move(memory);
}

SimulationRecord pipeline_records(const Experiment& e, const SimulationRecord& all) {
  SimulationRecord one;
  for (const auto& t : all.tasks) {
    MeshCoord c = mesh_coord(e.strategy, t.device);
    if (c.dp == 0 && c.tp == 0 && c.cp == 0) one.tasks.push_back(t);
  }
  return one;
}

std::vector<DeviceInfo> device_infos(const Experiment& e, const ClusterSpec& c) {
  std::vector<DeviceInfo> out;
  for (std::int64_t x = 0; x < e.strategy.devices(); ++x) {
    MeshCoord m = mesh_coord(e.strategy, x);
    out.push_back(
        DeviceInfo{static_cast<int>(x / c.gpus_per_node), static_cast<int>(x % c.gpus_per_node), m.dp, m.tp, m.pp});
    if (e.strategy.cp > 1) out.back().cp = m.cp;
  }
  return out;
}

std::vector<char> recorded_devices(const Experiment& e, const std::vector<int>& traced) {
  std::vector<char> record(static_cast<std::size_t>(e.strategy.devices()), 0);
  for (int x : traced) record[static_cast<std::size_t>(x)] = 1;
  for (std::int64_t s = 0; s < e.strategy.pp; ++s)
    record[static_cast<std::size_t>(mesh_rank(e.strategy, {0, 0, s}))] = 1;
  return record;
}

SimulatedStep simulate_experiment(const SimulationInput& in, const SimulateSettings& settings) {
  const Experiment& e = in.experiment;
  check_validity(e);
  check_simulatable(e);
  const ClusterSpec network = simulated_network(in.cluster);
  SimOptions options = settings.sim;
  if (settings.symmetry) {
    options.folding = plan_folding(e, network);
  } else {
    options.folding.tp = static_cast<int>(e.strategy.tp);
    options.folding.lanes = options.folding.folded_lanes = static_cast<int>(e.strategy.data_ranks());
    options.folding.reason = "symmetry folding off (--symmetry off)";
  }
  const Folding& folding = options.folding;
  check_expandable(e, settings, folding.simulated_share());
  SimulatedStep step;
  step.experiment = e;
  step.cluster = in.cluster;
  step.analysis = analyze(e);
  // The bound holds every transient buffer live at once. When only it exceeds the device memory, the simulation
  // decides by its peak (below); when the model states alone do, nothing is simulated.
  const bool bound_fits = e.device_memory_bytes <= 0 || step.analysis.total_bytes <= e.device_memory_bytes;
  if (!bound_fits && step.analysis.model_states_bytes > e.device_memory_bytes) check_fits(e, step.analysis);
  ExpandOptions expand_options = settings.expand;
  if (folding.active()) expand_options.folded_lanes = folding.window * folding.folded_lanes;
  const ClusterSpec frame = frame_cluster(network, folding, e.strategy.devices());
  auto graph = std::make_shared<TaskGraph>(expand(e, frame, expand_options));
  const TaskGraph& g = *graph;
  const std::vector<char> wanted = recorded_devices(e, settings.traced_devices);
  options.record = wanted;
  // A folded step records the representatives of the wanted devices, each once per device it stands for.
  std::vector<int> stands_for;
  if (folding.active()) {
    stands_for.assign(wanted.size(), 0);
    for (std::size_t x = 0; x < wanted.size(); ++x)
      if (wanted[x]) {
        const auto rep = static_cast<std::size_t>(folding.source(static_cast<int>(x)));
        ++stands_for[rep];
        options.record[rep] = 1;
      }
  }
  check_estimate(estimate_simulation(g, frame, options, settings.trace, stands_for), e, in.cluster, settings.force);
  step.result = simulate(g, frame, options);
  unfold_result(step.result, folding, wanted);
  if (step.result.nic_overlap_node >= 0)
    step.result.nic_overlap_node =
        folding.real(step.result.nic_overlap_node * in.cluster.gpus_per_node) / in.cluster.gpus_per_node;
  step.result.folding = folding;
  step.result.symmetry = settings.symmetry;
  step.result.record.devices = device_infos(e, in.cluster);
  if (settings.reproducible) step.result.wall_time_s = 0;
  step.fidelity = settings.sim.fidelity;
  step.layer_group = layer_group_size(e, settings.expand);
  const SimulationRecord pipeline = pipeline_records(e, step.result.record);
  step.layer_times = measure_layer_times(pipeline);
  if (e.strategy.pp > 1)
    step.pipeline = measure_pipeline(make_schedule(shape_of(e.strategy, 1), strategy_shape_fields()), pipeline);
  step.figures = sim_figures(e, in.cluster, step.analysis, step.result);
  if (!bound_fits) check_peak_fits(e, step.analysis, step.figures.max.peak_total, step.figures.max.at_peak);
  step.validation = validation_rows(e, step.analysis, step.result, step.figures);
  if (settings.keep_graph) step.graph = std::move(graph);
  return step;
}

}  // namespace placesim
