#include "topology/cluster/Fabric.hpp"

#include <algorithm>
#include <map>

namespace placesim {

Fabric::Fabric(const ClusterSpec& cluster) : cluster_(cluster), down_ports_(cluster.switch_radix / 2) {
  validate_cluster(cluster_);
}

int Fabric::rail(int local_gpu) const {
  return static_cast<int>(static_cast<long long>(local_gpu) * cluster_.nics_per_node / cluster_.gpus_per_node);
}

int Fabric::leaf(int node, int rail) const {
  if (cluster_.fabric == FabricTopology::RailOptimized) return node / down_ports_ * cluster_.nics_per_node + rail;
  return (node * cluster_.nics_per_node + rail) / down_ports_;
}

int Fabric::leaves() const {
  if (cluster_.nics_per_node == 0) return 0;
  if (cluster_.fabric == FabricTopology::RailOptimized)
    return (cluster_.nodes + down_ports_ - 1) / down_ports_ * cluster_.nics_per_node;
  return (cluster_.nodes * cluster_.nics_per_node + down_ports_ - 1) / down_ports_;
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
  }
  return 0;
}

LinkParams Fabric::link(LinkId id) const {
  const ClusterSpec& c = cluster_;
  std::string n = std::to_string(id.index);
  std::string nic = std::to_string(id.index / std::max(1, c.nics_per_node)) + "." +
                    std::to_string(id.index % std::max(1, c.nics_per_node));
  switch (id.kind) {
    case LinkKind::NvLink:
      return {"nvlink-" + n, c.nvlink_bw_Bps, c.nvlink_latency_s};
    case LinkKind::Pcie:
      return {"pcie-" + n, c.pcie_bw_Bps, c.pcie_latency_s};
    case LinkKind::Nic:
      return {"nic-" + nic, c.nic_bw_Bps, c.nic_latency_s + c.switch_latency_s / 2};
    case LinkKind::LeafUplink:
      // The leaf's share of the spine: its NICs' bandwidth divided by the oversubscription, shared by all of them.
      return {"uplink-" + n, nics_on_leaf(id.index) * c.nic_bw_Bps / c.oversubscription, c.switch_latency_s};
    case LinkKind::SpinePort:
      return {"spine-" + nic, c.nic_bw_Bps, c.switch_latency_s};
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
  if (src_node == dst_node)  // the NVSwitch is non-blocking: only the two GPUs' own links can be shared
    return {{{LinkKind::NvLink, src_gpu}, true}, {{LinkKind::NvLink, dst_gpu}, false}};
  if (cluster_.nics_per_node == 0)
    throw InputError(pair + " has no route: nodes " + std::to_string(src_node) + " and " + std::to_string(dst_node) +
                     " have no NIC (cluster.nics_per_node=0)");
  int src_rail = rail(src_gpu % g), dst_rail = rail(dst_gpu % g);
  int src_nic = src_node * cluster_.nics_per_node + src_rail, dst_nic = dst_node * cluster_.nics_per_node + dst_rail;
  int src_leaf = leaf(src_node, src_rail), dst_leaf = leaf(dst_node, dst_rail);
  std::vector<Hop> hops = {{{LinkKind::Nic, src_nic}, true}};
  if (src_leaf != dst_leaf) {
    if (cluster_.oversubscription > 1)
      hops.insert(hops.end(), {{{LinkKind::LeafUplink, src_leaf}, true}, {{LinkKind::LeafUplink, dst_leaf}, false}});
    else
      hops.insert(hops.end(), {{{LinkKind::SpinePort, src_nic}, true}, {{LinkKind::SpinePort, dst_nic}, false}});
  }
  hops.push_back({{LinkKind::Nic, dst_nic}, false});
  return hops;
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
