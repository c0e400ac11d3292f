#pragma once
// The events of one PyTorch profiler (Kineto) trace file that read_profiler_traces links, read by streaming: compact
// records per event type, in file order, nothing else. Private to traces/profiler (ProfilerTrace.hpp is the API).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "traces/profiler/KinetoOperators.hpp"

namespace placesim::kineto {

/// Kernel names, each stored once for all the files of a read (ProfilerTrace::names).
class NameTable {
 public:
  std::uint32_t intern(const std::string& name);
  std::vector<std::string> names;

 private:
  std::unordered_map<std::string, std::uint32_t> ids_;
};

enum class GpuCategory : std::uint8_t { Kernel, Memcpy, Memset };
/// "kernel", "gpu_memcpy", "gpu_memset": the trace's category of a GPU activity.
const char* to_string(GpuCategory c);

/// A GPU activity (cat kernel / gpu_memcpy / gpu_memset). Times in the trace's microseconds.
struct GpuActivity {
  double ts_us = 0, dur_us = 0;
  std::int64_t correlation = -1, external_id = -1, stream = 0;
  std::uint32_t name = 0;
  std::int32_t device = 0;
  GpuCategory category = GpuCategory::Kernel;
};

/// A runtime call (cat cuda_runtime / cuda_driver) carrying a correlation id: where and when a GPU activity was
/// launched.
struct Launch {
  std::int64_t correlation = 0, tid = 0;
  double ts_us = 0;
};

/// A host span: ProfilerStep#N (number N) or Optimizer.step (number 0).
struct HostSpan {
  std::int64_t tid = 0;
  double start_us = 0, end_us = 0;
  long number = 0;
};

/// A communication operator: record_param_comms (param_comms) or an "nccl:<op>" annotation.
struct CommOp {
  std::int64_t external_id = 0;
  double ts_us = 0;
  const char* op = "";  ///< collective_op() of its name; "" when unknown
  double bytes = 0;     ///< 0 when the operator does not say
  int group_size = 0;
  bool param_comms = false;
};

struct FileEvents {
  bool saw_trace_events = false;
  bool hip_runtime = false;              ///< a runtime event named hip*: a ROCm trace
  std::optional<int> rank;               ///< distributedInfo.rank
  std::optional<std::int64_t> main_tid;  ///< a runtime call's thread whose id is its process id
  std::vector<GpuActivity> gpu;
  std::vector<Launch> launches;
  std::vector<HostSpan> steps, optimizer_spans;
  std::vector<GemmShape> shapes;
  std::vector<CommOp> comms;
};

/// Reads the events of `path` (gzip-compressed or plain JSON) without holding the file in memory. Throws InputError
/// naming the path when it cannot be read or is not JSON (with the byte offset of the error).
FileEvents read_kineto_events(const std::string& path, NameTable& names);

}  // namespace placesim::kineto
