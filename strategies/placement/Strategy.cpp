#include "strategies/placement/Strategy.hpp"

#include <map>

namespace placesim {

namespace {

struct Preset {
  const char* description;
  const char* fields;
};

// DESIGN §1, written P/O/G/A: DP = R/R/R/R, ZeRO-1 = R/S/R/R, ZeRO-2 = R/S/S/R, ZeRO-3 = FSDP = SG/S/S/R,
// ZeRO-Offload = R/Off/Off/R. Megatron-3D is DP along the data axis composed with TP and PP (1F1B), with activations
// recomputed as in Narayanan et al. (arXiv 2104.04473), which GPT-3 on 80 GB A100s needs.
const std::map<std::string, Preset>& presets() {
  static const std::map<std::string, Preset> table = {
      {"dp",
       {"data parallel, all states replicated (R/R/R/R)",
        R"({"placement":{"parameters":"replicated","optimizer":"replicated","gradients":"replicated","activations":"replicated"}})"}},
      {"zero1",
       {"ZeRO stage 1: optimizer sharded (R/S/R/R)",
        R"({"placement":{"parameters":"replicated","optimizer":"sharded","gradients":"replicated","activations":"replicated"}})"}},
      {"zero2",
       {"ZeRO stage 2: optimizer and gradients sharded (R/S/S/R)",
        R"({"placement":{"parameters":"replicated","optimizer":"sharded","gradients":"sharded","activations":"replicated"}})"}},
      {"zero3",
       {"ZeRO stage 3: parameters gathered per layer, all sharded (SG/S/S/R)",
        R"({"placement":{"parameters":"sharded-with-gather","optimizer":"sharded","gradients":"sharded","activations":"replicated"}})"}},
      {"fsdp",
       {"PyTorch FSDP full sharding, same placement as ZeRO-3 (SG/S/S/R)",
        R"({"placement":{"parameters":"sharded-with-gather","optimizer":"sharded","gradients":"sharded","activations":"replicated"}})"}},
      {"zero-offload",
       {"ZeRO-Offload: optimizer and gradients in host memory, CPU Adam (R/Off/Off/R)",
        R"({"placement":{"parameters":"replicated","optimizer":"offloaded","gradients":"offloaded","activations":"replicated"}})"}},
      {"megatron-3d",
       {"Megatron-LM 3D: dp x tp x pp, 1F1B, Megatron pipeline exchange, activation recomputation (R/R/R/M)",
        R"({"schedule":"1f1b","placement":{"parameters":"replicated","optimizer":"replicated","gradients":"replicated","activations":"materialized"}})"}},
  };
  return table;
}

Json preset_json(const std::string& name, const std::string& field) {
  auto it = presets().find(name);
  if (it == presets().end())
    refuse_name(field, name, "a strategy preset", names_of(presets()), " (see `placesim presets`)");
  return Json::parse(it->second.fields);
}

Schedule parse_schedule(const std::string& s) {
  if (s == "gpipe") return Schedule::GPipe;
  if (s == "1f1b") return Schedule::OneFOneB;
  if (s == "interleaved") return Schedule::Interleaved;
  if (s == "pipedream") return Schedule::PipeDream;
  if (s == "pipedream-2bw") return Schedule::PipeDream2BW;
  return Schedule::LocalSGD;
}

Placement parse_placement(const Json& value) {
  ObjectReader r(value, "strategy.placement");
  Placement p;
  auto mode = [&](const char* key, Mode fallback) {
    return r.has(key) ? parse_mode(r.get_string(key, ""), r.field(key)) : fallback;
  };
  p.parameters = mode("parameters", p.parameters);
  p.gradients = mode("gradients", p.gradients);
  p.optimizer = mode("optimizer", p.optimizer);
  p.activations = mode("activations", p.activations);
  r.finish();
  return p;
}

StrategySpec read_strategy_object(const Json& object) {
  ObjectReader r(object, "strategy");
  StrategySpec s;
  s.preset = r.get_string("preset", "custom");
  s.dp = r.get_positive_int("dp", 1);
  s.tp = r.get_positive_int("tp", 1);
  s.pp = r.get_positive_int("pp", 1);
  for (const char* axis : {"cp", "ep"}) {
    if (r.get_positive_int(axis, 1) != 1)
      throw InputError(r.field(axis) + "=" + show(object[axis]) + ": " +
                       (std::string(axis) == "cp" ? "context" : "expert") +
                       " parallelism is not supported yet; only 1 is accepted");
  }
  s.sp = r.get_bool("sp", false);
  s.tp_overlap = r.get_bool("tp_overlap", true);
  s.schedule = parse_schedule(
      r.get_choice("schedule", {"gpipe", "1f1b", "interleaved", "pipedream", "pipedream-2bw", "localsgd"}, "1f1b"));
  s.p2p =
      r.get_choice("p2p", {"async", "megatron"}, "megatron") == "megatron" ? PipelineP2P::Megatron : PipelineP2P::Async;
  s.microbatches = r.get_positive_int("microbatches", 0);
  s.chunks = r.get_positive_int("chunks", 1);
  if (r.has("noam")) {
    std::int64_t noam = r.get_int("noam", 0);
    if (noam < 1) throw InputError(r.field("noam") + "=" + std::to_string(noam) + " must be at least 1");
    s.noam = noam;
  }
  s.replicas = r.get_positive_int("replicas", 1);
  s.local_steps = r.get_int("local_steps", 1);
  if (s.local_steps < 1)
    throw InputError(r.field("local_steps") + "=" + std::to_string(s.local_steps) + " must be at least 1");
  s.bucket_bytes = r.get_positive("bucket_bytes", 25e6);
  // Both algorithms send 2(N-1)/N of an all-reduce's buffer per device, so the analytic volumes hold for either.
  s.collective = r.get_choice("collective", {"ring", "hierarchical"}, "ring") == "hierarchical"
                     ? CollectiveScheme::Hierarchical
                     : CollectiveScheme::Ring;
  if (const Json* p = r.child("placement")) s.placement = parse_placement(*p);
  r.finish();
  return s;
}

}  // namespace

StrategySpec parse_strategy(const Json& value) {
  if (value.is_string()) {
    Json merged = preset_json(value.get<std::string>(), "strategy");
    merged["preset"] = value;
    return read_strategy_object(merged);
  }
  if (!value.is_object()) throw InputError("strategy=" + show(value) + " must be a preset name or an object");
  Json merged = Json::object();
  if (value.contains("preset")) {
    if (!value["preset"].is_string())
      throw InputError("strategy.preset=" + show(value["preset"]) + " must be a string");
    merged = preset_json(value["preset"].get<std::string>(), "strategy.preset");
  }
  merged.merge_patch(value);
  return read_strategy_object(merged);
}

std::string to_string(PipelineP2P p) {
  return p == PipelineP2P::Megatron ? "megatron" : "async";
}

std::string to_string(CollectiveScheme c) {
  return c == CollectiveScheme::Hierarchical ? "hierarchical" : "ring";
}

std::string to_string(Schedule s) {
  switch (s) {
    case Schedule::GPipe:
      return "gpipe";
    case Schedule::OneFOneB:
      return "1f1b";
    case Schedule::Interleaved:
      return "interleaved";
    case Schedule::PipeDream:
      return "pipedream";
    case Schedule::PipeDream2BW:
      return "pipedream-2bw";
    case Schedule::LocalSGD:
      return "localsgd";
  }
  return "?";
}

std::vector<std::pair<std::string, std::string>> strategy_preset_list() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, p] : presets()) out.emplace_back(name, p.description);
  return out;
}

}  // namespace placesim
