#include "strategies/placement/Condition.hpp"

#include <algorithm>
#include <sstream>

namespace placesim {

namespace {

const std::vector<std::string>& predicates() {
  static const std::vector<std::string> names = {
      "interleaved", "synchronous", "gathered parameters", "no weight copies",     "in-place optimizer",
      "fp8",         "16-bit",      "sharded gradients",   "replicated gradients", "bf16",
      "1f1b",        "ep overlap",  "full recompute",      "sharded optimizer"};
  return names;
}

bool compare(long long a, const std::string& op, long long b) {
  if (op == ">") return a > b;
  if (op == ">=") return a >= b;
  if (op == "<") return a < b;
  if (op == "<=") return a <= b;
  if (op == "==") return a == b;
  return a != b;
}

bool predicate(const std::string& name, const StrategySpec& s, const TrainingSpec& t) {
  if (name == "interleaved") return s.schedule == Schedule::Interleaved;
  if (name == "synchronous") return synchronous_schedule(s.schedule);
  if (name == "gathered parameters") return s.placement.parameters == Mode::ShardedWithGather && !s.placement.secondary;
  if (name == "fp8") return t.fp8;
  if (name == "16-bit") return t.dtype != DType::FP32;
  if (name == "bf16") return t.dtype == DType::BF16;
  if (name == "1f1b") return s.schedule == Schedule::OneFOneB;
  if (name == "ep overlap") return s.ep_overlap;
  if (name == "full recompute") return t.recompute == Recompute::Full;
  if (name == "sharded optimizer") return s.placement.sharded_axes(State::Optimizer) != kNoAxes;
  if (name == "replicated gradients")
    return s.placement.gradients == Mode::Replicated && s.placement.replicate.gradients == Mode::Replicated;
  if (name == "sharded gradients")
    return s.placement.gradients != Mode::Replicated || s.placement.replicate.gradients != Mode::Replicated;
  if (name == "no weight copies") {
    const bool stashed = s.pp > 1 && (s.schedule == Schedule::PipeDream || s.schedule == Schedule::PipeDream2BW);
    return t.dtype != DType::FP32 && s.placement.parameters != Mode::Offloaded &&
           s.placement.optimizer != Mode::Offloaded && !s.placement.secondary && !stashed;
  }
  // in-place optimizer
  const bool in_place = t.dtype == DType::FP32 || t.master_weights == MasterWeights::Parameters;
  return in_place && t.optimizer_bytes_per_param == default_optimizer_bytes(t.optimizer, t.dtype, t.master_weights);
}

}  // namespace

long long mesh_degree(const StrategySpec& s, const std::string& name) {
  // The degrees by their field names (a table: these words are mesh axes, not preset names).
  static const std::vector<std::pair<std::string, std::int64_t StrategySpec::*>> axes = {
      {"dp", &StrategySpec::dp},
      {"dp_shard", &StrategySpec::dp_shard},
      {"dp_replicate", &StrategySpec::dp_replicate},
      {"tp", &StrategySpec::tp},
      {"pp", &StrategySpec::pp},
      {"cp", &StrategySpec::cp},
      {"ep", &StrategySpec::ep}};
  for (const auto& [axis, member] : axes)
    if (axis == name) return s.*member;
  return -1;
}

Condition::Condition(const std::string& text, const std::string& field) : text_(text) {
  std::string rest = text;
  while (!rest.empty()) {
    const std::size_t cut = rest.find(" and ");
    const std::string term = rest.substr(0, cut);
    rest = cut == std::string::npos ? "" : rest.substr(cut + 5);
    const bool negated = term.rfind("not ", 0) == 0;
    const std::string named = negated ? term.substr(4) : term;
    if (std::find(predicates().begin(), predicates().end(), named) != predicates().end()) {
      terms_.push_back({named, negated ? "not" : "", 0});
      continue;
    }
    std::istringstream in(term);
    Term t;
    std::string extra;
    if (!(in >> t.name >> t.op >> t.value) || (in >> extra) || mesh_degree(StrategySpec{}, t.name) < 0 ||
        (t.op != ">" && t.op != ">=" && t.op != "<" && t.op != "<=" && t.op != "==" && t.op != "!="))
      throw InputError(
          field + "=\"" + text + "\": the term \"" + term +
          "\" is neither a comparison of a mesh degree (dp, dp_shard, dp_replicate, tp, pp, cp, ep) "
          "with a number, such as \"tp > 1\", nor one of: interleaved, synchronous, gathered "
          "parameters, no weight copies, in-place optimizer, fp8, 16-bit, bf16, 1f1b, ep overlap, full "
          "recompute, sharded gradients, replicated gradients, sharded optimizer, each maybe after \"not \" (terms are "
          "joined by \" and \")");
    terms_.push_back(t);
  }
}

bool Condition::holds(const StrategySpec& s, const TrainingSpec& t) const {
  for (const Term& term : terms_) {
    const bool ok = term.op.empty()    ? predicate(term.name, s, t)
                    : term.op == "not" ? !predicate(term.name, s, t)
                                       : compare(mesh_degree(s, term.name), term.op, term.value);
    if (!ok) return false;
  }
  return true;
}

}  // namespace placesim
