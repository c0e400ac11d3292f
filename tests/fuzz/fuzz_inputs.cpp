// libFuzzer target over every input a placesim user writes, without simulating (one SimGrid run per process, and
// far too slow): the first byte picks the parser, the rest is its text. Selectors are digits, so that a finding reads
// as text ("1strategy.dp=4") and libFuzzer's -only_ascii=1 keeps them; any other byte picks one too.
//
//   0 experiment   JSON text -> parse_experiment -> validity, cluster fit -> analyze -> report, table, warnings,
//                  equivalence; an abstract "pipeline" section is evaluated instead; small experiments are expanded
//   1 --set        lines PATH=VALUE (parse_cli_value, set_path) applied to a small experiment, then as 0
//   2 sweep        parse_sweep_text -> figures -> a few points analysed, each by both PointEvaluator paths
//   3 hf config    a Hugging Face config.json imported as an experiment's model.hf_config, then as 0
//   4 calibration  calibrate -> profile JSON and residual table
//   5 profile      a profile file as a cluster's accelerator.profile -> parse_cluster, simulated_network
//   6 units        the second character picks parse_bytes / bandwidth / time / flops, parse_shard, parse_rank_by,
//                  parse_fidelity or parse_cli_value
//   7 results      sweep results files (parted by a form feed into two shards): row_identity per line, the resume
//                  scan, and sweep merge (check and write)
//   8 trace        a PyTorch profiler (Kineto) trace file -> read_profiler_traces -> summarize -> calibrate_from_trace
//                  against a small experiment, compare_summaries and its text, JSON and SVG
//
// Bad input is an InputError (the CLI's exit 2) and is caught here. Any other exception (the CLI's "internal error",
// exit 1), a crash, a leak, undefined behaviour, a timeout or running out of memory is a finding.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "strategies/analytic/Analytic.hpp"
#include "strategies/analytic/Validity.hpp"
#include "strategies/calibrate/Calibration.hpp"
#include "strategies/expand/Expand.hpp"
#include "strategies/pipeline/AbstractPipeline.hpp"
#include "strategies/pipeline/Equivalence.hpp"
#include "strategies/placement/ClusterFit.hpp"
#include "strategies/placement/Experiment.hpp"
#include "strategies/sweep/Search.hpp"
#include "strategies/sweep/Sweep.hpp"
#include "strategies/sweep/SweepPoint.hpp"
#include "topology/cluster/Cluster.hpp"
#include "traces/profiler/TraceCalibration.hpp"
#include "traces/profiler/TraceCompare.hpp"
#include "traces/report/Report.hpp"
#include "traces/report/Warnings.hpp"
#include "traces/sweep/SweepFile.hpp"
#include "traces/sweep/SweepMerge.hpp"
#include "traces/sweep/SweepRows.hpp"
#include "workloads/json/JsonReader.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {
namespace {

constexpr const char* kOrigin = "<fuzz>";

/// Work bounds of the optional stages: inputs above them are legitimately slow (the work is linear in what the
/// user asked for), so the stage is skipped rather than reported as a timeout.
constexpr double kMaxPipelineOps = 2e5;  ///< abstract pipeline: stages x micro-batches x steps x chunks x replicas
constexpr double kMaxExpandTasks = 2e3;  ///< expand(): estimated compute tasks
constexpr std::int64_t kMaxExpandDevices = 64;
constexpr std::uint64_t kSweepPoints = 4;  ///< sweep points evaluated: the first ones and the last
/// calibrate(): measured points over all groups. Each fit runs Levenberg-Marquardt from several starts; under the
/// sanitizers the 38 points of topology/profiles/measurements/h200.json take 6.5 s (0.3 s in a release build).
constexpr std::size_t kMaxCalibrationPoints = 16;

/// The experiment the --set lines are applied to (examples/small-3d-1f1b.json).
constexpr const char* kSetBase = R"({
  "model": {"layers": 10, "hidden": 512, "heads": 8, "vocab": 1000, "seq_len": 256},
  "training": {"global_batch": 32, "micro_batch": 1},
  "strategy": {"preset": "megatron-3d", "dp": 2, "tp": 2, "pp": 4, "schedule": "1f1b"},
  "cluster": {"preset": "dgx-a100", "nodes": 2}
})";

/// A directory of this process's own for the inputs that are read as files (profiles, Hugging Face configs), removed
/// when the process exits normally.
class ScratchDir {
 public:
  ScratchDir() : path_(std::filesystem::temp_directory_path() / ("placesim-fuzz-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

std::string write_scratch(const std::string& name, const std::string& text) {
  static const ScratchDir dir;
  const std::filesystem::path p = dir.path() / name;
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

// Experiments name files (model.hf_config, accelerator.profile) that the library reads whole. A string naming a
// device, a directory or a /proc file would make the harness measure the file system (reading /dev/zero never
// ends), so such inputs are skipped; every small regular file and every missing one is read as a user's would be.
bool names_special_file(const std::string& s) {
  if (s.empty() || s.size() > 4096 || s.find('\0') != std::string::npos) return false;
  std::error_code ec;
  const std::filesystem::path p(s);
  const auto status = std::filesystem::status(p, ec);
  if (ec || !std::filesystem::exists(status)) return false;
  if (!std::filesystem::is_regular_file(status)) return true;
  const std::string absolute = std::filesystem::absolute(p, ec).lexically_normal().string();
  if (absolute.rfind("/proc/", 0) == 0 || absolute.rfind("/sys/", 0) == 0) return true;
  return std::filesystem::file_size(p, ec) > (1u << 20) || ec;
}

/// True when some string value of `doc` names a special file (see names_special_file). Iterative: the JSON reader
/// allows nesting 200 deep, and nlohmann's own recursion is the library's to bound, not the harness's.
bool mentions_special_file(const Json& doc) {
  std::vector<const Json*> todo{&doc};
  while (!todo.empty()) {
    const Json* j = todo.back();
    todo.pop_back();
    if (j->is_string() && names_special_file(j->get_ref<const std::string&>())) return true;
    if (j->is_structured())
      for (const auto& item : *j) todo.push_back(&item);
  }
  return false;
}

double ops_of(const PipelineShape& s) {
  return static_cast<double>(s.stages) * s.microbatches * s.steps * s.chunks * s.replicas;
}

void evaluate_abstract(const Json& section) {
  const AbstractPipeline p = parse_abstract_pipeline(section);
  if (ops_of(p.shape) > kMaxPipelineOps) return;
  dump(simulate_abstract_pipeline(section, nullptr, nullptr));
}

// expand() is the pure core `simulate` runs before SimGrid; small experiments only (the graph grows with devices,
// micro-batches and layers).
void expand_if_small(const Experiment& e, const ClusterSpec& c) {
  if (e.strategy.devices() > kMaxExpandDevices || c.devices() > kMaxExpandDevices) return;
  if (!(estimated_compute_tasks(e, {}) <= kMaxExpandTasks)) return;
  const TaskGraph g = expand(e, c);
  (void)g;
}

// What `placesim analyze` and `placesim check` do with an experiment, and the expansion of `simulate`.
void analyze_experiment(const Json& j) {
  if (mentions_special_file(j)) return;
  Experiment e = parse_experiment(j, "");
  if (!e.pipeline.is_null()) return evaluate_abstract(e.pipeline);
  check_validity(e);
  std::optional<ClusterSpec> cluster;
  if (!e.cluster.is_null()) {
    const ClusterFit fit = cluster_fit(e.cluster);
    check_cluster_mesh(e, fit);
    if (e.device_memory_bytes <= 0) e.device_memory_bytes = fit.device_memory_bytes;
    cluster = parse_cluster(e.cluster);
  }
  const Analysis a = analyze(e);
  // The report, table and warnings time the pipeline schedule: linear in stages x micro-batches x chunks, which a
  // global batch of millions makes legitimately slow (seconds in a release build, minutes under the sanitizers).
  const double schedule_ops = static_cast<double>(e.strategy.pp) * static_cast<double>(e.strategy.microbatches) *
                              static_cast<double>(std::max<std::int64_t>(1, e.strategy.chunks));
  if (schedule_ops > kMaxPipelineOps) return check_fits(e, a);
  analysis_warnings(e, a, cluster ? &*cluster : nullptr);
  analysis_table(e, a);
  dump(analysis_report(e, a));
  training_equivalence(e.strategy);
  if (cluster) expand_if_small(e, *cluster);
  check_fits(e, a);
}

void fuzz_experiment(const std::string& text) {
  analyze_experiment(parse_json_text(text, kOrigin));
}

// As experiment_json_from_args applies --set: every line PATH=VALUE, the value parsed by parse_cli_value.
void fuzz_set(const std::string& text) {
  Json j = parse_json_text(kSetBase, "kSetBase");
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto eq = line.find('=');
    if (eq == std::string::npos) throw InputError("--set " + line + ": expected PATH=VALUE");
    set_path(j, line.substr(0, eq), parse_cli_value(line.substr(eq + 1)));
  }
  analyze_experiment(j);
}

// Both evaluators must agree: the section cache is documented to give what parsing the point whole gives.
void evaluate_point(PointEvaluator& cached, PointEvaluator& whole, const SweepRows& rows, const SweepSpec& spec,
                    std::uint64_t index) {
  const PointOutcome o = cached.evaluate(index);
  const PointOutcome w = whole.evaluate(index);
  for (const PointOutcome* x : {&o, &w})
    if (x->status == PointStatus::Error)
      throw std::logic_error("sweep point " + std::to_string(index) + ": " + x->reason);
  if (o.status != w.status || o.reason != w.reason)
    throw std::logic_error("sweep point " + std::to_string(index) + ": cached evaluation gives " + to_string(o.status) +
                           " '" + o.reason + "', whole gives " + to_string(w.status) + " '" + w.reason + "'");
  if (o.status == PointStatus::Filtered) return;
  const std::string line = rows.line(index, cached.coords(), o, cached.experiment(), cached.analysis(), nullptr);
  if (line != rows.line(index, whole.coords(), w, whole.experiment(), whole.analysis(), nullptr))
    throw std::logic_error("sweep point " + std::to_string(index) + ": cached and whole rows differ");
  csv_row(spec, line);
}

// Legal sweeps hold up to 10^7 values per axis, and materialising them under the sanitizers takes ~2 us each: the
// per-input timeout is for hangs, so sweeps of more than 2e5 values are left to the unit tests of the limits
// (tests/test_sweep_rows.cpp, test_hostile_input.cpp).
constexpr double kFuzzSweepValues = 2e5;

void fuzz_sweep(const std::string& text) {
  const Json file = parse_json_text(text, kOrigin);
  if (mentions_special_file(file)) return;
  if (count_axis_values(file) > kFuzzSweepValues) return;
  const SweepSpec spec = parse_sweep_text(text, kOrigin, "");
  check_figures(spec);
  const SweepRows rows(spec);
  csv_header(spec);
  PointEvaluator cached(spec, 0);
  PointEvaluator whole(spec, 0, false);
  const std::uint64_t points = spec.points();
  for (std::uint64_t i = 0; i < points && i + 1 < kSweepPoints; ++i) evaluate_point(cached, whole, rows, spec, i);
  if (points > 0) evaluate_point(cached, whole, rows, spec, points - 1);
}

void fuzz_hf_config(const std::string& text) {
  const std::string path = write_scratch("config.json", text);
  analyze_experiment(Json{{"model", {{"hf_config", path}}},
                          {"training", {{"global_batch", 16}, {"micro_batch", 1}}},
                          {"strategy", {{"preset", "dp"}, {"dp", 8}}},
                          {"cluster", {{"preset", "dgx-a100"}, {"nodes", 1}}}});
}

std::size_t calibration_points(const Json& measured) {
  std::size_t points = 0;
  if (measured.is_object())
    for (const char* group : {"gemm", "memory", "attention", "collectives", "layers"})
      if (auto it = measured.find(group); it != measured.end() && it->is_array()) points += it->size();
  return points;
}

void fuzz_calibration(const std::string& text) {
  const Json measured = parse_json_text(text, kOrigin);
  if (mentions_special_file(measured) || calibration_points(measured) > kMaxCalibrationPoints) return;
  const Calibration c = calibrate(measured, "");
  calibration_profile_json(c).dump(2);
  residual_table(c);
}

void fuzz_profile(const std::string& text) {
  const std::string path = write_scratch("profile.json", text);
  const Json cluster{
      {"preset", "dgx-a100"}, {"nodes", 2}, {"accelerator", {{"preset", "a100-80gb"}, {"profile", path}}}};
  const ClusterSpec c = parse_cluster(cluster);
  simulated_network(c);
  cluster_to_json(c).dump();
}

/// '0' picks 0, '1' picks 1, ...; every byte picks something.
std::size_t selector(char c, std::size_t choices) {
  return static_cast<unsigned char>(c - '0') % choices;
}

void fuzz_units(const std::string& text) {
  if (text.empty()) return;
  using Reader = void (*)(const std::string&);
  static const Reader readers[] = {
      [](const std::string& v) { format_bytes(parse_bytes(v, "size")); },
      [](const std::string& v) { format_bytes(parse_bandwidth(v, "bandwidth")); },
      [](const std::string& v) { format_seconds(parse_time(v, "latency")); },
      [](const std::string& v) { format_bytes(parse_flops(v, "flops")); },
      [](const std::string& v) { parse_shard(v).size(1000); },
      [](const std::string& v) { parse_rank_by(v); },
      [](const std::string& v) { parse_fidelity(v, "--fidelity"); },
      [](const std::string& v) { parse_cli_value(v); },  // what becomes of the value is the --set parser's (1) to fuzz
  };
  readers[selector(text[0], std::size(readers))](text.substr(1));
}

/// Points a results row may claim for the merge to be run on it: the merge tracks coverage a bit per point (and
/// its missing-point scan is linear in them), legitimately slow above this.
constexpr std::uint64_t kMaxMergePoints = 100000;

void fuzz_results(const std::string& text) {
  const std::size_t cut = text.find('\f');
  const std::string first = text.substr(0, cut), second = cut == std::string::npos ? "" : text.substr(cut + 1);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (auto id = row_identity(line); id && id->points > kMaxMergePoints) return;
  // The resume scan with a sweep whose rows at index i start as this one's would.
  scan_results(
      first,
      [](std::uint64_t i) -> std::optional<std::string> {
        if (i % 3 == 2) return std::nullopt;
        return "{\"index\":" + std::to_string(i) + ",\"sweep\":\"0123456789abcdef\",\"version\":\"0.19.0\"";
      },
      "<fuzz>");
  MergeOptions m;
  m.shards = {write_scratch("a.jsonl", first), write_scratch("b.jsonl", second)};
  m.out = write_scratch("merged.jsonl", "");
  merge_results(m);
}

void fuzz_trace(const std::string& text) {
  const ProfilerTrace t = read_profiler_traces({write_scratch("trace.json", text)});
  const TraceSummary s = summarize(t);
  summary_to_json(s).dump();
  const TraceComparison c = compare_summaries(s, s);
  comparison_text(c);
  comparison_json(c).dump();
  comparison_svg(t, s, t, s);
  if (s.steps.empty()) return;
  const Experiment e = parse_experiment(Json::parse(kSetBase), "");
  calibration_table(calibrate_from_trace(s, e, parse_cluster(e.cluster), t.files));
}

using Parser = void (*)(const std::string&);
constexpr Parser kParsers[] = {fuzz_experiment, fuzz_set,   fuzz_sweep,   fuzz_hf_config, fuzz_calibration,
                               fuzz_profile,    fuzz_units, fuzz_results, fuzz_trace};

}  // namespace
}  // namespace placesim

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace placesim;
  if (size == 0) return 0;
  const auto parser = kParsers[selector(static_cast<char>(data[0]), std::size(kParsers))];
  try {
    parser(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  } catch (const InputError&) {
    // Bad input refused with a message: what the parsers must do.
  }
  return 0;
}
