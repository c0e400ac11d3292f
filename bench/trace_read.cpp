// Reading speed and memory of read_profiler_traces on a synthetic PyTorch profiler (Kineto) trace of a given size:
// training steps of a transformer as torch.profiler records them (cpu_op operators with Input Dims, cudaLaunchKernel
// calls with correlation ids and their ac2g flows, GEMM / attention / norm / elementwise / optimizer kernels, NCCL
// allreduces under record_param_comms, copies, ProfilerStep and Optimizer.step spans, the backward on a second
// thread). Prints the file's size, seconds, MB/s, kernels read and the peak resident set.
//
//   trace_read [--size-mb N] [--keep] [--no-write] [PATH]     (default 1024 MB, /tmp/placesim-bench-trace.json)
//
// The file is removed afterwards unless --keep; --no-write reads PATH as it is.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "traces/profiler/ProfilerTrace.hpp"

namespace {

constexpr int kPid = 4242, kMainTid = 4242, kBackwardTid = 4300, kComputeStream = 7, kNcclStream = 20;
constexpr int kLayers = 24;

/// Writes the events one by one through a large buffer, tracking ids and the host and GPU clocks (microseconds).
class SyntheticTrace {
 public:
  explicit SyntheticTrace(std::FILE* out) : out_(out) {}

  void begin() {
    std::fputs(R"({"schemaVersion":1,"deviceProperties":[{"id":0,"name":"NVIDIA H100 80GB HBM3"}],)", out_);
    std::fputs(R"("distributedInfo":{"backend":"nccl","rank":0,"world_size":8},"traceEvents":[)", out_);
    std::fputs("\n", out_);
  }
  void end() { std::fputs(R"({"name":"Record Window End","ph":"i","s":"g","pid":"","tid":"","ts":0}]})", out_); }

  /// One training step: forward on the main thread, backward (with bucketed allreduces) on autograd's thread, the
  /// optimizer step inside Optimizer.step. The step span is written first, as Kineto's order is not time order.
  void step(long number) {
    const double start = host_;
    const double length = step_length_us();
    span("user_annotation", "ProfilerStep#" + std::to_string(number), kMainTid, start, length);
    copy(kMainTid, "Memcpy HtoD (Pageable -> Device)", 4 * 2048 * 8);
    for (int l = 0; l < kLayers; ++l) layer(kMainTid, false);
    for (int l = 0; l < kLayers; ++l) {
      layer(kBackwardTid, true);
      if (l % 6 == 5) allreduce(kBackwardTid, 25 * 1024 * 1024 / 2);
    }
    span("user_annotation", "Optimizer.step#AdamW.step", kMainTid, host_, 40 * kOptimizerKernels);
    for (int i = 0; i < kOptimizerKernels; ++i)
      launch(kMainTid, "aten::_foreach_addcdiv_", "[[[4096, 4096], [4096]], [[4096, 4096], [4096]]]",
             R"(["TensorList", "TensorList"])", kAdamKernel, 300);
    host_ = start + length;
  }
  std::size_t kernels() const { return kernels_; }

 private:
  static constexpr int kOptimizerKernels = 8;
  static constexpr const char* kGemmKernel =
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__"
      "5x_cublas";
  static constexpr const char* kFlashKernel =
      "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, "
      "Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, "
      "false>(flash::Flash_fwd_params)";
  static constexpr const char* kNormKernel =
      "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, "
      "c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)";
  static constexpr const char* kGeluKernel =
      "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
      "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::"
      "BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
      "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::"
      "BFloat16)#1}, at::detail::Array<char*, 2>)";
  static constexpr const char* kAdamKernel =
      "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
      "TensorListMetadata<4>, at::native::(anonymous namespace)::PointwiseOpScalarFunctor<c10::BFloat16, 4, 3, 0>, "
      "std::divides<float>, float>(at::native::(anonymous namespace)::TensorListMetadata<4>, PointwiseOpScalarFunctor)";

  double step_length_us() const { return (2.0 * kLayers * 4 + kLayers / 6 + kOptimizerKernels) * 60 + 200; }

  void layer(int tid, bool backward) {
    const char* dims = backward ? "[[4096, 4096], [4096, 16384]]" : "[[4, 2048, 4096], [16384, 4096], [16384]]";
    const char* op = backward ? "aten::mm" : "aten::linear";
    if (backward) evaluate_function(tid);
    launch(tid, op, dims, R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"])", kGemmKernel, 900);
    launch(tid, "aten::_flash_attention_forward", "[[4, 2048, 32, 128], [4, 2048, 32, 128], [4, 2048, 32, 128]]",
           R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"])", kFlashKernel, 700);
    launch(tid, "aten::native_layer_norm", "[[4, 2048, 4096], [], [4096], [4096], []]",
           R"(["c10::BFloat16", "ScalarList", "c10::BFloat16", "c10::BFloat16", "Scalar"])", kNormKernel, 60);
    launch(tid, "aten::gelu", "[[4, 2048, 16384], []]", R"(["c10::BFloat16", ""])", kGeluKernel, 80);
  }

  void evaluate_function(int tid) {
    std::fprintf(out_,
                 R"({"ph":"X","cat":"cpu_op","name":"autograd::engine::evaluate_function: AddmmBackward0","pid":%d,)"
                 R"("tid":%d,"ts":%.3f,"dur":%.3f,"args":{"External id":%ld,"Record function id":0,)"
                 R"("Sequence number":%ld,"Fwd thread id":1,"Ev Idx":%ld}},)"
                 "\n",
                 kPid, tid, host_, 55.0, next_id_, next_id_, next_id_);
    ++next_id_;
  }

  /// An operator, its cudaLaunchKernel with the ac2g flow, and its kernel.
  void launch(int tid, const char* op, const char* dims, const char* types, const char* kernel, double gpu_us) {
    const long ext = next_id_++, corr = next_id_++;
    std::fprintf(
        out_,
        R"({"ph":"X","cat":"cpu_op","name":"%s","pid":%d,"tid":%d,"ts":%.3f,"dur":%.3f,"args":{"External id":%ld,)"
        R"("Record function id":0,"Concrete Inputs":["", "", ""],"Input type":%s,)"
        R"("Input Strides":[[8388608, 4096, 1], [4096, 1], [1]],"Input Dims":%s,"Ev Idx":%ld}},)"
        "\n",
        op, kPid, tid, host_, 40.0, ext, types, dims, ext);
    runtime(tid, "cudaLaunchKernel", ext, corr, host_ + 20);
    gpu("kernel", kernel, kComputeStream, ext, corr, gpu_us);
    host_ += 60;
  }

  void runtime(int tid, const char* name, long ext, long corr, double ts) {
    std::fprintf(out_,
                 R"({"ph":"X","cat":"cuda_runtime","name":"%s","pid":%d,"tid":%d,"ts":%.3f,"dur":%.3f,)"
                 R"("args":{"External id":%ld,"cbid":211,"correlation":%ld}},)"
                 "\n"
                 R"({"ph":"s","id":%ld,"pid":%d,"tid":%d,"ts":%.3f,"cat":"ac2g","name":"ac2g"},)"
                 "\n",
                 name, kPid, tid, ts, 7.5, ext, corr, corr, kPid, tid, ts);
  }

  void gpu(const char* cat, const char* name, int stream, long ext, long corr, double us) {
    gpu_ = std::max(gpu_, host_ + 30);
    std::fprintf(out_,
                 R"({"ph":"X","cat":"%s","name":"%s","pid":0,"tid":%d,"ts":%.3f,"dur":%.3f,"args":{"External id":%ld,)"
                 R"("queued":0,"device":0,"context":1,"stream":%d,"correlation":%ld,"registers per thread":168,)"
                 R"("shared memory":213248,"blocks per SM":1,"warps per SM":12,"grid":[132, 1, 1],)"
                 R"("block":[384, 1, 1],"est. achieved occupancy %%":19}},)"
                 "\n"
                 R"({"ph":"f","id":%ld,"pid":0,"tid":%d,"ts":%.3f,"cat":"ac2g","name":"ac2g","bp":"e"},)"
                 "\n",
                 cat, name, stream, gpu_, us, ext, stream, corr, corr, stream, gpu_);
    gpu_ += us;
    ++kernels_;
  }

  void allreduce(int tid, long elements) {
    const long ext = next_id_++, corr = next_id_++;
    std::fprintf(
        out_,
        R"({"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":%d,"tid":%d,"ts":%.3f,"dur":30,)"
        R"("args":{"External id":%ld,"Collective name":"allreduce","In msg nelems":%ld,"Out msg nelems":%ld,)"
        R"("Group size":8,"dtype":"BFloat16","Process Group Name":"0","Process Group Ranks":"[0, 1, 2, 3, 4, 5, 6, 7]"}},)"
        "\n"
        R"({"ph":"X","cat":"user_annotation","name":"nccl:all_reduce","pid":%d,"tid":%d,"ts":%.3f,"dur":20,)"
        R"("args":{"External id":%ld}},)"
        "\n",
        kPid, tid, host_, ext, elements, elements, kPid, tid, host_ + 2, next_id_++);
    runtime(tid, "cudaLaunchKernel", ext, corr, host_ + 10);
    gpu("kernel", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", kNcclStream, ext, corr,
        2000);
    host_ += 60;
  }

  void copy(int tid, const char* name, long bytes) {
    const long corr = next_id_++;
    runtime(tid, "cudaMemcpyAsync", corr, corr, host_);
    gpu("gpu_memcpy", name, kComputeStream, corr, corr, bytes / 20000.0);
    host_ += 10;
  }

  void span(const char* cat, const std::string& name, int tid, double ts, double dur) {
    std::fprintf(out_,
                 R"({"ph":"X","cat":"%s","name":"%s","pid":%d,"tid":%d,"ts":%.3f,"dur":%.3f,)"
                 R"("args":{"External id":%ld,"Record function id":0,"Ev Idx":%ld}},)"
                 "\n",
                 cat, name.c_str(), kPid, tid, ts, dur, next_id_, next_id_);
    ++next_id_;
  }

  std::FILE* out_;
  double host_ = 1.7e12, gpu_ = 0;
  long next_id_ = 1;
  std::size_t kernels_ = 0;
};

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // kilobytes on Linux
}

}  // namespace

int main(int argc, char** argv) {
  double size_mb = 1024;
  bool keep = false, write = true;
  std::string path = "/tmp/placesim-bench-trace.json";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--size-mb" && i + 1 < argc) {
      size_mb = std::stod(argv[++i]);
    } else if (a == "--keep") {
      keep = true;
    } else if (a == "--no-write") {
      write = false, keep = true;
    } else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "usage: trace_read [--size-mb N] [--keep] [--no-write] [PATH]\n");
      return 2;
    } else {
      path = a;
    }
  }
  auto seconds = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  if (write) {
    std::FILE* out = std::fopen(path.c_str(), "wb");
    if (!out) {
      std::fprintf(stderr, "trace_read: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
      return 2;
    }
    std::setvbuf(out, nullptr, _IOFBF, 1 << 20);
    auto t0 = std::chrono::steady_clock::now();
    SyntheticTrace trace(out);
    trace.begin();
    for (long step = 1; std::ftell(out) < size_mb * 1e6; ++step) trace.step(step);
    trace.end();
    std::fclose(out);
    std::printf("wrote %s: %zu GPU activities in %.1f s\n", path.c_str(), trace.kernels(),
                seconds(t0, std::chrono::steady_clock::now()));
  }
  const double file_mb = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
  const double rss_before = peak_rss_mb();
  auto t0 = std::chrono::steady_clock::now();
  placesim::ProfilerTrace t = placesim::read_profiler_traces({path});
  const double s = seconds(t0, std::chrono::steady_clock::now());
  std::printf("file %.1f MB, read in %.2f s, %.1f MB/s, %zu kernels, %zu steps, peak RSS %.1f MB (%.1f before)\n",
              file_mb, s, file_mb / s, t.kernels.size(), t.steps.size(), peak_rss_mb(), rss_before);
  if (!keep) std::filesystem::remove(path);
  return 0;
}
