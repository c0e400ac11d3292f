// All-to-all collectives (expert parallelism's dispatch and combine) as NCCL runs them: every member posts an ncclSend
// to and an ncclRecv from every other member in one grouped call, so all pairs transfer at once and share the links.
//
// Decomposed (full fidelity; flow fidelity across nodes): one SimGrid flow per ordered pair with bytes, all launched at
// the task's start (per round: AllToAllRun); the collective ends when its last flow does.
//
// Exact delay (analytic fidelity; flow fidelity inside one node): the time those flows take on an otherwise idle
// platform, in closed form over the directed links their routes cross (the platform's own: Fabric routes, mirrored
// as the flows are in a folded step):
//
//   T = max( max over links l of  Lmin(l) + load(l) / bw(l),   max over pairs p of  L(p) + bytes(p) / bwmin(p) )
//
//   load(l)  bytes of all pairs whose route crosses l        L(p)      the route latency of pair p
//   Lmin(l)  the smallest L(p) of those pairs                bwmin(p)  the bandwidth of p's slowest link
//
// When every pair's route has the same latency L this is L + max_l load(l) / bw(l), the bottleneck link's load; the
// NVLink part and the NIC part of a group spanning nodes share no link, so each has its own L.
//
// How it compares with SimGrid (CM02 without TCP-gamma: a flow starts moving bytes once its route latency has passed,
// then every link is shared max-min fairly, each flow weighted by 1 / its route latency):
// - T is always a lower bound of the last flow's end: no link carries its load faster than its bandwidth from the
//   moment its first flow starts, and no flow moves faster than its slowest link.
// - T is exact (the last flow ends at T, to SimGrid's precision) for a group inside one node, and for a group spanning
//   nodes with the same number of members on each of its nodes, one NIC per GPU (nics_per_node = gpus_per_node), all
//   its inter-node routes of one latency (all under one leaf, or all across the spine) and full bisection
//   (oversubscription 1: a route's spine ports carry a subset of its NICs' flows at the NIC's bandwidth). Why: in a
//   dispatch all flows into a member are of one size (its tokens), and on each fabric every member's incoming link
//   carries one flow from each of its n' peers there while no link carries more than n' flows, so max-min gives each
//   of those flows exactly bw / n' until they end together at load / bw; an outgoing link's load, the tokens of at
//   most n' peers, never exceeds the largest incoming link's. A combine is the same with the directions swapped.
// - Otherwise (GPUs sharing a NIC, a leaf uplink shared by several NICs, members spread unevenly over nodes, routes
//   of different latencies such as a rail-optimized fabric's cross-rail pairs over the spine) max-min sharing can
//   leave the bottleneck link partly idle (its flows held back on other links, or short routes favoured) and the last
//   flow ends later than T: often it still is T (69 of 80 random groups, fabrics and routings measured), else up to
//   about 10% later.
// Those comparisons hold against SimGrid with network/optim:Full. Its default lazy update (3.32) can let flows that
// start after a latency share a link beyond its bandwidth when several links bottleneck them at once, so decomposed
// flows may then end before T (6 of 60 of those groups, all with routes across leaves; point-to-point sends alike).
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "sim/backend/Runner.hpp"

namespace placesim::detail {

void Runner::find_alltoalls() {
  alltoall_groups_.assign(g_.groups.size(), 0);
  for (TaskId id = 0; id < g_.size(); ++id) {
    const auto* c = std::get_if<Collective>(&g_[id].body);
    if (c == nullptr || c->op != CollectiveOp::AllToAll) continue;
    const auto& m = g_.groups[static_cast<std::size_t>(c->group)];
    const std::string what = "all-to-all task " + std::to_string(id) + " over group " + std::to_string(c->group);
    if (c->split < 0 || c->split >= static_cast<int>(g_.a2a_tokens.size()))
      throw std::logic_error(what + ": split=" + std::to_string(c->split) + " is not an index of the graph's " +
                             std::to_string(g_.a2a_tokens.size()) + " all-to-all routings (TaskGraph::a2a_tokens)");
    const auto& tokens = g_.a2a_tokens[static_cast<std::size_t>(c->split)];
    if (tokens.size() != m.size())
      throw std::logic_error(what + ": routing " + std::to_string(c->split) + " has " + std::to_string(tokens.size()) +
                             " token counts for " + std::to_string(m.size()) + " members");
    if (std::any_of(tokens.begin(), tokens.end(), [](std::int64_t t) { return t < 0; }))
      throw std::logic_error(what + ": routing " + std::to_string(c->split) + " has a negative token count");
    // Blocks hold whole ep groups (plan_folding): an all-to-all's members are all simulated or none is.
    for (int x : m)
      if (!simulated(x))
        throw std::runtime_error(what + ": device " + std::to_string(x) +
                                 " is outside the simulated blocks of the folded step; all-to-alls run inside a block "
                                 "(simulate with --symmetry off)");
    alltoall_groups_[static_cast<std::size_t>(c->group)] = 1;
  }
}

const Runner::AllToAllGroup& Runner::alltoall_group(int group) {
  if (alltoall_group_info_.empty()) alltoall_group_info_.resize(g_.groups.size());
  auto& slot = alltoall_group_info_[static_cast<std::size_t>(group)];
  if (slot) return *slot;
  slot = std::make_unique<AllToAllGroup>();
  AllToAllGroup& a = *slot;
  const auto& m = g_.groups[static_cast<std::size_t>(group)];
  const int n = static_cast<int>(m.size()), per_node = c_.gpus_per_node;
  for (int x : m) a.one_node = a.one_node && x / per_node == m.front() / per_node;
  if (!a.one_node) {
    for (int x : m) a.nics.push_back(fabric_.nic_of(x));
    std::sort(a.nics.begin(), a.nics.end());
    a.nics.erase(std::unique(a.nics.begin(), a.nics.end()), a.nics.end());
  }
  std::map<std::tuple<LinkKind, int, bool>, std::uint32_t> index;  // directed link -> position in link_bw
  a.route_first.reserve(static_cast<std::size_t>(n * n + 1));
  a.latency_s.reserve(static_cast<std::size_t>(n * n));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      a.route_first.push_back(static_cast<std::uint32_t>(a.route_links.size()));
      if (i == j) {
        a.latency_s.push_back(0);
        continue;
      }
      const int from = m[static_cast<std::size_t>(i)], to = m[static_cast<std::size_t>(j)];
      // The route the pair's flow takes: its own, or its mirror's (the slowest congruent transfer's, folded).
      const std::vector<Hop> hops = platform_.mirrored(from, to)
                                        ? mirrored_route(fabric_, o_.folding, slowest_congruent(from, to).first)
                                        : fabric_.route(from, to);
      a.latency_s.push_back(fabric_.latency_s(hops));
      for (const Hop& h : hops) {
        auto [it, fresh] =
            index.try_emplace({h.link.kind, h.link.index, h.up}, static_cast<std::uint32_t>(a.link_bw.size()));
        if (fresh) a.link_bw.push_back(fabric_.link(h.link).bw_Bps);
        a.route_links.push_back(it->second);
      }
    }
  a.route_first.push_back(static_cast<std::uint32_t>(a.route_links.size()));
  return a;
}

double Runner::pair_bytes(const Collective& c, int i, int j) const {
  return static_cast<double>(
             alltoall_pair_elems(g_.a2a_tokens[static_cast<std::size_t>(c.split)], c.elems, i, j, c.combine)) *
         c.elem_bytes;
}

double Runner::alltoall_round_s(const Collective& c) {
  const auto key = std::make_tuple(c.group, c.split, c.combine, c.elems, c.elem_bytes);
  if (auto it = alltoall_round_cache_.find(key); it != alltoall_round_cache_.end()) return it->second;
  const AllToAllGroup& a = alltoall_group(c.group);
  const int n = static_cast<int>(g_.groups[static_cast<std::size_t>(c.group)].size());
  std::vector<double> load(a.link_bw.size(), 0.0);
  std::vector<double> first(a.link_bw.size(), std::numeric_limits<double>::infinity());
  double t = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const double bytes = pair_bytes(c, i, j);
      if (bytes <= 0) continue;
      const auto p = static_cast<std::size_t>(i * n + j);
      const double latency = a.latency_s[p];
      double slowest = std::numeric_limits<double>::infinity();
      for (std::uint32_t k = a.route_first[p]; k < a.route_first[p + 1]; ++k) {
        const std::uint32_t l = a.route_links[k];
        load[l] += bytes;
        first[l] = std::min(first[l], latency);
        slowest = std::min(slowest, a.link_bw[l]);
      }
      t = std::max(t, latency + bytes / slowest);
    }
  for (std::size_t l = 0; l < load.size(); ++l)
    if (load[l] > 0) t = std::max(t, first[l] + load[l] / a.link_bw[l]);
  alltoall_round_cache_.emplace(key, t);
  return t;
}

void Runner::start_alltoall(TaskId id, const Collective& c) {
  const AllToAllGroup& a = alltoall_group(c.group);
  const int rounds = std::max(1, c.repeat);
  if (!decomposes(o_.fidelity, a.one_node)) {
    // Like an inter-node ring, an inter-node all-to-all holds its members' NICs for the whole delay: the analytic
    // fidelity counts and shares them with the other inter-node collectives on them.
    const std::vector<int> nics = o_.fidelity == Fidelity::Analytic ? a.nics : std::vector<int>{};
    return exact_collective(id, alltoall_round_s(c) * rounds, nics, nics);
  }
  if (interferes_)
    if (const int f = interfering_fabric(id); f >= 0)
      for (int x : g_.groups[static_cast<std::size_t>(c.group)])
        if (simulated(x)) transfer_on(x, f, +1);
  const double now = sg::Engine::get_clock();
  AllToAllRun& run = alltoalls_[id];
  run.rounds = rounds;
  run.start = now;
  if (launch_alltoall_round(id) > 0) return;
  alltoalls_.erase(id);  // no member routes a token to another: nothing moves
  finish_alltoall(id, now, now, false);
}

int Runner::launch_alltoall_round(TaskId id) {
  const auto& c = std::get<Collective>(g_[id].body);
  const auto& m = g_.groups[static_cast<std::size_t>(c.group)];
  const int n = static_cast<int>(m.size());
  AllToAllRun& run = alltoalls_.at(id);
  run.round_start = sg::Engine::get_clock();
  run.pending = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) run.pending += pair_bytes(c, i, j) > 0;
  // Overlap interference: a flow is slowed by its sender's compute while it flows (start_tail).
  const int f = interferes_ ? interfering_fabric(id) : -1;
  const int flows = run.pending;
  for (int i = 0; i < n; ++i) {
    const int from = m[static_cast<std::size_t>(i)];
    const Interfered slowed = f >= 0 ? interfered(f, from) : Interfered{};
    for (int j = 0; j < n; ++j) {
      const double bytes = pair_bytes(c, i, j);
      if (bytes <= 0) continue;
      launch(id,
             sg::Comm::sendto_init(platform_.gpus[static_cast<std::size_t>(from)],
                                   destination(from, m[static_cast<std::size_t>(j)]))
                 ->set_payload_size(static_cast<std::uint64_t>(std::llround(bytes))),
             kAllToAllFlow, slowed);
    }
  }
  return flows;
}

void Runner::alltoall_flow_done(TaskId id, double end) {
  AllToAllRun& run = alltoalls_.at(id);
  if (--run.pending > 0) return;
  const auto& c = std::get<Collective>(g_[id].body);
  // Fine detail: one record per member and round (not per flow: a member's flows overlap on its stream).
  if (o_.fine)
    for (int x : g_.groups[static_cast<std::size_t>(c.group)])
      if (simulated(x) && recorded(x)) account(id, x, run.round_start, end, run.round);
  if (++run.round < run.rounds) {
    launch_alltoall_round(id);
    return;
  }
  const double start = run.start;
  alltoalls_.erase(id);
  finish_alltoall(id, start, end, o_.fine);
}

// Every member is busy from the task's start to the last flow's end, and has sent exactly its pairs' bytes.
void Runner::finish_alltoall(TaskId id, double start, double end, bool recorded_rounds) {
  const Task& t = g_[id];
  const auto& c = std::get<Collective>(t.body);
  const auto& m = g_.groups[static_cast<std::size_t>(c.group)];
  for (int x : m) {
    if (!simulated(x)) continue;
    auto& dev = result_.devices[static_cast<std::size_t>(x)];
    dev.busy[static_cast<std::size_t>(c.stream)].add(start, end);
    dev.bytes_sent[static_cast<std::size_t>(c.cls)] += task_bytes_sent(g_, t, x);
    if (!recorded_rounds && recorded(x)) account(id, x, start, end);
  }
  end_group_transfer(id, m, end);
}

}  // namespace placesim::detail
