// The docs' claims of equality, zero difference or a stated figure, each checked against the program: docs/reports.md
// (validation rows, bounds, MFU, the data collectives' sums), docs/papers.md's recipe for ZeRO's Table 1 followed
// literally, the Slurm script's word on shared paths (docs/slurm.md) and the summary's kernel-latency assumption.
// Numbers are derived here by hand from the formulas the docs state.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "strategies/analytic/Analytic.hpp"
#include "tests/FileHelpers.hpp"
#include "tests/Helpers.hpp"
#include "workloads/json/JsonReader.hpp"

using namespace placesim;
using test::run_placesim;

namespace {

const char* kModel = R"({"layers": 8, "hidden": 512, "heads": 8, "vocab": 1000, "seq_len": 256})";
const char* kBatch = R"({"global_batch": 32, "micro_batch": 1})";
const char* kTwoDgxA100 = R"({"preset": "dgx-a100", "nodes": 2})";

struct Simulated {
  Json report;
  std::string output;  ///< stdout and stderr: the analyze table and the simulate summary
};

Simulated simulate(const std::string& experiment, const std::string& flags = "") {
  test::TempDir dir;
  test::write(dir / "e.json", experiment);
  Simulated s;
  const int rc = run_placesim("simulate " + dir / "e.json" + " --report " + dir / "r.json " + flags, &s.output);
  INFO(s.output.substr(0, 2000));
  REQUIRE(rc == 0);
  s.report = read_json_file(dir / "r.json");
  return s;
}

std::string experiment(const std::string& strategy, const std::string& training = kBatch,
                       const std::string& cluster = kTwoDgxA100) {
  return std::string(R"({"model": )") + kModel + R"(, "training": )" + training + R"(, "strategy": )" + strategy +
         R"(, "cluster": )" + cluster + "}";
}

// Every strategy preset on 2 DGX A100 (dp 16, or the mesh the preset needs), and whether the simulated peak of its
// transient buffers is below the analytic bound (parameters gathered or gradients reduced in buckets) or equal to it.
struct PresetRun {
  const char* strategy;
  bool buffers_below_bound;
};

const std::map<std::string, PresetRun> kPresets = {
    {"dp", {R"({"preset": "dp", "dp": 16})", false}},
    {"zero1", {R"({"preset": "zero1", "dp": 16})", false}},
    {"zero2", {R"({"preset": "zero2", "dp": 16})", true}},
    {"zero3", {R"({"preset": "zero3", "dp": 16})", true}},
    {"fsdp", {R"({"preset": "fsdp", "dp": 16})", true}},
    {"zero-offload", {R"({"preset": "zero-offload", "dp": 16})", true}},
    {"megatron-3d", {R"({"preset": "megatron-3d", "dp": 2, "tp": 2, "pp": 4})", false}},
    {"megatron-core", {R"({"preset": "megatron-core", "dp": 2, "tp": 2, "pp": 4})", false}},
    {"hsdp", {R"({"preset": "hsdp", "mesh": {"dp_replicate": 2, "dp_shard": 8}})", true}},
    {"fsdp-tp", {R"({"preset": "fsdp-tp", "mesh": {"dp_shard": 8, "tp": 2}})", true}},
    {"zero++", {R"({"preset": "zero++", "mesh": {"dp_replicate": 2, "dp_shard": 8}})", true}},
};

bool is_bound(const std::string& figure) {
  return figure.find("(analytic bound)") != std::string::npos;
}

void check_validation_rows(const Json& report, bool below_bound) {
  std::set<std::string> bounds;
  for (const auto& row : report["validation"]) {
    const std::string figure = row["figure"].get<std::string>();
    const double analytic = row["analytic"].get<double>(), simulated = row["simulated"].get<double>();
    INFO(figure << ": analytic " << analytic << ", simulated " << simulated);
    if (!is_bound(figure)) {
      CHECK(row["difference"].get<double>() == 0);
      CHECK(simulated == analytic);
      continue;
    }
    bounds.insert(figure);
    if (below_bound)
      CHECK(simulated < analytic);
    else
      CHECK(simulated == analytic);
  }
  CHECK(bounds ==
        std::set<std::string>{"memory.buffers_bytes (analytic bound)", "memory.total_bytes (analytic bound)"});
}

// docs/reports.md: the data-parallel collectives of a stage "add up to dp_grad_sync and zero_gather".
void check_data_collectives_sum(const Json& report) {
  for (const auto& stage : report["communication"]["per_stage"]) {
    std::map<std::string, double> sum;
    for (const auto& c : stage["data_collectives"])
      sum[c["class"].get<std::string>()] += c["bytes_per_step"].get<double>();
    for (const char* cls : {"dp_grad_sync", "zero_gather"}) {
      INFO("stage " << stage["stage"] << " " << cls);
      CHECK(sum[cls] == stage["by_class"][cls].get<double>());
    }
  }
}

std::vector<std::string> strategy_presets() {
  std::string out;
  REQUIRE(run_placesim("presets --json", &out) == 0);
  std::vector<std::string> names;
  const Json listed = Json::parse(out);
  for (const auto& [name, title] : listed["strategies"].items()) names.push_back(name);
  return names;
}

}  // namespace

TEST_CASE("docs/reports.md: every strategy preset's exact figures are identical and its bounds hold on 2 DGX A100") {
  const std::vector<std::string> presets = strategy_presets();
  CHECK(presets.size() == kPresets.size());  // a new preset needs its mesh and its expectation here
  for (const std::string& name : presets) {
    INFO("preset " << name);
    REQUIRE(kPresets.count(name) == 1);
    const PresetRun& run = kPresets.at(name);
    const Simulated s = simulate(experiment(run.strategy), "--layer-group 1");
    CHECK(s.report["simulation"]["layer_group"] == 1);
    check_validation_rows(s.report, run.buffers_below_bound);
    check_data_collectives_sum(s.report);
    CHECK_THAT(s.output, Catch::Contains("analytic vs simulated: 14 of 14 exact figures identical"));
    // Flow fidelity shares no NIC by an analytic rule: the overlap figure is 0.
    CHECK(s.report["simulation"]["fidelity"] == "flow");
    CHECK(s.report["simulation"]["analytic_nic_overlap_s"].get<double>() == 0);
  }
}

TEST_CASE("docs/reports.md: offloaded activations make memory.activations_bytes an analytic bound") {
  const Simulated s = simulate(experiment(R"({"dp": 16, "placement": {"activations": "offloaded"}})"));
  bool activations_bound = false;
  for (const auto& row : s.report["validation"]) {
    const std::string figure = row["figure"].get<std::string>();
    if (figure == "memory.activations_bytes (analytic bound)") {
      activations_bound = true;
      CHECK(row["simulated"].get<double>() <= row["analytic"].get<double>());
    }
    CHECK(figure != "memory.activations_bytes");
  }
  CHECK(activations_bound);
}

TEST_CASE("docs/reports.md: a layer group larger than one can exceed the bound, and the summary says so") {
  const Simulated s = simulate(experiment(R"({"preset": "zero3", "dp": 16})"), "--layer-group 8");
  CHECK(s.report["simulation"]["layer_group"] == 8);
  for (const auto& row : s.report["validation"])
    if (row["figure"] == "memory.buffers_bytes (analytic bound)")
      CHECK(row["simulated"].get<double>() > row["analytic"].get<double>());
  CHECK_THAT(s.output, Catch::Contains("memory.buffers_bytes: analytic bound") && Catch::Contains("above the bound"));
}

TEST_CASE("docs/reports.md: staleness is 0 for the synchronous schedules") {
  for (const char* schedule : {"1f1b", "gpipe"}) {
    INFO(schedule);
    const Simulated s = simulate(experiment(std::string(R"({"preset": "megatron-3d", "dp": 2, "tp": 2, "pp": 4,
        "schedule": ")") + schedule + R"("})"));
    CHECK(s.report["pipeline"]["staleness"]["max_delay"] == 0);
    CHECK(s.report["pipeline"]["staleness"]["whole_run"]["max"] == 0);
  }
}

TEST_CASE("docs/reports.md: analyze --table labels the buffers and the total as bounds") {
  test::TempDir dir;
  test::write(dir / "e.json", experiment(R"({"preset": "zero3", "dp": 16})"));
  std::string table;
  REQUIRE(run_placesim("analyze " + dir / "e.json --table", &table) == 0);
  CHECK_THAT(table, Catch::Contains("\n  buffers (bound)  ") && Catch::Contains("\n  total (bound)  "));
  CHECK_THAT(table, !Catch::Contains("\n  total  ") && !Catch::Contains("\n  buffers  "));
}

// docs/reports.md, MFU: model FLOPs / (step x GPUs x the rated dense bf16 peak). For a GPT (ffn 4h) the model FLOPs of
// a step are 72 B s l h^2 (1 + s/(6h) + V/(12 l h)): 3 x (l (24 h^2 + 4 s h) + 2 h V) per token. H100 SXM's dense
// BF16 peak is 989.4 TFLOP/s (NVIDIA H100 Tensor Core GPU datasheet; 1,979 with sparsity), also the divisor under a
// power limit and for FP8 runs.
TEST_CASE("docs/reports.md: MFU divides model FLOPs by the rated dense bf16 peak, under a power limit and FP8 too") {
  const double B = 32, s = 256, l = 8, h = 512, V = 1000, gpus = 8, peak = 989.4e12;
  const double flops = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  for (const char* accelerator : {"", R"(, "accelerator": {"preset": "h100-sxm", "power_limit_w": 500})"}) {
    for (bool fp8 : {false, true}) {
      INFO("accelerator" << accelerator << ", fp8 " << fp8);
      const std::string training =
          std::string(R"({"global_batch": 32, "micro_batch": 1, "fp8": )") + (fp8 ? "true" : "false") + "}";
      const std::string cluster = std::string(R"({"preset": "dgx-h100", "nodes": 1)") + accelerator + "}";
      const Simulated r = simulate(experiment(R"({"preset": "dp", "dp": 8})", training, cluster));
      const Json& sim = r.report["simulation"];
      CHECK(r.report["compute"]["model_flops_per_step"].get<double>() == Approx(flops).epsilon(1e-12));
      CHECK(sim["mfu"].get<double>() == Approx(flops / (sim["step_time_s"].get<double>() * gpus * peak)).epsilon(1e-9));
      if (fp8) CHECK_THAT(r.output, Catch::Contains("MFU is of the bf16 peak"));
    }
  }
}

namespace {

// The JSON block that follows `heading` in docs/papers.md.
std::string papers_json_after(const std::string& heading) {
  const std::string doc = test::read(std::string(PLACESIM_SOURCE_DIR) + "/docs/papers.md");
  const auto at = doc.find(heading);
  REQUIRE(at != std::string::npos);
  const auto open = doc.find("```json\n", at);
  REQUIRE(open != std::string::npos);
  const auto begin = open + 8;
  return doc.substr(begin, doc.find("```", begin) - begin);
}

// A table cell without its spaces, and half a unit of its last printed digit.
std::string trimmed(const std::string& cell) {
  const auto first = cell.find_first_not_of(' ');
  return first == std::string::npos ? "" : cell.substr(first, cell.find_last_not_of(' ') - first + 1);
}

double half_unit_of(const std::string& number) {
  const auto dot = number.find('.');
  return 0.5 * std::pow(10.0, dot == std::string::npos ? 0.0 : -static_cast<double>(number.size() - dot - 1));
}

double comm_bytes(const std::string& dtype, const char* preset) {
  return analyze(test::experiment(R"({"training": {"dtype": ")" + dtype +
                                  R"("}, "model": {"parameters": 7.5e9}, "strategy": {"preset": ")" + preset +
                                  R"(", "dp": 64}})"))
      .bytes_per_step;
}

}  // namespace

// ZeRO (Rajbhandari et al., arXiv 1910.02054) Table 1: 7.5B at dp 1 holds 16 bytes per parameter in fp16 mixed
// precision (2 parameters + 2 gradients + 12 Adam), 120 GB; placesim's bf16 default keeps fp32 gradients, 2 + 4 + 12.
TEST_CASE("docs/papers.md: the ZeRO Table 1 recipe followed literally gives 120 GB, and 135 GB in bf16") {
  const std::string recipe = papers_json_after("**ZeRO, Table 1**");
  const Experiment fp16 = test::experiment(recipe);
  CHECK(fp16.training.dtype == DType::FP16);
  CHECK(analyze(fp16).model_states_bytes == 16 * 7.5e9);
  Json bf16 = Json::parse(recipe);
  bf16["training"].erase("dtype");
  CHECK(analyze(test::experiment(bf16.dump())).model_states_bytes == 18 * 7.5e9);
}

// docs/papers.md's 7.5B rows of ZeRO's Table 1: placesim's columns are the exact model states in fp16, by hand
// (2 + 2 + 12) bytes per parameter with the optimizer sharded (ZeRO-1), also the gradients (ZeRO-2), or everything
// (ZeRO-3) over dp, each shard ceil(7.5e9 / dp) elements, printed to the table's digits.
TEST_CASE("docs/papers.md: the 7.5B rows' placesim columns are the fp16 model states over dp") {
  const std::string doc = test::read(std::string(PLACESIM_SOURCE_DIR) + "/docs/papers.md");
  std::istringstream table(doc.substr(doc.find("| dp | ZeRO-1 (paper) | placesim |")));
  const double psi = 7.5e9;
  int rows = 0;
  for (std::string line; std::getline(table, line) && line.rfind("|", 0) == 0;) {
    std::vector<std::string> cells;
    std::istringstream row(line.substr(1));
    for (std::string cell; std::getline(row, cell, '|');) cells.push_back(cell);
    if (cells.size() != 7 || cells[0].find_first_of("0123456789") == std::string::npos) continue;
    const double n = std::stod(cells[0]);
    const double shard = std::ceil(psi / n);  // ZeRO and FSDP pad the flat buffer to a multiple of dp
    const double exact[3] = {4 * psi + 12 * shard, 2 * psi + 14 * shard, 16 * shard};
    const char* presets[3] = {"zero1", "zero2", "zero3"};
    for (int k = 0; k < 3; ++k) {
      const std::string printed = trimmed(cells[static_cast<std::size_t>(2 + 2 * k)]);
      const double gb =
          analyze(test::experiment(
                      R"({"training": {"dtype": "fp16"}, "model": {"parameters": 7.5e9}, "strategy": {"preset": ")" +
                      std::string(presets[k]) + R"(", "dp": )" + std::to_string(static_cast<int>(n)) + "}}"))
              .model_states_bytes;
      INFO(presets[k] << " dp " << n << ": printed " << printed);
      CHECK(gb == exact[k]);
      CHECK(std::abs(gb / 1e9 - std::stod(printed)) <= half_unit_of(printed) * (1 + 1e-9));
    }
    ++rows;
  }
  CHECK(rows == 6);
}

// ZeRO section 7 in bf16, where the gradients are fp32: DP all-reduces 4-byte gradients, ZeRO-1/2 reduce-scatter them
// and all-gather the 2-byte parameters, ZeRO-3 gathers the parameters twice (forward, backward) and reduce-scatters.
TEST_CASE("docs/papers.md: in bf16 DP and ZeRO-3 send the same bytes, ZeRO-1/2 three quarters of them") {
  const double psi = 7.5e9, n = 64, share = (n - 1) / n * psi;
  CHECK(comm_bytes("bf16", "dp") == 2 * share * 4);  // 59,062,500,000
  CHECK(comm_bytes("bf16", "dp") == 59062500000.0);
  CHECK(comm_bytes("bf16", "zero1") == share * (4 + 2));
  CHECK(comm_bytes("bf16", "zero2") == share * (4 + 2));
  CHECK(comm_bytes("bf16", "zero3") == share * (2 + 2 + 4));
  CHECK(comm_bytes("fp16", "zero3") == 1.5 * comm_bytes("fp16", "dp"));
}

TEST_CASE("docs/slurm.md: the generated script says its absolute paths must be on a file system every node sees") {
  test::TempDir dir;
  test::write(dir / "sweep.json", R"({"base": {"model": "gpt-1.7b", "training": {"global_batch": 64},
      "strategy": {"preset": "megatron-3d"}}, "axes": {"strategy.dp": [1, 2]}})");
  std::string output;
  REQUIRE(run_placesim("sweep " + dir / "sweep.json --out " + dir / "r.jsonl --slurm --array-size 2", &output) == 0);
  const std::string script = test::read(dir / "r.sbatch");
  CHECK_THAT(script, Catch::Contains("must be on a file system every node of the array mounts at the same place"));
  CHECK_THAT(script, Catch::Contains("out='" + dir / "r.jsonl'"));  // absolute, as written
}

TEST_CASE("The simulate summary states the kernel latency it assumes and where the figure comes from") {
  const Simulated s = simulate(experiment(R"({"preset": "dp", "dp": 16})"));
  CHECK_THAT(s.output, Catch::Contains("kernel latency       4.000 us per element-wise or fused-attention kernel, "
                                       "assumed") &&
                           Catch::Contains("meta-pytorch/tritonbench#1017") &&
                           Catch::Contains("meta-pytorch/autoparallel#146"));
}
