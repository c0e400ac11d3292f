#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "strategies/graph/DeviceStats.hpp"
#include "strategies/graph/Folding.hpp"
#include "strategies/graph/Record.hpp"

namespace placesim {

/// How collectives are simulated. Point-to-point and PCIe transfers are always flows.
///   analytic  every collective is one exact alpha-beta delay of its ring (slowest hop's latency and bandwidth);
///             no contention between collectives: fastest, for sweeps and very large runs
///   flow      collectives that cross nodes are decomposed into ring steps, each a flow that contends with all
///             other traffic; collectives inside one node are exact delays (the NVSwitch is non-blocking) [default]
///   full      every collective step is a flow, inside nodes too
enum class Fidelity { Analytic, Flow, Full };
const char* to_string(Fidelity f);
Fidelity parse_fidelity(const std::string& text, const std::string& field);

struct SimOptions {
  Fidelity fidelity = Fidelity::Flow;
  std::vector<char> record;  ///< per device: keep its task records and memory events (empty: all devices)
  bool fine = false;         ///< one record per collective step instead of one per collective and device
  /// Apply the accelerator profile's overlap interference (compute and transfers that overlap on a device slow each
  /// other); false: overlapped communication is free, as placesim once costed it (a what-if).
  bool interference = true;
  /// The graph was expanded folded (ExpandOptions::folded_lanes): the simulator runs the simulated blocks' devices
  /// only, and unfold_result gives every other device its representative's figures afterwards.
  Folding folding;
};

/// The overlap interference of the collectives that span nodes and also hop over NVLink (Runner::plan_interference):
/// `nvlink_share` of the transfer runs inside nodes, where the accelerator's intra_node factors were measured.
struct SpanningInterference {
  double nvlink_share = 0;
  /// A ring's NIC-bound bus bandwidth over NVLink's (capped at 1): its NVLink share slows the compute beside it in
  /// proportion. An all-to-all's: its NVLink bytes spread over the time its NIC bytes take, per member nics_per_node /
  /// gpus_per_node NICs: nic / ((1 - share) x nvlink), capped at 1.
  double pace = 1;
  bool alltoall = false;  ///< an all-to-all's share (k - 1 node peers of n - 1), else a ring's ((n - N) / n)
  double compute_slowdown = 1, comm_slowdown = 1;
};

struct SimResult {
  SimulationRecord record;
  std::vector<DeviceStats> devices;
  double step_time_s = 0;
  std::uint64_t activities = 0;  ///< SimGrid activities run (network and PCIe transfers)
  std::uint64_t timers = 0;      ///< fixed-length tasks run as SimGrid kernel timers (compute, exact collectives)
  double wall_time_s = 0;        ///< host time the simulation took
  /// Analytic fidelity only: the largest excess load of one NIC, the integral over time of (inter-node ring
  /// collectives on it - 1) wherever one is: each was given the NIC's whole bandwidth, so the step is optimistic by
  /// up to about this much. With that NIC. 0 when no inter-node collectives overlapped: the analytic step then has
  /// no unmodelled NIC sharing.
  double nic_overlap_s = 0;
  int nic_overlap_node = -1, nic_overlap_rail = -1;
  /// How the step was folded (Folding::active) or why not; set by simulate_experiment.
  Folding folding;
  bool symmetry = true;  ///< symmetry folding was allowed (false: --symmetry off)
  /// Interference classes of the collectives that span nodes with NVLink hops, one per distinct share (empty when
  /// interference is off or no such collective ran over an active class).
  std::vector<SpanningInterference> spanning_interference;
};

/// Per device, DeviceStats::exposed_communication_s, computed once per source of an unfolded result (the devices a
/// simulated device stands for hold copies of its intervals).
std::vector<double> exposed_communication(const SimResult& r);

}  // namespace placesim
