#include "strategies/graph/Record.hpp"

#include "workloads/json/EnumNames.hpp"

namespace placesim {

namespace {

constexpr EnumName<Stream> kStreamNames[] = {{Stream::Compute, "compute"}, {Stream::TpComm, "tp-comm"},
                                             {Stream::DpComm, "dp-comm"},  {Stream::DpGather, "dp-gather"},
                                             {Stream::PpSend, "pp-send"},  {Stream::PpRecv, "pp-recv"},
                                             {Stream::H2D, "h2d"},         {Stream::D2H, "d2h"},
                                             {Stream::Host, "host-cpu"},   {Stream::CpComm, "cp-comm"},
                                             {Stream::EpComm, "ep-comm"}};

constexpr EnumName<TaskKind> kTaskKindNames[] = {
    {TaskKind::Forward, "forward"},     {TaskKind::Backward, "backward"},        {TaskKind::Recompute, "recompute"},
    {TaskKind::Optimizer, "optimizer"}, {TaskKind::Collective, "collective"},    {TaskKind::P2P, "p2p"},
    {TaskKind::Offload, "offload"},     {TaskKind::HostCompute, "host-compute"}, {TaskKind::WeightGrad, "weight-grad"}};

}  // namespace

const char* to_string(Stream s) {
  return name_of(kStreamNames, s);
}

const char* to_string(TaskKind k) {
  return name_of(kTaskKindNames, k);
}

std::string DeviceInfo::name() const {
  return "node" + std::to_string(node) + "/gpu" + std::to_string(local) + " [dp" + std::to_string(dp) + " pp" +
         std::to_string(pp) + (cp >= 0 ? " cp" + std::to_string(cp) : std::string()) + " tp" + std::to_string(tp) + "]";
}

}  // namespace placesim
