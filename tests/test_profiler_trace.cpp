// Reading PyTorch profiler (Kineto) traces. The expected counts of the public traces in tests/data/profiler/hta were
// computed by a separate Python script (gzip + json modules), listed in tests/data/profiler/hta/SOURCE.md.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <map>
#include <tuple>

#include "tests/FileHelpers.hpp"
#include "traces/output/OutputFile.hpp"
#include "traces/profiler/ProfilerTrace.hpp"
#include "workloads/json/Error.hpp"

using namespace placesim;
using placesim::test::TempDir;

namespace {

const std::string kHta = std::string(PLACESIM_SOURCE_DIR) + "/tests/data/profiler/hta/";
const std::string kRocm = kHta + "mi250_minitoy_train_ROCm6_2_kineto.json.gz";
const std::string kNccl = kHta + "nccl_data.json.gz";
const std::string kSampled = kHta + "sampled";

std::size_t count(const ProfilerTrace& t, const std::function<bool(const TraceKernel&)>& keep) {
  return static_cast<std::size_t>(std::count_if(t.kernels.begin(), t.kernels.end(), keep));
}

std::size_t of_class(const ProfilerTrace& t, KernelClass c, int rank = -1) {
  return count(t, [&](const TraceKernel& k) { return k.cls == c && (rank < 0 || k.rank == rank); });
}

/// Kernels per ProfilerStep number on `rank`.
std::map<long, std::size_t> kernels_per_step(const ProfilerTrace& t, int rank) {
  std::map<long, std::size_t> per;
  for (const TraceStep& s : t.steps)
    if (s.rank == rank) per[s.number] = 0;
  for (const TraceKernel& k : t.kernels)
    if (k.rank == rank && k.step >= 0) ++per[t.steps[k.step].number];
  return per;
}

std::string refusal(const std::vector<std::string>& paths) {
  try {
    read_profiler_traces(paths);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(read without a refusal)";
}

void write_gzip(const std::string& path, const std::string& text) {
  OutputFile out(path);  // gzip-compressed: the path ends in .gz
  out.write(text);
  out.close();
}

/// A hand-made trace of rank 3, events deliberately out of time order (GPU activities before their launches). Times
/// in microseconds: ProfilerStep#7 spans 1000..2000 on the main thread 10; thread 11 is autograd's.
std::string tiny_trace(bool with_step = true) {
  std::string step = with_step ? R"json(
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#7","pid":10,"tid":10,"ts":1000,"dur":1000,"args":{"External id":1}},)json"
                               : "";
  return R"json({"schemaVersion":1,"deviceProperties":[{"id":0,"name":"GPU","totalGlobalMem":1}],
"distributedInfo":{"backend":"nccl","rank":3,"world_size":4,"pg_config":[{"ranks":[0,1,2,3]}]},
"traceEvents":[
{"ph":"X","cat":"kernel","name":"sm90_xmma_gemm_bf16bf16_bf16f32","pid":0,"tid":7,"ts":1100,"dur":20,
 "args":{"External id":2,"device":0,"stream":7,"correlation":100,"grid":[132,1,1],"block":[384,1,1]}},
{"ph":"X","cat":"kernel","name":"ampere_sgemm_32x32_sliced1x4_tn","pid":0,"tid":7,"ts":1130,"dur":10,
 "args":{"External id":3,"device":0,"stream":7,"correlation":101}},
{"args":{"device":0,"stream":7,"correlation":102},"ph":"X","cat":"kernel","pid":0,"tid":7,"ts":1250,"dur":30,
 "name":"void at::native::(anonymous namespace)::layer_norm_grad_input_kernel<float>(float const*)"},
{"ph":"X","cat":"kernel","name":"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
 "pid":0,"tid":20,"ts":1310,"dur":100,"args":{"External id":4,"device":0,"stream":20,"correlation":103}},
{"ph":"X","cat":"kernel","name":"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
 "pid":0,"tid":7,"ts":1650,"dur":4,"args":{"device":0,"stream":7,"correlation":104}},
{"ph":"X","cat":"kernel","name":"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)","pid":0,"tid":21,"ts":1900,
 "dur":50,"args":{"device":0,"stream":21,"correlation":999}},
{"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoH (Device -> Pinned)","pid":0,"tid":8,"ts":2510,"dur":6,
 "args":{"device":0,"stream":8,"correlation":105,"bytes":1024,"memory bandwidth (GB/s)":1.5}},
{"ph":"X","cat":"gpu_user_annotation","name":"ProfilerStep#7","pid":0,"tid":7,"ts":1100,"dur":900,"args":{}},)json" +
         step + R"json(
{"ph":"X","cat":"cpu_op","name":"aten::linear","pid":10,"tid":10,"ts":1010,"dur":50,"args":{"External id":2,
 "Input Dims":[[8,16,64],[32,64],[32]],"Input type":["c10::BFloat16","c10::BFloat16","c10::BFloat16"]}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":10,"tid":10,"ts":1020,"dur":5,
 "args":{"External id":2,"correlation":100}},
{"ph":"X","cat":"cpu_op","name":"aten::bmm","pid":10,"tid":10,"ts":1030,"dur":10,"args":{"External id":3,
 "Input Dims":[[4,8,16],[4,16,2]],"Input type":["float","float"],"Input Strides":[[128,16,1],[32,2,1]]}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":10,"tid":10,"ts":1032,"dur":5,
 "args":{"External id":3,"correlation":101}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":10,"tid":11,"ts":1200,"dur":5,"args":{"correlation":102}},
{"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":10,"tid":11,"ts":1300,"dur":20,"args":{"External id":4,
 "Collective name":"_reduce_scatter_base","In msg nelems":4096,"Out msg nelems":1024,"Group size":4,"dtype":"BFloat16",
 "Process Group Ranks":"[0, 1, 2, 3]"}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":10,"tid":11,"ts":1305,"dur":5,
 "args":{"External id":4,"correlation":103}},
{"ph":"X","cat":"user_annotation","name":"Optimizer.step#AdamW.step","pid":10,"tid":10,"ts":1500,"dur":300,
 "args":{"External id":5}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":10,"tid":10,"ts":1600,"dur":5,"args":{"correlation":104}},
{"ph":"X","cat":"cuda_runtime","name":"cudaMemcpyAsync","pid":10,"tid":10,"ts":2500,"dur":5,"args":{"correlation":105}},
{"ph":"s","id":100,"pid":10,"tid":10,"ts":1020,"cat":"ac2g","name":"ac2g"},
{"name":"process_name","ph":"M","ts":0,"pid":0,"tid":0,"args":{"name":"python"}},
{"ph":"X","cat":"Trace","ts":900,"dur":2000,"pid":"Spans","tid":"PyTorch Profiler","name":"PyTorch Profiler (0)",
 "args":{"Op count":0}}
],"traceName":"tiny","displayTimeUnit":"ms"})json";
}

/// The kernel of `t` whose name starts with `prefix` (the tiny trace's names are distinct).
const TraceKernel& kernel(const ProfilerTrace& t, const std::string& prefix) {
  for (const TraceKernel& k : t.kernels)
    if (t.names[k.name].rfind(prefix, 0) == 0) return k;
  FAIL("no kernel named " << prefix);
  return t.kernels.front();
}

void check_tiny(const ProfilerTrace& t, const std::string& file) {
  CHECK(t.files == std::vector<std::string>{file});
  CHECK(t.ranks == std::vector<int>{3});
  CHECK(t.runtime == "CUDA");
  REQUIRE(t.steps.size() == 1);
  CHECK(t.steps[0].rank == 3);
  CHECK(t.steps[0].number == 7);
  CHECK(t.steps[0].start_s == Approx(1000e-6));
  CHECK(t.steps[0].end_s == Approx(2000e-6));
  REQUIRE(t.kernels.size() == 7);
  CHECK(t.names.size() == 7);
  for (std::size_t i = 1; i < t.kernels.size(); ++i) CHECK(t.kernels[i - 1].start_s <= t.kernels[i].start_s);
  for (const TraceKernel& k : t.kernels) CHECK((k.rank == 3 && k.device == 0));

  const TraceKernel& linear = kernel(t, "sm90_xmma_gemm");  // aten::linear [8,16,64] x [32,64]^T
  CHECK(linear.start_s == Approx(1100e-6));
  CHECK(linear.dur_s == Approx(20e-6));
  CHECK(linear.stream == 7);
  CHECK(linear.cls == KernelClass::Gemm);
  CHECK(linear.phase == Phase::Forward);
  CHECK(linear.step == 0);
  CHECK(linear.m == 8 * 16);
  CHECK(linear.n == 32);
  CHECK(linear.k == 64);
  CHECK(linear.batch == 1);
  CHECK(linear.elem_bytes == 2);
  CHECK(linear.collective.empty());
  CHECK(linear.bytes == 0);

  const TraceKernel& bmm = kernel(t, "ampere_sgemm");  // aten::bmm [4,8,16] x [4,16,2]
  CHECK((bmm.cls == KernelClass::Gemm && bmm.phase == Phase::Forward && bmm.step == 0));
  CHECK((bmm.batch == 4 && bmm.m == 8 && bmm.k == 16 && bmm.n == 2 && bmm.elem_bytes == 4));

  const TraceKernel& norm = kernel(t, "void at::native::(anonymous namespace)::layer_norm_grad");
  CHECK(norm.cls == KernelClass::Normalization);
  CHECK(norm.phase == Phase::Backward);  // launched from thread 11, not the ProfilerStep thread 10
  CHECK(norm.step == 0);
  CHECK((norm.m == 0 && norm.elem_bytes == 0));

  const TraceKernel& rs = kernel(t, "ncclDevKernel_ReduceScatter");
  CHECK(rs.cls == KernelClass::Collective);
  CHECK(rs.phase == Phase::Backward);
  CHECK(rs.stream == 20);
  CHECK(rs.collective == "reduce_scatter");
  CHECK(rs.bytes == 4096 * 2);  // the larger of In and Out msg nelems, bf16
  CHECK(rs.group_size == 4);

  const TraceKernel& fill = kernel(t, "void at::native::vectorized_elementwise_kernel");
  CHECK(fill.cls == KernelClass::Elementwise);
  CHECK(fill.phase == Phase::Optimizer);  // launched at 1600, inside Optimizer.step 1500..1800 on its thread
  CHECK(fill.step == 0);

  const TraceKernel& sendrecv = kernel(t, "ncclDevKernel_SendRecv");  // no runtime call, no operator
  CHECK(sendrecv.cls == KernelClass::Collective);
  CHECK(sendrecv.collective == "sendrecv");  // from the kernel's name
  CHECK((sendrecv.bytes == 0 && sendrecv.group_size == 0));
  CHECK(sendrecv.phase == Phase::Forward);
  CHECK(sendrecv.step == 0);  // its own start 1900 lies in the step

  const TraceKernel& copy = kernel(t, "Memcpy DtoH");
  CHECK(copy.cls == KernelClass::Copy);
  CHECK(copy.step == -1);  // launched at 2500, after the step's end at 2000
  CHECK(copy.stream == 8);
  CHECK(copy.start_s == Approx(2510e-6));
  CHECK(copy.dur_s == Approx(6e-6));

  REQUIRE(t.notes.size() == 1);  // the SendRecv kernel matched no operator; shapes and sizes were found
  CHECK_THAT(t.notes[0], Catch::Contains(file) && Catch::Contains("1 collective kernels"));
}

}  // namespace

TEST_CASE("kernel names are classified by the rule table", "[profiler]") {
  const std::vector<std::pair<std::string, KernelClass>> cases = {
      {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", KernelClass::Collective},
      {"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", KernelClass::Collective},
      {"Memcpy HtoD (Pageable -> Device)", KernelClass::Copy},
      {"Memset (Device)", KernelClass::Copy},
      {"void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>, true>(Flash_fwd_params)",
       KernelClass::Attention},
      {"fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::half_t>::Params)",
       KernelClass::Attention},
      {"cudnn_generated_fort_native_sdpa_sm90_knob_7_64x64x64_4x1x1_kernel0_0", KernelClass::Attention},
      {"Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN_LDSB0", KernelClass::Gemm},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1", KernelClass::Gemm},
      {"nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT", KernelClass::Gemm},
      {"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>(Params)", KernelClass::Gemm},
      {"sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc", KernelClass::Gemm},
      {"void cudnn::bn_fw_tr_1C11_singleread<float, 512, true, 1, 2, 0>(cudnn::bn_fw_tr_1C11_args<float>)",
       KernelClass::Normalization},
      {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float)",
       KernelClass::Normalization},
      {"void transformer_engine::normalization::rmsnorm_fwd_tuned_kernel<Ktraits>(FwdParams)",
       KernelClass::Normalization},
      {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<TensorListMetadata<2>>(...)",
       KernelClass::Optimizer},
      {"void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>>(...)", KernelClass::Optimizer},
      // "lambda" is not LAMB, "hadamard" is not Adam, a softmax is neither.
      {"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>({lambda()#1})",
       KernelClass::Elementwise},
      {"void fast_hadamard_transform_kernel<fast_hadamard_transform_kernel_traits<128, 12>>(HadamardParams)",
       KernelClass::Elementwise},
      {"void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, true, false>(float*)",
       KernelClass::Elementwise},
  };
  for (const auto& [name, cls] : cases) {
    INFO(name);
    CHECK(classify_kernel(name, "kernel") == cls);
  }
  CHECK(classify_kernel("anything", "gpu_memcpy") == KernelClass::Copy);
  CHECK(classify_kernel("anything", "gpu_memset") == KernelClass::Copy);
  CHECK(std::string(to_string(KernelClass::Gemm)) == "gemm");
  CHECK(std::string(to_string(Phase::Backward)) == "backward");
}

TEST_CASE("a hand-made trace is read field by field, plain and gzip-compressed", "[profiler]") {
  TempDir dir;
  SECTION("plain") {
    test::write(dir / "tiny.json", tiny_trace());
    check_tiny(read_profiler_traces({dir / "tiny.json"}), dir / "tiny.json");
  }
  SECTION("gzip") {
    write_gzip(dir / "tiny.json.gz", tiny_trace());
    check_tiny(read_profiler_traces({dir / "tiny.json.gz"}), dir / "tiny.json.gz");
  }
  SECTION("gzip under a plain name: the magic bytes decide") {
    write_gzip(dir / "tiny.gz", tiny_trace());
    std::filesystem::rename(dir / "tiny.gz", dir / "tiny.json");
    check_tiny(read_profiler_traces({dir / "tiny.json"}), dir / "tiny.json");
  }
}

TEST_CASE("without ProfilerStep spans a rank's kernels form one step, with a note", "[profiler]") {
  TempDir dir;
  test::write(dir / "nostep.json", tiny_trace(false));
  ProfilerTrace t = read_profiler_traces({dir / "nostep.json"});
  REQUIRE(t.steps.size() == 1);
  CHECK(t.steps[0].number == -1);
  CHECK(t.steps[0].rank == 3);
  CHECK(t.steps[0].start_s == Approx(1100e-6));          // the first kernel's start
  CHECK(t.steps[0].end_s == Approx((2510 + 6) * 1e-6));  // the memcpy's end
  CHECK(count(t, [](const TraceKernel& k) { return k.step == 0; }) == 7);
  // The main thread (tid == pid) stands for the ProfilerStep thread.
  CHECK(kernel(t, "sm90_xmma_gemm").phase == Phase::Forward);
  CHECK(kernel(t, "void at::native::(anonymous namespace)::layer_norm_grad").phase == Phase::Backward);
  CHECK_THAT(t.notes.at(1), Catch::Contains("no ProfilerStep spans") && Catch::Contains("7 kernels"));
}

TEST_CASE("HTA's ROCm 6.2 MI250 trace", "[profiler]") {
  ProfilerTrace t = read_profiler_traces({kRocm});
  CHECK(t.runtime == "ROCm");             // hipLaunchKernel
  CHECK(t.ranks == std::vector<int>{0});  // no distributedInfo: the file's position
  CHECK(t.kernels.size() == 16);          // 14 kernels + 2 gpu_memcpy
  CHECK(of_class(t, KernelClass::Copy) == 2);
  CHECK(of_class(t, KernelClass::Gemm) == 2);  // Cijk_* (Tensile)
  CHECK(of_class(t, KernelClass::Collective) == 0);
  CHECK(of_class(t, KernelClass::Optimizer) == 1);  // multi_tensor_apply_kernel of SGD's _foreach_add_
  CHECK(kernels_per_step(t, 0) == std::map<long, std::size_t>{{1, 16}, {2, 0}});
  CHECK(count(t, [](const TraceKernel& k) { return k.phase == Phase::Backward; }) == 7);  // autograd thread 598009
  // aten::addmm [[128],[5,128],[128,128]] (forward linear) and aten::mm [[128,5],[5,128]] (its weight gradient).
  std::vector<std::array<double, 4>> shapes;
  for (const TraceKernel& k : t.kernels)
    if (k.cls == KernelClass::Gemm) shapes.push_back({k.m, k.n, k.k, static_cast<double>(k.elem_bytes)});
  CHECK(shapes == std::vector<std::array<double, 4>>{{5, 128, 128, 4}, {128, 128, 5, 4}});
  CHECK(t.notes.empty());
}

TEST_CASE("HTA's two-rank DDP ResNet trace (nccl_data)", "[profiler]") {
  ProfilerTrace t = read_profiler_traces({kNccl});
  CHECK(t.runtime == "CUDA");
  CHECK(t.ranks == std::vector<int>{0});  // distributedInfo.rank
  CHECK(t.kernels.size() == 3774);
  CHECK(of_class(t, KernelClass::Copy) == 960 + 114);  // gpu_memcpy + gpu_memset
  CHECK(of_class(t, KernelClass::Collective) == 21);
  CHECK(of_class(t, KernelClass::Gemm) == 612);
  CHECK(of_class(t, KernelClass::Optimizer) == 27);
  CHECK(kernels_per_step(t, 0) == std::map<long, std::size_t>{{4, 1258}, {5, 1258}, {6, 1258}});
  CHECK(count(t, [](const TraceKernel& k) { return k.phase == Phase::Backward; }) == 2373);

  // record_param_comms by External id, per step: 2 broadcasts (53120 Float, 53 Long), 5 allreduce buckets (Float).
  std::vector<std::tuple<std::string, double, int>> one_step = {
      {"broadcast", 53120 * 4, 2},     {"broadcast", 53 * 8, 2},        {"allreduce", 2049000 * 4, 2},
      {"allreduce", 7875584.0 * 4, 2}, {"allreduce", 6563840.0 * 4, 2}, {"allreduce", 6637568.0 * 4, 2},
      {"allreduce", 2431040.0 * 4, 2}};
  std::vector<std::tuple<std::string, double, int>> expected, read;
  for (int step = 0; step < 3; ++step) expected.insert(expected.end(), one_step.begin(), one_step.end());
  for (const TraceKernel& k : t.kernels)
    if (k.cls == KernelClass::Collective) read.emplace_back(k.collective, k.bytes, k.group_size);
  CHECK(read == expected);
  CHECK(std::get<1>(read.at(2)) == 8196000);  // the first allreduce: 2049000 floats

  REQUIRE(t.notes.size() == 1);  // no Input Dims on its aten::addmm
  CHECK_THAT(t.notes[0], Catch::Contains("nccl_data.json.gz") && Catch::Contains("no shapes recorded"));
}

TEST_CASE("a folder of two ranks' traces (HTA trace_filter, older format)", "[profiler]") {
  ProfilerTrace t = read_profiler_traces({kSampled});
  CHECK(t.ranks == std::vector<int>{0, 1});
  CHECK(t.files ==
        std::vector<std::string>{kSampled + "/sampled_rank-0.json.gz", kSampled + "/sampled_rank-1.json.gz"});
  CHECK(t.runtime == "CUDA");
  CHECK(count(t, [](const TraceKernel& k) { return k.rank == 0; }) == 1204);
  CHECK(count(t, [](const TraceKernel& k) { return k.rank == 1; }) == 1154);
  CHECK(of_class(t, KernelClass::Gemm, 0) == 432);
  CHECK(of_class(t, KernelClass::Gemm, 1) == 422);
  CHECK(of_class(t, KernelClass::Copy, 0) == 50);
  CHECK(of_class(t, KernelClass::Collective, 0) == 10);
  CHECK(of_class(t, KernelClass::Collective, 1) == 10);
  CHECK(kernels_per_step(t, 0) == std::map<long, std::size_t>{{551, 602}, {552, 602}});
  CHECK(kernels_per_step(t, 1) == std::map<long, std::size_t>{{551, 577}, {552, 577}});
  for (auto [rank, backward] :
       {std::pair(0, std::size_t{529}), std::pair(1, std::size_t{503})})  // launched off the ProfilerStep thread
    CHECK(count(t, [&](const TraceKernel& k) { return k.rank == rank && k.phase == Phase::Backward; }) == backward);
  for (std::size_t i = 1; i < t.steps.size(); ++i)
    CHECK(std::pair(t.steps[i - 1].rank, t.steps[i - 1].start_s) < std::pair(t.steps[i].rank, t.steps[i].start_s));
  // External ids there are the correlation ids: the 10 NCCL kernels of a rank pair in launch order with its 10 nccl:*
  // annotations, sized by Input Dims x Input type.
  for (auto [rank, total] : {std::pair(0, 1198000892.0), std::pair(1, 1063603656.0)}) {
    double bytes = 0;
    for (const TraceKernel& k : t.kernels)
      if (k.rank == rank && k.cls == KernelClass::Collective) bytes += k.bytes;
    CHECK(bytes == total);
  }
}

TEST_CASE("ranks come from distributedInfo, else the file's position", "[profiler]") {
  ProfilerTrace t = read_profiler_traces({kNccl, kRocm});  // rank 0 (distributedInfo), then the second file
  CHECK(t.ranks == std::vector<int>{0, 1});
  CHECK(t.files == std::vector<std::string>{kNccl, kRocm});
  CHECK(t.runtime == "ROCm");  // one ROCm file makes the read ROCm
  CHECK(count(t, [](const TraceKernel& k) { return k.rank == 1; }) == 16);
  CHECK(t.steps.size() == 3 + 2);
  CHECK(t.kernels.back().rank == 1);
  CHECK(t.steps[t.kernels.back().step].rank == 1);
}

TEST_CASE("refusals name the file and what is missing", "[profiler]") {
  TempDir dir;
  SECTION("a missing file") {
    CHECK_THAT(refusal({dir / "absent.json"}), Catch::Contains(dir / "absent.json") && Catch::Contains("no such file"));
  }
  SECTION("not JSON, with the byte offset") {
    const std::string text = R"({"traceEvents": [oops]})";
    test::write(dir / "bad.json", text);
    // nlohmann counts the bytes read, the offending 'o' included.
    CHECK_THAT(refusal({dir / "bad.json"}),
               Catch::Contains(dir / "bad.json") &&
                   Catch::Contains("not JSON at byte " + std::to_string(text.find("oops") + 1)));
    write_gzip(dir / "bad.json.gz", text);
    CHECK_THAT(refusal({dir / "bad.json.gz"}), Catch::Contains(dir / "bad.json.gz") && Catch::Contains("not JSON"));
  }
  SECTION("a corrupt gzip file") {
    test::write(dir / "corrupt.json.gz", std::string("\x1f\x8b\x08\x00", 4) + "not deflate data at all");
    CHECK_THAT(refusal({dir / "corrupt.json.gz"}),
               Catch::Contains(dir / "corrupt.json.gz") && Catch::Contains("corrupt"));
  }
  SECTION("no traceEvents array") {
    test::write(dir / "other.json", R"({"schemaVersion": 1, "events": [{"ph": "X"}], "traceEvents": {}})");
    CHECK_THAT(refusal({dir / "other.json"}),
               Catch::Contains(dir / "other.json") && Catch::Contains("no \"traceEvents\" array"));
    test::write(dir / "array.json", R"([{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1}])");
    CHECK_THAT(refusal({dir / "array.json"}), Catch::Contains("no \"traceEvents\" array"));
  }
  SECTION("no GPU kernels") {
    test::write(dir / "cpu.json", R"({"traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 2},
      {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 1, "dur": 2}]})");
    CHECK(refusal({dir / "cpu.json"}) == dir / "cpu.json" +
                                             ": no GPU kernels (cat \"kernel\"): was the profiler run with "
                                             "ProfilerActivity.CUDA?");
  }
  SECTION("Nsight Systems reports") {
    for (const std::string name : {"report1.nsys-rep", "old.qdrep", "export.sqlite"}) {
      INFO(name);
      CHECK_THAT(refusal({dir / name}), Catch::Contains(dir / name) &&
                                            Catch::Contains("Nsight Systems reports are not read") &&
                                            Catch::Contains("export_chrome_trace"));
    }
  }
  SECTION("a folder without traces") {
    test::write(dir / "notes.txt", "x");
    CHECK_THAT(refusal({dir.path}), Catch::Contains(dir.path) && Catch::Contains("no *.json or *.json.gz trace"));
  }
  SECTION("two files of one rank") {
    test::write(dir / "a.json", tiny_trace());
    write_gzip(dir / "b.json.gz", tiny_trace());
    CHECK_THAT(refusal({dir.path}),
               Catch::Contains(dir / "a.json") && Catch::Contains(dir / "b.json.gz") && Catch::Contains("both rank 3"));
  }
}
