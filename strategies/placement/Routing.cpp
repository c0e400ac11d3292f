#include "strategies/placement/Routing.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace placesim {

namespace {

// A permutation of 0..n-1 drawn from `seed` (Fisher-Yates over mt19937_64, whose output the standard fixes).
std::vector<std::int64_t> permutation(std::int64_t n, std::uint64_t seed) {
  std::vector<std::int64_t> p(static_cast<std::size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  std::mt19937_64 rng(seed);
  for (std::int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(i + 1));
    std::swap(p[static_cast<std::size_t>(i)], p[static_cast<std::size_t>(j)]);
  }
  return p;
}

// Caps every share at `cap` and gives the excess to the uncapped shares in proportion (water-filling).
void cap_shares(std::vector<double>& p, double cap) {
  for (int round = 0; round < 64; ++round) {
    double excess = 0, free = 0;
    for (double& x : p) {
      if (x > cap) {
        excess += x - cap;
        x = cap;
      } else if (x < cap) {
        free += x;
      }
    }
    if (excess <= 0) return;
    if (free > 0) {
      for (double& x : p)
        if (x < cap) x += excess * x / free;
    } else {  // the uncapped experts had nothing: they share the excess evenly
      const auto open = static_cast<double>(std::count_if(p.begin(), p.end(), [cap](double x) { return x < cap; }));
      if (open == 0) return;
      for (double& x : p)
        if (x < cap) x += excess / open;
    }
  }
}

}  // namespace

std::vector<double> expert_shares(const ModelSpec& m, const RoutingSpec& r) {
  const std::int64_t n = m.experts;
  std::vector<double> p(static_cast<std::size_t>(n), 1.0 / static_cast<double>(n));
  if (r.kind == RoutingSpec::Kind::Balanced || n == 0) return p;
  const std::vector<std::int64_t> order = permutation(n, r.seed);  // order[k]: the expert of rank k
  if (r.kind == RoutingSpec::Kind::Zipf) {
    double sum = 0;
    for (std::int64_t k = 0; k < n; ++k) sum += std::pow(static_cast<double>(k + 1), -r.zipf);
    for (std::int64_t k = 0; k < n; ++k)
      p[static_cast<std::size_t>(order[static_cast<std::size_t>(k)])] =
          std::pow(static_cast<double>(k + 1), -r.zipf) / sum;
  } else {
    for (double& x : p) x *= 1 - r.hot_fraction;
    for (std::int64_t k = 0; k < r.hot_experts; ++k)
      p[static_cast<std::size_t>(order[static_cast<std::size_t>(k)])] +=
          r.hot_fraction / static_cast<double>(r.hot_experts);
  }
  cap_shares(p, 1.0 / static_cast<double>(m.top_k));
  return p;
}

std::int64_t moe_tokens_per_rank(const Experiment& e) {
  return local_seq_len(e) * e.training.micro_batch / e.strategy.tp;
}

std::int64_t ExpertRouting::busiest() const {
  std::int64_t most = 0;
  for (int j = 0; j < static_cast<int>(tokens_to.size()); ++j) most = std::max(most, computed(j));
  return most;
}

std::int64_t ExpertRouting::total() const {
  std::int64_t sum = 0;
  for (int j = 0; j < static_cast<int>(tokens_to.size()); ++j) sum += computed(j);
  return sum;
}

double ExpertRouting::imbalance() const {
  const std::int64_t sum = total();
  return sum > 0 ? static_cast<double>(busiest()) * static_cast<double>(tokens_to.size()) / static_cast<double>(sum)
                 : 1.0;
}

ExpertRouting expert_routing(const Experiment& e) {
  const ModelSpec& m = e.model;
  ExpertRouting out;
  if (!m.moe()) return out;
  const std::int64_t ep = e.strategy.ep, local = m.experts / ep;
  const std::int64_t tokens = moe_tokens_per_rank(e);
  out.assignments = tokens * m.top_k;
  const std::vector<double> p = expert_shares(m, e.training.routing);
  // Megatron-Core's get_capacity: ceil(tokens x top_k / experts x capacity_factor) per expert and source rank.
  const double capacity =
      m.capacity_factor > 0
          ? std::ceil(static_cast<double>(out.assignments) / static_cast<double>(m.experts) * m.capacity_factor)
          : 0;
  std::vector<double> want(static_cast<std::size_t>(ep), 0);
  double kept = 0, routed = 0;
  for (std::int64_t i = 0; i < m.experts; ++i) {
    const double x = static_cast<double>(out.assignments) * p[static_cast<std::size_t>(i)];
    const double sent = capacity > 0 ? (m.pad_to_capacity ? capacity : std::min(x, capacity)) : x;
    want[static_cast<std::size_t>(i / local)] += sent;
    kept += sent;
    routed += capacity > 0 ? std::min(x, capacity) : x;  // real tokens (padding excluded)
  }
  // Whole tokens: floors, then the largest remainders (lowest rank first on ties) up to the rounded total.
  const auto total = static_cast<std::int64_t>(std::llround(kept));
  out.tokens_to.assign(static_cast<std::size_t>(ep), 0);
  std::int64_t given = 0;
  std::vector<std::pair<double, std::int64_t>> rest;
  for (std::int64_t j = 0; j < ep; ++j) {
    const double w = want[static_cast<std::size_t>(j)];
    out.tokens_to[static_cast<std::size_t>(j)] = static_cast<std::int64_t>(std::floor(w));
    given += out.tokens_to[static_cast<std::size_t>(j)];
    rest.emplace_back(-(w - std::floor(w)), j);
  }
  std::sort(rest.begin(), rest.end());
  for (std::size_t k = 0; given < total && k < rest.size(); ++k, ++given)
    ++out.tokens_to[static_cast<std::size_t>(rest[k].second)];
  out.dropped = std::max<std::int64_t>(0, out.assignments - std::llround(routed));
  return out;
}

}  // namespace placesim
