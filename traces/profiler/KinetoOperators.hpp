#pragma once
// What the arguments of a PyTorch operator in a profiler trace say: the GEMM shape of a matrix multiply, the
// collective of a communication operator or NCCL kernel, the size of an element type. Private to traces/profiler.
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace placesim::kineto {

/// The GEMM shape of a matrix-multiply operator: C[m x n] = A[m x k] B[k x n], `batch` of them.
struct GemmShape {
  std::int64_t external_id = 0;  ///< the operator's "External id", which its kernels carry
  double m = 0, n = 0, k = 0, batch = 1;
  int elem_bytes = 0;  ///< from A's "Input type"; 0 when unknown
};

/// One input of an operator as the trace recorded it ("Input Dims", "Input type").
struct OperatorInput {
  const std::vector<double>* dims = nullptr;  ///< nullptr when not one tensor's (a TensorList, or not recorded)
  std::string_view type;
};

/// The shape of aten::mm ([m,k], [k,n]), aten::addmm ([.], [m,k], [k,n]), aten::bmm ([b,m,k], [b,k,n]),
/// aten::baddbmm ([.], [b,m,k], [b,k,n]), aten::matmul (as torch.matmul broadcasts) and aten::linear (input [..., k],
/// weight [n, k]: m is the product of the leading dims); nothing for other operators or dims that do not fit.
std::optional<GemmShape> gemm_shape(std::string_view op, std::span<const OperatorInput> inputs);

/// The product of `dims` (the element count of a tensor).
double elements(const std::vector<double>& dims);

/// The collective of an operator or kernel name, normalised: "allreduce", "allgather", "reduce_scatter", "alltoall",
/// "broadcast", "send", "recv", "sendrecv", "barrier"; "" for any other name. ("all_reduce", "_allgather_base",
/// "nccl:all_to_all", "ncclKernel_AllReduce_RING_LL_Sum_float", "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL").
const char* collective_op(std::string_view name);

/// Bytes of one element of a PyTorch type as traces spell it ("float", "c10::BFloat16", "Half", "long int", the
/// record_param_comms dtype "Float"); 0 when unknown.
int dtype_bytes(std::string_view type);

}  // namespace placesim::kineto
