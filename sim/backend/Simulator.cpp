#include "sim/backend/Simulator.hpp"

#include <chrono>
#include <deque>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u.hpp>
#include <unordered_map>

#include "sim/backend/Platform.hpp"
#include "sim/backend/TaskNames.hpp"
#include "topology/cluster/Fabric.hpp"
#include "workloads/json/Error.hpp"

namespace sg = simgrid::s4u;

namespace placesim {

namespace {

/// The steps of a ring collective on n ranks: 2(n-1) for an all-reduce, n-1 for a gather or scatter.
int ring_steps(CollectiveOp op, int n) {
  return op == CollectiveOp::AllReduce ? 2 * (n - 1) : n - 1;
}

/// A collective in progress, decomposed into ring steps: rank r's step k sends one chunk to rank r+1 once its own
/// step k-1 is sent and rank r-1's step k-1 (the chunk it forwards) has arrived.
struct RingRun {
  int steps = 0;  ///< total steps per rank (repeat included)
  double chunk_bytes = 0;
  std::vector<int> sent;           ///< steps completed per rank
  std::vector<int> pending;        ///< per rank: transfers of its current step still in flight (one per channel)
  std::vector<double> step_start;  ///< per rank: when its current step's first transfer started
  std::vector<double> first_start, last_end;
  int unfinished = 0;  ///< ranks not done
};

class Runner {
 public:
  Runner(const TaskGraph& g, const ClusterSpec& c, const SimOptions& o) : g_(g), c_(c), o_(o), fabric_(c) {
    int argc = 1;
    char name[] = "placesim";
    char* argv[] = {name, nullptr};
    engine_ = std::make_unique<sg::Engine>(&argc, argv);
  }

  SimResult run();

 private:
  struct Slot {
    sg::ActivityPtr activity;
    TaskId task = 0;
    int rank = -1;  ///< ring collectives: the sending rank of this step
  };
  /// Per group: its ring's slowest hop (bandwidth-protocol figures) and whether it stays inside one node.
  struct GroupRing {
    RingHop hop{-1, 0};
    bool one_node = false;
  };

  void find_channels();
  std::vector<std::pair<int, int>> used_pairs() const;
  void start(TaskId id);
  void launch(TaskId id, sg::ActivityPtr activity, int rank = -1);
  void delay(TaskId id, double seconds);
  void drain();
  void launch_ring_step(TaskId id, int rank);
  void on_complete(const sg::Activity& a);
  void finish(TaskId id, double start, double end);
  void finish_collective(TaskId id, const RingRun& run);
  void release_successors(TaskId id, double end);
  void account(TaskId id, int device, double start, double end, int step = -1);
  void apply_memory(const Task& t, bool at_start, double now);
  bool recorded(int device) const { return o_.record.empty() || o_.record[static_cast<std::size_t>(device)]; }
  const GroupRing& group_ring(int group);
  CollectivePlan plan(const Collective& c);

  const TaskGraph& g_;
  const ClusterSpec& c_;
  const SimOptions& o_;
  Fabric fabric_;
  /// Per group used by a collective: the transfers of each ring hop (Fabric::ring_channels); empty for other groups.
  std::vector<std::vector<std::vector<std::pair<int, int>>>> channels_;
  std::unique_ptr<sg::Engine> engine_;
  Platform platform_;
  std::vector<std::uint32_t> waiting_;
  std::vector<double> start_time_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_, release_;
  std::unordered_map<TaskId, RingRun> rings_;
  std::vector<GroupRing> group_rings_;
  std::deque<TaskId> ready_;
  std::uint64_t finished_ = 0;
  SimResult result_;
};

void Runner::find_channels() {
  channels_.assign(g_.groups.size(), {});
  for (TaskId id = 0; id < g_.size(); ++id)
    if (const auto* c = std::get_if<Collective>(&g_[id].body)) {
      auto& hops = channels_[static_cast<std::size_t>(c->group)];
      const auto& m = g_.groups[static_cast<std::size_t>(c->group)];
      if (hops.empty() && m.size() > 1) hops = fabric_.ring_channels(m);
    }
}

std::vector<std::pair<int, int>> Runner::used_pairs() const {
  std::vector<std::pair<int, int>> pairs;
  for (TaskId id = 0; id < g_.size(); ++id)
    if (const auto* p = std::get_if<P2P>(&g_[id].body)) pairs.emplace_back(p->src, p->dst);
  for (const auto& hops : channels_)
    for (const auto& hop : hops) pairs.insert(pairs.end(), hop.begin(), hop.end());
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  return pairs;
}

SimResult Runner::run() {
  auto wall_start = std::chrono::steady_clock::now();
  find_channels();
  platform_ = build_platform(*engine_, c_, used_pairs());
  result_.devices.resize(static_cast<std::size_t>(g_.devices));
  for (int x = 0; x < g_.devices; ++x) {
    for (int s = 0; s < 4; ++s) {
      double bytes = g_.resident[static_cast<std::size_t>(x)][static_cast<std::size_t>(s)];
      result_.devices[static_cast<std::size_t>(x)].apply(static_cast<State>(s), bytes, false);
      if (recorded(x) && bytes != 0) result_.record.memory.push_back({0, x, static_cast<State>(s), bytes, 0});
    }
  }
  waiting_.resize(g_.size());
  start_time_.assign(g_.size(), 0);
  for (TaskId id = 0; id < g_.size(); ++id) {
    waiting_[id] = static_cast<std::uint32_t>(boost::in_degree(id, g_.graph));
    if (waiting_[id] == 0) ready_.push_back(id);
  }
  sg::Activity::on_completion_cb([this](const sg::Activity& a) { on_complete(a); });
  drain();
  engine_->run();
  if (finished_ != g_.size())
    throw std::runtime_error("simulation stalled: " + std::to_string(g_.size() - finished_) + " of " +
                             std::to_string(g_.size()) +
                             " tasks never ran (a dependency cycle or an unroutable transfer)");
  result_.record.step_time_s = result_.step_time_s;  // the trace's otherData and the SVG's time axis read it
  result_.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return std::move(result_);
}

void Runner::start(TaskId id) {
  const Task& t = g_[id];
  double now = sg::Engine::get_clock();
  start_time_[id] = now;
  apply_memory(t, true, now);
  const int per_node = c_.gpus_per_node;
  std::visit(
      [&](const auto& b) {
        using B = std::decay_t<decltype(b)>;
        // A GPU's compute stream and a host core run one task at a time, so their tasks are pure delays: kernel
        // timers, which cost SimGrid far less than activities (whose completion scans every live activity).
        if constexpr (std::is_same_v<B, Compute>) {
          if (b.seconds <= 0) return finish(id, now, now);
          delay(id, b.seconds);
        } else if constexpr (std::is_same_v<B, HostCompute>) {
          delay(id, b.seconds);
        } else if constexpr (std::is_same_v<B, P2P>) {
          launch(id, sg::Comm::sendto_init(platform_.gpus[static_cast<std::size_t>(b.src)],
                                           platform_.gpus[static_cast<std::size_t>(b.dst)])
                         ->set_payload_size(static_cast<std::uint64_t>(b.bytes)));
        } else if constexpr (std::is_same_v<B, Offload>) {
          sg::Host* gpu = platform_.gpus[static_cast<std::size_t>(b.device)];
          sg::Host* cpu = platform_.cpus[static_cast<std::size_t>(b.device / per_node)];
          launch(id, sg::Comm::sendto_init(b.to_host ? gpu : cpu, b.to_host ? cpu : gpu)
                         ->set_payload_size(static_cast<std::uint64_t>(b.bytes)));
        } else {
          const auto& members = g_.groups[static_cast<std::size_t>(b.group)];
          const int n = static_cast<int>(members.size());
          if (n == 1) return finish(id, now, now);
          const CollectivePlan p = plan(b);
          // A collective NCCL runs with its low-latency protocol is latency-bound (too few bytes to contend) and
          // NVLS reduces inside the switch: both are exact delays at every fidelity.
          const bool decomposed =
              o_.fidelity == Fidelity::Full || (o_.fidelity == Fidelity::Flow && !group_ring(b.group).one_node);
          if (!decomposed || p.low_latency || p.algorithm != CollectiveAlgorithm::Ring) return delay(id, p.time_s);
          RingRun& run = rings_[id];
          run.steps = ring_steps(b.op, n) * b.repeat;
          run.chunk_bytes = static_cast<double>(b.elems / n) * b.elem_bytes;
          run.sent.assign(static_cast<std::size_t>(n), 0);
          run.pending.assign(static_cast<std::size_t>(n), 0);
          run.step_start.assign(static_cast<std::size_t>(n), 0);
          run.first_start.assign(static_cast<std::size_t>(n), -1);
          run.last_end.assign(static_cast<std::size_t>(n), now);
          run.unfinished = n;
          for (int r = 0; r < n; ++r) launch_ring_step(id, r);
        }
      },
      t.body);
}

// A group's ring: the slowest hop's latency and bandwidth along the platform's routes, looked up once per group
// (thousands of collectives share a group).
const Runner::GroupRing& Runner::group_ring(int group) {
  if (group_rings_.empty()) group_rings_.resize(g_.groups.size());
  GroupRing& ring = group_rings_[static_cast<std::size_t>(group)];
  if (ring.hop.latency_s >= 0) return ring;
  const auto& m = g_.groups[static_cast<std::size_t>(group)];
  ring.hop = {0, std::numeric_limits<double>::infinity()};
  ring.one_node = true;
  for (const auto& transfers : channels_[static_cast<std::size_t>(group)]) {
    // The hop's bytes are split over its channels: its bandwidth is theirs together, its latency the slowest's.
    double bandwidth = std::numeric_limits<double>::infinity();
    for (auto [from, to] : transfers) {
      std::vector<sg::Link*> links;
      double latency = 0;
      platform_.gpus[static_cast<std::size_t>(from)]->route_to(platform_.gpus[static_cast<std::size_t>(to)], links,
                                                               &latency);
      ring.hop.latency_s = std::max(ring.hop.latency_s, latency);
      for (auto* l : links) bandwidth = std::min(bandwidth, l->get_bandwidth());
      ring.one_node = ring.one_node && from / c_.gpus_per_node == m.front() / c_.gpus_per_node &&
                      to / c_.gpus_per_node == m.front() / c_.gpus_per_node;
    }
    ring.hop.bw_Bps = std::min(ring.hop.bw_Bps, bandwidth * static_cast<double>(transfers.size()));
  }
  return ring;
}

// The collective's time without contention as NCCL would run it: the faster protocol of its ring (and NVLS for an
// all-reduce inside a node with NVLink SHARP), each step paying the slowest hop. With comm_model "links" the links'
// own figures are the only protocol.
CollectivePlan Runner::plan(const Collective& c) {
  const GroupRing& ring = group_ring(c.group);
  const int n = static_cast<int>(g_.groups[static_cast<std::size_t>(c.group)].size());
  const double bytes = static_cast<double>(c.elems / n) * c.elem_bytes * n;
  const CollectiveKind kind = c.op == CollectiveOp::AllReduce   ? CollectiveKind::AllReduce
                              : c.op == CollectiveOp::AllGather ? CollectiveKind::AllGather
                                                                : CollectiveKind::ReduceScatter;
  FabricProfile fabric;  // default: one protocol, the links' own
  if (c_.comm_model == CommModel::Nccl) fabric = ring.one_node ? c_.comm.intra_node : c_.comm.inter_node;
  const bool nvls = ring.one_node && fabric.has_nvls() && kind == CollectiveKind::AllReduce;
  CollectivePlan p =
      plan_collective(kind, nvls ? CollectiveAlgorithm::Nvls : CollectiveAlgorithm::Ring, bytes, n, fabric, ring.hop);
  p.time_s *= c.repeat;
  return p;
}

void Runner::launch(TaskId id, sg::ActivityPtr activity, int rank) {
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  slots_[slot] = Slot{activity, id, rank};
  activity->set_data(reinterpret_cast<void*>(static_cast<std::uintptr_t>(slot) + 1));
  ++result_.activities;
  activity->vetoable_start();
}

void Runner::delay(TaskId id, double seconds) {
  ++result_.timers;
  double begin = sg::Engine::get_clock();
  simgrid::kernel::timer::Timer::set(begin + seconds, [this, id, begin]() {
    finish(id, begin, sg::Engine::get_clock());
    drain();
  });
}

void Runner::drain() {
  while (!ready_.empty()) {
    TaskId id = ready_.front();
    ready_.pop_front();
    start(id);
  }
}

// One step of `rank`: its chunk to the next rank, split over the hop's channels.
void Runner::launch_ring_step(TaskId id, int rank) {
  const auto& c = std::get<Collective>(g_[id].body);
  const auto& transfers = channels_[static_cast<std::size_t>(c.group)][static_cast<std::size_t>(rank)];
  RingRun& run = rings_[id];
  run.pending[static_cast<std::size_t>(rank)] = static_cast<int>(transfers.size());
  run.step_start[static_cast<std::size_t>(rank)] = sg::Engine::get_clock();
  const auto bytes = static_cast<std::uint64_t>(std::llround(run.chunk_bytes / static_cast<double>(transfers.size())));
  for (auto [from, to] : transfers)
    launch(id,
           sg::Comm::sendto_init(platform_.gpus[static_cast<std::size_t>(from)],
                                 platform_.gpus[static_cast<std::size_t>(to)])
               ->set_payload_size(bytes),
           rank);
}

void Runner::on_complete(const sg::Activity& a) {
  // Activities completed in an earlier callback can now be dropped (never inside their own callback).
  for (std::uint32_t s : release_) {
    slots_[s].activity = nullptr;
    free_slots_.push_back(s);
  }
  release_.clear();
  auto slot = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(a.get_data<void>()) - 1);
  release_.push_back(slot);
  const Slot s = slots_[slot];
  if (a.get_state() != sg::Activity::State::FINISHED)
    throw std::runtime_error("activity of task " + std::to_string(s.task) + " did not finish");
  double began = a.get_start_time(), end = a.get_finish_time();
  if (s.rank < 0) {
    finish(s.task, start_time_[s.task], end);
  } else {
    RingRun& run = rings_[s.task];
    const int n = static_cast<int>(run.sent.size());
    const auto r = static_cast<std::size_t>(s.rank);
    if (--run.pending[r] > 0) return;  // the step's other channels are still in flight
    began = run.step_start[r];
    if (run.first_start[r] < 0) run.first_start[r] = began;
    run.last_end[r] = end;
    const auto& c = std::get<Collective>(g_[s.task].body);
    int device = g_.groups[static_cast<std::size_t>(c.group)][r];
    result_.devices[static_cast<std::size_t>(device)].bytes_sent[static_cast<std::size_t>(c.cls)] += run.chunk_bytes;
    if (o_.fine && recorded(device)) account(s.task, device, began, end, run.sent[r]);
    int k = ++run.sent[r];
    if (k == run.steps) --run.unfinished;
    auto next = static_cast<std::size_t>((s.rank + 1) % n), prev = static_cast<std::size_t>((s.rank + n - 1) % n);
    if (k < run.steps && run.sent[prev] >= k) launch_ring_step(s.task, s.rank);
    if (run.sent[next] == k && k < run.steps) launch_ring_step(s.task, static_cast<int>(next));
    if (run.unfinished == 0) {
      RingRun done = std::move(run);
      rings_.erase(s.task);
      finish_collective(s.task, done);
    }
  }
  drain();
}

void Runner::apply_memory(const Task& t, bool at_start, double now) {
  std::uint32_t first = t.mem_first + (at_start ? 0 : t.mem_on_start);
  std::uint32_t count = at_start ? t.mem_on_start : t.mem_on_end;
  for (std::uint32_t i = first; i < first + count; ++i) {
    const MemDelta& d = g_.deltas[i];
    result_.devices[static_cast<std::size_t>(d.device)].apply(d.state, d.bytes, d.buffer);
    if (recorded(d.device))
      result_.record.memory.push_back(
          {now, d.device, d.state, d.bytes, static_cast<std::uint64_t>(result_.record.memory.size())});
  }
}

void Runner::account(TaskId id, int device, double start, double end, int step) {
  TaskRecord r = describe_task(g_, id, device);
  r.start_s = start;
  r.end_s = end;
  if (step >= 0) {
    const auto& c = std::get<Collective>(g_[id].body);
    r.step = step;
    r.bytes =
        static_cast<double>(c.elems / static_cast<std::int64_t>(g_.groups[static_cast<std::size_t>(c.group)].size())) *
        c.elem_bytes;
    r.name += " step " + std::to_string(step);
  }
  if (const auto* c = std::get_if<Collective>(&g_[id].body)) {
    const auto& m = g_.groups[static_cast<std::size_t>(c->group)];
    for (std::size_t i = 0; i < m.size(); ++i)
      if (m[i] == device) r.peer = m[(i + 1) % m.size()];
    r.collective = id + 1;
  }
  result_.record.tasks.push_back(std::move(r));
}

void Runner::finish(TaskId id, double start, double end) {
  const Task& t = g_[id];
  const Stream stream = task_stream(t);
  if (const auto* c = std::get_if<Collective>(&t.body)) {
    // Not decomposed (a single exact activity, or a group of one): every member was busy for its whole span.
    for (int x : g_.groups[static_cast<std::size_t>(c->group)]) {
      auto& dev = result_.devices[static_cast<std::size_t>(x)];
      dev.busy[static_cast<std::size_t>(stream)].add(start, end);
      dev.bytes_sent[static_cast<std::size_t>(c->cls)] += task_bytes_sent(g_, t, x);
      if (recorded(x)) account(id, x, start, end);
    }
  } else {
    int device = task_devices(g_, t).front();
    auto& dev = result_.devices[static_cast<std::size_t>(device)];
    dev.busy[static_cast<std::size_t>(stream)].add(start, end);
    if (const auto* p = std::get_if<P2P>(&t.body)) {
      dev.bytes_sent[static_cast<std::size_t>(p->cls)] += p->bytes;
      result_.devices[static_cast<std::size_t>(p->dst)].busy[static_cast<std::size_t>(Stream::PpRecv)].add(start, end);
    } else if (const auto* o = std::get_if<Offload>(&t.body)) {
      (o->to_host ? dev.d2h_bytes : dev.h2d_bytes) += o->bytes;
    } else if (const auto* c = std::get_if<Compute>(&t.body)) {
      dev.flops += c->flops;
    }
    if (recorded(device)) account(id, device, start, end);
  }
  apply_memory(t, false, end);
  release_successors(id, end);
}

void Runner::release_successors(TaskId id, double end) {
  result_.step_time_s = std::max(result_.step_time_s, end);
  ++finished_;
  for (auto [e, last] = boost::out_edges(id, g_.graph); e != last; ++e) {
    TaskId next = boost::target(*e, g_.graph);
    if (--waiting_[next] == 0) ready_.push_back(next);
  }
}

void Runner::finish_collective(TaskId id, const RingRun& run) {
  const Task& t = g_[id];
  const auto& c = std::get<Collective>(t.body);
  const auto& m = g_.groups[static_cast<std::size_t>(c.group)];
  double end = 0;
  for (std::size_t r = 0; r < m.size(); ++r) {
    int x = m[r];
    result_.devices[static_cast<std::size_t>(x)].busy[static_cast<std::size_t>(c.stream)].add(run.first_start[r],
                                                                                              run.last_end[r]);
    if (!o_.fine && recorded(x)) account(id, x, run.first_start[r], run.last_end[r]);
    end = std::max(end, run.last_end[r]);
  }
  apply_memory(t, false, end);
  release_successors(id, end);
}

}  // namespace

SimResult simulate(const TaskGraph& graph, const ClusterSpec& cluster, const SimOptions& options) {
  return Runner(graph, cluster, options).run();
}

}  // namespace placesim
