#include "topology/cluster/Fabric.hpp"

#include <algorithm>
#include <map>

namespace placesim {

namespace {

// The bandwidth fraction a link is built with: its own, or all of it when it is down (no route crosses it then).
double kept(double left) {
  return left > 0 ? left : 1;
}

}  // namespace

Fabric::Fabric(const ClusterSpec& cluster) : cluster_(cluster), down_ports_(cluster.switch_radix / 2) {
  validate_cluster(cluster_);
}

int Fabric::rail(int local_gpu) const {
  return static_cast<int>(static_cast<long long>(local_gpu) * cluster_.nics_per_node / cluster_.gpus_per_node);
}

int Fabric::nic_of(int gpu) const {
  const int node = gpu / cluster_.gpus_per_node;
  return node * cluster_.nics_per_node + cluster_.nic_rail(node, rail(gpu % cluster_.gpus_per_node));
}

int Fabric::leaf(int node, int rail) const {
  if (cluster_.fabric == FabricTopology::RailOptimized) return node / down_ports_ * cluster_.nics_per_node + rail;
  return (node * cluster_.nics_per_node + rail) / down_ports_;
}

int Fabric::leaves() const {
  return cluster_.leaf_switches();
}

int Fabric::nics_on_leaf(int leaf) const {
  if (cluster_.fabric == FabricTopology::RailOptimized) {
    int unit = leaf / cluster_.nics_per_node;
    return std::min(down_ports_, cluster_.nodes - unit * down_ports_);
  }
  return std::min(down_ports_, cluster_.nodes * cluster_.nics_per_node - leaf * down_ports_);
}

int Fabric::link_count(LinkKind kind) const {
  bool shared_uplinks = cluster_.oversubscription > 1;
  switch (kind) {
    case LinkKind::NvLink:
    case LinkKind::Pcie:
      return cluster_.devices();
    case LinkKind::Nic:
      return cluster_.nodes * cluster_.nics_per_node;
    case LinkKind::LeafUplink:
      return shared_uplinks ? leaves() : 0;
    case LinkKind::SpinePort:
      return shared_uplinks ? 0 : cluster_.nodes * cluster_.nics_per_node;
    case LinkKind::MeshLink:
      return cluster_.node_links.kind == NodeLinks::Mesh
                 ? cluster_.nodes * cluster_.gpus_per_node * (cluster_.gpus_per_node - 1) / 2
                 : 0;
    case LinkKind::PcieSwitch:
      return cluster_.node_links.kind == NodeLinks::Pcie
                 ? cluster_.nodes * (cluster_.gpus_per_node / cluster_.node_links.gpus_per_switch)
                 : 0;
    case LinkKind::NumaLink:
      return cluster_.node_links.kind == NodeLinks::Pcie && cluster_.node_links.numa_domains == 2 ? cluster_.nodes : 0;
  }
  return 0;
}

// Local GPUs a < b of a node: their pair's position in (0,1), (0,2), ..., (1,2), ...
int Fabric::pair_index(int a, int b) const {
  const int g = cluster_.gpus_per_node;
  return a * g - a * (a + 1) / 2 + (b - a - 1);
}

LinkParams Fabric::link(LinkId id) const {
  const ClusterSpec& c = cluster_;
  std::string n = std::to_string(id.index);
  std::string nic = std::to_string(id.index / std::max(1, c.nics_per_node)) + "." +
                    std::to_string(id.index % std::max(1, c.nics_per_node));
  switch (id.kind) {
    // A link down (cluster.degraded 0) keeps its figures: no route crosses it.
    case LinkKind::NvLink:
      return {"nvlink-" + n, c.nvlink_bw_Bps * kept(c.nvlink_left(id.index)), c.nvlink_latency_s};
    case LinkKind::Pcie:
      return {"pcie-" + n, c.pcie_bw_Bps, c.pcie_latency_s};
    case LinkKind::Nic: {
      const int per_node = std::max(1, c.nics_per_node);
      return {"nic-" + nic, c.nic_bw_Bps * kept(c.nic_left(id.index / per_node, id.index % per_node)),
              c.nic_latency_s + c.switch_latency_s / 2};
    }
    // Above the leaves other jobs' traffic takes cluster.background_load of each link.
    case LinkKind::LeafUplink:
      // The leaf's share of the spine: its NICs' bandwidth divided by the oversubscription, shared by all of them.
      // cluster.degraded's "leaf L" keeps a fraction of them.
      return {
          "uplink-" + n,
          nics_on_leaf(id.index) * c.nic_bw_Bps / c.oversubscription * (1 - c.background_load) * c.leaf_left(id.index),
          c.switch_latency_s};
    case LinkKind::SpinePort: {
      const int per_node = std::max(1, c.nics_per_node);
      return {"spine-" + nic,
              c.nic_bw_Bps * (1 - c.background_load) * c.leaf_left(leaf(id.index / per_node, id.index % per_node)),
              c.switch_latency_s};
    }
    case LinkKind::MeshLink: {
      // One crossing per transfer: the latency of an NVSwitch route's two.
      const int pairs = c.gpus_per_node * (c.gpus_per_node - 1) / 2;
      const int node = id.index / pairs;
      int a = 0, rest = id.index % pairs;
      while (rest >= c.gpus_per_node - 1 - a) rest -= c.gpus_per_node - 1 - a++;
      const int b = a + 1 + rest;
      return {"mesh-" + std::to_string(node) + "." + std::to_string(a) + "-" + std::to_string(b),
              c.node_links.links(a, b) * c.node_links.link_bw_Bps, 2 * c.nvlink_latency_s};
    }
    case LinkKind::PcieSwitch:
      return {"pcie-switch-" + n, c.node_links.switch_bw_Bps, c.pcie_latency_s};
    case LinkKind::NumaLink:
      return {"numa-" + n, c.node_links.numa_bw_Bps, c.pcie_latency_s};
  }
  return {};
}

void Fabric::check_device(int gpu, const std::string& what) const {
  if (gpu < 0 || gpu >= cluster_.devices())
    throw InputError(what + ": device " + std::to_string(gpu) + " is out of range (the cluster has " +
                     std::to_string(cluster_.devices()) + " devices, 0.." + std::to_string(cluster_.devices() - 1) +
                     ")");
}

std::vector<Hop> Fabric::route(int src_gpu, int dst_gpu) const {
  std::string pair = "transfer device " + std::to_string(src_gpu) + " -> device " + std::to_string(dst_gpu);
  check_device(src_gpu, pair);
  check_device(dst_gpu, pair);
  if (src_gpu == dst_gpu) throw InputError(pair + " has no route: a device does not send to itself");
  const int g = cluster_.gpus_per_node;
  int src_node = src_gpu / g, dst_node = dst_gpu / g;
  if (src_node == dst_node) return node_route(src_gpu, dst_gpu);
  if (cluster_.nics_per_node == 0)
    throw InputError(pair + " has no route: nodes " + std::to_string(src_node) + " and " + std::to_string(dst_node) +
                     " have no NIC (cluster.nics_per_node=0)");
  // A NIC down: the GPU's traffic crosses to a GPU of the node's next rail up over NVLink (NCCL's PXN) and leaves
  // through that GPU's NIC; it arrives the same way.
  const int src_rail = cluster_.nic_rail(src_node, rail(src_gpu % g)),
            dst_rail = cluster_.nic_rail(dst_node, rail(dst_gpu % g));
  int src_nic = src_node * cluster_.nics_per_node + src_rail, dst_nic = dst_node * cluster_.nics_per_node + dst_rail;
  int src_leaf = leaf(src_node, src_rail), dst_leaf = leaf(dst_node, dst_rail);
  std::vector<Hop> hops;
  if (src_rail != rail(src_gpu % g)) hops = node_route(src_gpu, rail_gpu(src_node, src_rail));
  hops.push_back({{LinkKind::Nic, src_nic}, true});
  if (src_leaf != dst_leaf) {
    if (cluster_.oversubscription > 1)
      hops.insert(hops.end(), {{{LinkKind::LeafUplink, src_leaf}, true}, {{LinkKind::LeafUplink, dst_leaf}, false}});
    else
      hops.insert(hops.end(), {{{LinkKind::SpinePort, src_nic}, true}, {{LinkKind::SpinePort, dst_nic}, false}});
  }
  hops.push_back({{LinkKind::Nic, dst_nic}, false});
  if (dst_rail != rail(dst_gpu % g)) {
    const std::vector<Hop> last = node_route(rail_gpu(dst_node, dst_rail), dst_gpu);
    hops.insert(hops.end(), last.begin(), last.end());
  }
  return hops;
}

int Fabric::rail_gpu(int node, int rail) const {
  const int g = cluster_.gpus_per_node;
  return node * g + rail * (g / cluster_.nics_per_node);
}

std::vector<Hop> Fabric::node_route(int src_gpu, int dst_gpu) const {
  const NodeShape& n = cluster_.node_links;
  const int g = cluster_.gpus_per_node, node = src_gpu / g, a = src_gpu % g, b = dst_gpu % g;
  const Hop src_pcie{{LinkKind::Pcie, src_gpu}, true}, dst_pcie{{LinkKind::Pcie, dst_gpu}, false};
  switch (n.kind) {
    case NodeLinks::NvSwitch:  // the NVSwitch is non-blocking: only the two GPUs' own links can be shared
      // A GPU whose NVLink is down reaches the others through the host (cluster.degraded "nvlink G": 0).
      if (cluster_.nvlink_left(src_gpu) == 0 || cluster_.nvlink_left(dst_gpu) == 0) return {src_pcie, dst_pcie};
      return {{{LinkKind::NvLink, src_gpu}, true}, {{LinkKind::NvLink, dst_gpu}, false}};
    case NodeLinks::Mesh:
      if (n.links(a, b) > 0)
        return {{{LinkKind::MeshLink, node * (g * (g - 1) / 2) + pair_index(std::min(a, b), std::max(a, b))}, a < b}};
      return {src_pcie, dst_pcie};  // no link: through the host's root complex
    case NodeLinks::Pcie: {
      const int switches = g / n.gpus_per_switch, sa = a / n.gpus_per_switch, sb = b / n.gpus_per_switch;
      if (sa == sb) return {src_pcie, dst_pcie};  // peer to peer under one switch
      std::vector<Hop> hops{src_pcie, {{LinkKind::PcieSwitch, node * switches + sa}, true}};
      const int numa_a = sa * n.numa_domains / switches, numa_b = sb * n.numa_domains / switches;
      if (numa_a != numa_b) hops.push_back({{LinkKind::NumaLink, node}, numa_a < numa_b});
      hops.push_back({{LinkKind::PcieSwitch, node * switches + sb}, false});
      hops.push_back(dst_pcie);
      return hops;
    }
  }
  return {};
}

std::vector<Hop> Fabric::host_route(int gpu) const {
  check_device(gpu, "transfer device " + std::to_string(gpu) + " -> its host CPU");
  return {{{LinkKind::Pcie, gpu}, true}};
}

std::vector<std::vector<std::pair<int, int>>> Fabric::ring_channels(const std::vector<int>& members) const {
  const int g = cluster_.gpus_per_node;
  // Per node of the group, its lowest member on each rail, in rail order.
  std::map<int, std::map<int, int>> rails;
  for (int x : members) {
    auto [it, fresh] = rails[x / g].try_emplace(rail(x % g), x);
    if (!fresh) it->second = std::min(it->second, x);
  }
  const std::size_t n = members.size();
  std::vector<std::vector<std::pair<int, int>>> hops(n);
  // A group inside one mesh node: every shift whose pairs all have links carries a ring of its own.
  const NodeShape& shape = cluster_.node_links;
  if (shape.kind == NodeLinks::Mesh && n > 1 &&
      std::all_of(members.begin(), members.end(), [&](int x) { return x / g == members.front() / g; })) {
    std::vector<std::size_t> shifts;
    for (std::size_t s = 1; s < n; ++s) {
      bool linked = true;
      for (std::size_t r = 0; r < n && linked; ++r) linked = shape.links(members[r] % g, members[(r + s) % n] % g) > 0;
      if (linked) shifts.push_back(s);
    }
    if (shifts.empty()) shifts.push_back(1);
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t s : shifts) hops[r].emplace_back(members[r], members[(r + s) % n]);
    return hops;
  }
  for (std::size_t r = 0; r < n; ++r) {
    const int a = members[r], b = members[(r + 1) % n];
    const auto& from = rails[a / g];
    const auto& to = rails[b / g];
    if (a / g == b / g || from.size() < 2 || to.size() < 2) {
      hops[r] = {{a, b}};
      continue;
    }
    auto i = from.begin();
    for (auto j = to.begin(); i != from.end() && j != to.end(); ++i, ++j) hops[r].emplace_back(i->second, j->second);
  }
  return hops;
}

double Fabric::latency_s(const std::vector<Hop>& hops) const {
  double total = 0;
  for (const Hop& h : hops) total += link(h.link).latency_s;
  return total;
}

}  // namespace placesim
