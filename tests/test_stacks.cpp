// Training stacks as data (workloads/stack/stacks/*.json): resolution order stack -> preset -> experiment, conditional
// settings, words, the provenance a report lists, user stack files, and the rule that no code outside the loaders
// compares a preset or stack name.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>

#include "FileHelpers.hpp"
#include "Helpers.hpp"
#include "strategies/placement/Condition.hpp"
#include "strategies/placement/Presets.hpp"
#include "topology/cluster/Cluster.hpp"
#include "topology/hardware/Accelerator.hpp"
#include "traces/report/StackReport.hpp"
#include "workloads/json/Embedded.hpp"
#include "workloads/stack/Stack.hpp"

using namespace placesim;

namespace {

const std::string kLlama = R"("model": {"preset": "llama3-8b", "seq_len": 4096}, "training": {"global_batch": 64)";

Experiment with(const std::string& training_extra, const std::string& strategy, const std::string& top = "") {
  return test::experiment("{" + kLlama + training_extra + "}, \"strategy\": " + strategy + top + "}");
}

/// Every (file, name) where code compares a string literal that is a preset or stack name: `== "name"`, `"name" ==`,
/// `!=` alike. The preset "dp" is also the data axis's word ("dp0" in --trace-devices, "dp > 1" in a condition):
/// a comparison with it counts when its line speaks of a preset or a stack.
// The lines of `files` that compare a string literal naming one of `names`: == or != beside it, or a prefix test on
// it (starts_with, rfind, find). Each quoted occurrence is found by a plain search and only its line is matched. Mesh
// axis words ("dp", "tp") are spelt by parsers too: a line comparing one counts only when it mentions a preset or
// stack.
std::vector<std::string> name_comparisons(const std::vector<std::pair<std::string, std::string>>& files,
                                          const std::vector<std::string>& names) {
  static const std::regex equal_before(R"re((==|!=)\s*"[^"]*"$)re"), equal_after(R"re(^"[^"]*"\s*(==|!=))re"),
      prefix(R"re((starts_with|rfind|find)\(\s*"[^"]*"$)re");
  std::vector<std::string> out;
  for (const auto& [file, text] : files)
    for (const std::string& name : names) {
      const std::string quoted = "\"" + name + "\"";
      const bool axis_word = mesh_degree(StrategySpec{}, name) >= 0;
      for (std::size_t at = text.find(quoted); at != std::string::npos; at = text.find(quoted, at + 1)) {
        const std::size_t begin = text.rfind('\n', at) + 1, stop = text.find('\n', at);
        const std::string line = text.substr(begin, stop == std::string::npos ? std::string::npos : stop - begin);
        const std::size_t col = at - begin;
        const std::string before = line.substr(0, col + quoted.size()), after = line.substr(col);
        if (!std::regex_search(before, equal_before) && !std::regex_search(after, equal_after) &&
            !std::regex_search(before, prefix))
          continue;
        if (axis_word && line.find("preset") == std::string::npos && line.find("stack") == std::string::npos) continue;
        out.push_back(file + " compares \"" + name + "\": " + line);
      }
    }
  return out;
}

// Every name the data files define: stacks, strategy presets, accelerators (their profiles), fabrics and cluster
// presets.
std::vector<std::string> preset_and_stack_names() {
  std::vector<std::string> names = builtin_stack_names();
  for (const auto& [name, preset] : strategy_presets()) names.push_back(name);
  for (const std::string& name : builtin_profile_names()) names.push_back(name);
  for (const auto& [name, description] : cluster_preset_list()) names.push_back(name);
  for (const std::string& path : embedded_folder("topology/hardware/fabrics"))
    names.push_back(std::filesystem::path(path).stem().string());
  return names;
}

}  // namespace

TEST_CASE("Every built-in stack loads, names a family, and its conditions and fields are understood") {
  const std::vector<std::string> names = builtin_stack_names();
  REQUIRE(names.size() >= 4);
  for (const std::string& name : names) {
    INFO(name);
    const auto stack = find_stack(name, "stack", "");
    CHECK(stack->name == name);
    CHECK_FALSE(stack->family.empty());
    CHECK_FALSE(stack->memory.source.empty());
    for (const StackSetting& set : stack->settings) {
      INFO(set.field);
      CHECK_FALSE(set.source.empty());
      CHECK_NOTHROW(Condition(set.when, set.field));
    }
    for (const StackLimit& limit : stack->cannot_run) CHECK_NOTHROW(Condition(limit.when, "cannot_run"));
    // Every setting applies to a plain experiment on this stack without an error.
    CHECK_NOTHROW(with("", R"({"preset": "megatron-3d", "tp": 2, "pp": 2, "dp": 2})", ", \"stack\": \"" + name + "\""));
  }
}

TEST_CASE("Each strategy preset names a stack that exists, or none (placesim's default)") {
  for (const auto& [name, preset] : strategy_presets()) {
    INFO(name);
    if (!preset.stack.empty()) CHECK_NOTHROW(find_stack(preset.stack, "stack", ""));
  }
  CHECK_NOTHROW(find_stack(kDefaultStack, "stack", ""));
}

TEST_CASE("The stack's default loses to the preset's field, and both to the experiment's") {
  // torchtitan's stack supplies eager kernels; the experiment's "compiled" wins and is recorded as written.
  const Experiment fsdp = with("", R"({"preset": "fsdp", "dp": 16})");
  CHECK(fsdp.training.kernels == Kernels::Eager);
  CHECK(fsdp.provenance.find("training.kernels")->origin == Provenance::Origin::Stack);
  CHECK(fsdp.stack->name == "torchtitan-2024-12");
  CHECK(fsdp.stack_from == "preset");
  const Experiment compiled = with(R"(, "kernels": "compiled")", R"({"preset": "fsdp", "dp": 16})");
  CHECK(compiled.training.kernels == Kernels::Compiled);
  CHECK(compiled.provenance.written("training.kernels"));
  // megatron-3d's preset sets the schedule; a stack that sets none leaves it the preset's.
  const Experiment m3d = with("", R"({"preset": "megatron-3d", "tp": 2, "dp": 8})");
  CHECK(m3d.provenance.find("strategy.schedule")->origin == Provenance::Origin::Preset);
  CHECK(m3d.stack_from == "default");
  CHECK(m3d.stack->name == kDefaultStack);
}

TEST_CASE("A custom placement gets the same defaults as the preset with that placement under the same stack") {
  const std::string placement =
      R"("placement": {"parameters": "sharded-with-gather", "optimizer": "sharded", "gradients": "sharded",
          "activations": "replicated"})";
  const Experiment preset = with("", R"({"preset": "fsdp", "dp": 16, "pp": 1})");
  const Experiment custom = with("", "{\"dp\": 16, " + placement + "}", R"(, "stack": "torchtitan-2024-12")");
  CHECK(custom.stack_from == "experiment");
  CHECK(training_to_json(custom.training, custom.provenance) == training_to_json(preset.training, preset.provenance));
  Json a = strategy_to_json(custom.strategy), b = strategy_to_json(preset.strategy);
  a.erase("preset");
  b.erase("preset");
  CHECK(a == b);
}

TEST_CASE("Conditional stack settings apply where the layout meets them") {
  // Megatron-Core runs sequence parallelism with tp > 1 only (its arguments disable it at tp 1).
  CHECK(with("", R"({"preset": "megatron-core", "tp": 2, "dp": 8})").strategy.sp);
  CHECK_FALSE(with("", R"({"preset": "megatron-core", "tp": 1, "dp": 16})").strategy.sp);
  CHECK_FALSE(with("", R"({"preset": "megatron-core", "tp": 2, "dp": 8, "sp": false})").strategy.sp);
  // torchtitan keeps FSDP units gathered for the step under a pipeline only.
  CHECK_FALSE(with("", R"({"preset": "fsdp", "dp": 8, "pp": 2})").strategy.reshard_after_forward);
  CHECK(with("", R"({"preset": "fsdp", "dp": 16})").strategy.reshard_after_forward);
  // Its fp32 master weights as the parameters, except where the layout copies 16-bit weights (offloaded optimizer):
  // there the stack's setting does not apply, while the same value written is refused.
  const std::string offload =
      R"({"preset": "fsdp", "dp": 16, "placement": {"optimizer": "offloaded", "gradients": "offloaded"}})";
  const Experiment off = with("", offload);
  CHECK(off.training.master_weights == MasterWeights::Optimizer);
  CHECK_FALSE(off.provenance.present("training.master_weights"));
  CHECK_THROWS_WITH(with(R"(, "master_weights": "parameters")", offload),
                    Catch::Contains("training.master_weights=parameters with strategy.placement.optimizer=offloaded"));
  // Its foreach optimizer step only where the parameters are stepped in place.
  CHECK(with("", R"({"preset": "fsdp", "dp": 16})").training.optimizer_kernel == OptimizerKernel::Foreach);
  CHECK(off.training.optimizer_kernel == OptimizerKernel::Fused);
}

TEST_CASE("A stack's cannot_run list warns through the report and is data, not code") {
  const auto ds = find_stack("deepspeed-zero", "stack", "");
  REQUIRE_FALSE(ds->cannot_run.empty());
  const Condition when(ds->cannot_run.front().when, "when");
  const Experiment zero2_pp = with("", R"({"preset": "zero2", "dp": 8, "pp": 2})");
  const Experiment zero1_pp = with("", R"({"preset": "zero1", "dp": 8, "pp": 2})");
  CHECK(when.holds(zero2_pp.strategy, zero2_pp.training));
  CHECK_FALSE(when.holds(zero1_pp.strategy, zero1_pp.training));
}

TEST_CASE("Conditions in data files: comparisons and named predicates, unknown terms refused") {
  const Experiment e = with("", R"({"preset": "megatron-core", "tp": 4, "pp": 2, "dp": 2})");
  CHECK(Condition("tp > 1 and pp >= 2", "f").holds(e.strategy, e.training));
  CHECK_FALSE(Condition("tp > 1 and pp > 2", "f").holds(e.strategy, e.training));
  CHECK(Condition("dp == 2 and 16-bit and synchronous", "f").holds(e.strategy, e.training));
  CHECK_FALSE(Condition("gathered parameters", "f").holds(e.strategy, e.training));
  // The megatron-core preset's distributed optimizer is sharded; the dp preset's is not.
  CHECK(Condition("sharded optimizer and replicated gradients", "f").holds(e.strategy, e.training));
  const Experiment ddp = with("", R"({"preset": "dp", "dp": 4})");
  CHECK_FALSE(Condition("sharded optimizer", "f").holds(ddp.strategy, ddp.training));
  CHECK(Condition("", "f").holds(e.strategy, e.training));
  CHECK_THROWS_WITH(Condition("tp > one", "x.when"), Catch::Contains("x.when=\"tp > one\": the term \"tp > one\""));
  CHECK_THROWS_WITH(Condition("interleaved or tp > 1", "x.when"), Catch::Contains("is neither a comparison"));
}

TEST_CASE("An experiment names a stack by name or file; unknown names and bad files are refused") {
  CHECK_THROWS_WITH(with("", R"({"preset": "fsdp", "dp": 16})", R"(, "stack": "torchtitan-2024")"),
                    Catch::Contains("stack=torchtitan-2024 is not a training stack") &&
                        Catch::Contains("did you mean 'torchtitan-2024-12'"));
  CHECK_THROWS_WITH(with("", R"({"preset": "fsdp", "dp": 16})", R"(, "stack": 3)"),
                    Catch::Contains("stack=3 must be a training stack's name"));
  const test::TempDir tmp;
  const std::string dir = tmp.path;
  std::ofstream(dir + "/mine.json") << R"({"name": "mine", "family": "pytorch-fsdp", "title": "t", "version": "v",
      "settings": [{"field": "training.kernels", "value": "compiled", "source": "our trainer compiles"}],
      "memory": {"context": "0.5GB", "source": "measured on our node"}})";
  const Experiment mine = parse_experiment(
      Json::parse("{" + kLlama + R"(}, "strategy": {"preset": "fsdp", "dp": 16}, "stack": "mine.json"})"), dir);
  CHECK(mine.training.kernels == Kernels::Compiled);
  CHECK(mine.stack->memory.reserve_bytes() == Approx(0.5e9));
  std::ofstream(dir + "/bad.json") << R"({"name": "bad", "family": "f", "title": "t", "version": "v",
      "settings": [{"field": "strategy.tp", "value": 2, "source": "s"}], "memory": {"source": "s"}})";
  CHECK_THROWS_WITH(parse_experiment(Json::parse("{" + kLlama + R"(}, "strategy": "fsdp", "stack": "bad.json"})"), dir),
                    Catch::Contains("settings[0].field=strategy.tp is not a field a stack sets"));
}

TEST_CASE("The report names the stack and every default it supplied, with sources") {
  const Experiment fsdp = with("", R"({"preset": "fsdp", "dp": 8, "pp": 2})");
  const Json j = stack_json(fsdp);
  CHECK(j["name"] == "torchtitan-2024-12");
  CHECK(j["chosen"] == "the fsdp preset's; \"stack\" names another");
  bool reshard = false;
  for (const Json& s : j["supplied"]) {
    CHECK_FALSE(s["source"].get<std::string>().empty());
    reshard = reshard || (s["field"] == "strategy.reshard_after_forward" && s["value"] == false);
  }
  CHECK(reshard);
  CHECK_THAT(stack_summary(fsdp), Catch::StartsWith("  stack                torchtitan-2024-12 (the fsdp preset's"));
  CHECK_THAT(stack_summary(fsdp), Catch::Contains("strategy.reshard_after_forward=false"));
}

TEST_CASE("No code outside the loaders compares a preset or stack name") {
  std::vector<std::pair<std::string, std::string>> files;
  const std::filesystem::path root = PLACESIM_SOURCE_DIR;
  for (const char* top : {"workloads", "topology", "strategies", "traces", "sim"})
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root / top)) {
      const auto ext = entry.path().extension();
      if (ext != ".cpp" && ext != ".hpp") continue;
      std::ifstream in(entry.path());
      files.emplace_back(std::filesystem::relative(entry.path(), root).string(),
                         std::string(std::istreambuf_iterator<char>(in), {}));
    }
  REQUIRE(files.size() > 100);
  const std::vector<std::string> names = preset_and_stack_names();
  const auto found = name_comparisons(files, names);
  INFO((found.empty() ? std::string() : found.front()));
  CHECK(found.empty());
  // The check finds what it looks for: planted comparisons of each kind.
  CHECK(name_comparisons({{"a.cpp", R"(if (s.preset == "fsdp") x();)"}}, names).size() == 1);
  CHECK(name_comparisons({{"a.cpp", R"(return "megatron-core" != p;)"}}, names).size() == 1);
  CHECK(name_comparisons({{"a.cpp", R"(if (name == "torchtitan-2024-12"))"}}, names).size() == 1);
  CHECK(name_comparisons({{"a.cpp", R"(if (s.preset == "dp") x();)"}}, names).size() == 1);
  CHECK(name_comparisons({{"a.cpp", R"(const char* kDefault = "megatron-lm-2022";)"}}, names).empty());
  CHECK(name_comparisons({{"a.cpp", R"(if (word == "dp") return Axis::Dp;)"}}, names).empty());
  // Hardware names, and prefix tests on them.
  CHECK(name_comparisons({{"a.cpp", R"(if (acc.name == "b200") x();)"}}, names).size() == 1);
  CHECK(name_comparisons({{"a.cpp", R"(if (acc.name.rfind("h100-sxm", 0) == 0) x();)"}}, names).size() == 1);
  CHECK(name_comparisons({{"a.cpp", R"(if (c.name.starts_with("gb200-nvl72")) x();)"}}, names).size() == 1);
  CHECK(name_comparisons({{"a.cpp", R"(accelerator_preset("b200", "field");)"}}, names).empty());
}

TEST_CASE("placesim stacks lists the stacks and shows one with its sources; --stack selects one") {
  std::string out;
  REQUIRE(test::run_placesim("stacks", &out) == 0);
  for (const std::string& name : builtin_stack_names()) CHECK(out.find(name) != std::string::npos);
  REQUIRE(test::run_placesim("stacks torchtitan-2024-12", &out) == 0);
  CHECK_THAT(out, Catch::Contains("training.kernels = \"eager\"") && Catch::Contains("9dec370"));
  REQUIRE(test::run_placesim("stacks --json", &out) == 0);
  CHECK(Json::parse(out).size() == builtin_stack_names().size());
  CHECK(test::run_placesim("stacks nonsense", &out) == 2);
  REQUIRE(test::run_placesim("analyze examples/llama3-8b-fsdp.json --stack megatron-core-0.9 --table", &out) == 0);
  CHECK_THAT(out, Catch::Contains("stack                megatron-core-0.9 (named by the experiment"));
}
