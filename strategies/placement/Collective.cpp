#include "strategies/placement/Collective.hpp"

namespace placesim {

const char* to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::AllReduce:
      return "allreduce";
    case CollectiveOp::AllGather:
      return "allgather";
    case CollectiveOp::ReduceScatter:
      return "reducescatter";
    case CollectiveOp::AllToAll:
      return "alltoall";
  }
  return "?";
}

const char* to_string(CommClass c) {
  switch (c) {
    case CommClass::DpGradSync:
      return "dp_grad_sync";
    case CommClass::ZeroGather:
      return "zero_gather";
    case CommClass::TpCollective:
      return "tp_collective";
    case CommClass::PpP2P:
      return "pp_p2p";
    case CommClass::EmbeddingSync:
      return "embedding_sync";
    case CommClass::CpKv:
      return "cp_kv";
    case CommClass::EpAllToAll:
      return "ep_all_to_all";
    case CommClass::ExpertDataSync:
      return "expert_data_sync";
  }
  return "?";
}

}  // namespace placesim
