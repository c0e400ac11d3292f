#include "strategies/placement/Collective.hpp"

#include "workloads/json/EnumNames.hpp"

namespace placesim {

namespace {

constexpr EnumName<CollectiveOp> kCollectiveOpNames[] = {{CollectiveOp::AllReduce, "allreduce"},
                                                         {CollectiveOp::AllGather, "allgather"},
                                                         {CollectiveOp::ReduceScatter, "reducescatter"},
                                                         {CollectiveOp::AllToAll, "alltoall"}};

constexpr EnumName<CommClass> kCommClassNames[] = {
    {CommClass::DpGradSync, "dp_grad_sync"},      {CommClass::ZeroGather, "zero_gather"},
    {CommClass::TpCollective, "tp_collective"},   {CommClass::PpP2P, "pp_p2p"},
    {CommClass::EmbeddingSync, "embedding_sync"}, {CommClass::CpKv, "cp_kv"},
    {CommClass::EpAllToAll, "ep_all_to_all"},     {CommClass::ExpertDataSync, "expert_data_sync"}};

}  // namespace

const char* to_string(CollectiveOp op) {
  return name_of(kCollectiveOpNames, op);
}

const char* to_string(CommClass c) {
  return name_of(kCommClassNames, c);
}

}  // namespace placesim
