// One throwing test per validation rule: every refusal names the state or field, the axis and the rule.
#include <algorithm>
#include <catch2/catch.hpp>

#include "strategies/analytic/Validity.hpp"
#include "strategies/placement/Layout.hpp"
#include "tests/Helpers.hpp"

using namespace placesim;

namespace {

void check(const std::string& text) {
  check_validity(test::experiment(text));
}

}  // namespace

TEST_CASE("Valid strategies pass the checker") {
  for (const char* preset : {"dp", "zero1", "zero2", "zero3", "fsdp", "zero-offload", "megatron-3d", "megatron-core"})
    CHECK_NOTHROW(check(R"({"model": "gpt-7.5b", "strategy": {"preset": ")" + std::string(preset) + R"(", "dp": 8}})"));
  CHECK_NOTHROW(
      check(R"({"model": "gpt3-175b", "training": {"global_batch": 1536, "micro_batch": 1, "recompute": "selective"},
                          "strategy": {"preset": "megatron-3d", "tp": 8, "pp": 8, "dp": 16, "sp": true}})"));
}

TEST_CASE("tp must divide heads") {
  CHECK_THROWS_WITH(check(R"({"model": "gpt-7.5b", "strategy": {"tp": 3}})"),
                    Catch::Contains("strategy.tp=3 does not divide model.heads=32"));
}

TEST_CASE("tp must divide the key-value heads of a GQA model") {
  CHECK_THROWS_WITH(check(R"({"model": "llama3-8b", "strategy": {"tp": 16}})"),
                    Catch::Contains("strategy.tp=16 does not divide model.kv_heads=8"));
}

TEST_CASE("pp may split the layers unevenly, interleaved or not") {
  // 36 layers on 5 x 2 virtual stages: 4 each less 4 surplus from virtual stages 0, 9, 1, 8.
  CHECK_NOTHROW(
      check(R"({"model": "gpt-7.5b", "strategy": {"pp": 5, "schedule": "interleaved", "microbatches": 10}})"));
  CHECK_NOTHROW(check(R"({"model": "gpt-7.5b", "strategy": {"pp": 5}})"));
  CHECK_THROWS_WITH(check(R"({"model": "gpt-7.5b", "strategy": {"pp": 37}})"),
                    Catch::Contains("strategy.pp=37 exceeds model.layers=36"));
}

TEST_CASE("The uneven split takes a layer off the end stages first") {
  // Llama 3 405B: 126 layers on 16 stages, as Meta split it: 7, 8 x 14, 7.
  std::vector<std::int64_t> llama = stage_layer_counts(126, 16);
  CHECK(llama.front() == 7);
  CHECK(llama.back() == 7);
  CHECK(std::count(llama.begin(), llama.end(), 8) == 14);
  // 36 layers on 5 stages: ceil 8, surplus 4: stages 0, 4, 1, 3 give one up -> 7, 7, 8, 7, 7.
  CHECK(stage_layer_counts(36, 5) == std::vector<std::int64_t>{7, 7, 8, 7, 7});
  CHECK(stage_layer_counts(36, 4) == std::vector<std::int64_t>{9, 9, 9, 9});
}

TEST_CASE("Sequence parallelism needs a tensor-parallel group") {
  CHECK_THROWS_WITH(check(R"({"model": "gpt-7.5b", "strategy": {"sp": true}})"),
                    Catch::Contains("strategy.sp=true needs strategy.tp > 1"));
}

TEST_CASE("Sharded gradients with a replicated optimizer break gradient integrity") {
  CHECK_THROWS_WITH(check(R"({"model": "gpt-7.5b", "strategy": {"dp": 8, "placement": {"gradients": "sharded"}}})"),
                    Catch::Contains("gradients=sharded with optimizer=replicated along dp") &&
                        Catch::Contains("breaks gradient integrity"));
}

TEST_CASE("Parameters sharded without gather break state consistency") {
  CHECK_THROWS_WITH(check(R"({"model": "gpt-7.5b", "strategy": {"preset": "zero3", "dp": 8,
                                "placement": {"parameters": "sharded"}}})"),
                    Catch::Contains("parameters=sharded along dp") && Catch::Contains("breaks state consistency"));
}

TEST_CASE("States that cannot be recomputed cannot be materialized") {
  CHECK_THROWS_WITH(check(R"({"model": "gpt-7.5b", "strategy": {"placement": {"optimizer": "materialized"}}})"),
                    Catch::Contains("optimizer=materialized") && Catch::Contains("state consistency"));
  CHECK_THROWS_WITH(check(R"({"model": "gpt-7.5b", "strategy": {"placement": {"gradients": "materialized"}}})"),
                    Catch::Contains("gradients=materialized") && Catch::Contains("gradient integrity"));
  CHECK_THROWS_WITH(check(R"({"model": "gpt-7.5b", "strategy": {"placement": {"parameters": "materialized"}}})"),
                    Catch::Contains("parameters=materialized"));
}

TEST_CASE("Offloaded gradients need the optimizer where they go") {
  CHECK_THROWS_WITH(
      check(R"({"model": "gpt-7.5b", "strategy": {"preset": "zero-offload", "dp": 4,
                                "placement": {"optimizer": "sharded"}}})"),
      Catch::Contains("gradients=offloaded with optimizer=sharded") && Catch::Contains("gradient integrity"));
}

TEST_CASE("Offloaded parameters need an offloaded optimizer") {
  CHECK_THROWS_WITH(check(R"({"model": "gpt-7.5b", "strategy": {"placement": {"parameters": "offloaded"}}})"),
                    Catch::Contains("parameters=offloaded with optimizer=replicated"));
}

TEST_CASE("Activations cannot be sharded along dp") {
  CHECK_THROWS_WITH(check(R"({"model": "gpt-7.5b", "strategy": {"placement": {"activations": "sharded"}}})"),
                    Catch::Contains("activations=sharded along dp"));
}

TEST_CASE("Interleaving needs groups of at least pp micro-batches; chunks need not divide the layers") {
  CHECK_NOTHROW(check(
      R"({"model": "gpt-7.5b", "strategy": {"pp": 4, "schedule": "interleaved", "chunks": 2, "microbatches": 8}})"));
  CHECK_THROWS_WITH(
      check(
          R"({"model": "gpt-7.5b", "strategy": {"pp": 4, "schedule": "interleaved", "chunks": 3, "microbatches": 6}})"),
      Catch::Contains("strategy.microbatches=6 leaves a last group of 2 micro-batches (groups of 4)"));
  CHECK_THROWS_WITH(check(R"({"model": "gpt-7.5b", "strategy": {"pp": 4, "chunks": 3}})"),
                    Catch::Contains("strategy.chunks=3 is only meaningful with strategy.schedule=interleaved"));
}

TEST_CASE("Batch arithmetic and degrees are checked when the experiment is parsed") {
  CHECK_THROWS_WITH(
      test::experiment(R"({"model": "gpt-7.5b", "training": {"global_batch": 100}, "strategy": {"dp": 8}})"),
      Catch::Contains("training.global_batch=100 is not a multiple of training.micro_batch x strategy.dp"));
  CHECK_THROWS_WITH(test::experiment(R"({"model": "gpt-7.5b", "strategy": {"dp": 0}})"),
                    Catch::Contains("strategy.dp=0 must be a positive integer"));
  CHECK_THROWS_WITH(test::experiment(R"({"model": "gpt-7.5b", "strategy": {"tp": 2.5}})"),
                    Catch::Contains("strategy.tp=2.5 must be a positive integer"));
  CHECK_THROWS_WITH(test::experiment(R"({"model": "gpt-7.5b", "strategy": {"pp": -2}})"),
                    Catch::Contains("strategy.pp=-2 must be a positive integer"));
  CHECK_THROWS_WITH(test::experiment(R"({"model": "gpt-7.5b", "strategy": {"noam": 0, "schedule": "pipedream"}})"),
                    Catch::Contains("strategy.noam=0 must be at least 1"));
}

TEST_CASE("A model that does not fit the device memory is refused with its breakdown") {
  // 16 bytes per parameter in fp16 mixed precision (2 + 2 + 12): 120 GB.
  Experiment e =
      test::experiment(R"({"model": {"parameters": 7.5e9}, "training": {"dtype": "fp16"}, "strategy": "dp"})");
  e.device_memory_bytes = 80.0 * (1ull << 30);
  CHECK_THROWS_WITH(check_fits(e, analyze(e)),
                    Catch::Contains("memory: the model does not fit: a device needs 120 GB") &&
                        Catch::Contains("device memory is 85.9 GB"));
  e = test::experiment(R"({"model": {"parameters": 7.5e9}, "strategy": {"preset": "zero3", "dp": 64}})");
  e.device_memory_bytes = 80.0 * (1ull << 30);
  CHECK_NOTHROW(check_fits(e, analyze(e)));
}
