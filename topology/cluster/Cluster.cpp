#include "topology/cluster/Cluster.hpp"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>

#include "workloads/json/Embedded.hpp"
#include "workloads/json/EnumNames.hpp"
#include "workloads/json/Numbers.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

namespace {

// Upper bounds of the numeric fields, past which a figure is a unit mistake and the step it gives absurd (1e300
// oversubscription made a step of 7e295 s). A node is one NVLink domain: 8 GPUs in a DGX, 72 in a GB200 NVL72 rack,
// 576 in the largest announced (NVL576). Fabrics are built at 1:1 to 8:1 leaf oversubscription. Link latencies are
// microseconds; a link between continents takes 0.1 s. (Bandwidths have none: a huge one makes transfers vanish,
// which tests use; a tiny one is refused by the longest transfer simulate estimates.)
constexpr int kMaxGpusPerNode = 1024;
constexpr double kMaxOversubscription = 64, kMaxLatencySeconds = 1;
// The most of a shared switch link cluster.background_load may give to other jobs.
constexpr double kMostBackground = 0.95;
// The slowest speed cluster.speed_spread draws: a tail below it is a failing GPU, for cluster.slow to name.
constexpr double kSlowestDrawn = 0.5;

constexpr EnumName<FabricTopology> kFabricTopologyNames[] = {{FabricTopology::FatTree, "fat-tree"},
                                                             {FabricTopology::RailOptimized, "rail-optimized"}};
constexpr EnumName<CommModel> kCommModelNames[] = {{CommModel::Nccl, "nccl"}, {CommModel::Links, "links"}};

constexpr const char* kPresetFolder = "topology/cluster/presets";

// A built-in cluster: topology/cluster/presets/<name>.json, the "cluster" section a user would write (it may start
// from another preset with "preset"), its description and its sources. parse_cluster reads its fields when it is named.
struct ClusterPresetFile {
  std::string name;
  std::string description;
  Json fields;  ///< the file without description and sources
};

ClusterPresetFile read_preset_file(const Json& value, const std::string& path) {
  if (!value.is_object()) throw InputError(path + " must be an object: a cluster section with description and sources");
  for (const char* key : {"name", "description"})
    if (!value.contains(key) || !value[key].is_string()) throw InputError(path + ": " + key + " is required, a string");
  const Json* sources = value.contains("sources") ? &value["sources"] : nullptr;
  if (!sources || !sources->is_array() || sources->empty() ||
      !std::all_of(sources->begin(), sources->end(), [](const Json& s) { return s.is_string(); }))
    throw InputError(path + ": sources is required, a non-empty list of strings citing where each value comes from");
  ClusterPresetFile p{value["name"].get<std::string>(), value["description"].get<std::string>(), value};
  p.fields.erase("description");
  p.fields.erase("sources");
  return p;
}

// Refuses a preset whose "preset" chain comes back to itself (parse_cluster would never end).
void check_preset_chains(const std::map<std::string, ClusterPresetFile>& table) {
  for (const auto& [name, preset] : table) {
    std::string chain = name, at = name;
    for (std::size_t step = 0; step <= table.size(); ++step) {
      auto it = table.find(at);
      if (it == table.end() || !it->second.fields.contains("preset")) break;
      if (!it->second.fields["preset"].is_string()) break;  // refused by parse_cluster, naming the field
      at = it->second.fields["preset"].get<std::string>();
      chain += " -> " + at;
      if (at == name)
        throw InputError(std::string(kPresetFolder) + "/" + name + ".json: preset=" + at + " loops (" + chain +
                         "): start the file from a preset that does not lead back to it, or list every field");
    }
  }
}

const std::map<std::string, ClusterPresetFile>& presets() {
  static const std::map<std::string, ClusterPresetFile> table = [] {
    auto files = read_named_files(kPresetFolder, read_preset_file);
    check_preset_chains(files);
    return files;
  }();
  return table;
}

ClusterSpec cluster_preset(const std::string& name, const std::string& field) {
  auto it = presets().find(name);
  if (it == presets().end())
    refuse_name(field, name, "a known cluster", names_of(presets()), known_names(names_of(presets())));
  try {
    return parse_cluster(it->second.fields);
  } catch (const InputError& e) {
    throw InputError(std::string(kPresetFolder) + "/" + name + ".json: " + e.what());
  }
}

// A mesh node of `gpus` GPUs, every pair joined by `links` links of `link_bw_Bps` each.
NodeShape full_mesh(int gpus, int links, double link_bw_Bps) {
  NodeShape n;
  n.kind = NodeLinks::Mesh;
  n.link_bw_Bps = link_bw_Bps;
  for (int a = 0; a < gpus; ++a)
    for (int b = a + 1; b < gpus; ++b) n.pairs.push_back({a, b, links});
  return n;
}

// "node_links": {"kind": "nvswitch"} (the default), {"kind": "mesh", "link_bw", "pairs": [[a, b, links], ...] or
// "full": links} or {"kind": "pcie", "gpus_per_switch", "switch_bw", "numa_domains"?, "numa_bw"?}.
void read_node_links(ObjectReader& parent, ClusterSpec& c) {
  const Json* value = parent.child("node_links");
  if (!value) return;
  ObjectReader r(*value, parent.field("node_links"), parent.errors());
  NodeShape n;
  const std::string kind = r.get_choice("kind", {"nvswitch", "mesh", "pcie"}, "");
  if (kind.empty()) throw InputError(r.field("kind") + " is required: nvswitch, mesh or pcie");
  n.kind = kind == "mesh" ? NodeLinks::Mesh : kind == "pcie" ? NodeLinks::Pcie : NodeLinks::NvSwitch;
  if (n.kind == NodeLinks::Mesh) {
    // Point-to-point links between every pair: machines hold up to 8 GPUs so; 64 bounds the pair table.
    if (c.gpus_per_node > 64)
      throw InputError(r.path() + ": a mesh of cluster.gpus_per_node=" + std::to_string(c.gpus_per_node) +
                       " GPUs has too many pairs; a mesh node holds at most 64");
    n.link_bw_Bps = r.get_positive("link_bw", 0, parse_bandwidth);
    if (!(n.link_bw_Bps > 0)) throw InputError(r.field("link_bw") + " is required for a mesh: one link's bandwidth");
    if (r.has("full") == r.has("pairs"))
      throw InputError(r.path() + " needs exactly one of full (links between every pair) and pairs ([a, b, links])");
    if (r.has("full")) {
      n.pairs = full_mesh(c.gpus_per_node, static_cast<int>(r.get_int_in("full", 1, 1)), n.link_bw_Bps).pairs;
    } else {
      const Json& list = *r.child("pairs");
      if (!list.is_array()) throw InputError(r.field("pairs") + " must be a list of [a, b, links]");
      for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string at = r.field("pairs") + "[" + std::to_string(i) + "]";
        const Json& p = list[i];
        if (!p.is_array() || p.size() != 3 ||
            !std::all_of(p.begin(), p.end(), [](const Json& x) { return x.is_number_integer(); }))
          throw InputError(at + "=" + show(p) + " must be [a, b, links]: two local GPU indices and a link count");
        const int a = p[0].get<int>(), b = p[1].get<int>(), links = p[2].get<int>();
        if (a < 0 || b < 0 || a >= c.gpus_per_node || b >= c.gpus_per_node || a == b || links < 1)
          throw InputError(at + "=" + show(p) + " must join two different GPUs of 0.." +
                           std::to_string(c.gpus_per_node - 1) + " by at least one link");
        if (n.links(a, b) > 0) throw InputError(at + "=" + show(p) + " repeats the pair");
        n.pairs.push_back({std::min(a, b), std::max(a, b), links});
      }
    }
  } else if (n.kind == NodeLinks::Pcie) {
    n.gpus_per_switch = static_cast<int>(r.get_int_in("gpus_per_switch", c.gpus_per_node, 1));
    r.check(c.gpus_per_node % n.gpus_per_switch == 0, "gpus_per_switch",
            "must divide cluster.gpus_per_node=" + std::to_string(c.gpus_per_node));
    n.switch_bw_Bps = r.get_positive("switch_bw", c.pcie_bw_Bps, parse_bandwidth);
    n.numa_domains = static_cast<int>(r.get_int_in("numa_domains", 1, 1));
    const int switches = c.gpus_per_node / n.gpus_per_switch;
    r.check(n.numa_domains <= 2 && switches % n.numa_domains == 0, "numa_domains",
            "must be 1 or 2 and divide the node's " + std::to_string(switches) + " PCIe switches");
    if (n.numa_domains == 2) {
      n.numa_bw_Bps = r.get_positive("numa_bw", 0, parse_bandwidth);
      if (!(n.numa_bw_Bps > 0))
        throw InputError(r.field("numa_bw") + " is required with two NUMA domains: the CPUs' link to each other");
    }
  }
  r.finish();
  c.node_links = n;
}

Json node_links_to_json(const NodeShape& n) {
  if (n.kind == NodeLinks::Mesh) {
    Json pairs = Json::array();
    for (const auto& p : n.pairs) pairs.push_back(Json::array({p[0], p[1], p[2]}));
    return Json{{"kind", "mesh"}, {"link_bw", n.link_bw_Bps}, {"pairs", pairs}};
  }
  if (n.kind == NodeLinks::Pcie) {
    Json j{{"kind", "pcie"},
           {"gpus_per_switch", n.gpus_per_switch},
           {"switch_bw", n.switch_bw_Bps},
           {"numa_domains", n.numa_domains}};
    if (n.numa_domains == 2) j["numa_bw"] = n.numa_bw_Bps;
    return j;
  }
  return Json{{"kind", "nvswitch"}};
}

void read_node(ObjectReader& r, ClusterSpec& c) {
  c.nodes = r.get_int_in("nodes", c.nodes, 1);
  c.gpus_per_node = r.get_int_in("gpus_per_node", c.gpus_per_node, 1);
  c.nvlink_bw_Bps = r.get_positive("nvlink_bw", c.nvlink_bw_Bps, parse_bandwidth);
  c.nvlink_latency_s = r.get_non_negative("nvlink_latency", c.nvlink_latency_s, parse_time);
  c.pcie_bw_Bps = r.get_positive("pcie_bw", c.pcie_bw_Bps, parse_bandwidth);
  c.pcie_latency_s = r.get_non_negative("pcie_latency", c.pcie_latency_s, parse_time);
  c.host_flops = r.get_positive("host_flops", c.host_flops, parse_flops);
  c.host_memory_bytes = r.get_positive("host_memory", c.host_memory_bytes, parse_bytes);
  c.host_memory_bw_Bps = r.get_positive("host_memory_bw", c.host_memory_bw_Bps, parse_bandwidth);
  c.nvme_read_Bps = r.get_positive("nvme_read_bw", c.nvme_read_Bps, parse_bandwidth);
  c.nvme_write_Bps = r.get_positive("nvme_write_bw", c.nvme_write_Bps, parse_bandwidth);
}

void read_network(ObjectReader& r, ClusterSpec& c) {
  c.nics_per_node = r.get_int_in("nics_per_node", c.nics_per_node, 0);
  c.nic_bw_Bps = r.get_positive("nic_bw", c.nic_bw_Bps, parse_bandwidth);
  c.nic_latency_s = r.get_non_negative("nic_latency", c.nic_latency_s, parse_time);
  c.fabric = get_enum(r, "fabric", kFabricTopologyNames, c.fabric);
  c.switch_radix = r.get_int_in("switch_radix", c.switch_radix, 2);
  if (r.has("oversubscription")) {
    c.oversubscription = r.get_number("oversubscription", 1);
    r.check(c.oversubscription >= 1, "oversubscription", "must be >= 1 (1 = full bisection)");
    r.check(c.oversubscription <= kMaxOversubscription, "oversubscription",
            "is more than 64: fabrics are built at 1:1 to 8:1 (down:up bandwidth of a leaf)");
  }
  c.switch_latency_s = r.get_non_negative("switch_latency", c.switch_latency_s, parse_time);
}

// A SimGrid setting placesim passes on from cluster.simgrid_config: the words it may be, or the range of a number.
struct SimgridSetting {
  const char* key;
  std::vector<std::string> words;  ///< the values allowed; empty for a number
  double low = 0, high = 0;        ///< a number's bounds, both allowed
  const char* note = "";           ///< why SimGrid's other values are left out
};

// SimGrid 3.32's settings that change how placesim's executions, transfers and disk reads take time (`--cfg=help` of
// libsimgrid 3.32). Each value and bound was run on examples/small-3d-1f1b.json and gpt3-175b-3d.json; the values
// left out abort SimGrid, crash it or never end on placesim's platform. Keys apply in key order, before the platform.
const std::vector<SimgridSetting>& simgrid_settings() {
  static const std::vector<SimgridSetting> settings = {
      // Network model: CM02 (placesim's), LV08 (SimGrid's: latency x 13.01, bandwidth x 0.97), SMPI and IB (MPI fits).
      {"network/model", {"CM02", "LV08", "SMPI", "IB"}, 0, 0, "Constant and ns-3 cannot build placesim's links"},
      // Host model: compound (CPU and network models apart) or ptask_L07 (parallel tasks, its own network model).
      {"host/model", {"compound", "ptask_L07"}, 0, 0, "default replaces network/model by LV08"},
      // CPU model: SimGrid 3.32 has one, Cas01 (time = FLOP / speed).
      {"cpu/model", {"Cas01"}},
      // How the CPU model updates running executions.
      {"cpu/optim", {"Lazy", "Full"}, 0, 0, "TI has no multi-core hosts"},
      // How the network model updates running transfers.
      {"network/optim", {"Lazy", "Full"}},
      // Precision of the max-min sharing solver (bytes/s, FLOP/s): -1 crashes SimGrid, 1 and above abort it.
      {"maxmin/precision", {}, 1e-15, 1e-2},
      // Precision of simulated times (s): 0 and below never end.
      {"surf/precision", {}, 1e-15, 1e-2},
      // Largest TCP window (bytes), capping each flow at gamma / (2 x route latency); 0 = no cap (placesim's).
      {"network/TCP-gamma", {}, 0, 1e12},
      // Uploads and downloads share a link's bandwidth (placesim's: 0).
      {"network/crosstraffic", {"0", "1", "no", "yes", "off", "on", "false", "true"}},
      // Multiplies every route's latency (LV08's: 13.01).
      {"network/latency-factor", {}, 1e-3, 1e3},
      // Multiplies every link's bandwidth (LV08's: 0.97); above 1 a link would carry more than its bandwidth.
      {"network/bandwidth-factor", {}, 1e-3, 1},
      // LV08's bytes per round trip weighing a flow's share of a link (SimGrid's: 20537).
      {"network/weight-S", {}, 0, 1e9},
  };
  return settings;
}

// The whole text as a finite number, as SimGrid reads it ("1e-9", "0.5"); nullopt otherwise.
std::optional<double> simgrid_number(const std::string& text) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [at, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || at != end || !std::isfinite(v)) return std::nullopt;
  return v;
}

// What is wrong with `value` for `s` ("" when nothing), naming the field, the value and what is allowed.
std::string setting_problem(const SimgridSetting& s, const std::string& value) {
  const std::string field = std::string("cluster.simgrid_config.") + s.key + "=" + value;
  if (s.words.empty()) {
    const std::optional<double> v = simgrid_number(value);
    if (v && *v >= s.low && *v <= s.high) return "";
    return field + " must be a number from " + format_significant(s.low) + " to " + format_significant(s.high);
  }
  if (std::find(s.words.begin(), s.words.end(), value) != s.words.end()) return "";
  std::string problem = field + " is not one of:";
  for (const auto& w : s.words) problem += " " + w;
  if (std::string guess = nearest(value, s.words); !guess.empty()) problem += " (did you mean '" + guess + "'?)";
  if (*s.note) problem += std::string(" (") + s.note + ")";
  return problem;
}

// Every problem of a simgrid_config object in one InputError: `problems` (values, in key order), then the keys
// placesim does not pass, each with the nearest one it does, and the list of those.
// Throws one InputError of every problem, joined with "; ", when there is any.
void throw_problems(const std::vector<std::string>& problems) {
  if (problems.empty()) return;
  std::string message;
  for (std::size_t i = 0; i < problems.size(); ++i) message += (i ? "; " : "") + problems[i];
  throw InputError(message);
}

void refuse_simgrid_config(std::vector<std::string> problems, const std::vector<std::string>& unknown) {
  if (!unknown.empty()) {
    std::vector<std::string> keys;
    for (const auto& s : simgrid_settings()) keys.push_back(s.key);
    std::string text = std::string("cluster.simgrid_config: unknown key") + (unknown.size() > 1 ? "s " : " ");
    for (std::size_t i = 0; i < unknown.size(); ++i) {
      text += (i ? ", \"" : "\"") + unknown[i] + "\"";
      if (std::string guess = nearest(unknown[i], keys); !guess.empty()) text += " (did you mean '" + guess + "'?)";
    }
    text += "; placesim passes these keys:";
    for (std::size_t i = 0; i < keys.size(); ++i) text += (i ? ", " : " ") + keys[i];
    problems.push_back(text);
  }
  throw_problems(problems);
}

// The problem of one key and value, or the key added to `unknown`.
void check_setting(const std::string& key, const std::string& value, std::vector<std::string>& problems,
                   std::vector<std::string>& unknown) {
  const auto& settings = simgrid_settings();
  const auto s = std::find_if(settings.begin(), settings.end(), [&](const SimgridSetting& x) { return key == x.key; });
  if (s == settings.end()) return unknown.push_back(key);
  if (std::string problem = setting_problem(*s, value); !problem.empty()) problems.push_back(problem);
}

// A whole number of at most nine digits, or -1.
long small_index(const std::string& text) {
  const bool number = !text.empty() && text.size() < 10 && text.find_first_not_of("0123456789") == std::string::npos;
  return number ? std::stol(text) : -1;
}

// "0 to n - 1" of `count` things: "the cluster has 8 GPUs (0 to 7)".
std::string count_text(long count, const std::string& one, const std::string& many) {
  return "the cluster has " + std::to_string(count) + " " + (count == 1 ? one : many) + " (0 to " +
         std::to_string(count - 1) + ")";
}

// An object of "<part>": fraction entries (cluster.slow, cluster.degraded) read into `out`: `check_part(key, value)`
// returns what is wrong with a key or its value ("" when it names a part of the cluster), each value must lie in
// (0, 1], or [0, 1] when `zero` (`what` says what it is). Every bad entry is named at once.
void read_fractions(ObjectReader& r, const char* name,
                    const std::function<std::string(const std::string&, double)>& check_part, const std::string& what,
                    std::map<std::string, double>& out, bool zero = false) {
  const Json* object = r.child(name);
  if (!object) return;
  const std::string field = r.field(name);
  if (!object->is_object()) throw InputError(field + "=" + show(*object) + " must be an object of part: " + what);
  std::vector<std::string> problems;
  for (auto it = object->begin(); it != object->end(); ++it) {
    const double v = it.value().is_number() ? it.value().get<double>() : -1;
    const bool fraction = it.value().is_number() && (zero ? v >= 0 : v > 0) && v <= 1;
    const std::string at = field + "." + it.key(), wrong = check_part(it.key(), fraction ? v : 1);
    if (!wrong.empty()) problems.push_back(at + (fraction && v == 0 ? "=0" : "") + ": " + wrong);
    if (!fraction) problems.push_back(at + "=" + show(it.value()) + " must be " + what);
    if (wrong.empty() && fraction) out[it.key()] = it.value().get<double>();
  }
  throw_problems(problems);
}

// "slow": {"node 17": 0.8, "gpu 3": 0.9}: nodes or GPUs of the cluster, each a speed in (0, 1].
void read_slow(ObjectReader& r, ClusterSpec& c) {
  read_fractions(
      r, "slow",
      [&](const std::string& key, double) -> std::string {
        const bool node = key.rfind("node ", 0) == 0, gpu = key.rfind("gpu ", 0) == 0;
        const long n = node || gpu ? small_index(key.substr(node ? 5 : 4)) : -1;
        if (n < 0) return "name a node or a GPU as \"node N\" or \"gpu N\"";
        const long count = node ? c.nodes : static_cast<long>(c.devices());
        return n < count ? "" : count_text(count, node ? "node" : "GPU", node ? "nodes" : "GPUs");
      },
      "a speed in (0, 1] relative to the accelerator's (0.8: 80 % of its speed)", c.slow);
}

// "degraded": {"nic 3.1": 0.5, "rail 2": 0, "nvlink 5": 0.25, "leaf 1": 0.5}: a node's NIC on a rail, every NIC of
// a rail, a GPU's NVLink, or a leaf switch's uplinks, each the fraction of its bandwidth left in [0, 1] (0: down, its
// traffic rerouted; refused for a leaf's uplinks, whose NICs would be cut off).
void read_degraded(ObjectReader& r, ClusterSpec& c) {
  read_fractions(
      r, "degraded",
      [&](const std::string& key, double left) -> std::string {
        const auto space = key.find(' ');
        const std::string kind = key.substr(0, space), index = space == std::string::npos ? "" : key.substr(space + 1);
        if (kind == "nvlink") {
          const long g = small_index(index);
          return g < 0 ? "name the GPU: \"nvlink G\"" : g < c.devices() ? "" : count_text(c.devices(), "GPU", "GPUs");
        }
        if (kind == "rail") {
          const long rail = small_index(index);
          return rail < 0                 ? "name the rail: \"rail R\""
                 : rail < c.nics_per_node ? ""
                                          : count_text(c.nics_per_node, "rail", "rails");
        }
        if (kind == "leaf") {
          const long leaf = small_index(index);
          if (leaf < 0) return "name the leaf switch: \"leaf L\"";
          if (left == 0)
            return "a leaf whose uplinks are all down cuts its NICs off the other leaves (no route around it): give "
                   "the fraction of its uplink bandwidth left, or take its nodes out of cluster.nodes";
          return "";  // the leaf count depends on fields read after this one: validate_cluster checks it
        }
        if (kind == "nic") {
          const auto dot = index.find('.');
          const long node = small_index(index.substr(0, dot)),
                     rail = dot == std::string::npos ? -1 : small_index(index.substr(dot + 1));
          if (node < 0 || rail < 0) return "name the NIC by node and rail: \"nic N.R\"";
          if (node >= c.nodes) return count_text(c.nodes, "node", "nodes");
          return rail < c.nics_per_node ? "" : count_text(c.nics_per_node, "rail", "rails");
        }
        return "name a link as \"nic N.R\", \"rail R\", \"nvlink G\" or \"leaf L\"";
      },
      "the fraction of its bandwidth left, in [0, 1] (0: down, its traffic rerouted)", c.degraded, true);
}

// "accelerators": {"nodes 2-3": "a100-80gb", "node 5": {...}}: nodes (a range or one) running another accelerator
// than cluster.accelerator, each named once.
void read_node_accelerators(ObjectReader& r, ClusterSpec& c) {
  const Json* object = r.child("accelerators");
  if (!object) return;
  const std::string field = r.field("accelerators");
  if (!object->is_object())
    throw InputError(field + "=" + show(*object) + " must be an object of \"nodes A-B\" or \"node N\": accelerator");
  std::vector<std::string> problems;
  std::vector<int> kind(static_cast<std::size_t>(c.nodes), -1);
  for (auto it = object->begin(); it != object->end(); ++it) {
    const std::string at = field + "." + it.key(), key = it.key();
    const bool range = key.rfind("nodes ", 0) == 0, one = key.rfind("node ", 0) == 0;
    const std::string span = range ? key.substr(6) : one ? key.substr(5) : "";
    const auto dash = span.find('-');
    const long first = small_index(span.substr(0, dash)), last = range && dash != std::string::npos
                                                                     ? small_index(span.substr(dash + 1))
                                                                 : one ? first
                                                                       : -1;
    if (first < 0 || last < first) {
      problems.push_back(at + ": name nodes as \"nodes A-B\" (A <= B) or \"node N\"");
      continue;
    }
    if (last >= c.nodes) {
      problems.push_back(at + ": " + count_text(c.nodes, "node", "nodes"));
      continue;
    }
    AcceleratorSpec a;
    try {
      a = parse_accelerator(it.value(), at);
    } catch (const InputError& x) {
      problems.push_back(x.what());
      continue;
    }
    const int index = static_cast<int>(c.node_kinds.size());
    c.node_kinds.push_back(a);
    c.accelerator_names[key] = a.name;
    for (long n = first; n <= last; ++n) {
      if (kind[static_cast<std::size_t>(n)] >= 0)
        problems.push_back(at + ": node " + std::to_string(n) + " is named by another entry too");
      kind[static_cast<std::size_t>(n)] = index;
    }
  }
  throw_problems(problems);
  c.node_kind = std::move(kind);
}

// "speed_spread": {"sigma": 0.02, "seed": 7, "per": "gpu" | "node"}.
void read_speed_spread(ObjectReader& r, ClusterSpec& c) {
  const Json* spread = r.child("speed_spread");
  if (!spread) return;
  ObjectReader s(*spread, r.field("speed_spread"), r.errors());
  c.speed_spread.sigma = s.require_non_negative("sigma");
  s.check(c.speed_spread.sigma <= 0.5, "sigma",
          "must be at most 0.5: the drawn speeds are 1 - sigma |z| (about 1 - 0.8 sigma on average)");
  const double seed = s.get_non_negative("seed", 1);
  s.check(seed == std::floor(seed) && seed < 9e15, "seed", "must be a whole number");
  c.speed_spread.seed = static_cast<std::uint64_t>(seed);
  c.speed_spread.per_node = s.get_choice("per", {"gpu", "node"}, "gpu") == "node";
  s.finish();
}

void read_simgrid_config(ObjectReader& r, ClusterSpec& c) {
  const Json* config = r.child("simgrid_config");
  if (!config) return;
  if (!config->is_object())
    throw InputError(r.field("simgrid_config") + "=" + show(*config) + " must be an object of \"key\": \"value\"");
  std::vector<std::string> problems, unknown;
  for (auto it = config->begin(); it != config->end(); ++it) {
    if (!it.value().is_string()) {
      problems.push_back(r.field("simgrid_config") + "." + it.key() + "=" + show(it.value()) + " must be a string");
      continue;
    }
    c.simgrid_config[it.key()] = it.value().get<std::string>();
    check_setting(it.key(), c.simgrid_config[it.key()], problems, unknown);
  }
  refuse_simgrid_config(std::move(problems), unknown);
}

// The fabrics the accelerator brings: its reference system's, or those its profile file fitted. An accelerator
// described without them runs its transfers at the raw link figures unless the cluster gives "comm".
void set_default_comm(ClusterSpec& c) {
  const AcceleratorSpec& a = c.accelerator;
  if (a.intra_node_fabric) c.comm.intra_node = *a.intra_node_fabric;
  if (a.inter_node_fabric) c.comm.inter_node = *a.inter_node_fabric;
  if (a.intra_node_fabric && a.inter_node_fabric) return;
  if (a.intra_node_fabric || a.inter_node_fabric)
    throw InputError(std::string("cluster.accelerator has only the ") +
                     (a.intra_node_fabric ? "intra_node" : "inter_node") +
                     " fabric (from its profile or fabrics), and the custom accelerator " + a.name +
                     " has no reference system to take the other from: give cluster.comm or both fabrics");
  c.comm_model = CommModel::Links;
}

// The fabrics the accelerator brings (set_default_comm's), for a partial "comm" to keep: null halves it has none of.
std::pair<std::optional<FabricProfile>, std::optional<FabricProfile>> reference_fabrics(const ClusterSpec& c) {
  return {c.accelerator.intra_node_fabric, c.accelerator.inter_node_fabric};
}

// "comm" over the accelerator's reference fabrics: a fabric left out is the reference's and an object without
// "preset" overrides the reference field by field; a fabric with no reference is required whole, as before.
CommProfile parse_comm_over_reference(const Json& comm, const std::string& field, const ClusterSpec& c) {
  if (!comm.is_object()) return parse_comm_profile(comm, field);  // refused there, naming the field
  const auto [intra, inter] = reference_fabrics(c);
  Json merged = comm;
  for (auto [key, reference] : {std::pair{"intra_node", &intra}, {"inter_node", &inter}}) {
    if (!reference->has_value()) continue;
    Json base = fabric_profile_to_json(**reference);
    if (!merged.contains(key)) {
      merged[key] = base;
    } else if (merged[key].is_object() && !merged[key].contains("preset")) {
      base.update(merged[key]);
      merged[key] = base;
    }
  }
  return parse_comm_profile(merged, field);
}

// Whether "comm" gives `key`'s link bandwidth itself: a fabric preset, or an object with "preset" or "link_bw".
bool comm_gives_link_bw(const Json* comm, const char* key) {
  if (!comm || !comm->is_object() || !comm->contains(key)) return false;
  const Json& f = (*comm)[key];
  return f.is_string() || (f.is_object() && (f.contains("preset") || f.contains("link_bw")));
}

// A link's bandwidth is one number, read by the simulator from the cluster (nvlink_bw, nic_bw) and by the analytic
// model from the fabric (link_bw): the one given wins, both given must agree, neither given follows the fabric, which
// is the accelerator's reference system's unless "comm" says otherwise. A fabric without data (a custom accelerator's,
// link_bw 0) takes the cluster's.
void reconcile_link(double& cluster_bw, bool cluster_given, const char* cluster_key, double& fabric_bw,
                    bool fabric_given, const char* fabric_key) {
  if (cluster_given && fabric_given && cluster_bw != fabric_bw)
    throw InputError(std::string("cluster.") + cluster_key + "=" + format_significant(cluster_bw, 10) +
                     " and cluster.comm." + fabric_key + ".link_bw=" + format_significant(fabric_bw, 10) +
                     " (bytes/s) are the same link's bandwidth: give one of them, or the same value");
  if (cluster_given || fabric_bw <= 0)
    fabric_bw = cluster_bw;
  else
    cluster_bw = fabric_bw;
}

void require(bool ok, const std::string& field, double value, const char* rule) {
  if (!ok) throw InputError("cluster." + field + "=" + format_significant(value, 10) + " " + rule);
}

// "comm" (or the accelerator's default), then the link bandwidths the cluster and the fabrics both give.
void read_comm_and_links(ObjectReader& r, ClusterSpec& c) {
  const Json* comm = r.child("comm");
  if (comm)
    c.comm = r.guarded("comm", c.comm, [&] { return parse_comm_over_reference(*comm, r.field("comm"), c); });
  else if (r.clean())
    set_default_comm(c);
  if (!r.ok({"comm", "nvlink_bw", "nic_bw"})) return;
  r.guarded("nvlink_bw", false, [&] {
    reconcile_link(c.nvlink_bw_Bps, r.has("nvlink_bw"), "nvlink_bw", c.comm.intra_node.link_bw_Bps,
                   comm_gives_link_bw(comm, "intra_node"), "intra_node");
    return true;
  });
  r.guarded("nic_bw", false, [&] {
    reconcile_link(c.nic_bw_Bps, r.has("nic_bw"), "nic_bw", c.comm.inter_node.link_bw_Bps,
                   comm_gives_link_bw(comm, "inter_node"), "inter_node");
    return true;
  });
}

}  // namespace

namespace {

// What cluster.degraded names that the rest of the cluster decides: leaves that exist, NVLink ports of NVSwitch
// nodes, and a NIC up on every node of a cluster with more than one (each bad entry at once).
void check_degraded_links(const ClusterSpec& c) {
  if (c.degraded.empty()) return;
  std::vector<std::string> problems;
  const long leaves = c.leaf_switches();
  for (const auto& [key, left] : c.degraded) {
    const std::string at = "cluster.degraded." + key;
    if (key.rfind("leaf ", 0) == 0 && std::stol(key.substr(5)) >= leaves)
      problems.push_back(at + ": " + count_text(leaves, "leaf switch", "leaf switches"));
    if (key.rfind("nvlink ", 0) == 0 && c.node_links.kind != NodeLinks::NvSwitch)
      problems.push_back(at +
                         ": the nodes have no NVSwitch (cluster.node_links): their GPU links are not NVLink ports");
  }
  if (c.nodes > 1)
    for (int node = 0; node < c.nodes; ++node)
      if (c.nic_rail(node, 0) < 0) {
        problems.push_back("cluster.degraded: every NIC of node " + std::to_string(node) +
                           " is down, so nothing reaches it: take the node out of the job");
        break;
      }
  throw_problems(problems);
}

}  // namespace

void validate_cluster(const ClusterSpec& c) {
  require(c.nodes >= 1, "nodes", c.nodes, "must be at least 1");
  require(c.gpus_per_node >= 1, "gpus_per_node", c.gpus_per_node, "must be at least 1");
  require(c.gpus_per_node <= kMaxGpusPerNode, "gpus_per_node", c.gpus_per_node,
          "is more than the 1024 GPUs of one node (one NVLink domain: 8 in a DGX, 72 in a GB200 NVL72 rack)");
  if (static_cast<long long>(c.nodes) * c.gpus_per_node > INT_MAX)
    throw InputError("cluster.nodes=" + std::to_string(c.nodes) +
                     " x cluster.gpus_per_node=" + std::to_string(c.gpus_per_node) + " devices do not fit in an int");
  require(c.accelerator.peak_bf16_flops > 0, "accelerator.peak_bf16_flops", c.accelerator.peak_bf16_flops,
          "must be positive");
  for (auto [field, v] : {std::pair{"nvlink_bw", c.nvlink_bw_Bps},
                          {"pcie_bw", c.pcie_bw_Bps},
                          {"host_flops", c.host_flops},
                          {"host_memory", c.host_memory_bytes},
                          {"nvme_read_bw", c.nvme_read_Bps},
                          {"nvme_write_bw", c.nvme_write_Bps},
                          {"nic_bw", c.nic_bw_Bps}})
    require(v > 0 && std::isfinite(v), field, v, "must be positive and finite");
  for (auto [field, v] : {std::pair{"nvlink_latency", c.nvlink_latency_s},
                          {"pcie_latency", c.pcie_latency_s},
                          {"nic_latency", c.nic_latency_s},
                          {"switch_latency", c.switch_latency_s}}) {
    require(v >= 0 && std::isfinite(v), field, v, "must be a finite time >= 0");
    require(v <= kMaxLatencySeconds, field, v, "s is more than 1 s (link latencies are microseconds); check the unit");
  }
  if (c.node_links.kind == NodeLinks::Mesh &&
      static_cast<long long>(c.nodes) * c.gpus_per_node * (c.gpus_per_node - 1) / 2 > INT_MAX)
    throw InputError("cluster.nodes=" + std::to_string(c.nodes) + " mesh nodes of " + std::to_string(c.gpus_per_node) +
                     " GPUs hold more GPU pairs than fit in an int");
  require(c.nics_per_node >= 0, "nics_per_node", c.nics_per_node, "must not be negative");
  if (c.nodes > 1 && c.nics_per_node < 1)
    throw InputError("cluster.nics_per_node=" + std::to_string(c.nics_per_node) +
                     " must be at least 1 when cluster.nodes=" + std::to_string(c.nodes) +
                     " > 1 (nodes reach each other only through NICs)");
  if (c.nics_per_node > 0 && c.gpus_per_node % c.nics_per_node != 0)
    throw InputError("cluster.nics_per_node=" + std::to_string(c.nics_per_node) +
                     " does not divide cluster.gpus_per_node=" + std::to_string(c.gpus_per_node) +
                     " (GPUs share NICs in equal groups)");
  require(c.switch_radix >= 2, "switch_radix", c.switch_radix, "must be at least 2 (half the ports go down)");
  require(c.oversubscription >= 1 && std::isfinite(c.oversubscription), "oversubscription", c.oversubscription,
          "must be >= 1 (1 = full bisection)");
  require(c.oversubscription <= kMaxOversubscription, "oversubscription", c.oversubscription,
          "is more than 64: fabrics are built at 1:1 to 8:1 (down:up bandwidth of a leaf)");
  check_degraded_links(c);
}

void check_simgrid_config(const std::map<std::string, std::string>& config) {
  std::vector<std::string> problems, unknown;
  for (const auto& [key, value] : config) check_setting(key, value, problems, unknown);
  refuse_simgrid_config(std::move(problems), unknown);
}

ClusterSpec parse_cluster(const Json& value, ErrorList* errors) {
  if (value.is_string()) return cluster_preset(value.get<std::string>(), "cluster");
  if (!value.is_object()) throw InputError("cluster=" + show(value) + " must be a cluster preset name or an object");
  ObjectReader r(value, "cluster", errors);
  ClusterSpec c;
  bool from_preset = r.has("preset");
  if (from_preset) {
    c = r.guarded("preset", c, [&] { return cluster_preset(r.require_string("preset"), r.field("preset")); });
    // The preset's fabrics are its accelerator's: the cluster's come from the accelerator it ends with
    // (read_comm_and_links), and a custom accelerator without fabrics gets none.
    c.comm = CommProfile{};
  }
  c.name = r.get_string("name", c.name);
  if (const Json* accelerator = r.child("accelerator"))
    c.accelerator = r.guarded("accelerator", c.accelerator,
                              [&] { return parse_accelerator(*accelerator, r.field("accelerator")); });
  else if (!from_preset)
    r.refuse("accelerator", "cluster.accelerator is required when cluster.preset is not given");
  // The fields override the preset's and describe the accelerator's node: without either, no rule over them may run.
  if (!r.ok({"preset", "accelerator"})) r.abandon();
  // A section whose reader throws is recorded with the others' errors (ObjectReader::guarded).
  using Section = void (*)(ObjectReader&, ClusterSpec&);
  const auto section = [&](const char* key, Section read) {
    r.guarded(key, false, [&] {
      read(r, c);
      return true;
    });
  };
  read_node(r, c);
  section("node_links", read_node_links);
  read_network(r, c);
  for (const auto& [key, read] : {std::pair<const char*, Section>{"simgrid_config", read_simgrid_config},
                                  {"slow", read_slow},
                                  {"speed_spread", read_speed_spread},
                                  {"degraded", read_degraded},
                                  {"accelerators", read_node_accelerators}})
    section(key, read);
  c.background_load = r.get_non_negative("background_load", c.background_load);
  r.check(c.background_load <= kMostBackground, "background_load",
          "must be at most 0.95: the fraction of each leaf uplink and spine port other jobs take");
  c.comm_model = get_enum(r, "comm_model", kCommModelNames, c.comm_model);
  read_comm_and_links(r, c);
  r.finish();
  if (r.clean()) validate_cluster(c);
  return c;
}

ClusterSpec simulated_network(const ClusterSpec& c) {
  if (c.comm_model != CommModel::Nccl) return c;
  ClusterSpec n = c;
  const FabricProfile& intra = c.comm.intra_node;
  const FabricProfile& inter = c.comm.inter_node;
  n.nvlink_bw_Bps = c.nvlink_bw_Bps * intra.bus_efficiency;
  n.nvlink_latency_s = intra.step_latency_s / 2;  // a GPU-to-GPU route crosses two NVLink links
  n.nic_bw_Bps = c.nic_bw_Bps * inter.bus_efficiency;
  // A mesh's links run NCCL's (RCCL's) rings like NVSwitch ports: the same bus efficiency. PCIe keeps its raw
  // figures (host copies use it too).
  n.node_links.link_bw_Bps = c.node_links.link_bw_Bps * intra.bus_efficiency;
  n.nic_latency_s = std::max(0.0, (inter.step_latency_s - c.switch_latency_s) / 2);  // same-leaf route = one step
  return n;
}

std::string to_string(FabricTopology f) {
  return name_of(kFabricTopologyNames, f, "fat-tree");
}

std::string to_string(CommModel m) {
  return name_of(kCommModelNames, m, "nccl");
}

std::vector<std::pair<std::string, std::string>> cluster_preset_list() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, p] : presets()) out.emplace_back(name, p.description);
  return out;
}

Json cluster_to_json(const ClusterSpec& c) {
  const AcceleratorSpec& a = c.accelerator;
  // The rated peaks and the power limit: parsing them applies the limit's scale once.
  Json accelerator{{"name", a.name},
                   {"peak_bf16_flops", a.peak_bf16_flops / a.compute_scale},
                   {"peak_fp16_flops", a.peak_fp16_flops / a.compute_scale},
                   {"peak_fp32_flops", a.peak_fp32_flops / a.compute_scale},
                   {"hbm_bytes", a.hbm_bytes},
                   {"hbm_bw", a.hbm_bw_Bps},
                   {"gemm_efficiency", a.gemm_efficiency},
                   {"tdp_w", a.tdp_w}};
  if (a.power_limit_w > 0) accelerator["power_limit_w"] = a.power_limit_w;
  if (a.peak_fp8_flops > 0) accelerator["peak_fp8_flops"] = a.peak_fp8_flops / a.compute_scale;
  if (a.mxfp8_gemm_factor > 0) accelerator["mxfp8_gemm_factor"] = a.mxfp8_gemm_factor;
  Json config = Json::object();
  for (const auto& [key, value] : c.simgrid_config) config[key] = value;
  // Same keys as the input, in SI units, so that parse_cluster(cluster_to_json(c)) gives c back.
  Json out{{"name", c.name},
           {"accelerator", accelerator},
           {"nodes", c.nodes},
           {"gpus_per_node", c.gpus_per_node},
           {"nvlink_bw", c.nvlink_bw_Bps},
           {"nvlink_latency", c.nvlink_latency_s},
           {"pcie_bw", c.pcie_bw_Bps},
           {"pcie_latency", c.pcie_latency_s},
           {"host_flops", c.host_flops},
           {"host_memory", c.host_memory_bytes},
           {"nvme_read_bw", c.nvme_read_Bps},
           {"nvme_write_bw", c.nvme_write_Bps},
           {"nics_per_node", c.nics_per_node},
           {"nic_bw", c.nic_bw_Bps},
           {"nic_latency", c.nic_latency_s},
           {"fabric", to_string(c.fabric)},
           {"switch_radix", c.switch_radix},
           {"oversubscription", c.oversubscription},
           {"switch_latency", c.switch_latency_s},
           {"host_memory_bw", c.host_memory_bw_Bps},
           {"simgrid_config", config},
           {"comm_model", to_string(c.comm_model)},
           {"comm",
            {{"intra_node", fabric_profile_to_json(c.comm.intra_node)},
             {"inter_node", fabric_profile_to_json(c.comm.inter_node)}}}};
  if (c.node_links.kind != NodeLinks::NvSwitch) out["node_links"] = node_links_to_json(c.node_links);
  if (!c.slow.empty()) out["slow"] = c.slow;
  if (!c.degraded.empty()) out["degraded"] = c.degraded;
  if (c.mixed()) out["accelerators"] = c.accelerator_names;
  if (c.background_load > 0) out["background_load"] = c.background_load;
  if (c.speed_spread.sigma > 0)
    out["speed_spread"] = {{"sigma", c.speed_spread.sigma},
                           {"seed", c.speed_spread.seed},
                           {"per", c.speed_spread.per_node ? "node" : "gpu"}};
  return out;
}

namespace {

// A standard normal draw for (seed, index), the same on every machine: splitmix64 for two uniforms, Box-Muller.
double normal_draw(std::uint64_t seed, std::uint64_t index) {
  auto mix = [](std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  };
  const std::uint64_t a = mix(seed * 0x100000001b3ULL + 2 * index), b = mix(seed * 0x100000001b3ULL + 2 * index + 1);
  const double u1 = (static_cast<double>(a >> 11) + 0.5) / 9007199254740992.0;  // (0, 1)
  const double u2 = static_cast<double>(b >> 11) / 9007199254740992.0;
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
}

}  // namespace

double ClusterSpec::nic_left(int node, int rail) const {
  if (degraded.empty()) return 1;
  if (auto it = degraded.find("nic " + std::to_string(node) + "." + std::to_string(rail)); it != degraded.end())
    return it->second;
  auto it = degraded.find("rail " + std::to_string(rail));
  return it == degraded.end() ? 1 : it->second;
}

double ClusterSpec::nvlink_left(int gpu) const {
  if (degraded.empty()) return 1;
  auto it = degraded.find("nvlink " + std::to_string(gpu));
  return it == degraded.end() ? 1 : it->second;
}

double ClusterSpec::leaf_left(int leaf) const {
  if (degraded.empty()) return 1;
  auto it = degraded.find("leaf " + std::to_string(leaf));
  return it == degraded.end() ? 1 : it->second;
}

ClusterSpec::DegradedLink ClusterSpec::degraded_link(const std::string& key) const {
  DegradedLink link;
  int node = -1, gpu = -1;
  if (std::sscanf(key.c_str(), "nic %d.%d", &node, &link.rail) == 2)
    link.gpu = node * gpus_per_node;
  else if (std::sscanf(key.c_str(), "nvlink %d", &gpu) == 1)
    link.gpu = gpu;
  return link;
}

std::string ClusterSpec::degraded_key(const DegradedLink& link) const {
  return link.rail >= 0 ? "nic " + std::to_string(link.gpu / gpus_per_node) + "." + std::to_string(link.rail)
                        : "nvlink " + std::to_string(link.gpu);
}

int ClusterSpec::leaf_switches() const {
  const int down_ports = std::max(1, switch_radix / 2);
  if (nics_per_node == 0) return 0;
  if (fabric == FabricTopology::RailOptimized) return (nodes + down_ports - 1) / down_ports * nics_per_node;
  return (nodes * nics_per_node + down_ports - 1) / down_ports;
}

int ClusterSpec::nic_rail(int node, int rail) const {
  for (int k = 0; k < nics_per_node; ++k)
    if (const int r = (rail + k) % nics_per_node; nic_left(node, r) > 0) return r;
  return -1;
}

double ClusterSpec::speed(int gpu) const {
  const double generation = generation_speed.empty() ? 1 : generation_speed[static_cast<std::size_t>(gpu)];
  return generation * straggler_speed(gpu);
}

double ClusterSpec::straggler_speed(int gpu) const {
  if (!has_stragglers()) return 1;
  if (auto it = slow.find("gpu " + std::to_string(gpu)); it != slow.end()) return it->second;
  if (auto it = slow.find("node " + std::to_string(gpu / gpus_per_node)); it != slow.end()) return it->second;
  if (speed_spread.sigma <= 0) return 1;
  const int index = speed_spread.per_node ? gpu / gpus_per_node : gpu;
  return std::max(kSlowestDrawn,
                  1 - speed_spread.sigma * std::abs(normal_draw(speed_spread.seed, static_cast<std::uint64_t>(index))));
}

int NodeShape::links(int a, int b) const {
  const int lo = std::min(a, b), hi = std::max(a, b);
  for (const auto& p : pairs)
    if (p[0] == lo && p[1] == hi) return p[2];
  return 0;
}

}  // namespace placesim
