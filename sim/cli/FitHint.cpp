#include "sim/cli/FitHint.hpp"

#include <optional>
#include <vector>

#include "strategies/analytic/Analytic.hpp"
#include "workloads/json/JsonReader.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

namespace {

struct Change {
  std::string field, value;
};

}  // namespace

DoesNotFit with_fit_hint(const DoesNotFit& refusal, const Experiment& e, const Args& args, bool allow_default) {
  const double memory = e.device_memory_bytes;
  if (!(memory > 0)) return refusal;
  std::vector<Change> single;
  // torchtitan's op-level selective AC first (it recomputes less), where it differs from what is written.
  const Recompute rc = e.training.recompute;
  if ((rc == Recompute::None || rc == Recompute::Selective) && !e.model.opaque() && !e.model.mla())
    single.push_back({"training.recompute", "selective-op"});
  if (rc != Recompute::Full && !e.model.opaque()) single.push_back({"training.recompute", "full"});
  const Mode optimizer = e.strategy.placement.mode(State::Optimizer, kShardAxis);
  if (e.strategy.dp > 1 && (optimizer == Mode::Replicated || optimizer == Mode::Materialized))
    single.push_back({"strategy.placement.optimizer", "sharded"});
  if (single.empty()) return refusal;
  std::string base_dir;
  const Json base = experiment_json_from_args(args, allow_default, &base_dir);
  // The analytic bound of the experiment with `changes` set as --set sets them, or nullopt when it is not valid.
  auto bound = [&](const std::vector<Change>& changes) -> std::optional<double> {
    try {
      Json j = base;
      for (const Change& c : changes) set_path(j, c.field, c.value);
      Experiment x = parse_experiment(j, base_dir);
      check_validity(x);
      return analyze(x).total_bytes;
    } catch (const InputError&) {
      return std::nullopt;
    }
  };
  auto named = [](const std::vector<Change>& changes) {
    std::string text;
    for (const Change& c : changes) text += (text.empty() ? "" : " and ") + c.field + "=" + c.value;
    return text;
  };
  std::vector<std::string> fits;
  for (const Change& c : single)
    if (auto b = bound({c}); b && *b <= memory)
      fits.push_back(named({c}) + " (analytic bound " + format_bytes(*b) + ")");
  // Together: the largest saving of each field (full recompute, not selective-op, with the sharded optimizer).
  std::vector<Change> together;
  for (const Change& c : single)
    if (c.value != "selective-op") together.push_back(c);
  if (fits.empty() && together.size() > 1)
    if (auto b = bound(together); b && *b <= memory)
      fits.push_back(named(together) + " together (analytic bound " + format_bytes(*b) + ")");
  if (fits.empty()) return refusal;
  std::string hint = "; it fits with ";
  for (std::size_t i = 0; i < fits.size(); ++i) hint += (i == 0 ? "" : ", or with ") + fits[i];
  return DoesNotFit(std::string(refusal.what()) + hint);
}

}  // namespace placesim
