#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "topology/hardware/Accelerator.hpp"
#include "topology/hardware/CommProfile.hpp"

namespace placesim {

/// One measured point against the fitted model, in the unit it was given in.
struct ResidualRow {
  std::string group;  ///< "gemm", "memory", "attention", "collectives", "layers"
  std::string point;  ///< e.g. "8192x8192x8192", "all-reduce ring 8 ranks 1 GB", "baseline forward"
  double measured = 0, fitted = 0;
  std::string unit;
  std::string source;  ///< the label of the source that measured it ("" when the file's sources are a list)
  double error_percent() const { return 100.0 * (fitted - measured) / measured; }
};

/// Compute-profile parameters a measurement file holds at the accelerator profile's values ("fixed"), and why.
struct FixedFields {
  std::vector<std::string> fields;
  std::string why;
};

/// Where the measured collectives ran, so which fabric of a CommProfile the fitted one replaces.
enum class FabricScope { IntraNode, InterNode };
/// "intra_node" | "inter_node", as the input and the profile file spell them.
std::string to_string(FabricScope s);

/// A fitted profile: the base accelerator with its compute profile fitted, and the fabric (fitted when the
/// measurements had collectives).
struct Calibration {
  AcceleratorSpec accelerator;
  FabricProfile fabric;
  bool fabric_fitted = false;
  FabricScope fabric_scope = FabricScope::IntraNode;  ///< where the fitted fabric runs
  std::vector<std::string> fitted_parameters;
  std::vector<ResidualRow> residuals;
  std::vector<std::string> sources;
  std::vector<std::string> source_labels;  ///< when the file's sources are labelled (an object)
  std::vector<FixedFields> fixed;
  std::vector<NotMeasured> not_measured;
  Json excluded = Json::array();  ///< measurements the file names and does not fit: [{what, source?, why}]
};

/// The most measured points calibrate reads in one group and in all: a fit evaluates every point tens of thousands
/// of times (about 20 ms per point when it converges slowly: 256 GEMM points take about 5 s), and the built-in
/// measurement files (topology/profiles/measurements/) hold at most 68 in a group (mi300x's GEMMs) and 101 in all.
constexpr std::size_t kMaxGroupPoints = 256, kMaxCalibrationPoints = 1024;
/// The largest GEMM dimension (m, n, k, batch) of a point: 2^24 = 16,777,216, 20 times the largest in the built-in
/// files (802,816 tokens).
constexpr double kMaxGemmDim = 16777216;
/// The most SMs "gemm_sms" may give: accelerators have a few hundred (A100 108, H100 132, MI300X 304 compute units).
constexpr double kMaxGemmSms = 1024;

/// Fits profile parameters to measured component points, group by group, each by least squares on log(model /
/// measured) (strategies/calibrate/LeastSquares):
///   collectives -> fabric bus_efficiency + step_latency (ring, tree) or nvls_bus_efficiency + nvls_latency (nvls),
///                  and with "collective_protocols": 2 (the default) the low-latency protocol's ll_bus_efficiency +
///                  ll_step_latency as well (topology/hardware/CommProfile.hpp: NCCL runs each collective with the
///                  faster one)
///   memory      -> memory_efficiency
///   gemm        -> gemm_peak_efficiency, gemm_latency_s, gemm_k_overhead, gemm_roofline_p
///   attention   -> flash_attention_efficiency (at the reference sequence and head dimension: each point is modelled
///                  with fused_attention_shape at its own, strategies/analytic/ComputeModel.hpp)
///   layers      -> memory_efficiency, kernel_latency_s, overlap_penalty (with the fabric's exposed TP collectives
///                  added, as Megatron-LM's measured layer times include them)
///   interference -> per fabric compute_slowdown and comm_slowdown: the geometric mean of overlapped / alone
/// Parameters of groups without points keep the base accelerator's (or fabric's) values. The measured JSON:
///   {"accelerator": preset or object, "fabric": preset or object (optional),
///    "sources": [citations] or {label: citation} (then every point names its "source" label),
///    "fixed": [{"fields": [compute parameters], "why"}] (held at the accelerator profile's values, optional),
///    "not_measured": [{"component", "treatment", "compare_with"?}] (copied to the profile, optional),
///    "excluded": [{"what", "source"?, "why"}] (measurements seen and left out, copied to the profile, optional),
///    "attention_model": the profile's "attention", benchmarks inline or as paths (optional),
///    "collective_protocols": 1 | 2 (optional, default 2), "gemm_sms": SMs (optional),
///    "fabric_scope": "intra_node" (default: the collectives ran inside a node) | "inter_node" (across nodes; the
///    default fabric is then the accelerator's reference network),
///    "gemm": [{"m","n","k","batch"?,"dtype"?,"peak_tflops"? (of another precision),"tflops"|"time_s"}],
///    "memory": [{"bytes","bw_GBps"|"time_s"}],
///    "attention": [{"batch","heads","seq","head_dim","pass":"fwd"|"fwd+bwd","causal"?,"tflops"}],
///    "collectives": [{"kind","algorithm"?,"ranks","bytes","busbw_GBps"|"time_s"}],
///    "layers": [{"case","experiment":{..},"forward_ms","backward_ms"}],
///    "interference": [{"fabric": "intra_node"|"inter_node","kind": "compute"|"comm","alone_s","overlapped_s",
///                      "name"?,"source"?}]}
/// Throws InputError naming the field for bad points (a GEMM or attention rate above the accelerator's peak, a memory
/// bandwidth above its HBM's, a dimension past kMaxGemmDim), for a group with fewer measured numbers than parameters
/// or more than kMaxGroupPoints (kMaxCalibrationPoints in all), and for a fitted efficiency above 1 (NVLS bus
/// efficiency above 2), naming the points measured faster than the model allows.
Calibration calibrate(const Json& measured, const std::string& base_dir);

/// The profile file of a calibration: {"accelerator", "compute", "comm"?: {fabric_scope: fabric}, "sources", "fit"}.
Json calibration_profile_json(const Calibration& c);
/// The residuals as a text table: group, point, measured, fitted, error %.
std::string residual_table(const Calibration& c);

}  // namespace placesim
