// Enum names as data (workloads/json/EnumNames.hpp): the generic lookups on a small table, and for real enums a
// round trip name -> value -> name over every name the docs list, so that a parser and its to_string cannot disagree.
// The expected names are the docs' (docs/experiment.md, docs/cli.md), written out here by hand.
#include <catch2/catch.hpp>
#include <functional>

#include "strategies/graph/SimResult.hpp"
#include "strategies/pipeline/PipelineSchedule.hpp"
#include "strategies/placement/Placement.hpp"
#include "strategies/placement/Strategy.hpp"
#include "topology/hardware/CommProfile.hpp"
#include "traces/chrome/TraceOptions.hpp"
#include "workloads/json/EnumNames.hpp"
#include "workloads/model/Training.hpp"

using namespace placesim;

namespace {

enum class Colour { Red, Green, Blue };
constexpr EnumName<Colour> kColours[] = {{Colour::Red, "red"}, {Colour::Green, "green"}};

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("enum names: lookups both ways on a table, its order kept for messages") {
  CHECK(std::string(name_of(kColours, Colour::Green)) == "green");
  SECTION("a value the table lacks gets the fallback") {
    CHECK(std::string(name_of(kColours, Colour::Blue)) == "?");
    CHECK(std::string(name_of(kColours, Colour::Blue, "red")) == "red");
  }
  CHECK(value_named(kColours, "red") == Colour::Red);
  CHECK_FALSE(value_named(kColours, "blue").has_value());
  CHECK_FALSE(value_named(kColours, "Red").has_value());  // names are matched exactly, case included
  CHECK(enum_names(kColours) == std::vector<std::string>{"red", "green"});
  CHECK(joined_names(kColours, ", ") == "red, green");
}

TEST_CASE("enum names: get_enum reads a field, refuses others naming the choices, and falls back") {
  Json object = Json::parse(R"({"colour": "green", "shade": "ultraviolet"})");
  ObjectReader r(object, "paint");
  CHECK(get_enum(r, "colour", kColours, Colour::Red) == Colour::Green);
  CHECK(get_enum(r, "hue", kColours, Colour::Red) == Colour::Red);  // absent: the fallback
  CHECK(message_of([&] { get_enum(r, "shade", kColours, Colour::Red); }) ==
        "paint.shade=ultraviolet is not one of: red green");
  ErrorList errors("paint.json");
  ObjectReader collecting(object, "paint", &errors);
  CHECK(get_enum(collecting, "shade", kColours, Colour::Red) == Colour::Red);
  CHECK(errors.size() == 1);
}

TEST_CASE("enum names: placement modes round trip, long and short (docs/experiment.md strategy.placement)") {
  const std::vector<std::pair<std::string, std::string>> modes = {{"replicated", "R"},
                                                                  {"sharded", "S"},
                                                                  {"sharded-with-gather", "SG"},
                                                                  {"materialized", "M"},
                                                                  {"offloaded", "Off"}};
  for (const auto& [name, short_form] : modes) {
    CHECK(to_string(parse_mode(name, "f")) == name);
    CHECK(short_name(parse_mode(name, "f")) == short_form);
    CHECK(to_string(parse_mode(short_form, "f")) == name);
  }
  CHECK(to_string(State::Optimizer) == "optimizer");
  CHECK(message_of([] { parse_mode("shard", "strategy.placement.parameters"); }) ==
        "strategy.placement.parameters=shard is not a placement mode (replicated, sharded, sharded-with-gather, "
        "materialized, offloaded); did you mean 'sharded'?");
}

TEST_CASE("enum names: schedules, fidelities and trace details round trip (docs/experiment.md, docs/cli.md)") {
  for (const char* name : {"gpipe", "1f1b", "interleaved", "pipedream", "pipedream-2bw", "localsgd", "zb-h1", "zb-h2",
                           "zb-v", "dualpipev"})
    CHECK(to_string(schedule_named(name)) == name);
  for (const char* name : {"analytic", "flow", "full"})
    CHECK(std::string(to_string(parse_fidelity(name, "f"))) == name);
  CHECK(message_of([] { parse_fidelity("fast", "--fidelity"); }) ==
        "--fidelity=fast is not one of: analytic flow full");
  for (const char* name : {"coarse", "fine"}) CHECK(std::string(to_string(parse_trace_detail(name))) == name);
  CHECK(message_of([] { parse_trace_detail("all"); }) ==
        "--trace-detail=all is not a detail level (use coarse or fine)");
}

TEST_CASE("enum names: collectives and their algorithms round trip (docs/calibration.md collectives)") {
  for (const char* name : {"all-reduce", "all-gather", "reduce-scatter", "broadcast", "reduce", "send-recv"})
    CHECK(to_string(parse_collective_kind(name, "kind")) == name);
  // Of two names equally near, the guess is the alphabetically first: "all" begins all-gather and all-reduce.
  CHECK(message_of([] { parse_collective_kind("all", "kind"); }) ==
        "kind=all is not a collective (did you mean 'all-gather'?)");
  for (const char* name : {"ring", "tree", "nvls"})
    CHECK(to_string(parse_collective_algorithm(name, "algorithm")) == name);
  CHECK(message_of([] { parse_collective_algorithm("direct", "algorithm"); }) ==
        "algorithm=direct is not a collective algorithm (ring, tree, nvls)");
}

TEST_CASE("enum names: training's choices round trip through parse_training (docs/experiment.md training)") {
  auto field = [](const char* key, const std::string& value) {
    Json j = Json::object();
    j[key] = value;
    return parse_training(j);
  };
  for (const char* name : {"vocab-parallel", "pytorch", "fused"})
    CHECK(to_string(field("loss_kernel", name).loss_kernel) == name);
  for (const char* name : {"none", "selective", "selective-op", "full"})
    CHECK(to_string(field("recompute", name).recompute) == name);
  for (const char* name : {"bf16", "fp16", "fp32"}) CHECK(to_string(field("dtype", name).dtype) == name);
  CHECK(recompute_names() == std::vector<std::string>{"none", "selective", "selective-op", "full"});
}
