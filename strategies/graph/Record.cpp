#include "strategies/graph/Record.hpp"

namespace placesim {

const char* to_string(Stream s) {
  switch (s) {
    case Stream::Compute:
      return "compute";
    case Stream::TpComm:
      return "tp-comm";
    case Stream::DpComm:
      return "dp-comm";
    case Stream::DpGather:
      return "dp-gather";
    case Stream::PpSend:
      return "pp-send";
    case Stream::PpRecv:
      return "pp-recv";
    case Stream::H2D:
      return "h2d";
    case Stream::D2H:
      return "d2h";
    case Stream::Host:
      return "host-cpu";
    case Stream::CpComm:
      return "cp-comm";
    case Stream::EpComm:
      return "ep-comm";
  }
  return "?";
}

const char* to_string(TaskKind k) {
  switch (k) {
    case TaskKind::Forward:
      return "forward";
    case TaskKind::Backward:
      return "backward";
    case TaskKind::Recompute:
      return "recompute";
    case TaskKind::Optimizer:
      return "optimizer";
    case TaskKind::Collective:
      return "collective";
    case TaskKind::P2P:
      return "p2p";
    case TaskKind::Offload:
      return "offload";
    case TaskKind::HostCompute:
      return "host-compute";
    case TaskKind::WeightGrad:
      return "weight-grad";
  }
  return "?";
}

std::string DeviceInfo::name() const {
  return "node" + std::to_string(node) + "/gpu" + std::to_string(local) + " [dp" + std::to_string(dp) + " pp" +
         std::to_string(pp) + (cp >= 0 ? " cp" + std::to_string(cp) : std::string()) + " tp" + std::to_string(tp) + "]";
}

}  // namespace placesim
