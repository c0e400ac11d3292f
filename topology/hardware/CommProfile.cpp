#include "topology/hardware/CommProfile.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "workloads/json/Embedded.hpp"
#include "workloads/json/EnumNames.hpp"
#include "workloads/json/Numbers.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

namespace {

constexpr const char* kFabricFolder = "topology/hardware/fabrics";

struct BuiltinFabric {
  FabricProfile fabric;
  std::string description;
};

// The built-in fabrics: topology/hardware/fabrics/<name>.json, each the fabric object a user would write (a file may
// start from another built-in one with "preset") plus its description. Files naming no preset are read first.
std::map<std::string, BuiltinFabric> load_builtin();

const std::map<std::string, BuiltinFabric>& builtin() {
  static const auto table = load_builtin();
  return table;
}

std::map<std::string, BuiltinFabric> load_builtin() {
  std::map<std::string, BuiltinFabric> out;
  for (bool derived : {false, true})
    for (const std::string& path : embedded_folder(kFabricFolder)) {
      Json j = embedded_json(path);
      if (j.contains("preset") != derived) continue;
      ObjectReader r(j, path);
      const std::string description = r.require_string("description");
      j.erase("description");
      FabricProfile f;
      if (derived) {
        const std::string base = j["preset"].is_string() ? j["preset"].get<std::string>() : "";
        auto it = out.find(base);
        if (it == out.end()) throw InputError(path + ": preset=" + base + " is not a built-in fabric without a preset");
        j.erase("preset");
        Json merged = fabric_profile_to_json(it->second.fabric);
        merged.update(j);
        f = parse_fabric_profile(merged, path);
      } else {
        f = parse_fabric_profile(j, path);
      }
      check_named_after_file(path, f.name);
      out.emplace(f.name, BuiltinFabric{f, description});
    }
  return out;
}

}  // namespace

FabricProfile fabric_preset(const std::string& name, const std::string& field) {
  auto it = builtin().find(name);
  if (it == builtin().end())
    refuse_name(field, name, "a known fabric", names_of(builtin()), known_names(names_of(builtin())));
  return it->second.fabric;
}

std::vector<std::pair<std::string, std::string>> fabric_preset_list() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, b] : builtin()) out.emplace_back(name, b.description);
  return out;
}

namespace {

// How a fabric file gives one of its figures.
enum class FabricUnit {
  Bandwidth,  // positive, with a unit ("100 GB/s")
  Fraction,   // in (0, 1]
  Share,      // in [0, 1], 0 = none
  Time,       // non-negative, with a unit ("2us")
  Plain,      // non-negative
};

// One figure of a fabric: its key in a fabric object, its member, its unit, and whether a fabric without a preset
// must give it.
struct FabricField {
  const char* key;
  double FabricProfile::*member;
  FabricUnit unit;
  bool required;
};

constexpr FabricField kFabricFields[] = {
    {"link_bw", &FabricProfile::link_bw_Bps, FabricUnit::Bandwidth, true},
    {"bus_efficiency", &FabricProfile::bus_efficiency, FabricUnit::Fraction, true},
    {"step_latency", &FabricProfile::step_latency_s, FabricUnit::Time, true},
    {"ll_bus_efficiency", &FabricProfile::ll_bus_efficiency, FabricUnit::Share, false},
    {"ll_step_latency", &FabricProfile::ll_step_latency_s, FabricUnit::Time, false},
    {"nvls_bus_efficiency", &FabricProfile::nvls_bus_efficiency, FabricUnit::Plain, false},
    {"nvls_latency", &FabricProfile::nvls_latency_s, FabricUnit::Time, false},
};

void read_figure(ObjectReader& r, const FabricField& f, FabricProfile& out) {
  double& v = out.*f.member;
  if (f.unit == FabricUnit::Bandwidth)
    v = r.get_positive(f.key, v, parse_bandwidth);
  else if (f.unit == FabricUnit::Fraction)
    v = r.get_fraction(f.key, v);
  else
    v = r.get_non_negative(f.key, v, f.unit == FabricUnit::Time ? parse_time : nullptr);
  if (f.unit == FabricUnit::Share) r.check(v <= 1, f.key, "must be in [0, 1] (0 = none)");
}

}  // namespace

FabricProfile parse_fabric_profile(const Json& value, const std::string& field) {
  if (value.is_string()) return fabric_preset(value.get<std::string>(), field);
  ObjectReader r(value, field);
  FabricProfile f;
  bool base = r.has("preset");
  if (base)
    f = fabric_preset(r.get_string("preset", ""), r.field("preset"));
  else
    for (const FabricField& figure : kFabricFields)
      if (figure.required) r.require(figure.key);
  f.name = r.get_string("name", f.name);
  for (const FabricField& figure : kFabricFields) read_figure(r, figure, f);
  f.sources = r.get_strings("sources", f.sources);
  r.finish();
  return f;
}

CommProfile parse_comm_profile(const Json& value, const std::string& field) {
  ObjectReader r(value, field);
  CommProfile c;
  for (auto [key, target] : {std::pair{"intra_node", &c.intra_node}, {"inter_node", &c.inter_node}})
    *target = parse_fabric_profile(r.require(key), r.field(key));
  r.finish();
  return c;
}

Json fabric_profile_to_json(const FabricProfile& f) {
  Json j{{"name", f.name}};
  for (const FabricField& figure : kFabricFields) j[figure.key] = f.*figure.member;
  j["sources"] = f.sources;
  return j;
}

namespace {

// One protocol's time for a collective whose slowest ring hop has latency a and bandwidth B.
double protocol_time_s(CollectiveKind kind, CollectiveAlgorithm algorithm, double bytes, double n, double a, double B) {
  if (kind == CollectiveKind::AllReduce && algorithm == CollectiveAlgorithm::Tree)
    return 2.0 * std::ceil(std::log2(n)) * a + 2.0 * bytes / B;
  switch (kind) {
    case CollectiveKind::AllReduce:
      return 2.0 * (n - 1) * (a + bytes / (n * B));
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter:
      return (n - 1) * (a + bytes / (n * B));
    case CollectiveKind::Broadcast:
    case CollectiveKind::Reduce:
      return (n - 1) * a + bytes / B;
    case CollectiveKind::SendRecv:
      return a + bytes / B;
  }
  return 0;
}

}  // namespace

CollectivePlan plan_collective(CollectiveKind kind, CollectiveAlgorithm algorithm, double bytes, int ranks,
                               const FabricProfile& f, const RingHop& hop) {
  if (ranks < 1) throw InputError("collective over ranks=" + std::to_string(ranks) + ": need at least one rank");
  if (!(bytes >= 0)) throw InputError("collective of bytes=" + format_significant(bytes) + ": must not be negative");
  const bool nvls = algorithm == CollectiveAlgorithm::Nvls;
  if (nvls && !f.has_nvls()) throw InputError("fabric " + f.name + " has no NVLink SHARP (nvls_bus_efficiency=0)");
  if (ranks == 1) return {algorithm, false, 0};
  const double n = ranks;
  // NVLS stands for "NVLS available": the rings below compete with it.
  const CollectiveAlgorithm shape = nvls ? CollectiveAlgorithm::Ring : algorithm;
  CollectivePlan best{shape, false, protocol_time_s(kind, shape, bytes, n, hop.latency_s, hop.bw_Bps)};
  if (f.has_low_latency_protocol()) {
    const double a = std::max(0.0, hop.latency_s - (f.step_latency_s - f.ll_step_latency_s));
    const double t = protocol_time_s(kind, shape, bytes, n, a, hop.bw_Bps * f.ll_bus_efficiency / f.bus_efficiency);
    if (t < best.time_s) best = {shape, true, t};
  }
  if (nvls && kind == CollectiveKind::AllReduce) {
    const double t =
        f.nvls_latency_s + 2.0 * (n - 1) / n * bytes / (hop.bw_Bps * f.nvls_bus_efficiency / f.bus_efficiency);
    if (t < best.time_s) best = {CollectiveAlgorithm::Nvls, false, t};
  }
  return best;
}

double collective_time_s(CollectiveKind kind, CollectiveAlgorithm algorithm, double bytes, int ranks,
                         const FabricProfile& f) {
  return plan_collective(kind, algorithm, bytes, ranks, f, RingHop{f.step_latency_s, f.bus_bw_Bps()}).time_s;
}

double bus_bandwidth_Bps(CollectiveKind kind, double bytes, int ranks, double time_s) {
  const double n = ranks, algbw = bytes / time_s;
  switch (kind) {
    case CollectiveKind::AllReduce:
      return algbw * 2.0 * (n - 1) / n;
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter:
      return algbw * (n - 1) / n;
    default:
      return algbw;
  }
}

namespace {

constexpr EnumName<CollectiveKind> kCollectiveKindNames[] = {{CollectiveKind::AllReduce, "all-reduce"},
                                                             {CollectiveKind::AllGather, "all-gather"},
                                                             {CollectiveKind::ReduceScatter, "reduce-scatter"},
                                                             {CollectiveKind::Broadcast, "broadcast"},
                                                             {CollectiveKind::Reduce, "reduce"},
                                                             {CollectiveKind::SendRecv, "send-recv"}};

constexpr EnumName<CollectiveAlgorithm> kCollectiveAlgorithmNames[] = {
    {CollectiveAlgorithm::Ring, "ring"}, {CollectiveAlgorithm::Tree, "tree"}, {CollectiveAlgorithm::Nvls, "nvls"}};

}  // namespace

CollectiveKind parse_collective_kind(const std::string& text, const std::string& field) {
  if (auto k = value_named(kCollectiveKindNames, text)) return *k;
  // The guess is taken from the names in alphabetical order: of two equally near, the first there.
  std::vector<std::string> names = enum_names(kCollectiveKindNames);
  std::sort(names.begin(), names.end());
  std::string guess = nearest(text, names);
  throw InputError(field + "=" + text + " is not a collective" +
                   (guess.empty() ? "" : " (did you mean '" + guess + "'?)"));
}

CollectiveAlgorithm parse_collective_algorithm(const std::string& text, const std::string& field) {
  if (auto a = value_named(kCollectiveAlgorithmNames, text)) return *a;
  throw InputError(field + "=" + text + " is not a collective algorithm (" +
                   joined_names(kCollectiveAlgorithmNames, ", ") + ")");
}

std::string to_string(CollectiveKind k) {
  return name_of(kCollectiveKindNames, k);
}

std::string to_string(CollectiveAlgorithm a) {
  return name_of(kCollectiveAlgorithmNames, a, "nvls");
}

}  // namespace placesim
