#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "topology/hardware/CommProfile.hpp"
#include "workloads/json/JsonReader.hpp"
#include "workloads/model/Training.hpp"

namespace placesim {

/// Calibrated efficiency model of one accelerator, used by strategies/analytic/ComputeModel. Fitted to component
/// measurements (GEMM shape sweeps, STREAM-like bandwidth, fused-attention throughput, per-layer times), never to
/// end-to-end step times; topology/profiles/<name>.json holds the same numbers with their sources.
///
///   GEMM (M x N x K, `batch` of them):
///     q  = M N / (ceil(M/T) T * ceil(N/T) T)                  tile quantization, T = gemm_tile
///     w  = tiles / (ceil(tiles / S) S), tiles = ceil(M/T) ceil(N/T) batch   wave quantization over S = gemm_sms
///          streaming multiprocessors (w = 1 when gemm_sms = 0, as in the built-in profiles)
///     tc = 2 M N K batch / (peak * gemm_peak_efficiency * q * w * K / (K + gemm_k_overhead))
///     tm = bytes(A, B, C) / (hbm_bw * memory_efficiency)
///     t  = gemm_latency_s + (tc^p + tm^p)^(1/p)               p = gemm_roofline_p (a soft roofline)
///   element-wise:  t = kernel_latency_s + bytes / (hbm_bw * memory_efficiency)
///   fused (flash) attention:  t = kernel_latency_s + FLOPs / (peak * flash_attention_efficiency * shape(seq, d)),
///     shape = FlashAttention-2's measured throughput at the sequence length and head dimension over that at the
///     reference point (8192; 64 on A100, 128 otherwise), 1 where no curve is measured (ComputeModel.hpp)
///   a collective of time c hidden behind a GEMM of time g costs max(0, c - g) + overlap_penalty * min(c, g)
/// Overlap interference on one fabric, from component measurements (a GEMM timed alone and beside an NCCL
/// collective; the collective timed alone and beside the GEMM): while a GPU runs compute and communication of this
/// fabric at once, NCCL's kernels take SMs and HBM bandwidth from the compute, which runs compute_slowdown times
/// slower, and the compute slows the collective comm_slowdown times. 1 and 1 = not measured: no interference.
struct OverlapInterference {
  double compute_slowdown = 1;
  double comm_slowdown = 1;
  bool active() const { return compute_slowdown > 1 || comm_slowdown > 1; }
};

/// How a power limit's compute scale was found (AcceleratorSpec::power_limit_w): none applies (rated power), a
/// measured limit's scale, interpolated between measured limits and the rated power, the lowest measured limit's scale
/// proportional to the limit below it, or the linear estimate (no measured limit).
enum class ScaleBasis { Rated, Measured, Interpolated, BelowMeasured, Linear };

/// A measured power limit: the accelerator's GEMMs at `power_limit_w` run at `compute_scale` of the rated profile's
/// throughput (fitted by `placesim calibrate` from GEMM points timed under that limit, "power_limited_gemm").
struct PowerScale {
  double power_limit_w = 0;
  double compute_scale = 1;
};

/// One measured attention series: a kernel's forward and backward throughput (TFLOP/s, the backward counted as 2.5x
/// the forward's FLOPs) at one head dimension over its benchmark's sequence lengths, or their forward + backward
/// throughput alone. fwd_bwd() combines the passes: 3.5 / (1/fwd + 2.5/bwd).
struct AttentionSeries {
  std::string kernel;
  double head_dim = 0;
  std::vector<double> fwd, bwd, fwd_bwd_tflops;  ///< fwd and bwd, or fwd_bwd_tflops
  double fwd_bwd(std::size_t i) const;
};

/// Series measured together (one setup, one paper or script): kernels are compared only within one benchmark.
struct AttentionBenchmark {
  std::string name;
  std::string source;
  std::vector<double> seq;  ///< ascending
  std::vector<AttentionSeries> series;
  /// The series of `kernel` sorted by head dimension; empty when the benchmark did not measure it.
  std::vector<const AttentionSeries*> of(const std::string& kernel) const;
};

/// A kernel the profile has no measurement of, costed at another's measured speed, and why (as a report states it;
/// "{accelerator}" stands for the accelerator's name).
struct AttentionStandIn {
  std::string kernel, by, why;
};

/// What a profile knows about fused attention: the kernel its flash_attention_efficiency measures (as
/// training.attention_kernel spells it, or its own name: "fa2", "cudnn"), at which sequence length and head dimension,
/// and the benchmarks that give the efficiency's shape over sequence length and head dimension and the other kernels'
/// speeds. Empty benchmarks: the efficiency holds at every shape and only the profile's own kernel is known.
struct AttentionData {
  std::string kernel;
  std::string title;  ///< "FlashAttention-2", "cuDNN fused attention (cuDNN 9.13)"
  double reference_seq = 8192;
  double reference_head_dim = 128;
  std::vector<AttentionBenchmark> benchmarks;
  std::vector<AttentionStandIn> stand_ins;
  /// What a report says of fused attention on this profile (the kernel stacks really run, ...); "" = nothing.
  std::string note;
};

/// A component a profile has no measurement of (its file's "not_measured"): what it is, what the profile does instead,
/// and, for overlap interference, the accelerator whose measured factors bound what the absence is worth.
struct NotMeasured {
  std::string component;     ///< "overlap interference", "HBM bandwidth", "bf16 GEMM shape sweep", ...
  std::string treatment;     ///< "off: overlapped communication costs nothing", "the b200 fit's ...", ...
  std::string compare_with;  ///< a built-in accelerator with measured factors ("h100-sxm"); "" = none
};

/// Where ComputeProfile::kernel_latency_s's default of 4 us comes from; the simulate summary quotes it.
inline constexpr const char* kKernelLatencySource =
    "a raw cuLaunchKernel of a no-op kernel takes 3.0-3.3 us on GB200 (meta-pytorch/tritonbench#1017), a "
    "per-operator floor fitted to H100 runtimes is 7 us (meta-pytorch/autoparallel#146)";

struct ComputeProfile {
  double gemm_peak_efficiency = 0.8;  ///< fraction of peak a large square GEMM sustains
  double gemm_latency_s = 8e-6;       ///< fixed cost of one GEMM: launch, pipeline fill, partial last wave
  double gemm_k_overhead = 64;        ///< K-loop prologue/epilogue, in elements of K
  double gemm_tile = 128;             ///< output tile edge M and N are padded to (not fitted: cuBLAS's common tile)
  /// Streaming multiprocessors the output tiles are spread over in waves; 0 = no wave quantization. A hardware fact
  /// (A100 108, H100 SXM 132), not fitted. The built-in profiles leave it 0: their eight published GEMM shapes fit
  /// the model with and without it equally well (docs/validation.md), so measurements at the shapes of interest
  /// should decide, through `placesim calibrate` with "gemm_sms".
  double gemm_sms = 0;
  double gemm_roofline_p = 2;      ///< blend exponent of compute and memory time (large = hard max)
  double memory_efficiency = 0.8;  ///< fraction of HBM bandwidth element-wise kernels sustain
  /// Fixed cost of one element-wise or fused-attention kernel beyond its bytes or FLOPs; its default is an
  /// assumption that no built-in profile fits (kKernelLatencySource).
  double kernel_latency_s = 4e-6;
  double flash_attention_efficiency = 0.5;  ///< fraction of peak fused attention sustains at the reference point
  AttentionData attention;                  ///< the kernel, reference point and measured curves of the above
  /// Fraction of a collective's time that still lands on the critical path while it is hidden behind a GEMM: NCCL's
  /// kernels take SMs and HBM bandwidth from the GEMM they overlap.
  double overlap_penalty = 0.2;
  /// Interference of overlapped data-parallel, context-parallel and pipeline communication with compute, per fabric
  /// (the collective's: the NVLink domain when its group is inside a node, the network otherwise). TP collectives
  /// hidden behind GEMMs are covered by overlap_penalty (fitted on per-layer times), not by these.
  OverlapInterference intra_node_interference, inter_node_interference;
  /// Measured power limits below the rated power, ascending; empty = none measured (a power limit then scales the
  /// peaks linearly, an estimate). See AcceleratorSpec::power_limit_w.
  std::vector<PowerScale> power_scales;
  std::vector<std::string> sources;       ///< where the numbers come from (paper, table, figure)
  std::vector<NotMeasured> not_measured;  ///< components without a measurement of this accelerator, stated
};

/// One accelerator model. SI units: FLOP/s, bytes, bytes per second.
struct AcceleratorSpec {
  std::string name = "custom";
  std::string title;                 ///< what it is, for listings ("NVIDIA H100 SXM5 80GB")
  std::vector<std::string> sources;  ///< where its data-sheet figures come from
  /// The built-in profile it runs (topology/profiles/<profile_name>.json); "" for a profile file given by path.
  std::string profile_name;
  /// The architecture generation (ampere, hopper, blackwell) whose published runs give a prediction's error bar;
  /// "" for an accelerator described from scratch.
  std::string generation;
  double peak_bf16_flops = 0;
  double peak_fp16_flops = 0;
  double peak_fp32_flops = 0;
  /// Dense FP8 tensor-core peak (training.fp8's linear GEMMs); 0 = the accelerator has no FP8 tensor cores (A100).
  double peak_fp8_flops = 0;
  /// MX block-scaled FP8 GEMMs (training.fp8_scaling mxfp8: E8M0 scales per 32 elements, read by the tensor cores) run
  /// at this fraction of the per-tensor FP8 GEMM's rate (the profile's model at peak_fp8_flops), a measured kernel
  /// ratio; 0 = no MX tensor cores (before Blackwell), and mxfp8 is refused.
  double mxfp8_gemm_factor = 0;
  double hbm_bytes = 0;
  double hbm_bw_Bps = 0;
  /// Fraction of peak the simulator's FLOPs / rate fallback uses for opaque models (no layer shapes); the presets set
  /// it to the calibrated large-GEMM efficiency.
  double gemm_efficiency = 0.6;
  /// Rated board power (W) the peaks and the calibrated profile hold at; 0 = unknown (no power_limit_w).
  double tdp_w = 0;
  /// A power limit below tdp_w (accelerator "power_limit_w"): the peaks above are the rated ones times compute_scale
  /// (power_limited_scale). Where the profile has measured power limits (power_scales) the scale follows them: the
  /// measured scale at a measured limit, linear interpolation between measured limits and the rated power (scale 1),
  /// and below the lowest measured limit that scale times power_limit_w / that limit. Without measurements it is
  /// power_limit_w / tdp_w: a GPU running GEMMs sits at its power limit and its sustained clock follows it about
  /// linearly at deep limits (a GB300 capped at 500 of 1,400 W runs GEMMs at 0.28-0.39 of its rated rate,
  /// facebookexperimental/triton #2023, power ratio 0.36), an estimate. compute_scale_basis says which applied; the
  /// report states it. HBM bandwidth is not scaled. 0 = rated power.
  double power_limit_w = 0;
  double compute_scale = 1;
  ScaleBasis compute_scale_basis = ScaleBasis::Rated;
  ComputeProfile profile;
  /// The fabrics its collectives run on unless the cluster gives "comm": its reference system's ("fabrics": a built-in
  /// accelerator names them), replaced by those fitted together with a profile file given by path (its "comm").
  /// Empty for an accelerator described from scratch without them.
  std::optional<FabricProfile> intra_node_fabric, inter_node_fabric;

  double peak_flops(DType dtype) const {
    return dtype == DType::BF16 ? peak_bf16_flops : dtype == DType::FP16 ? peak_fp16_flops : peak_fp32_flops;
  }
};

/// The compute scale of `profile` at power limit `w` below the rated `tdp_w` (see AcceleratorSpec::power_limit_w);
/// `basis`, if given, receives how it was found.
double power_limited_scale(const ComputeProfile& profile, double tdp_w, double w, ScaleBasis* basis = nullptr);

/// A built-in accelerator (topology/hardware/accelerators/<name>.json) with its calibrated profile; unknown names are
/// an InputError naming `field` and the nearest known accelerator.
AcceleratorSpec accelerator_preset(const std::string& name, const std::string& field);
/// The built-in accelerators: name and title.
std::vector<std::pair<std::string, std::string>> accelerator_preset_list();
/// The built-in profiles' names (topology/profiles/<name>.json).
std::vector<std::string> builtin_profile_names();
/// Parses an accelerator: a preset name, or an object with optional "preset", "profile" (a built-in profile's name,
/// or the path of a profile file, relative paths resolved against `base_dir` when not found as given; its compute
/// profile replaces the preset's and a file's fitted fabrics, if any, replace the reference ones), "fabrics"
/// ({"intra_node", "inter_node"}: fabric presets or objects), "title", "generation", "sources" and overrides (units
/// as strings). The built-in accelerators are files of these same fields.
AcceleratorSpec parse_accelerator(const Json& value, const std::string& field, const std::string& base_dir = "");

/// Parses the "compute" object of a profile file: every field required and non-negative (efficiencies in (0, 1]).
/// `field` is the dotted path used in errors.
ComputeProfile parse_compute_profile(const Json& value, const std::string& field);
/// Parses a profile's "attention" object: {"kernel", "title", "reference": {"seq", "head_dim"}, "benchmarks": [{"name",
/// "source", "seq": [...], "series": [{"kernel", "head_dim", "fwd": [...], "bwd": [...]} or {..., "fwd_bwd": [...]}]}],
/// "stand_ins": [{"kernel", "by", "why"}]}; each series as long as its benchmark's seq, every throughput positive.
AttentionData parse_attention_data(const Json& value, const std::string& field);
AttentionBenchmark parse_attention_benchmark(const Json& value, const std::string& field);
Json attention_data_to_json(const AttentionData& a);
Json attention_benchmark_to_json(const AttentionBenchmark& b);
/// Parses {"intra_node"?: {"compute_slowdown", "comm_slowdown"}, "inter_node"?: ...} (each factor >= 1; a fabric left
/// out has none) into `p`, or "off": no interference on either fabric.
void parse_interference(const Json& value, const std::string& field, ComputeProfile& p);
Json interference_to_json(const ComputeProfile& p);
/// A profile file (topology/profiles/, or written by `placesim calibrate`): {"accelerator", "compute", "comm"?:
/// {"intra_node"?: fabric, "inter_node"?: fabric}, "sources", "fit"}.
struct ProfileFile {
  ComputeProfile compute;  ///< with the file's "sources"
  std::optional<FabricProfile> intra_node, inter_node;
};
ProfileFile load_profile_file(const std::string& path);
/// Parses a profile's "not_measured": [{"component", "treatment", "compare_with"?}].
std::vector<NotMeasured> parse_not_measured(const Json& value, const std::string& field);
Json not_measured_to_json(const std::vector<NotMeasured>& list);
/// The "sources" of the object `r` reads: a list of citations, or an object of label -> citation (points then name
/// their label); `labels` receives the labels (empty for a list). None given: none.
std::vector<std::string> parse_sources(ObjectReader& r, std::vector<std::string>* labels = nullptr);
/// A profile file's JSON, read from `origin` (named in errors).
ProfileFile parse_profile_file(const Json& j, const std::string& origin);
/// The profile as the "compute" object of a profile file.
Json compute_profile_to_json(const ComputeProfile& p);
/// The scalar fields of a compute profile that `placesim calibrate` fits or holds fixed, in file order.
std::vector<std::string> fitted_profile_fields();

}  // namespace placesim
