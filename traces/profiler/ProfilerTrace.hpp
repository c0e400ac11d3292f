#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace placesim {

/// What a GPU kernel of a profiler trace does, from its name and category (classify_kernel).
enum class KernelClass { Gemm, Attention, Normalization, Elementwise, Optimizer, Collective, Copy };
constexpr int kKernelClasses = 7;
/// "gemm", "attention", "normalization", "elementwise", "optimizer", "collective", "copy".
const char* to_string(KernelClass c);

/// Which part of the training step launched a kernel: the optimizer step (launched inside an "Optimizer.step"
/// span, or an optimizer kernel), the backward pass (launched from a thread other than the one that runs the
/// ProfilerStep spans: PyTorch's autograd engine thread), or the forward pass (the main thread, outside the
/// optimizer step).
enum class Phase { Forward, Backward, Optimizer };
constexpr int kPhases = 3;
const char* to_string(Phase p);

/// The class of a kernel named `name` whose trace category is `category` ("kernel", "gpu_memcpy", "gpu_memset").
KernelClass classify_kernel(const std::string& name, const std::string& category);

/// One GPU activity of a trace: a kernel, a copy or a memset.
struct TraceKernel {
  double start_s = 0, dur_s = 0;  ///< the trace's timestamps (microseconds) in seconds
  int rank = 0;                   ///< the trace file's rank (distributedInfo.rank; else the file's order)
  int device = 0;
  std::int64_t stream = 0;
  std::uint32_t name = 0;  ///< index into ProfilerTrace::names
  KernelClass cls = KernelClass::Elementwise;
  Phase phase = Phase::Forward;
  int step = -1;  ///< index into ProfilerTrace::steps of the step that launched it; -1 outside every step
  /// GEMM shape from the launching operator's "Input Dims" (aten::mm, addmm, bmm, baddbmm, matmul, linear), where
  /// the trace recorded shapes: C[m x n] = A[m x k] B[k x n], `batch` of them. 0 when not recorded.
  double m = 0, n = 0, k = 0, batch = 1;
  int elem_bytes = 0;  ///< operand element size from "Input type" / dtype; 0 when not recorded
  /// Collectives: the operation ("allreduce", "allgather", "reduce_scatter", "alltoall", "broadcast", "send",
  /// "recv", "sendrecv", "barrier"), the bytes of the rank's message (the larger of In and Out msg nelems times the
  /// element size; Input Dims of an nccl:* annotation) and the group size. 0 / "" when the trace does not say.
  std::string collective;
  double bytes = 0;
  int group_size = 0;
};

/// A ProfilerStep#N span on a rank's host timeline, and the GPU time its kernels span.
struct TraceStep {
  int rank = 0;
  long number = 0;                ///< N of ProfilerStep#N
  double start_s = 0, end_s = 0;  ///< the host span
};

/// The training steps and GPU kernels of one or more PyTorch profiler (Kineto) traces.
struct ProfilerTrace {
  std::vector<std::string> files;  ///< the files read, in rank order
  std::vector<std::string> names;  ///< kernel names (interned)
  std::vector<TraceKernel> kernels;
  std::vector<TraceStep> steps;  ///< by rank, then start
  std::vector<int> ranks;        ///< the ranks read
  std::string runtime;  ///< "CUDA" or "ROCm" (from the runtime events' names: cudaLaunchKernel, hipLaunchKernel)
  std::vector<std::string> notes;  ///< what the trace lacked and how it was read (e.g. "no shapes recorded")
};

/// Reads PyTorch profiler traces (Chrome-trace JSON as torch.profiler / Kineto writes it, gzip-compressed or not),
/// streaming: memory grows with the kernels kept, not with the file. `paths` are files or folders (a folder: every
/// *.json and *.json.gz in it, one rank each). Throws InputError naming the file and what is missing (not JSON, no
/// traceEvents, no GPU kernels; an Nsight Systems export, which is not read).
ProfilerTrace read_profiler_traces(const std::vector<std::string>& paths);

}  // namespace placesim
