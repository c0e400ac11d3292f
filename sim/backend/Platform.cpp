#include "sim/backend/Platform.hpp"

#include <xbt/log.h>

#include <algorithm>
#include <array>
#include <simgrid/s4u.hpp>
#include <stdexcept>
#include <string>

#include "topology/cluster/Fabric.hpp"

namespace placesim {

namespace {

namespace s4u = simgrid::s4u;
using Direction = s4u::LinkInRoute::Direction;

constexpr std::array<LinkKind, 8> kLinkKinds = {LinkKind::NvLink,     LinkKind::Pcie,      LinkKind::Nic,
                                                LinkKind::LeafUplink, LinkKind::SpinePort, LinkKind::MeshLink,
                                                LinkKind::PcieSwitch, LinkKind::NumaLink};

// Creates each link the first time a route crosses it, so that NICs and uplinks no declared pair uses cost nothing.
class Links {
 public:
  Links(const Fabric& fabric, s4u::NetZone* zone) : fabric_(fabric), zone_(zone) {
    for (LinkKind kind : kLinkKinds) slots_[static_cast<int>(kind)].assign(fabric.link_count(kind), nullptr);
  }

  // The route as SimGrid wants it; `reverse` gives the way back (links in reverse order, directions swapped).
  std::vector<s4u::LinkInRoute> route(const std::vector<Hop>& hops, bool reverse) {
    std::vector<s4u::LinkInRoute> out;
    out.reserve(hops.size());
    for (const Hop& hop : hops) out.emplace_back(link(hop.link), hop.up != reverse ? Direction::UP : Direction::DOWN);
    if (reverse) std::reverse(out.begin(), out.end());
    return out;
  }

 private:
  s4u::SplitDuplexLink* link(LinkId id) {
    s4u::SplitDuplexLink*& slot = slots_[static_cast<int>(id.kind)].at(id.index);
    if (!slot) {
      LinkParams p = fabric_.link(id);
      slot = zone_->create_split_duplex_link(p.name, p.bw_Bps);
      slot->set_latency(p.latency_s)->seal();
    }
    return slot;
  }

  const Fabric& fabric_;
  s4u::NetZone* zone_;
  std::array<std::vector<s4u::SplitDuplexLink*>, kLinkKinds.size()> slots_;
};

// Both directions of a route between two netpoints. Bypass routes are one-way, so the way back is declared too.
void add_route(s4u::NetZone* zone, Links& links, s4u::Host* a, s4u::Host* b, const std::vector<Hop>& hops) {
  zone->add_bypass_route(a->get_netpoint(), b->get_netpoint(), nullptr, nullptr, links.route(hops, false));
  zone->add_bypass_route(b->get_netpoint(), a->get_netpoint(), nullptr, nullptr, links.route(hops, true));
}

std::uint64_t pair_key(int a, int b, int devices) {
  return static_cast<std::uint64_t>(std::min(a, b)) * static_cast<std::uint64_t>(devices) +
         static_cast<std::uint64_t>(std::max(a, b));
}

// Hosts of every GPU and every node's CPU with its NVMe disk.
void create_hosts(s4u::NetZone* zone, const ClusterSpec& c, Platform& platform) {
  platform.gpus.reserve(c.devices());
  for (int g = 0; g < c.devices(); ++g)
    platform.gpus.push_back(zone->create_host("gpu-" + std::to_string(g), c.accelerator.peak_bf16_flops));
  for (int n = 0; n < c.nodes; ++n) {
    // One core per GPU at host_flops each: one GPU's offloaded optimizer gets exactly host_flops, even alone.
    s4u::Host* cpu = zone->create_host("cpu-" + std::to_string(n), c.host_flops)->set_core_count(c.gpus_per_node);
    platform.cpus.push_back(cpu);
    platform.nvme.push_back(cpu->create_disk("nvme-" + std::to_string(n), c.nvme_read_Bps, c.nvme_write_Bps)->seal());
  }
  // Fixed-length delays (exact alpha-beta collectives) run as executions on a host with a core per activity, so
  // concurrent delays never share a core: an execution of d x 1e9 FLOP takes exactly d seconds.
  platform.timer = zone->create_host("timer", 1e9)->set_core_count(1 << 24);
}

}  // namespace

bool Platform::mirrored(int a, int b) const {
  if (mirrored_pairs.empty()) return false;
  const std::uint64_t key =
      static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(devices) + static_cast<std::uint64_t>(b);
  return std::binary_search(mirrored_pairs.begin(), mirrored_pairs.end(), key);
}

bool Platform::has_route(int a, int b) const {
  if (a < 0 || b < 0 || a >= devices || b >= devices || a == b) return false;
  return std::binary_search(routed_pairs.begin(), routed_pairs.end(), pair_key(a, b, devices));
}

void configure_engine(s4u::Engine& engine, const ClusterSpec& cluster) {
  // A cluster built in code skips parse_cluster: SimGrid aborts or crashes on some values instead of refusing them.
  check_simgrid_config(cluster.simgrid_config);
  xbt_log_control_set("root.thresh:critical");
  // SimGrid's default LV08 model inflates latency x13.01, caps bandwidth at 97% and TCP-gamma bounds each flow by
  // gamma / (2 latency): with these three settings a transfer takes exactly sum(latency) + bytes / bandwidth.
  engine.set_config("network/model:CM02");
  engine.set_config("network/TCP-gamma:0");
  engine.set_config("network/crosstraffic:0");
  for (const auto& [key, value] : cluster.simgrid_config) {
    try {
      engine.set_config(key + ":" + value);
    } catch (const std::exception& e) {
      std::string reason = e.what();
      reason = reason.substr(0, reason.find('\n'));
      throw InputError("cluster.simgrid_config." + key + "=" + value + " is refused by SimGrid: " + reason);
    }
  }
}

std::vector<Hop> mirrored_route(const Fabric& fabric, const Folding& folding, const MirroredHop& mirrored) {
  const ClusterSpec& c = fabric.cluster();
  std::vector<Hop> hops = fabric.route(mirrored.route_src, mirrored.route_dst);
  const int down = c.switch_radix / 2;
  for (Hop& hop : hops) {
    const int end = hop.up ? mirrored.route_src : mirrored.route_dst;
    const int target = hop.up ? mirrored.src : folding.representative(mirrored.dst);
    const int blocks = folding.block(target) - folding.block(end);  // the move from the route's end to the target
    const int node = end / c.gpus_per_node, rep_node = folding.shift(end, blocks) / c.gpus_per_node;
    switch (hop.link.kind) {
      case LinkKind::NvLink:
        hop.link.index = folding.shift(hop.link.index, blocks);
        break;
      case LinkKind::Nic:
      case LinkKind::SpinePort:
        hop.link.index = rep_node * c.nics_per_node + hop.link.index % c.nics_per_node;
        break;
      case LinkKind::LeafUplink:  // plan_folding's blocks hold whole leaves: the move is a whole number of leaves
        hop.link.index += c.fabric == FabricTopology::RailOptimized ? (rep_node - node) / down * c.nics_per_node
                                                                    : (rep_node - node) * c.nics_per_node / down;
        break;
      case LinkKind::Pcie:
      case LinkKind::MeshLink:
      case LinkKind::PcieSwitch:
      case LinkKind::NumaLink:
        throw std::logic_error("mirrored_route: a route across nodes crosses a link inside a node");
    }
  }
  return hops;
}

Platform build_platform(s4u::Engine& engine, const ClusterSpec& cluster, const std::vector<std::pair<int, int>>& pairs,
                        const std::vector<MirroredHop>& mirrored, const Folding& folding) {
  if (engine.get_netzone_root() != nullptr)  // SimGrid would abort the process instead
    throw std::logic_error("build_platform: this process already has a SimGrid platform (one simulation per process)");
  Fabric fabric(cluster);  // validates the cluster before SimGrid sees any of it
  Platform platform;
  platform.devices = cluster.devices();
  // Every pair is checked (and deduplicated) before the first zone exists, so bad input leaves SimGrid untouched.
  platform.routed_pairs.reserve(pairs.size());
  for (auto [a, b] : pairs) {
    fabric.route(a, b);  // throws, naming the devices, for a pair without a route
    platform.routed_pairs.push_back(pair_key(a, b, platform.devices));
  }
  std::sort(platform.routed_pairs.begin(), platform.routed_pairs.end());
  platform.routed_pairs.erase(std::unique(platform.routed_pairs.begin(), platform.routed_pairs.end()),
                              platform.routed_pairs.end());

  configure_engine(engine, cluster);
  // Netpoint names are global: a fixed zone name keeps a cluster named "gpu-0" from clashing with a host.
  s4u::NetZone* zone = s4u::create_empty_zone("cluster");
  create_hosts(zone, cluster, platform);
  Links links(fabric, zone);
  for (int g = 0; g < platform.devices; ++g)
    add_route(zone, links, platform.gpus[g], platform.cpus[g / cluster.gpus_per_node], fabric.host_route(g));
  for (std::uint64_t key : platform.routed_pairs) {
    int a = static_cast<int>(key / platform.devices), b = static_cast<int>(key % platform.devices);
    add_route(zone, links, platform.gpus[a], platform.gpus[b], fabric.route(a, b));
  }
  for (const MirroredHop& hop : mirrored) {
    platform.mirrored_pairs.push_back(static_cast<std::uint64_t>(hop.src) *
                                          static_cast<std::uint64_t>(platform.devices) +
                                      static_cast<std::uint64_t>(hop.dst));
    s4u::Host*& mirror = platform.mirrors[hop.dst];
    if (!mirror) mirror = zone->create_host("mirror-" + std::to_string(hop.dst), cluster.accelerator.peak_bf16_flops);
    add_route(zone, links, platform.gpus[static_cast<std::size_t>(hop.src)], mirror,
              mirrored_route(fabric, folding, hop));  // both ways: SimGrid's cross-traffic uses the way back
  }
  std::sort(platform.mirrored_pairs.begin(), platform.mirrored_pairs.end());
  zone->seal();
  return platform;
}

}  // namespace placesim
