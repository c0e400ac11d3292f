// `placesim converge` and `placesim converge-sweep` end to end: the files they write and their input errors.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "tests/Helpers.hpp"
#include "tests/TraceFixtures.hpp"
#include "tests/XmlCheck.hpp"
#include "workloads/json/JsonReader.hpp"

using namespace placesim;
using test::ScratchFile;

namespace {

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const char* kPipeline = R"("pipeline": {"schedule": "pipedream", "stages": 3, "microbatches": 6, "steps": 4,
                                        "forward_s": 1, "backward_s": 2})";

// Writes an experiment with `pipeline` and `convergence` sections and runs `converge` on it.
int converge(const std::string& pipeline, const std::string& convergence, const std::string& flags, std::string* out) {
  ScratchFile file("converge.json");
  std::ofstream(file.path) << "{" << pipeline << R"(, "convergence": )" << convergence << "}";
  return test::run_placesim("converge " + file.path + " " + flags, out);
}

void check_refused(const std::string& pipeline, const std::string& convergence, const std::string& flags,
                   const std::string& message) {
  std::string out;
  const int code = converge(pipeline, convergence, flags, &out);
  INFO(out);
  CHECK(code == 2);
  CHECK(out.find(message) != std::string::npos);
}

// Runs `converge-sweep` on a sweep file holding `sweep`.
int sweep(const std::string& sweep, const std::string& flags, std::string* out) {
  ScratchFile file("sweep.json");
  std::ofstream(file.path) << sweep;
  return test::run_placesim("converge-sweep " + file.path + " " + flags, out);
}

}  // namespace

TEST_CASE("converge writes the loss curve as CSV JSON lines and SVG and prints a summary") {
  ScratchFile csv("curve.csv"), jsonl("curve.jsonl"), svg("curve.svg"), report("report.json");
  std::string out;
  const int code = converge(
      kPipeline, R"({"objective": "quadratic", "dimension": 24, "step_size": 0.05})",
      "--out-csv " + csv.path + " --out-jsonl " + jsonl.path + " --svg " + svg.path + " --report " + report.path, &out);
  INFO(out);
  REQUIRE(code == 0);
  CHECK(out.find("placesim converge: pipedream, S=3, M=6, 4 step(s); quadratic, d=24") != std::string::npos);
  CHECK(out.find("after 72 updates") != std::string::npos);  // 24 micro-batches x 3 stages, one Apply each
  const std::vector<std::string> rows = lines_of(csv.path), points = lines_of(jsonl.path);
  REQUIRE(rows.size() >= 3);
  CHECK(rows[0] == "updates,time_s,loss,grad_norm");
  CHECK(rows.back().rfind("72,", 0) == 0);
  REQUIRE(points.size() == rows.size() - 1);
  for (const std::string& line : points) {
    const Json p = Json::parse(line);
    CHECK(p["schedule"] == "pipedream");
    CHECK(p["stages"] == 3);
    CHECK(p["loss"].is_number());
  }
  const std::string picture = text_of(svg.path);
  CHECK(test::xml_problem(picture) == "");
  CHECK(picture.find("<polyline") != std::string::npos);
  const Json r = read_json_file(report.path);
  CHECK(r["convergence"]["updates"] == 72);
  CHECK(r["run"]["steps"] == 4);
  CHECK(r["pipeline"]["staleness"]["max_delay"].get<int>() > 0);
  CHECK(r["convergence"]["final_loss"].get<double>() < r["convergence"]["initial_loss"].get<double>());
}

TEST_CASE("converge with a time budget stops at the budget") {
  ScratchFile report("report.json");
  std::string out;
  const int code = converge(kPipeline, R"({"objective": "logistic", "dimension": 12, "samples": 40})",
                            "--time-budget 50.5 --report " + report.path, &out);
  INFO(out);
  REQUIRE(code == 0);
  const Json r = read_json_file(report.path);
  CHECK(r["run"]["end_s"] == 50.5);
  CHECK(r["convergence"]["final_time_s"].get<double>() <= 50.5);
  CHECK(r["convergence"]["final_time_s"].get<double>() > 40);
}

TEST_CASE("converge refuses a step size that is not positive") {
  check_refused(kPipeline, R"({"step_size": 0})", "", "convergence.step_size=0 must be positive");
  check_refused(kPipeline, R"({"step_size": 0.1})", "--step-size -0.5", "--step-size=-0.5 must be positive");
}

TEST_CASE("converge refuses an unknown objective") {
  check_refused(kPipeline, R"({"objective": "hinge"})", "", "convergence.objective");
  check_refused(kPipeline, R"({"objective": "hinge"})", "", "hinge");
}

TEST_CASE("converge refuses LocalSGD with fewer than one local step") {
  check_refused(R"("pipeline": {"schedule": "localsgd", "stages": 2, "microbatches": 4, "forward_s": 1,
                                "backward_s": 1, "replicas": 2, "local_steps": 0})",
                "{}", "", "pipeline.local_steps=0 must be an integer >= 1");
}

TEST_CASE("converge refuses replicas that do not divide the micro-batches") {
  check_refused(R"("pipeline": {"schedule": "localsgd", "stages": 2, "microbatches": 8, "forward_s": 1,
                                "backward_s": 1, "replicas": 3})",
                "{}", "", "pipeline.replicas=3 does not divide pipeline.microbatches=8");
}

TEST_CASE("converge refuses both a step count and a time budget") {
  check_refused(kPipeline, "{}", "--steps 3 --time-budget 10", "--steps and --time-budget");
  check_refused(kPipeline, "{}", "--time-budget 0", "--time-budget=0 must be a positive number");
}

TEST_CASE("converge on a model and cluster runs the executor on a pipeline derived from one SimGrid step") {
  ScratchFile file("model.json"), report("report.json");
  std::ofstream(file.path) << R"({"model": {"layers": 8, "hidden": 512, "heads": 8, "vocab": 1000, "seq_len": 256},
      "training": {"global_batch": 8, "micro_batch": 1},
      "strategy": {"preset": "megatron-3d", "tp": 4, "pp": 2, "dp": 1, "schedule": "1f1b"},
      "cluster": {"preset": "dgx-a100", "nodes": 1},
      "convergence": {"objective": "quadratic", "dimension": 16, "step_size": 0.5}})";
  std::string out;
  const int code = test::run_placesim("converge " + file.path + " --steps 5 --report " + report.path, &out);
  INFO(out);
  REQUIRE(code == 0);
  CHECK(out.find("one step simulated with SimGrid") != std::string::npos);
  const Json r = read_json_file(report.path);
  const Json& source = r["source"];
  // For a synchronous schedule the derived pipeline's step lasts exactly the simulated step.
  CHECK(source["abstract_step_time_s"].get<double>() == Approx(source["simulated_step_time_s"].get<double>()));
  CHECK(source["forward_s"].get<double>() > 0);
  CHECK(source["backward_s"].get<double>() > source["forward_s"].get<double>());
  CHECK(r["convergence"]["updates"] == 5 * 2);
  CHECK(r["run"]["end_s"].get<double>() == Approx(5 * source["simulated_step_time_s"].get<double>()));
}

TEST_CASE("converge-sweep quick writes one row per objective stage count and schedule") {
  ScratchFile table("table.csv"), runs("runs.jsonl"), svg("sweep.svg");
  std::string out;
  const int code = test::run_placesim(
      "converge-sweep --quick --out " + table.path + " --jsonl " + runs.path + " --svg " + svg.path, &out);
  INFO(out);
  REQUIRE(code == 0);
  CHECK(out.find("quadratic: final loss - f* at the budget") != std::string::npos);
  CHECK(out.find("logistic: final loss - f* at the budget") != std::string::npos);
  const std::vector<std::string> rows = lines_of(table.path);
  REQUIRE(rows.size() == 1 + 2 * 2 * 5);
  CHECK(rows[0].rfind("objective,stages,schedule,microbatches,replicas,local_steps,budget_s,seeds,step_size,", 0) == 0);
  CHECK(rows[1].rfind("quadratic,2,pipedream,8,1,1,200,2,", 0) == 0);
  CHECK(rows[5].rfind("quadratic,2,localsgd,8,2,5,200,2,", 0) == 0);
  CHECK(rows[20].rfind("logistic,4,localsgd,16,4,5,200,2,", 0) == 0);
  const std::vector<std::string> lines = lines_of(runs.path);
  REQUIRE(lines.size() == 20 * 10);  // step sizes 2^-6 .. 2^3
  int chosen = 0;
  for (const std::string& line : lines) chosen += Json::parse(line)["chosen"].get<bool>() ? 1 : 0;
  CHECK(chosen == 20);
  const std::string picture = text_of(svg.path);
  CHECK(test::xml_problem(picture) == "");
  CHECK(picture.find("quadratic: final loss - f*") != std::string::npos);
  CHECK(picture.find("logistic: final loss - f*") != std::string::npos);
}

TEST_CASE("converge-sweep refuses bad sweep files naming the field") {
  std::string out;
  CHECK(sweep(R"({"local_steps": 0})", "--quick", &out) == 2);
  CHECK(out.find("sweep.local_steps=0") != std::string::npos);
  CHECK(sweep(R"({"replicas": 3})", "--quick", &out) == 2);
  CHECK(out.find("sweep.replicas=3 does not divide") != std::string::npos);
  CHECK(sweep(R"({"objectives": [{"objective": "hinge"}]})", "--quick", &out) == 2);
  CHECK(out.find("sweep.objectives[0]: convergence.objective") != std::string::npos);
  CHECK(sweep(R"({"objectives": [{"step_size": 0.1}]})", "--quick", &out) == 2);
  CHECK(out.find("sweep.objectives[0].step_size is tuned by the sweep") != std::string::npos);
  CHECK(sweep(R"({"schedules": ["pipedrem"]})", "--quick", &out) == 2);
  CHECK(out.find("sweep.schedules[0]=pipedrem is not a schedule (did you mean pipedream?)") != std::string::npos);
}

// The converge report: a synchronous schedule is plain SGD; its executed staleness is 0 and the
// count of other stages' block updates between a read and its apply keeps its own name.
TEST_CASE("converge reports zero executed staleness for a synchronous schedule and keeps the block-update count") {
  auto executed = [](const char* schedule) {
    ScratchFile report("report.json");
    std::string out;
    const std::string pipeline = std::string(R"("pipeline": {"schedule": ")") + schedule +
                                 R"(", "stages": 4, "microbatches": 16, "steps": 6, "forward_s": 1, "backward_s": 1})";
    REQUIRE(converge(pipeline, R"({"objective": "quadratic", "dimension": 16, "step_size": 0.03125})",
                     "--report " + report.path, &out) == 0);
    return read_json_file(report.path)["executed_staleness"];
  };
  const Json sync = executed("1f1b");
  CHECK(sync["max_delay"] == 0);
  CHECK(sync["mean_delay"] == 0.0);
  CHECK(sync["histogram"] == Json::parse(R"([{"delay": 0, "count": )" + sync["samples"].dump() + "}]"));
  // Every 1F1B gradient of a uniform 4-stage pipeline is applied after the other S - 1 = 3 stages' updates.
  CHECK(sync["block_updates_between"]["max"] == 3);
  const Json async = executed("pipedream");
  CHECK(async["max_delay"].get<int>() > 0);
  CHECK(async["max_delay"] == async["block_updates_between"]["max"]);
}
