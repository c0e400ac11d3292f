#pragma once
// Internal to sim/backend: the runner that lowers a TaskGraph to SimGrid activities just in time. Simulator.cpp holds
// the activity loop (start, launch, completion, memory and accounting); RingLowering.cpp decomposes collectives into
// ring steps over the channels (rails) NCCL would use and plans their exact delays; AllToAllLowering.cpp runs
// all-to-alls as one flow per pair, or as the exact delay those flows take on an idle platform.
#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u.hpp>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "sim/backend/Platform.hpp"
#include "sim/backend/Simulator.hpp"
#include "topology/cluster/Fabric.hpp"
#include "topology/hardware/CommProfile.hpp"

namespace placesim::detail {

namespace sg = simgrid::s4u;

inline constexpr TaskId kNoStretch = ~TaskId(0);

/// Whether a ring collective (not latency-bound, not NVLS) runs as contending ring-step flows at `fidelity`: always at
/// full fidelity, across nodes at flow fidelity, never at analytic fidelity.
inline bool decomposes(Fidelity fidelity, bool one_node) {
  return fidelity == Fidelity::Full || (fidelity == Fidelity::Flow && !one_node);
}

/// The steps of a ring collective on n ranks: 2(n-1) for an all-reduce, n-1 for a gather or scatter.
inline int ring_steps(CollectiveOp op, int n) {
  return op == CollectiveOp::AllReduce ? 2 * (n - 1) : n - 1;
}

/// A collective in progress, decomposed into ring steps: rank r's step k sends one chunk to rank r+1 once its own
/// step k-1 is sent and rank r-1's step k-1 (the chunk it forwards) has arrived.
struct RingRun {
  /// Folded step: the ring positions of the ranks simulated (the simulated blocks' members, in ring order); rank r's
  /// predecessor
  /// is rank r - 1 of this list. Empty: every position, rank r at position r.
  std::vector<int> positions;
  int steps = 0;  ///< total steps per rank (repeat included)
  double chunk_bytes = 0;
  std::vector<int> sent;           ///< steps completed per rank
  std::vector<int> pending;        ///< per rank: transfers of its current step still in flight (one per channel)
  std::vector<double> step_start;  ///< per rank: when its current step's first transfer started
  std::vector<double> first_start, last_end;
  int unfinished = 0;  ///< ranks not done
};

/// Slot::rank of an all-to-all's flow (ring steps hold their rank, other activities -1).
inline constexpr int kAllToAllFlow = -2;

/// An all-to-all in progress, decomposed as NCCL runs it: one grouped call of ncclSend/ncclRecv to every peer, all
/// posted at once, so one flow per ordered pair with bytes, all launched together and sharing the links (max-min).
/// Back-to-back all-to-alls merged into one task (Collective::repeat) run as rounds: each round's flows start when the
/// previous round's last flow ends (a barrier: NCCL would let a pair start once both its ends are done).
struct AllToAllRun {
  int rounds = 1, round = 0;
  int pending = 0;  ///< flows of the current round in flight
  double start = 0, round_start = 0;
};

/// The excess load of intervals added in order of their start (the simulation clock): the integral over time of
/// (intervals active - 1) where at least one is, i.e. how much longer than their union they would take one at a time.
/// The analytic fidelity's measure of the NIC sharing it does not model: two collectives fully overlapping for T count
/// T, three count 2T (fair sharing stretches them by about that). Streaming, O(active intervals) per add.
class OverlapMeter {
 public:
  void add(double start, double end);
  double overlapped_s() const { return overlapped_; }

 private:
  std::vector<double> active_ends_;
  double overlapped_ = 0;
};

/// A flow subject to overlap interference (Runner::start_tail): its class, and the devices whose compute slows it with
/// their compute-busy time (Runner::compute_busy_s) at its launch. fabric -1: none.
struct Interfered {
  int fabric = -1;
  std::array<int, 2> devices{-1, -1};
  std::array<double, 2> busy_at_launch{0, 0};
};

class Runner {
 public:
  Runner(const TaskGraph& g, const ClusterSpec& c, const SimOptions& o)
      : g_(g),
        c_(c),
        o_(o),
        fabric_(c),
        interference_{c.accelerator.profile.intra_node_interference, c.accelerator.profile.inter_node_interference},
        interferes_(o.interference && (interference_[0].active() || interference_[1].active())) {
    int argc = 1;
    char name[] = "placesim";
    char* argv[] = {name, nullptr};
    engine_ = std::make_unique<sg::Engine>(&argc, argv);
    if (c.has_stragglers() || !c.generation_speed.empty())
      for (int x = 0; x < c.devices(); ++x) speed_.push_back(c.speed(x));
  }

  SimResult run();

 private:
  struct Slot {
    sg::ActivityPtr activity;
    TaskId task = 0;
    int rank = -1;  ///< ring collectives: the sending rank of this step; kAllToAllFlow: an all-to-all's flow
    Interfered interfered;
  };
  /// Per group an all-to-all runs over: what its flows cross, looked up once (Fabric routes, as the platform has them).
  struct AllToAllGroup {
    bool one_node = true;
    std::vector<int> nics;        ///< NICs (node * nics_per_node + rail) of its members when it spans nodes
    std::vector<double> link_bw;  ///< the directed links its routes cross, bytes/s
    /// Ordered pair (i, j) of member positions, p = i * n + j: its route's links are route_links[route_first[p] ..
    /// route_first[p + 1]) (indices into link_bw), its latency latency_s[p].
    std::vector<std::uint32_t> route_first, route_links;
    std::vector<double> latency_s;
  };
  /// Per group: its ring's slowest hop (bandwidth-protocol figures) and whether it stays inside one node.
  struct GroupRing {
    RingHop hop{-1, 0};
    bool one_node = false;
    std::vector<int> nics;  ///< NICs (node * nics_per_node + rail) the ring sends on across nodes
    int lanes = 0;          ///< folded steps: the data lanes the group spans (TaskRecord::group_lanes)
  };

  void find_channels();
  /// Checks every all-to-all (its routing, its group within the simulated blocks when folded) and notes the groups
  /// they run over.
  void find_alltoalls();
  std::vector<std::pair<int, int>> used_pairs() const;
  /// Folded step: the simulated devices' transfers that need a mirror (see Platform::mirrors).
  std::vector<MirroredHop> mirrored_hops() const;
  /// Folded step: of the transfer from -> to and its congruent transfers (moved by 1 .. blocks - 1 blocks), the one
  /// with the longest route latency (the first on a tie), and that latency.
  std::pair<MirroredHop, double> slowest_congruent(int from, int to) const;
  void start(TaskId id);
  void launch(TaskId id, sg::ActivityPtr activity, int rank = -1, const Interfered& interfered = {});
  void delay(TaskId id, double seconds);
  void drain();
  void launch_ring_step(TaskId id, int rank);
  void on_complete(const sg::Activity& a);
  /// The flow of `s`, begun at `began`, is done at `end` (its interference tail included).
  void flow_done(const Slot& s, double began, double end);
  void finish(TaskId id, double start, double end);
  void finish_collective(TaskId id, const RingRun& run);
  void release_successors(TaskId id, double end);
  void account(TaskId id, int device, double start, double end, int step = -1);
  void apply_memory(const Task& t, bool at_start, double now);
  bool recorded(int device) const { return o_.record.empty() || o_.record[static_cast<std::size_t>(device)]; }
  bool simulated(int device) const { return o_.folding.simulated(device); }
  /// Ring rank r's position in its group (RingRun::positions).
  static int position(const RingRun& run, int r) {
    return run.positions.empty() ? r : run.positions[static_cast<std::size_t>(r)];
  }
  /// The host a transfer from `from` to `to` goes to: the GPU, or the mirror of a folded step's transfer
  /// (Platform::mirrors).
  sg::Host* destination(int from, int to) const;
  const GroupRing& group_ring(int group);
  CollectivePlan plan(const Collective& c);
  /// The end of a collective run as flows (a ring or an all-to-all) at `end`.
  void end_group_transfer(TaskId id, const std::vector<int>& members, double end);
  /// Starts a collective task: an exact delay, an all-to-all or a ring of steps (start_ring).
  void start_collective(TaskId id, const Collective& b, double now);
  void start_ring(TaskId id, const Collective& b, double now);
  /// A collective run as one exact delay of `seconds`; analytic fidelity's inter-node collectives also count their
  /// `overlap_nics` (OverlapMeter) and share `shared_nics` (share_nics).
  void exact_collective(TaskId id, double seconds, const std::vector<int>& overlap_nics,
                        const std::vector<int>& shared_nics);

  // All-to-all (AllToAllLowering.cpp).
  const AllToAllGroup& alltoall_group(int group);
  /// Bytes member position i sends member position j in one all-to-all of `c` (its repeat not counted).
  double pair_bytes(const Collective& c, int i, int j) const;
  /// One all-to-all of `c` (one round) on an otherwise idle platform, seconds: see AllToAllLowering.cpp.
  double alltoall_round_s(const Collective& c);
  void start_alltoall(TaskId id, const Collective& c);
  /// Launches the current round's flows; returns how many (0: the all-to-all moves nothing).
  int launch_alltoall_round(TaskId id);
  void alltoall_flow_done(TaskId id, double end);
  /// `recorded_rounds`: fine detail recorded each round already.
  void finish_alltoall(TaskId id, double start, double end, bool recorded_rounds);

  // Overlap interference (ComputeProfile::intra_node_interference / inter_node_interference). While a device runs
  // compute and an interfering transfer at once (a data-parallel, context-parallel, expert-parallel or pipeline
  // collective or send; not a TP collective, whose cost beside its GEMM is overlap_penalty's, and not a PCIe copy,
  // which runs on copy engines), its compute runs compute_slowdown times slower and the transfer comm_slowdown times
  // slower. Compute tasks and exact-delay collectives are "stretches" whose rate is re-set whenever that changes;
  // decomposed ring steps, all-to-all flows and sends run as SimGrid flows at the links' pace and then a tail: the
  // bytes the slowed kernel would not have moved while their sender (or a send's receiver) computed, as a stretch
  // (start_tail).
  struct Stretch {
    double remaining = 0;  ///< seconds of work left at rate 1
    double rate = 1;
    double last = 0;  ///< when `remaining` was last brought up to date
    double begin = 0, base = 0;
    simgrid::kernel::timer::Timer* timer = nullptr;
    int fabric = -1;       ///< transfers: their interference class (interference_); compute: -1
    int busy_members = 0;  ///< transfers: members computing now
    bool slowed = false;   ///< ran below rate 1 at some point
    bool compute = false;  ///< a compute task (else a collective)
    /// Analytic fidelity: the NICs this inter-node ring loads, and its share of them (1 / the most rings on one).
    std::vector<int> nics;
    double share = 1;
  };
  /// The interference class (an index into interference_) task `id` is subject to, or -1: none.
  int interfering_fabric(TaskId id);
  /// Sets up the interference classes of the groups' collectives that span nodes (group_class_, interference_ from
  /// index 2) and sizes transfers_on_. A ring over n members on N nodes takes n - N of its n hops over NVLink (NCCL
  /// threads each ring through a node's members before its NIC hop); an all-to-all sends a member's k - 1 node peers
  /// of its n - 1 over NVLink. That share of the transfer runs on the fabric whose interference was measured inside a
  /// node; the rest crosses the NICs (inter_node, off unless measured). The compute beside it slows by the
  /// share-weighted factor, the NVLink share scaled by its pace (ring_pace, alltoall_pace: a collective its NICs hold
  /// longer than its NVLink bytes need streams them through HBM that much slower); the collective itself by the NIC
  /// hops' factor, which pace it.
  void plan_interference();
  /// The pace of a ring spanning nodes with `per_node` members on each: its NIC-bound bus bandwidth over NVLink's,
  /// at most 1.
  double ring_pace(double per_node) const;
  /// The pace of an all-to-all spanning nodes that sends `share` of its bytes over NVLink: its NVLink bytes' rate over
  /// the NIC-bound time, relative to share x NVLink's bandwidth, at most 1.
  double alltoall_pace(double share) const;
  double compute_rate(int device) const;
  /// A transfer's rate on `fabric` while `busy_members` of its devices compute.
  double transfer_rate(int fabric, int busy_members) const {
    return busy_members > 0 ? 1.0 / interference_[static_cast<std::size_t>(fabric)].comm_slowdown : 1.0;
  }
  /// The kernel timer that finishes task `id` (begun at `begin`) at `at`.
  simgrid::kernel::timer::Timer* finish_at(TaskId id, double begin, double at);
  void stretch(TaskId id, double seconds, double rate, int fabric, int busy_members);
  void retime(TaskId id, double rate);
  /// A transfer of `fabric` starts (+1) or ends (-1) on `device`: its compute changes pace.
  void transfer_on(int device, int fabric, int change);
  /// `device` starts (+1) or ends (-1) a compute task: its exact-delay transfers change pace.
  void compute_on(int device, int change);
  /// Analytic fidelity's NIC sharing: the inter-node rings (and all-to-alls) on a NIC share it equally (the sum of
  /// their demands, one NIC's bandwidth each, over its capacity), so each runs at 1 / (most rings on any of its NICs).
  /// The NICs of `group`'s ring that count (the simulated blocks' when folded).
  std::vector<int> shared_nics(int group);
  /// Ring `id` starts (+1) or ends (-1) on `nics`: re-sets the share of every ring on them.
  void share_nics(TaskId id, const std::vector<int>& nics, int change);
  /// Seconds `device` has run compute up to `now` (compute_on keeps the integral).
  double compute_busy_s(int device, double now) const;
  /// A flow subject to interference on `fabric` from the compute of `a` (and `b`), launched now.
  Interfered interfered(int fabric, int a, int b = -1) const;
  /// The flow of `s`, begun at `began`, has flowed until `end`: its interference tail runs, then flow_done.
  void start_tail(const Slot& s, double began, double end);
  /// Tail `id` (an id past the graph's tasks) is done.
  void finish_tail(TaskId id);
  struct Tail {
    Slot slot;
    double began = 0;
  };

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
  std::vector<double> speed_;  ///< per device: compute speed (ClusterSpec::slow); empty when all run at 1
  /// A compute task's seconds on `device` at its speed.
  double at_speed(double seconds, int device) const {
    return speed_.empty() ? seconds : seconds / speed_[static_cast<std::size_t>(device)];
  }
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_, release_;
  std::unordered_map<TaskId, RingRun> rings_;
  std::vector<GroupRing> group_rings_;
  std::vector<char> alltoall_groups_;  ///< per group: an all-to-all runs over it
  std::vector<std::unique_ptr<AllToAllGroup>> alltoall_group_info_;
  std::unordered_map<TaskId, AllToAllRun> alltoalls_;
  /// alltoall_round_s per (group, split, combine, elems, elem_bytes): tasks of one routing share it.
  std::map<std::tuple<int, int, bool, std::int64_t, int>, double> alltoall_round_cache_;
  std::vector<OverlapMeter> nic_overlap_;       ///< analytic fidelity: per NIC, inter-node collectives sharing it
  std::vector<std::vector<TaskId>> nic_rings_;  ///< analytic fidelity: per NIC, the rings sharing it now
  /// Interference classes: 0 inside a node, 1 across nodes (NIC hops only: point-to-point sends, rings with one member
  /// per node), 2.. collectives that span nodes with NVLink hops too (plan_interference; the active ones are
  /// described in result_.spanning_interference).
  std::vector<OverlapInterference> interference_;
  std::vector<std::array<int, 2>> group_class_;  ///< per group: its class for rings [0] and all-to-alls [1]
  bool interferes_ = false;
  std::unordered_map<TaskId, Stretch> stretches_;
  std::vector<int> computing_;                    ///< per device: compute tasks running
  std::vector<double> busy_before_, busy_since_;  ///< per device: compute-busy seconds before busy_since_
  std::unordered_map<TaskId, Tail> tails_;        ///< interference tails in progress, by id past the tasks
  TaskId next_tail_ = 0;
  std::vector<TaskId> compute_task_;                ///< per device: the running compute stretch
  std::vector<int> transfers_on_;                   ///< [device * classes + class]: interfering transfers in flight
  std::vector<std::vector<TaskId>> device_delays_;  ///< per device: interfering exact-delay collectives in flight
  std::deque<TaskId> ready_;
  std::uint64_t finished_ = 0;
  SimResult result_;
};

}  // namespace placesim::detail
