#include "strategies/placement/Condition.hpp"

#include <algorithm>
#include <sstream>

namespace placesim {

namespace {

const std::vector<std::string>& predicates() {
  static const std::vector<std::string> names = {"interleaved",      "synchronous",        "gathered parameters",
                                                 "no weight copies", "in-place optimizer", "fp8"};
  return names;
}

const std::vector<std::string>& degrees() {
  static const std::vector<std::string> names = {"dp", "dp_shard", "dp_replicate", "tp", "pp", "cp", "ep"};
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
  if (name == "dp") return s.dp;
  if (name == "dp_shard") return s.dp_shard;
  if (name == "dp_replicate") return s.dp_replicate;
  if (name == "tp") return s.tp;
  if (name == "pp") return s.pp;
  if (name == "cp") return s.cp;
  if (name == "ep") return s.ep;
  return -1;
}

Condition::Condition(const std::string& text, const std::string& field) : text_(text) {
  std::string rest = text;
  while (!rest.empty()) {
    const std::size_t cut = rest.find(" and ");
    const std::string term = rest.substr(0, cut);
    rest = cut == std::string::npos ? "" : rest.substr(cut + 5);
    if (std::find(predicates().begin(), predicates().end(), term) != predicates().end()) {
      terms_.push_back({term, "", 0});
      continue;
    }
    std::istringstream in(term);
    Term t;
    std::string extra;
    if (!(in >> t.name >> t.op >> t.value) || (in >> extra) ||
        std::find(degrees().begin(), degrees().end(), t.name) == degrees().end() ||
        (t.op != ">" && t.op != ">=" && t.op != "<" && t.op != "<=" && t.op != "==" && t.op != "!="))
      throw InputError(field + "=\"" + text + "\": the term \"" + term +
                       "\" is neither a comparison of a mesh degree (dp, dp_shard, dp_replicate, tp, pp, cp, ep) "
                       "with a number, such as \"tp > 1\", nor one of: interleaved, synchronous, gathered "
                       "parameters, no weight copies, in-place optimizer, fp8 (terms are joined by \" and \")");
    terms_.push_back(t);
  }
}

bool Condition::holds(const StrategySpec& s, const TrainingSpec& t) const {
  for (const Term& term : terms_) {
    const bool ok = term.op.empty() ? predicate(term.name, s, t) : compare(mesh_degree(s, term.name), term.op, term.value);
    if (!ok) return false;
  }
  return true;
}

}  // namespace placesim
