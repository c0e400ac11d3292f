#include "sim/backend/Simulator.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u.hpp>
#include <tuple>
#include <unordered_map>

#include "sim/backend/Platform.hpp"
#include "sim/backend/Runner.hpp"
#include "sim/backend/TaskNames.hpp"
#include "topology/cluster/Fabric.hpp"
#include "workloads/json/Error.hpp"

namespace sg = simgrid::s4u;

namespace placesim {

namespace detail {

SimResult Runner::run() {
  auto wall_start = std::chrono::steady_clock::now();
  find_channels();
  find_alltoalls();
  platform_ = build_platform(*engine_, c_, used_pairs(), mirrored_hops(), o_.folding);
  result_.devices.resize(static_cast<std::size_t>(g_.devices));
  for (int x = 0; x < g_.devices; ++x) {
    for (int s = 0; s < 4; ++s) {
      double bytes = g_.resident[static_cast<std::size_t>(x)][static_cast<std::size_t>(s)];
      result_.devices[static_cast<std::size_t>(x)].apply(static_cast<State>(s), bytes, false);
      if (recorded(x) && bytes != 0) result_.record.memory.push_back({0, x, static_cast<State>(s), bytes, 0});
    }
  }
  if (interferes_) {
    computing_.assign(static_cast<std::size_t>(g_.devices), 0);
    busy_before_.assign(static_cast<std::size_t>(g_.devices), 0);
    busy_since_.assign(static_cast<std::size_t>(g_.devices), 0);
    compute_task_.assign(static_cast<std::size_t>(g_.devices), kNoStretch);
    plan_interference();
    device_delays_.assign(static_cast<std::size_t>(g_.devices), {});
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
  for (std::size_t nic = 0; nic < nic_overlap_.size(); ++nic)
    if (nic_overlap_[nic].overlapped_s() > result_.nic_overlap_s) {
      result_.nic_overlap_s = nic_overlap_[nic].overlapped_s();
      result_.nic_overlap_node = static_cast<int>(nic) / c_.nics_per_node;
      result_.nic_overlap_rail = static_cast<int>(nic) % c_.nics_per_node;
    }
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
          const double seconds = at_speed(b.seconds, b.device);
          if (!interferes_) return delay(id, seconds);
          compute_on(b.device, +1);
          compute_task_[static_cast<std::size_t>(b.device)] = id;
          stretch(id, seconds, compute_rate(b.device), -1, 0);
          stretches_.at(id).compute = true;
        } else if constexpr (std::is_same_v<B, HostCompute>) {
          delay(id, b.seconds);
        } else if constexpr (std::is_same_v<B, P2P>) {
          const int f = interferes_ ? interfering_fabric(id) : -1;
          if (f >= 0) {
            transfer_on(b.src, f, +1);
            transfer_on(b.dst, f, +1);
          }
          launch(id,
                 sg::Comm::sendto_init(platform_.gpus[static_cast<std::size_t>(b.src)], destination(b.src, b.dst))
                     ->set_payload_size(static_cast<std::uint64_t>(std::llround(b.bytes))),
                 -1, f >= 0 ? interfered(f, b.src, b.dst) : Interfered{});
        } else if constexpr (std::is_same_v<B, Offload>) {
          sg::Host* gpu = platform_.gpus[static_cast<std::size_t>(b.device)];
          sg::Host* cpu = platform_.cpus[static_cast<std::size_t>(b.device / per_node)];
          launch(id, sg::Comm::sendto_init(b.to_host ? gpu : cpu, b.to_host ? cpu : gpu)
                         ->set_payload_size(static_cast<std::uint64_t>(b.bytes)));
        } else {
          start_collective(id, b, now);
        }
      },
      t.body);
}

// A collective: an exact delay (one-node rings at flow fidelity, every collective at analytic, latency-bound and NVLS
// ones always), an all-to-all, or a ring decomposed into steps (start_ring).
void Runner::start_collective(TaskId id, const Collective& b, double now) {
  const auto& members = g_.groups[static_cast<std::size_t>(b.group)];
  const int n = static_cast<int>(members.size());
  if (n == 1) return finish(id, now, now);
  if (b.op == CollectiveOp::AllToAll) return start_alltoall(id, b);
  const CollectivePlan p = plan(b);
  // A collective NCCL runs with its low-latency protocol is latency-bound (too few bytes to contend) and
  // NVLS reduces inside the switch: both are exact delays at every fidelity.
  const bool ring_flows = !p.low_latency && p.algorithm == CollectiveAlgorithm::Ring;
  const bool decomposed = decomposes(o_.fidelity, group_ring(b.group).one_node);
  if (!decomposed || !ring_flows) {
    // A ring across nodes that flow fidelity would decompose holds its NICs for the whole delay; the
    // analytic fidelity gives it their full bandwidth, so overlaps on a NIC are what it leaves out, and it
    // shares each NIC between the inter-node rings on it (share_nics).
    const bool shares = o_.fidelity == Fidelity::Analytic && ring_flows;
    return exact_collective(id, p.time_s, shares ? group_ring(b.group).nics : std::vector<int>{},
                            shares ? shared_nics(b.group) : std::vector<int>{});
  }
  if (interferes_) {
    const int f = interfering_fabric(id);
    if (f >= 0)
      for (int x : members)
        if (simulated(x)) transfer_on(x, f, +1);
  }
  start_ring(id, b, now);
}
// A ring decomposed into steps, each rank's step k sent once its step k - 1 is sent and its predecessor's has arrived.
void Runner::start_ring(TaskId id, const Collective& b, double now) {
  const auto& members = g_.groups[static_cast<std::size_t>(b.group)];
  const int n = static_cast<int>(members.size());
  RingRun& run = rings_[id];
  // A folded step runs the ranks of the simulated blocks; a rank whose predecessor is folded waits on the previous
  // simulated rank instead (going round). Every rank starts together (a collective starts once each member is ready)
  // and by symmetry the folded ranks keep the simulated ones' pace; a degraded link in a block apart paces the ring
  // through its own hops (the folded ranks downstream of it are not slowed apart).
  int ranks = n;
  if (o_.folding.active()) {
    for (int p = 0; p < n; ++p)
      if (simulated(members[static_cast<std::size_t>(p)])) run.positions.push_back(p);
    if (static_cast<int>(run.positions.size()) == n)
      run.positions.clear();
    else
      ranks = static_cast<int>(run.positions.size());
  }
  run.steps = ring_steps(b.op, n) * b.repeat;
  run.chunk_bytes = static_cast<double>(b.elems / n) * b.elem_bytes;
  run.sent.assign(static_cast<std::size_t>(ranks), 0);
  run.pending.assign(static_cast<std::size_t>(ranks), 0);
  run.step_start.assign(static_cast<std::size_t>(ranks), 0);
  run.first_start.assign(static_cast<std::size_t>(ranks), -1);
  run.last_end.assign(static_cast<std::size_t>(ranks), now);
  run.unfinished = ranks;
  for (int r = 0; r < ranks; ++r) launch_ring_step(id, r);
}

void Runner::exact_collective(TaskId id, double seconds, const std::vector<int>& overlap_nics,
                              const std::vector<int>& shared_nics) {
  const double now = sg::Engine::get_clock();
  if (!overlap_nics.empty() && nic_overlap_.empty())
    nic_overlap_.resize(static_cast<std::size_t>(c_.nodes * c_.nics_per_node));
  for (int nic : overlap_nics) nic_overlap_[static_cast<std::size_t>(nic)].add(now, now + seconds);
  const int f = interferes_ ? interfering_fabric(id) : -1;
  if (f < 0 && shared_nics.empty()) return delay(id, seconds);
  int busy = 0;
  if (f >= 0)
    for (int x : g_.groups[static_cast<std::size_t>(std::get<Collective>(g_[id].body).group)]) {
      if (!simulated(x)) continue;
      busy += computing_[static_cast<std::size_t>(x)] > 0;
      device_delays_[static_cast<std::size_t>(x)].push_back(id);
      transfer_on(x, f, +1);
    }
  stretch(id, seconds, f >= 0 ? transfer_rate(f, busy) : 1.0, f, busy);
  if (!shared_nics.empty()) share_nics(id, shared_nics, +1);
}

void Runner::launch(TaskId id, sg::ActivityPtr activity, int rank, const Interfered& interfered) {
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  slots_[slot] = Slot{activity, id, rank, interfered};
  activity->set_data(reinterpret_cast<void*>(static_cast<std::uintptr_t>(slot) + 1));
  ++result_.activities;
  activity->vetoable_start();
}

void Runner::delay(TaskId id, double seconds) {
  ++result_.timers;
  const double begin = sg::Engine::get_clock();
  finish_at(id, begin, begin + seconds);
}

simgrid::kernel::timer::Timer* Runner::finish_at(TaskId id, double begin, double at) {
  return simgrid::kernel::timer::Timer::set(at, [this, id, begin]() {
    if (id >= g_.size())
      finish_tail(id);
    else
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
  const double began = a.get_start_time(), end = a.get_finish_time();
  if (s.interfered.fabric >= 0)
    start_tail(s, began, end);
  else
    flow_done(s, began, end);
  drain();
}

void Runner::flow_done(const Slot& s, double began, double end) {
  if (s.rank == kAllToAllFlow) {
    alltoall_flow_done(s.task, end);
  } else if (s.rank < 0) {
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
    int device = g_.groups[static_cast<std::size_t>(c.group)][static_cast<std::size_t>(position(run, s.rank))];
    result_.devices[static_cast<std::size_t>(device)].bytes_sent[static_cast<std::size_t>(c.cls)] += run.chunk_bytes;
    if (o_.fine && recorded(device)) account(s.task, device, began, end, run.sent[r]);
    int k = ++run.sent[r];
    if (k == run.steps) --run.unfinished;
    auto next = static_cast<std::size_t>((s.rank + 1) % n), prev = static_cast<std::size_t>((s.rank + n - 1) % n);
    if (k < run.steps && run.sent[prev] >= k) launch_ring_step(s.task, s.rank);
    // (A folded ring of one rank is its own successor: its next step is launched once, above.)
    if (next != r && run.sent[next] == k && k < run.steps) launch_ring_step(s.task, static_cast<int>(next));
    if (run.unfinished == 0) {
      RingRun done = std::move(run);
      rings_.erase(s.task);
      finish_collective(s.task, done);
    }
  }
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
    // A ring step sends one chunk; an all-to-all's round (step) what the device sends in one all-to-all.
    r.bytes = c.op == CollectiveOp::AllToAll
                  ? r.bytes / c.repeat
                  : static_cast<double>(
                        c.elems / static_cast<std::int64_t>(g_.groups[static_cast<std::size_t>(c.group)].size())) *
                        c.elem_bytes;
    r.name += " step " + std::to_string(step);
  }
  if (const auto* c = std::get_if<Collective>(&g_[id].body)) {
    const auto& m = g_.groups[static_cast<std::size_t>(c->group)];
    // A ring step's receiver is the next rank; an all-to-all sends to every member, so it names no peer.
    if (c->op != CollectiveOp::AllToAll)
      for (std::size_t i = 0; i < m.size(); ++i)
        if (m[i] == device) r.peer = m[(i + 1) % m.size()];
    r.collective = id + 1;
    r.group_lanes = group_ring(c->group).lanes;
  }
  result_.record.tasks.push_back(std::move(r));
}

void Runner::finish(TaskId id, double start, double end) {
  const Task& t = g_[id];
  const Stream stream = task_stream(t);
  if (auto it = stretches_.find(id); it != stretches_.end()) {
    const Stretch s = it->second;
    stretches_.erase(it);
    if (!s.nics.empty()) share_nics(id, s.nics, -1);
    if (s.compute) {
      const int x = task_devices(g_, t).front();
      if (s.slowed) result_.devices[static_cast<std::size_t>(x)].interference_s += std::max(0.0, end - start - s.base);
      compute_task_[static_cast<std::size_t>(x)] = kNoStretch;
      compute_on(x, -1);
    } else if (s.fabric >= 0) {
      for (int x : g_.groups[static_cast<std::size_t>(std::get<Collective>(t.body).group)]) {
        if (!simulated(x)) continue;
        std::erase(device_delays_[static_cast<std::size_t>(x)], id);
        transfer_on(x, s.fabric, -1);
      }
    }
  } else if (interferes_) {
    if (const auto* p = std::get_if<P2P>(&t.body)) {
      if (const int f = interfering_fabric(id); f >= 0) {
        transfer_on(p->src, f, -1);
        transfer_on(p->dst, f, -1);
      }
    }
  }
  if (const auto* c = std::get_if<Collective>(&t.body)) {
    // Not decomposed (a single exact activity, or a group of one): every member was busy for its whole span.
    for (int x : g_.groups[static_cast<std::size_t>(c->group)]) {
      if (!simulated(x)) continue;  // a folded step's other blocks take their representatives' figures
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
      result_.devices[static_cast<std::size_t>(p->dst)].busy[static_cast<std::size_t>(receive_stream(p->cls))].add(
          start, end);
    } else if (const auto* o = std::get_if<Offload>(&t.body)) {
      (o->to_host ? dev.d2h_bytes : dev.h2d_bytes) += o->bytes;
    } else if (const auto* c = std::get_if<Compute>(&t.body)) {
      dev.flops += c->flops;
      if (c->part == ModelPart::Experts) dev.expert_compute_s += end - start;
    }
    if (recorded(device)) account(id, device, start, end);
  }
  apply_memory(t, false, end);
  release_successors(id, end);
}

// A ring over `per_node` members of each of its nodes leaves a node through the NICs of those members (one per
// channel ring, NCCL): its bus bandwidth is theirs, per_node x nics_per_node / gpus_per_node NICs, unless NVLink is
// slower. Its pace is that bandwidth over NVLink's, where the intra-node factors were measured: the NVLink hops move
// the ring's bytes through HBM only as fast as the NICs let the ring go.
double Runner::ring_pace(double per_node) const {
  if (c_.nvlink_bw_Bps <= 0) return 1;
  const double nics = per_node * c_.nics_per_node / c_.gpus_per_node;
  return std::min(1.0, nics * c_.nic_bw_Bps / c_.nvlink_bw_Bps);
}

// An all-to-all spanning nodes sends `share` of each member's bytes to its node peers over NVLink and the rest over
// the NICs, both at once (NCCL's grouped sends). Each member crosses at its part of its node's NICs, nics_per_node /
// gpus_per_node of one; where that holds the all-to-all longer than its NVLink part, the NVLink bytes stream through
// HBM over the NIC-bound time: at (share / (1 - share)) x nic / nvlink of NVLink's rate, which is share x pace with
// pace = nic / ((1 - share) x nvlink), at most 1 (an all-to-all its NVLink part holds runs at NVLink's pace).
double Runner::alltoall_pace(double share) const {
  if (c_.nvlink_bw_Bps <= 0 || share >= 1) return 1;
  const double nic = c_.nics_per_node * c_.nic_bw_Bps / c_.gpus_per_node;
  return std::min(1.0, nic / ((1 - share) * c_.nvlink_bw_Bps));
}

void Runner::plan_interference() {
  const OverlapInterference intra = interference_[0], inter = interference_[1];
  group_class_.assign(g_.groups.size(), {-1, -1});
  std::map<std::tuple<double, double, bool>, int> classes;  // (share, pace, all-to-all) -> class
  std::vector<int> per_node;
  for (TaskId id = 0; id < g_.size(); ++id) {
    const auto* c = std::get_if<Collective>(&g_[id].body);
    if (c == nullptr || c->cls == CommClass::TpCollective) continue;
    const bool alltoall = c->op == CollectiveOp::AllToAll;
    int& cls = group_class_[static_cast<std::size_t>(c->group)][alltoall ? 1 : 0];
    if (cls >= 0) continue;
    const auto& m = g_.groups[static_cast<std::size_t>(c->group)];
    per_node.clear();
    for (int x : m) per_node.push_back(x / c_.gpus_per_node);
    std::sort(per_node.begin(), per_node.end());
    const double n = static_cast<double>(m.size());
    double nodes = 0, pairs = 0;  // distinct nodes; ordered member pairs on one node
    for (std::size_t i = 0; i < per_node.size();) {
      std::size_t j = i;
      while (j < per_node.size() && per_node[j] == per_node[i]) ++j;
      const double k = static_cast<double>(j - i);
      nodes += 1;
      pairs += k * (k - 1);
      i = j;
    }
    if (nodes <= 1) {
      cls = 0;
      continue;
    }
    const double share = alltoall ? pairs / (n * (n - 1)) : (n - nodes) / n;
    if (share <= 0) {
      cls = 1;
      continue;
    }
    const double pace = alltoall ? alltoall_pace(share) : ring_pace(n / nodes);
    auto [it, added] = classes.try_emplace({share, pace, alltoall}, static_cast<int>(interference_.size()));
    if (added) {
      // The compute beside the collective: each fabric's slowdown in proportion to the share of the transfer on it
      // (an unmeasured fabric adds none), the NVLink share's at the pace its NIC hops allow it; the collective: its
      // NIC hops', which pace it.
      const OverlapInterference f{
          1 + (intra.compute_slowdown - 1) * share * pace + (inter.compute_slowdown - 1) * (1 - share),
          inter.comm_slowdown};
      interference_.push_back(f);
      if (f.active())
        result_.spanning_interference.push_back({share, pace, alltoall, f.compute_slowdown, f.comm_slowdown});
    }
    cls = it->second;
  }
  std::sort(result_.spanning_interference.begin(), result_.spanning_interference.end(),
            [](const SpanningInterference& a, const SpanningInterference& b) {
              return std::tuple{a.alltoall, a.nvlink_share, a.pace} < std::tuple{b.alltoall, b.nvlink_share, b.pace};
            });
  transfers_on_.assign(static_cast<std::size_t>(g_.devices) * interference_.size(), 0);
}

int Runner::interfering_fabric(TaskId id) {
  const Task& t = g_[id];
  int fabric = -1;
  if (const auto* c = std::get_if<Collective>(&t.body)) {
    if (c->cls == CommClass::TpCollective) return -1;
    fabric = group_class_[static_cast<std::size_t>(c->group)][c->op == CollectiveOp::AllToAll ? 1 : 0];
  } else if (const auto* p = std::get_if<P2P>(&t.body)) {
    fabric = p->src / c_.gpus_per_node == p->dst / c_.gpus_per_node ? 0 : 1;
  } else {
    return -1;
  }
  return interference_[static_cast<std::size_t>(fabric)].active() ? fabric : -1;
}

double Runner::compute_rate(int device) const {
  double slowdown = 1;
  const std::size_t classes = interference_.size();
  for (std::size_t f = 0; f < classes; ++f)
    if (transfers_on_[static_cast<std::size_t>(device) * classes + f] > 0)
      slowdown = std::max(slowdown, interference_[f].compute_slowdown);
  return 1.0 / slowdown;
}

double Runner::compute_busy_s(int device, double now) const {
  const auto x = static_cast<std::size_t>(device);
  return busy_before_[x] + (computing_[x] > 0 ? now - busy_since_[x] : 0.0);
}

Interfered Runner::interfered(int fabric, int a, int b) const {
  const double now = sg::Engine::get_clock();
  return Interfered{fabric, {a, b}, {compute_busy_s(a, now), b >= 0 ? compute_busy_s(b, now) : 0.0}};
}

// A slowed NCCL kernel moves its bytes comm_slowdown times slower while compute runs beside it. The flow itself ran at
// the links' pace (so that it loads them as its bytes do) for d seconds, o of them beside its devices' compute: it
// moved o (1 - 1 / comm_slowdown) seconds' worth of bytes more than the slowed kernel would have. That work is its
// tail, run after it as a stretch like an exact collective's (slowed while a device computes, re-timed as compute
// starts and ends), so a flow beside compute throughout takes comm_slowdown x d, and one beside compute for part of
// its time what the exact delay at analytic fidelity takes. The compute-busy integral is continuous in the event
// times: events at one instant give the same tail in whatever order they are taken.
void Runner::start_tail(const Slot& s, double began, double end) {
  const Interfered& i = s.interfered;
  double overlapped = 0;
  for (std::size_t k = 0; k < 2; ++k)
    if (i.devices[k] >= 0) overlapped = std::max(overlapped, compute_busy_s(i.devices[k], end) - i.busy_at_launch[k]);
  const double work = overlapped * (1 - 1 / interference_[static_cast<std::size_t>(i.fabric)].comm_slowdown);
  if (work <= 0) return flow_done(s, began, end);
  const TaskId id = static_cast<TaskId>(g_.size()) + next_tail_++;
  Slot kept = s;
  kept.activity = nullptr;  // released with the slot; the tail needs its task and rank only
  tails_.emplace(id, Tail{kept, began});
  int busy = 0;
  for (int x : i.devices)
    if (x >= 0) {
      busy += computing_[static_cast<std::size_t>(x)] > 0;
      device_delays_[static_cast<std::size_t>(x)].push_back(id);
    }
  stretch(id, work, transfer_rate(i.fabric, busy), i.fabric, busy);
}

void Runner::finish_tail(TaskId id) {
  auto node = tails_.extract(id);
  stretches_.erase(id);
  const Tail& tail = node.mapped();
  for (int x : tail.slot.interfered.devices)
    if (x >= 0) std::erase(device_delays_[static_cast<std::size_t>(x)], id);
  flow_done(tail.slot, tail.began, sg::Engine::get_clock());
}

void Runner::stretch(TaskId id, double seconds, double rate, int fabric, int busy_members) {
  ++result_.timers;
  const double now = sg::Engine::get_clock();
  Stretch& s = stretches_[id];
  s = Stretch{seconds, rate, now, now, seconds, nullptr, fabric, busy_members, rate < 1, false, {}, 1};
  s.timer = finish_at(id, now, now + seconds / rate);
}

// Brings the stretch's remaining work up to now at its old rate and re-sets its end at the new one.
void Runner::retime(TaskId id, double rate) {
  Stretch& s = stretches_.at(id);
  const double now = sg::Engine::get_clock();
  s.remaining = std::max(0.0, s.remaining - (now - s.last) * s.rate);
  s.last = now;
  if (rate == s.rate) return;
  s.rate = rate;
  s.slowed = s.slowed || rate < 1;
  s.timer->remove();
  s.timer = finish_at(id, s.begin, now + s.remaining / rate);
}

void Runner::transfer_on(int device, int fabric, int change) {
  auto& on = transfers_on_[static_cast<std::size_t>(device) * interference_.size() + static_cast<std::size_t>(fabric)];
  const double before = compute_rate(device);
  on += change;
  const TaskId task = compute_task_[static_cast<std::size_t>(device)];
  if (task != kNoStretch && compute_rate(device) != before) retime(task, compute_rate(device));
}

void Runner::compute_on(int device, int change) {
  int& computing = computing_[static_cast<std::size_t>(device)];
  const bool was_busy = computing > 0;
  computing += change;
  // Members count as busy while any compute runs on them (a collective counts them so at its start).
  if ((computing > 0) == was_busy) return;
  const auto x = static_cast<std::size_t>(device);
  if (was_busy)
    busy_before_[x] += sg::Engine::get_clock() - busy_since_[x];
  else
    busy_since_[x] = sg::Engine::get_clock();
  const int step = was_busy ? -1 : 1;
  for (TaskId id : device_delays_[static_cast<std::size_t>(device)]) {
    Stretch& s = stretches_.at(id);
    s.busy_members += step;
    if ((step > 0 && s.busy_members == 1) || (step < 0 && s.busy_members == 0))
      retime(id, s.share * transfer_rate(s.fabric, s.busy_members));
  }
}

std::vector<int> Runner::shared_nics(int group) {
  std::vector<int> nics;
  for (int nic : group_ring(group).nics)
    if (simulated(nic / c_.nics_per_node * c_.gpus_per_node)) nics.push_back(nic);
  // A folded step's ring seen from the simulated blocks loads their NICs: by symmetry every block's carry the same.
  return nics.empty() ? group_ring(group).nics : nics;
}

void Runner::share_nics(TaskId id, const std::vector<int>& nics, int change) {
  if (nic_rings_.empty()) nic_rings_.resize(static_cast<std::size_t>(c_.nodes * c_.nics_per_node));
  if (change > 0) stretches_.at(id).nics = nics;
  std::vector<TaskId> touched;
  for (int nic : nics) {
    auto& on = nic_rings_[static_cast<std::size_t>(nic)];
    if (change > 0)
      on.push_back(id);
    else
      std::erase(on, id);
    touched.insert(touched.end(), on.begin(), on.end());
  }
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  for (TaskId other : touched) {
    Stretch& s = stretches_.at(other);
    std::size_t most = 1;
    for (int nic : s.nics) most = std::max(most, nic_rings_[static_cast<std::size_t>(nic)].size());
    const double share = 1.0 / static_cast<double>(most);
    if (share == s.share) continue;
    const double interference = s.rate / s.share;
    s.share = share;
    retime(other, share * interference);
  }
}

void Runner::release_successors(TaskId id, double end) {
  result_.step_time_s = std::max(result_.step_time_s, end);
  ++finished_;
  for (auto [e, last] = boost::out_edges(id, g_.graph); e != last; ++e) {
    TaskId next = boost::target(*e, g_.graph);
    if (--waiting_[next] == 0) ready_.push_back(next);
  }
}

}  // namespace detail

SimResult simulate(const TaskGraph& graph, const ClusterSpec& cluster, const SimOptions& options) {
  return detail::Runner(graph, cluster, options).run();
}

}  // namespace placesim
