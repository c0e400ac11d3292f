#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "sim/backend/Runner.hpp"

namespace placesim::detail {

void Runner::find_channels() {
  channels_.assign(g_.groups.size(), {});
  for (TaskId id = 0; id < g_.size(); ++id)
    if (const auto* c = std::get_if<Collective>(&g_[id].body); c && c->op != CollectiveOp::AllToAll) {
      auto& hops = channels_[static_cast<std::size_t>(c->group)];
      const auto& m = g_.groups[static_cast<std::size_t>(c->group)];
      if (hops.empty() && m.size() > 1) hops = fabric_.ring_channels(m);
    }
}

std::vector<MirroredHop> Runner::mirrored_hops() const {
  std::vector<MirroredHop> out;
  const Folding& f = o_.folding;
  if (!f.active()) return out;
  // Every transfer the simulated blocks make across nodes, with its congruent transfers (the same moved by k blocks):
  // the ring hops of its ranks and the point-to-point sends of its devices.
  std::vector<std::pair<int, int>> transfers;
  for (const auto& hops : channels_)
    for (const auto& hop : hops)
      for (auto [from, to] : hop)
        if (simulated(from) && from / c_.gpus_per_node != to / c_.gpus_per_node) transfers.emplace_back(from, to);
  for (TaskId id = 0; id < g_.size(); ++id)
    if (const auto* p = std::get_if<P2P>(&g_[id].body))
      if (p->src / c_.gpus_per_node != p->dst / c_.gpus_per_node) transfers.emplace_back(p->src, p->dst);
  // All-to-alls run inside a simulated block (find_alltoalls): their flows across nodes, every ordered pair.
  for (std::size_t group = 0; group < alltoall_groups_.size(); ++group)
    if (alltoall_groups_[group])
      for (int from : g_.groups[group])
        for (int to : g_.groups[group])
          if (from / c_.gpus_per_node != to / c_.gpus_per_node) transfers.emplace_back(from, to);
  std::sort(transfers.begin(), transfers.end());
  transfers.erase(std::unique(transfers.begin(), transfers.end()), transfers.end());
  for (auto [from, to] : transfers) {
    // Congruent transfers differ only in which leaf switches they cross (plan_folding keeps shared uplinks
    // congruent), that is in latency: each simulated transfer takes the slowest one's route, the pace its ring or
    // pipeline keeps in the unfolded step.
    const MirroredHop m = slowest_congruent(from, to).first;
    if (!simulated(to) || m.route_src != from) out.push_back(m);  // leaves the simulated blocks, or a copy is slower
  }
  return out;
}

std::pair<MirroredHop, double> Runner::slowest_congruent(int from, int to) const {
  const Folding& f = o_.folding;
  MirroredHop m{from, to, from, to};
  double slowest = fabric_.latency_s(fabric_.route(from, to));
  for (int k = 1; k < f.blocks(); ++k) {
    const int a = f.shift(from, k), b = f.shift(to, k);
    if (const double l = fabric_.latency_s(fabric_.route(a, b)); l > slowest) {
      slowest = l;
      m.route_src = a;
      m.route_dst = b;
    }
  }
  return {m, slowest};
}

sg::Host* Runner::destination(int from, int to) const {
  if (!platform_.mirrored(from, to)) return platform_.gpus[static_cast<std::size_t>(to)];
  return platform_.mirrors.at(to);
}

std::vector<std::pair<int, int>> Runner::used_pairs() const {
  std::vector<std::pair<int, int>> pairs;
  for (TaskId id = 0; id < g_.size(); ++id)
    if (const auto* p = std::get_if<P2P>(&g_[id].body)) pairs.emplace_back(p->src, p->dst);
  for (const auto& hops : channels_)
    for (const auto& hop : hops) pairs.insert(pairs.end(), hop.begin(), hop.end());
  // An all-to-all sends between every two members (the platform routes both directions of a pair).
  for (std::size_t group = 0; group < alltoall_groups_.size(); ++group)
    if (alltoall_groups_[group]) {
      const auto& m = g_.groups[group];
      for (std::size_t i = 0; i < m.size(); ++i)
        for (std::size_t j = i + 1; j < m.size(); ++j) pairs.emplace_back(m[i], m[j]);
    }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  return pairs;
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
    // Channels through one link (a NIC down sends two rails' channels through the next) share it.
    std::vector<std::vector<sg::Link*>> routes;
    std::map<sg::Link*, int> uses;
    for (auto [from, to] : transfers) {
      std::vector<sg::Link*>& links = routes.emplace_back();
      double latency = 0;
      platform_.gpus[static_cast<std::size_t>(from)]->route_to(platform_.gpus[static_cast<std::size_t>(to)], links,
                                                               &latency);
      ring.hop.latency_s = std::max(ring.hop.latency_s, latency);
      for (auto* l : links) ++uses[l];
      ring.one_node = ring.one_node && from / c_.gpus_per_node == m.front() / c_.gpus_per_node &&
                      to / c_.gpus_per_node == m.front() / c_.gpus_per_node;
    }
    double bandwidth = std::numeric_limits<double>::infinity();
    for (const auto& links : routes)
      for (auto* l : links) bandwidth = std::min(bandwidth, l->get_bandwidth() / uses[l]);
    ring.hop.bw_Bps = std::min(ring.hop.bw_Bps, bandwidth * static_cast<double>(transfers.size()));
    for (auto [from, to] : transfers)
      if (from / c_.gpus_per_node != to / c_.gpus_per_node) ring.nics.push_back(fabric_.nic_of(from));
  }
  // A group only all-to-alls run over has no ring channels: its members tell whether it stays inside one node.
  for (int x : m) ring.one_node = ring.one_node && x / c_.gpus_per_node == m.front() / c_.gpus_per_node;
  std::sort(ring.nics.begin(), ring.nics.end());
  ring.nics.erase(std::unique(ring.nics.begin(), ring.nics.end()), ring.nics.end());
  // A folded step's group inside a simulated block stands for its copies in the other blocks, whose hops may cross more
  // switches: its exact delay takes the slowest copy's latency, as the unfolded step waits for that copy. (A group
  // spanning blocks holds its congruent hops itself.)
  const Folding& f = o_.folding;
  if (!f.active()) return ring;
  if (std::all_of(m.begin(), m.end(), [&](int x) { return simulated(x); }))
    for (const auto& transfers : channels_[static_cast<std::size_t>(group)])
      for (auto [from, to] : transfers)
        ring.hop.latency_s = std::max(ring.hop.latency_s, slowest_congruent(from, to).second);
  // The lanes it spans: its lane count when they are contiguous and start at a multiple of it, else every lane.
  std::vector<int> lanes;
  for (int x : m) lanes.push_back(f.lane(x));
  std::sort(lanes.begin(), lanes.end());
  lanes.erase(std::unique(lanes.begin(), lanes.end()), lanes.end());
  const int count = static_cast<int>(lanes.size());
  ring.lanes = lanes.back() - lanes.front() + 1 == count && lanes.front() % count == 0 ? count : f.lanes;
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
  // NVLink SHARP runs in the NVSwitch: a mesh or PCIe node has none.
  const bool nvls = ring.one_node && fabric.has_nvls() && kind == CollectiveKind::AllReduce &&
                    c_.node_links.kind == NodeLinks::NvSwitch;
  CollectivePlan p =
      plan_collective(kind, nvls ? CollectiveAlgorithm::Nvls : CollectiveAlgorithm::Ring, bytes, n, fabric, ring.hop);
  p.time_s *= c.repeat;
  return p;
}

void OverlapMeter::add(double start, double end) {
  std::erase_if(active_ends_, [start](double e) { return e <= start; });
  double latest = 0;
  for (double e : active_ends_) latest = std::max(latest, e);
  // Every active interval began at or before `start`, so the union of the earlier ones meets [start, end) in
  // [start, min(end, latest)): the part of this interval that runs beside another. Summed over the intervals, that is
  // the integral of (active - 1) wherever something is active.
  overlapped_ += std::max(0.0, std::min(end, latest) - start);
  active_ends_.push_back(end);
}

// One step of `rank`: its chunk to the next rank, split over the hop's channels.
void Runner::launch_ring_step(TaskId id, int rank) {
  const auto& c = std::get<Collective>(g_[id].body);
  RingRun& run = rings_[id];
  const int pos = position(run, rank);
  const auto& transfers = channels_[static_cast<std::size_t>(c.group)][static_cast<std::size_t>(pos)];
  run.pending[static_cast<std::size_t>(rank)] = static_cast<int>(transfers.size());
  run.step_start[static_cast<std::size_t>(rank)] = sg::Engine::get_clock();
  // Overlap interference: the step is slowed by its sender's compute while it flows (start_tail).
  const int f = interferes_ ? interfering_fabric(id) : -1;
  const Interfered slowed =
      f >= 0 ? interfered(f, g_.groups[static_cast<std::size_t>(c.group)][static_cast<std::size_t>(pos)])
             : Interfered{};
  const auto bytes = static_cast<std::uint64_t>(std::llround(run.chunk_bytes / static_cast<double>(transfers.size())));
  for (auto [from, to] : transfers)
    launch(id,
           sg::Comm::sendto_init(platform_.gpus[static_cast<std::size_t>(from)], destination(from, to))
               ->set_payload_size(bytes),
           rank, slowed);
}

void Runner::finish_collective(TaskId id, const RingRun& run) {
  const Task& t = g_[id];
  const auto& c = std::get<Collective>(t.body);
  const auto& m = g_.groups[static_cast<std::size_t>(c.group)];
  double end = 0;
  for (std::size_t r = 0; r < run.sent.size(); ++r) {
    int x = m[static_cast<std::size_t>(position(run, static_cast<int>(r)))];
    result_.devices[static_cast<std::size_t>(x)].busy[static_cast<std::size_t>(c.stream)].add(run.first_start[r],
                                                                                              run.last_end[r]);
    if (!o_.fine && recorded(x)) account(id, x, run.first_start[r], run.last_end[r]);
    end = std::max(end, run.last_end[r]);
  }
  end_group_transfer(id, m, end);
}

// The end of a collective run as flows: its members' transfers leave the interference counts, its memory changes
// apply and its successors are released.
void Runner::end_group_transfer(TaskId id, const std::vector<int>& members, double end) {
  if (interferes_)
    if (const int f = interfering_fabric(id); f >= 0)
      for (int x : members)
        if (simulated(x)) transfer_on(x, f, -1);
  apply_memory(g_[id], false, end);
  release_successors(id, end);
}

}  // namespace placesim::detail
