#include "traces/profiler/ProfilerTrace.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "traces/profiler/KinetoEvents.hpp"
#include "workloads/json/EnumNames.hpp"
#include "workloads/json/Error.hpp"

namespace placesim {

namespace {

using kineto::CommOp;
using kineto::FileEvents;
using kineto::GpuActivity;
using kineto::HostSpan;
using kineto::Launch;

/// How a rule's pattern is looked for in a kernel name.
enum class Match : std::uint8_t {
  Prefix,         ///< the name starts with the pattern, case as written
  Contains,       ///< the name contains the pattern, case as written
  ContainsNoCase  ///< the name contains the pattern in any case (the pattern is written in lower case)
};

/// A kernel whose name matches `pattern` (and `also`, when given, the same way) is of class `cls`.
struct KernelRule {
  KernelClass cls;
  Match match;
  std::string_view pattern, also = {};
};

// The first rule that matches decides (an attention kernel may also say "gemm", a convolution "cudnn").
constexpr KernelRule kKernelRules[] = {
    {KernelClass::Copy, Match::Prefix, "Memcpy"},  // Kineto's copy activities: "Memcpy HtoD (Pageable -> Device)"
    {KernelClass::Copy, Match::Prefix, "Memset"},  // Kineto's memset activities: "Memset (Device)"
    {KernelClass::Collective, Match::ContainsNoCase, "nccl"},      // NCCL: ncclKernel_AllReduce_RING_LL_Sum_float
    {KernelClass::Collective, Match::ContainsNoCase, "rccl"},      // RCCL (ROCm's NCCL): rccl_* kernels
    {KernelClass::Attention, Match::ContainsNoCase, "flash"},      // FlashAttention flash_fwd_kernel, CK FlashAttention
    {KernelClass::Attention, Match::ContainsNoCase, "fmha"},       // xFormers/CUTLASS fmha_cutlassF_*, cuDNN fmha_v2
    {KernelClass::Attention, Match::ContainsNoCase, "attention"},  // PyTorch mem-efficient attention_kernel_*
    {KernelClass::Attention, Match::ContainsNoCase, "sdpa"},       // cuDNN SDPA: cudnn_generated_fort_native_sdpa_*
    {KernelClass::Attention, Match::ContainsNoCase, "cudnn", "mha"},  // cuDNN's fused multi-head attention
    {KernelClass::Attention, Match::ContainsNoCase, "fprop_attn"},    // cuDNN attention forward (before "fprop" below)
    {KernelClass::Attention, Match::ContainsNoCase, "bprop_attn"},    // cuDNN attention backward
    {KernelClass::Gemm, Match::ContainsNoCase, "gemm"},  // cuBLAS ampere_sgemm_*, CUTLASS *_s1688gemm_*, implicit_gemm
    {KernelClass::Gemm, Match::ContainsNoCase, "cutlass"},  // CUTLASS kernels, cuDNN's cutlass_cudnn_train convolutions
    {KernelClass::Gemm, Match::ContainsNoCase, "cublas"},   // cuBLASLt helpers: cublasLt::splitKreduce_kernel
    {KernelClass::Gemm, Match::Prefix, "Cijk_"},            // rocBLAS/hipBLASLt Tensile: Cijk_Alik_Bljk_SB_MT64x16x32_*
    {KernelClass::Gemm, Match::Contains, "nvjet"},          // cuBLAS 12 on Hopper: nvjet_tst_*
    {KernelClass::Gemm, Match::ContainsNoCase, "xmma"},     // cuDNN/cuBLAS sm80_xmma_fprop_implicit_gemm_*
    {KernelClass::Gemm, Match::ContainsNoCase, "wgrad"},    // cuDNN convolution weight gradient: *_s1688wgrad_*
    {KernelClass::Gemm, Match::ContainsNoCase, "dgrad"},    // cuDNN convolution data gradient: *_s1688dgrad_*
    {KernelClass::Gemm, Match::ContainsNoCase, "fprop"},    // cuDNN convolution forward: *_s1688fprop_*
    {KernelClass::Gemm, Match::ContainsNoCase, "scudnn"},   // cuDNN implicit-GEMM convolutions: ampere_scudnn_128x64_*
    {KernelClass::Gemm, Match::Prefix, "sm80_"},  // cuDNN/cuBLAS tensor-op kernels named by architecture (Ampere)
    {KernelClass::Gemm, Match::Prefix, "sm90_"},  // the same on Hopper: sm90_xmma_gemm_*
    {KernelClass::Normalization, Match::ContainsNoCase, "layer_norm"},  // PyTorch vectorized_layer_norm_kernel
    {KernelClass::Normalization, Match::ContainsNoCase, "layernorm"},   // Apex/Megatron/TE fused LayerNorm kernels
    {KernelClass::Normalization, Match::ContainsNoCase, "rms_norm"},    // PyTorch/vLLM rms_norm_kernel
    {KernelClass::Normalization, Match::ContainsNoCase, "rmsnorm"},     // Apex/TE RMSNorm / RmsNorm kernels
    {KernelClass::Normalization, Match::ContainsNoCase, "batch_norm"},  // PyTorch batch_norm_collect_statistics_kernel
    {KernelClass::Normalization, Match::ContainsNoCase, "batchnorm"},   // MIOpen MIOpenBatchNormFwdTrainSpatial
    {KernelClass::Normalization, Match::Contains, "bn_fw"},   // cuDNN batch norm forward: cudnn::bn_fw_tr_1C11_*
    {KernelClass::Normalization, Match::Contains, "bn_bw"},   // cuDNN batch norm backward: cudnn::bn_bw_1C11_*
    {KernelClass::Normalization, Match::Contains, "_norm_"},  // PyTorch group_norm_* and other *_norm_* kernels
    {KernelClass::Optimizer, Match::Contains, "multi_tensor_apply"},  // PyTorch foreach ops, Apex multi_tensor_*
    // Adam: "adam" in any case would also match "hadamard" (Hadamard-transform kernels).
    {KernelClass::Optimizer, Match::Contains, "Adam"},   // PyTorch FusedAdamMathFunctor, Apex/DeepSpeed FusedAdam
    {KernelClass::Optimizer, Match::Contains, "_adam"},  // fused_adam_cuda, multi_tensor_adam
    {KernelClass::Optimizer, Match::Contains, "adam_"},  // DeepSpeed adam_* kernels
    {KernelClass::Optimizer, Match::Contains, "sgd"},    // Apex multi_tensor_sgd, fused sgd kernels
    {KernelClass::Optimizer, Match::Contains, "SGD"},    // PyTorch FusedSgdMathFunctor spelled SGD
    // LAMB: "lamb" alone would match the "lambda" of every templated PyTorch kernel name.
    {KernelClass::Optimizer, Match::Contains, "lamb_"},  // DeepSpeed lamb_cuda_kernel_part1, Apex multi_tensor_lamb_*
    {KernelClass::Optimizer, Match::Contains, "LAMB"},   // Apex LAMBStage1Functor
};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool matches(Match how, std::string_view name, std::string_view lowered, std::string_view pattern) {
  if (pattern.empty()) return true;
  switch (how) {
    case Match::Prefix:
      return name.starts_with(pattern);
    case Match::Contains:
      return name.find(pattern) != std::string_view::npos;
    case Match::ContainsNoCase:
      return lowered.find(pattern) != std::string_view::npos;
  }
  return false;
}

/// The classes of the kernel names of a read, each classified once.
class NameClasses {
 public:
  explicit NameClasses(const std::vector<std::string>& names) : names_(names) {}
  KernelClass of(const GpuActivity& a) {
    if (a.category != kineto::GpuCategory::Kernel) return KernelClass::Copy;
    while (classes_.size() <= a.name) classes_.push_back(classify_kernel(names_[classes_.size()], "kernel"));
    return classes_[a.name];
  }

 private:
  const std::vector<std::string>& names_;
  std::vector<KernelClass> classes_;
};

/// Host spans per thread, merged where they nest or overlap, asked whether a launch fell inside one.
class ThreadSpans {
 public:
  explicit ThreadSpans(std::vector<HostSpan> spans) {
    std::sort(spans.begin(), spans.end(), [](const HostSpan& a, const HostSpan& b) {
      return std::tie(a.tid, a.start_us) < std::tie(b.tid, b.start_us);
    });
    for (const HostSpan& s : spans) {
      if (!merged_.empty() && merged_.back().tid == s.tid && s.start_us <= merged_.back().end_us)
        merged_.back().end_us = std::max(merged_.back().end_us, s.end_us);
      else
        merged_.push_back(s);
    }
  }
  bool contains(std::int64_t tid, double ts) const {
    auto it =
        std::upper_bound(merged_.begin(), merged_.end(), std::pair(tid, ts), [](const auto& key, const HostSpan& s) {
          return std::tie(key.first, key.second) < std::tie(s.tid, s.start_us);
        });
    return it != merged_.begin() && std::prev(it)->tid == tid && ts <= std::prev(it)->end_us;
  }

 private:
  std::vector<HostSpan> merged_;
};

/// Lookups of one file's records by correlation and External id.
struct FileIndex {
  explicit FileIndex(FileEvents& ev) : ev_(ev) {
    std::sort(ev.launches.begin(), ev.launches.end(),
              [](const Launch& a, const Launch& b) { return a.correlation < b.correlation; });
    std::sort(ev.shapes.begin(), ev.shapes.end(),
              [](const auto& a, const auto& b) { return a.external_id < b.external_id; });
    std::sort(ev.steps.begin(), ev.steps.end(),
              [](const HostSpan& a, const HostSpan& b) { return a.start_us < b.start_us; });
    for (std::size_t i = 0; i < ev.comms.size(); ++i) comm_by_id.emplace(ev.comms[i].external_id, i);
  }
  const Launch* launch(std::int64_t correlation) const {
    auto it = std::lower_bound(ev_.launches.begin(), ev_.launches.end(), correlation,
                               [](const Launch& l, std::int64_t c) { return l.correlation < c; });
    return correlation >= 0 && it != ev_.launches.end() && it->correlation == correlation ? &*it : nullptr;
  }
  const kineto::GemmShape* shape(std::int64_t external_id) const {
    auto it = std::lower_bound(ev_.shapes.begin(), ev_.shapes.end(), external_id,
                               [](const auto& s, std::int64_t id) { return s.external_id < id; });
    return external_id >= 0 && it != ev_.shapes.end() && it->external_id == external_id ? &*it : nullptr;
  }
  /// The ProfilerStep span (index into the file's sorted steps) holding host time `ts`; -1 outside every one.
  int step(double ts) const {
    auto it = std::upper_bound(ev_.steps.begin(), ev_.steps.end(), ts,
                               [](double t, const HostSpan& s) { return t < s.start_us; });
    return it != ev_.steps.begin() && ts <= std::prev(it)->end_us ? static_cast<int>(it - ev_.steps.begin() - 1) : -1;
  }
  FileEvents& ev_;
  std::unordered_map<std::int64_t, std::size_t> comm_by_id;
};

/// The thread that runs the training loop: the ProfilerStep spans' thread; without steps the launching thread whose
/// id is its process id (the main thread), else the first launch's.
std::int64_t loop_thread(const FileEvents& ev) {
  if (!ev.steps.empty()) return ev.steps.front().tid;
  if (ev.main_tid) return *ev.main_tid;
  auto first = std::min_element(ev.launches.begin(), ev.launches.end(),
                                [](const Launch& a, const Launch& b) { return a.ts_us < b.ts_us; });
  return first != ev.launches.end() ? first->tid : -1;
}

/// One file's kernels and steps, linked; steps index the file's own steps until the files are joined.
struct RankTrace {
  std::string file;
  int rank = 0;
  bool rocm = false;
  std::vector<TraceKernel> kernels;
  std::vector<TraceStep> steps;
  std::vector<std::string> notes;
};

void apply(TraceKernel& k, const CommOp& op) {
  k.collective = op.op;
  k.bytes = op.bytes;
  k.group_size = op.group_size;
}

/// Links the collective kernels that no External id links to the unused communication operators in launch order:
/// the record_param_comms ones, else the nccl:* annotations, whichever count equals the kernels'. False when neither.
bool link_in_order(std::vector<TraceKernel>& kernels, std::vector<std::size_t> unlinked,
                   const std::vector<double>& launch_ts, const std::vector<CommOp>& comms, std::vector<bool>& used) {
  std::sort(unlinked.begin(), unlinked.end(),
            [&](std::size_t a, std::size_t b) { return launch_ts[a] < launch_ts[b]; });
  for (bool param_comms : {true, false}) {
    std::vector<const CommOp*> ops;
    for (std::size_t i = 0; i < comms.size(); ++i)
      if (!used[i] && comms[i].param_comms == param_comms) ops.push_back(&comms[i]);
    if (ops.size() != unlinked.size()) continue;
    std::stable_sort(ops.begin(), ops.end(), [](const CommOp* a, const CommOp* b) { return a->ts_us < b->ts_us; });
    for (std::size_t i = 0; i < ops.size(); ++i) apply(kernels[unlinked[i]], *ops[i]);
    return true;
  }
  return false;
}

/// The collective, bytes and group size of each collective kernel: from the operator its External id names, else by
/// launch order, and the collective from the kernel's name when no operator says it.
void link_collectives(RankTrace& r, const FileEvents& ev, const FileIndex& index, const std::vector<double>& launch_ts,
                      const std::vector<std::string>& names) {
  std::vector<bool> used(ev.comms.size());
  std::vector<std::size_t> collectives, unlinked;
  for (std::size_t i = 0; i < r.kernels.size(); ++i) {
    if (r.kernels[i].cls != KernelClass::Collective) continue;
    collectives.push_back(i);
    auto it = index.comm_by_id.find(ev.gpu[i].external_id);
    if (ev.gpu[i].external_id < 0 || it == index.comm_by_id.end()) {
      unlinked.push_back(i);
      continue;
    }
    apply(r.kernels[i], ev.comms[it->second]);
    used[it->second] = true;
  }
  if (!unlinked.empty() && !ev.comms.empty() && !link_in_order(r.kernels, unlinked, launch_ts, ev.comms, used))
    r.notes.push_back(r.file + ": " + std::to_string(unlinked.size()) +
                      " collective kernels name no communication operator by External id, and the operators left do "
                      "not match them one to one: their sizes are left 0");
  std::size_t sized = 0;
  for (std::size_t i : collectives) {
    TraceKernel& k = r.kernels[i];
    if (k.collective.empty()) k.collective = kineto::collective_op(names[k.name]);
    sized += k.bytes > 0;
  }
  if (!collectives.empty() && sized == 0)
    r.notes.push_back(r.file + ": no collective sizes: none of its " + std::to_string(collectives.size()) +
                      " collective kernels links to a record_param_comms or nccl:* operator that gives its size");
}

Phase phase_of(KernelClass cls, const Launch* launch, const ThreadSpans& optimizer, std::int64_t loop_tid) {
  if (cls == KernelClass::Optimizer) return Phase::Optimizer;
  if (!launch) return Phase::Forward;
  if (optimizer.contains(launch->tid, launch->ts_us)) return Phase::Optimizer;
  return launch->tid == loop_tid ? Phase::Forward : Phase::Backward;
}

/// One file's GPU activities as TraceKernels (in file order), with the host launch time of each.
std::vector<double> link_kernels(RankTrace& r, FileEvents& ev, const FileIndex& index, NameClasses& classes) {
  const ThreadSpans optimizer(std::move(ev.optimizer_spans));
  const std::int64_t loop_tid = loop_thread(ev);
  std::vector<double> launch_ts(ev.gpu.size());
  r.kernels.resize(ev.gpu.size());
  for (std::size_t i = 0; i < ev.gpu.size(); ++i) {
    const GpuActivity& a = ev.gpu[i];
    TraceKernel& k = r.kernels[i];
    k.start_s = a.ts_us * 1e-6, k.dur_s = a.dur_us * 1e-6;
    k.rank = r.rank, k.device = a.device, k.stream = a.stream, k.name = a.name;
    k.cls = classes.of(a);
    const Launch* launch = index.launch(a.correlation);
    launch_ts[i] = launch ? launch->ts_us : a.ts_us;
    k.step = index.step(launch_ts[i]);
    k.phase = phase_of(k.cls, launch, optimizer, loop_tid);
    if (const kineto::GemmShape* s = k.cls == KernelClass::Gemm ? index.shape(a.external_id) : nullptr)
      k.m = s->m, k.n = s->n, k.k = s->k, k.batch = s->batch, k.elem_bytes = s->elem_bytes;
  }
  return launch_ts;
}

/// The file's steps; without ProfilerStep spans one step (number -1) from its first kernel's start to its last end.
void make_steps(RankTrace& r, const FileEvents& ev) {
  for (const HostSpan& s : ev.steps) r.steps.push_back({r.rank, s.number, s.start_us * 1e-6, s.end_us * 1e-6});
  if (!r.steps.empty()) return;
  TraceStep whole{r.rank, -1, r.kernels.front().start_s, r.kernels.front().start_s + r.kernels.front().dur_s};
  for (TraceKernel& k : r.kernels) {
    whole.start_s = std::min(whole.start_s, k.start_s);
    whole.end_s = std::max(whole.end_s, k.start_s + k.dur_s);
    k.step = 0;
  }
  r.steps.push_back(whole);
  r.notes.push_back(r.file + ": no ProfilerStep spans: its " + std::to_string(r.kernels.size()) +
                    " kernels are read as one step (step number -1)");
}

void note_missing_shapes(RankTrace& r) {
  std::size_t gemms = 0, shaped = 0;
  for (const TraceKernel& k : r.kernels) gemms += k.cls == KernelClass::Gemm, shaped += k.m > 0;
  if (gemms > 0 && shaped == 0)
    r.notes.push_back(r.file + ": no shapes recorded: none of its " + std::to_string(gemms) +
                      " GEMM kernels links to an aten::mm/addmm/bmm/baddbmm/matmul/linear with Input Dims (profile "
                      "with record_shapes=True)");
}

RankTrace link_file(const std::string& file, int rank, FileEvents& ev, kineto::NameTable& names) {
  RankTrace r;
  r.file = file, r.rank = rank, r.rocm = ev.hip_runtime;
  const FileIndex index(ev);
  NameClasses classes(names.names);
  const std::vector<double> launch_ts = link_kernels(r, ev, index, classes);
  link_collectives(r, ev, index, launch_ts, names.names);
  make_steps(r, ev);
  note_missing_shapes(r);
  auto by_start = [](const TraceKernel& a, const TraceKernel& b) { return a.start_s < b.start_s; };
  if (!std::is_sorted(r.kernels.begin(), r.kernels.end(), by_start))  // stable_sort's buffer is a second copy
    std::stable_sort(r.kernels.begin(), r.kernels.end(), by_start);
  return r;
}

bool is_nsight(const std::string& path) {
  return path.ends_with(".nsys-rep") || path.ends_with(".qdrep") || path.ends_with(".sqlite");
}

[[noreturn]] void refuse_nsight(const std::string& path) {
  throw InputError(
      path +
      ": Nsight Systems reports are not read; export the PyTorch profiler's trace (torch.profiler"
      ".profile(...).export_chrome_trace(path), or on_trace_ready=tensorboard_trace_handler(dir)) instead");
}

/// The traces in a folder: its *.json and *.json.gz files (*.pt.trace.json[.gz] among them), sorted by name.
std::vector<std::string> folder_traces(const std::string& folder) {
  std::vector<std::string> found, nsight;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    const std::string p = entry.path().string();
    if (entry.is_regular_file() && (p.ends_with(".json") || p.ends_with(".json.gz"))) found.push_back(p);
    if (entry.is_regular_file() && is_nsight(p)) nsight.push_back(p);
  }
  std::sort(found.begin(), found.end());
  if (found.empty() && !nsight.empty()) refuse_nsight(*std::min_element(nsight.begin(), nsight.end()));
  if (found.empty()) throw InputError(folder + ": no *.json or *.json.gz trace in this folder");
  return found;
}

std::vector<std::string> trace_files(const std::vector<std::string>& paths) {
  if (paths.empty()) throw InputError("no profiler trace given");
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    if (is_nsight(p)) refuse_nsight(p);
    std::error_code ec;
    const auto status = std::filesystem::status(p, ec);
    if (!std::filesystem::exists(status)) throw InputError(p + ": no such file or folder");
    if (!std::filesystem::is_directory(status)) {
      files.push_back(p);
      continue;
    }
    for (std::string& f : folder_traces(p)) files.push_back(std::move(f));
  }
  return files;
}

FileEvents read_checked(const std::string& file, kineto::NameTable& names) {
  FileEvents ev = kineto::read_kineto_events(file, names);
  if (!ev.saw_trace_events)
    throw InputError(file + ": no \"traceEvents\" array: not a PyTorch profiler (Chrome trace) file");
  if (std::none_of(ev.gpu.begin(), ev.gpu.end(),
                   [](const GpuActivity& a) { return a.category == kineto::GpuCategory::Kernel; }))
    throw InputError(file + ": no GPU kernels (cat \"kernel\"): was the profiler run with ProfilerActivity.CUDA?");
  return ev;
}

/// Joins the files' traces in rank order: steps re-indexed into the one list.
ProfilerTrace join(std::vector<RankTrace> ranks, std::vector<std::string> names) {
  std::sort(ranks.begin(), ranks.end(), [](const RankTrace& a, const RankTrace& b) { return a.rank < b.rank; });
  ProfilerTrace t;
  t.names = std::move(names);
  t.runtime = "CUDA";
  for (RankTrace& r : ranks) {
    const int offset = static_cast<int>(t.steps.size());
    for (TraceKernel& k : r.kernels) k.step += k.step >= 0 ? offset : 0;
    t.steps.insert(t.steps.end(), r.steps.begin(), r.steps.end());
    t.kernels.insert(t.kernels.end(), std::make_move_iterator(r.kernels.begin()),
                     std::make_move_iterator(r.kernels.end()));
    std::vector<TraceKernel>().swap(r.kernels);
    t.notes.insert(t.notes.end(), r.notes.begin(), r.notes.end());
    t.files.push_back(r.file);
    t.ranks.push_back(r.rank);
    if (r.rocm) t.runtime = "ROCm";
  }
  return t;
}

constexpr EnumName<KernelClass> kKernelClassNames[] = {{KernelClass::Gemm, "gemm"},
                                                       {KernelClass::Attention, "attention"},
                                                       {KernelClass::Normalization, "normalization"},
                                                       {KernelClass::Elementwise, "elementwise"},
                                                       {KernelClass::Optimizer, "optimizer"},
                                                       {KernelClass::Collective, "collective"},
                                                       {KernelClass::Copy, "copy"}};

constexpr EnumName<Phase> kPhaseNames[] = {
    {Phase::Forward, "forward"}, {Phase::Backward, "backward"}, {Phase::Optimizer, "optimizer"}};

}  // namespace

const char* to_string(KernelClass c) {
  return name_of(kKernelClassNames, c, "elementwise");
}

const char* to_string(Phase p) {
  return name_of(kPhaseNames, p, "forward");
}

KernelClass classify_kernel(const std::string& name, const std::string& category) {
  if (category == "gpu_memcpy" || category == "gpu_memset") return KernelClass::Copy;
  const std::string lowered = lower(name);
  for (const KernelRule& r : kKernelRules)
    if (matches(r.match, name, lowered, r.pattern) && matches(r.match, name, lowered, r.also)) return r.cls;
  return KernelClass::Elementwise;
}

ProfilerTrace read_profiler_traces(const std::vector<std::string>& paths) {
  const std::vector<std::string> files = trace_files(paths);
  kineto::NameTable names;
  std::vector<RankTrace> ranks;
  std::map<int, std::string> file_of_rank;
  for (std::size_t i = 0; i < files.size(); ++i) {
    FileEvents ev = read_checked(files[i], names);
    const int rank = ev.rank.value_or(static_cast<int>(i));
    if (auto [it, fresh] = file_of_rank.emplace(rank, files[i]); !fresh)
      throw InputError(it->second + " and " + files[i] + " are both rank " + std::to_string(rank) +
                       " (distributedInfo.rank, else the file's position): give one trace per rank");
    ranks.push_back(link_file(files[i], rank, ev, names));
  }
  return join(std::move(ranks), std::move(names.names));
}

}  // namespace placesim
