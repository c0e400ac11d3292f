// The checker against execution, exhaustively: every placement of the four states over dp_shard x
// dp_replicate (2 x 2; five modes per state per axis: 5^8 = 390,625) is judged by the validity checker and run by the
// numeric executor (sim/verify) against one device; the two must agree on every one. The 312,500 placements whose
// activations differ along the two axes are refused by the parser (one message per mode pair, printed); the 78,125
// others are checked and, unless a composition rule refuses them, executed. tests/test_verify.cpp runs a reduced set.
//
//   placement_agreement [--pp 2] [--disable RULE]
//
// Prints the counts checked, executed, agreed and refused (per rule and reason), the largest deviation of a valid
// placement and the smallest of a refused one, and the wall time. Exit 1 on any disagreement.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "sim/verify/Verify.hpp"
#include "strategies/placement/Enumerate.hpp"

using namespace placesim;

int main(int argc, char** argv) {
  std::string disabled;
  int pp = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--disable") == 0) disabled = argv[i + 1];
    if (std::strcmp(argv[i], "--pp") == 0) pp = std::atoi(argv[i + 1]);
  }
  const auto start = std::chrono::steady_clock::now();
  ExecutorSpec base;
  base.strategy.dp_shard = base.strategy.dp_replicate = 2;
  base.strategy.dp = 4;
  base.strategy.pp = pp;
  base.strategy.microbatches = 2 * pp;
  base.layers = 2 * pp;
  base = miniature_of(miniature_experiment(base)).spec;
  const auto parser = split_activation_refusals();
  std::printf("mesh dp_shard 2 x dp_replicate 2 x pp %d; tiny MLP of %d layers, %lld micro-batches, %d steps%s\n", pp,
              base.layers, static_cast<long long>(base.strategy.microbatches), base.steps,
              disabled.empty() ? "" : (", checker rule '" + disabled + "' disabled").c_str());
  std::printf("placements: 390625 = 5^8 (four states x five modes x two axes)\n");
  std::int64_t parser_refused = 0;
  for (const auto& [pair, message] : parser) {
    parser_refused += 15625;
    std::printf("  refused by the parser, activations %-40s x 15625: %s\n", pair.c_str(), message.c_str());
  }
  const AgreementCounts c = agreement(base, data_axis_placements(), disabled);
  std::printf("  checked by the checker and the executor: %lld\n", static_cast<long long>(c.placements));
  for (const auto& [reason, n] : c.not_executed)
    std::printf("    not executed (%lld): %s\n", static_cast<long long>(n), reason.c_str());
  std::printf("    executed %lld: valid %lld, refused %lld\n", static_cast<long long>(c.executed),
              static_cast<long long>(c.valid), static_cast<long long>(c.refused));
  for (const auto& [rule, n] : c.refused_by_rule)
    std::printf("      refused by %-26s %6lld\n", rule.c_str(), static_cast<long long>(n));
  std::printf("    agreed %lld of %lld executed; disagreed %lld\n", static_cast<long long>(c.agreed),
              static_cast<long long>(c.executed), static_cast<long long>(c.disagreed));
  for (const auto& d : c.disagreements) std::printf("      DISAGREE %s\n", d.c_str());
  std::printf("    valid placements whose executed traffic or held elements differ from the analytic model: %lld\n",
              static_cast<long long>(c.analytic_mismatches));
  std::printf("    largest deviation of a valid placement %.3g; smallest largest-deviation of a refused one %.3g\n",
              c.worst_valid_deviation, c.least_refused_deviation);
  std::printf("total: %lld placements, %lld refused by the parser, %lld checked, %lld agreed, %lld not executed\n",
              static_cast<long long>(parser_refused + c.placements), static_cast<long long>(parser_refused),
              static_cast<long long>(c.placements), static_cast<long long>(c.agreed),
              static_cast<long long>(c.placements - c.executed));
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%.1f s wall\n", wall);
  return c.disagreed == 0 && c.analytic_mismatches == 0 ? 0 : 1;
}
