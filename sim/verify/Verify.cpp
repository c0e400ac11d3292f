#include "sim/verify/Verify.hpp"

#include <algorithm>
#include <cmath>

#include "sim/verify/TinyMlp.hpp"
#include "strategies/analytic/Validity.hpp"
#include "strategies/pipeline/Equivalence.hpp"
#include "strategies/placement/Enumerate.hpp"
#include "strategies/placement/Presets.hpp"

namespace placesim {

Experiment miniature_experiment(const ExecutorSpec& spec) {
  Experiment e;
  e.name = "miniature";
  e.model.name = "tiny-mlp";
  e.model.opaque_parameters = static_cast<double>(spec.layers) * tiny_mlp::kUnitElems;
  e.model.opaque_layers = spec.layers;
  e.training.micro_batch = tiny_mlp::kBatch;
  e.training.global_batch = 0;
  e.training.recompute = Recompute::None;
  e.strategy = spec.strategy;
  e.strategy.dp = e.strategy.dp_shard * e.strategy.dp_replicate;
  resolve(e);
  return e;
}

Miniature miniature_of(const Experiment& e) {
  Miniature out;
  const StrategySpec& s = e.strategy;
  StrategySpec m = s;
  auto change = [&](const std::string& field, std::int64_t from, std::int64_t to, const std::string& why) {
    if (from != to)
      out.changes.push_back(field + " " + std::to_string(from) + " -> " + std::to_string(to) + " (" + why + ")");
  };
  const bool async = !synchronous_schedule(s.schedule);
  m.tp = m.cp = m.ep = 1;
  if (s.sp) out.changes.push_back("strategy.sp true -> false (no tensor parallelism in the miniature)");
  m.sp = false;
  change("strategy.tp", s.tp, 1, "tensor parallelism places states by construction");
  change("strategy.ep", s.ep, 1, "the miniature has no experts");
  const std::int64_t shard = s.degree(kShardAxis);
  m.dp_shard = async ? 1 : std::min<std::int64_t>(shard, 2);
  m.dp_replicate = async ? 1 : std::min<std::int64_t>(s.dp_replicate, 2);
  const std::string data_why = async ? "an asynchronous schedule runs on one data-parallel rank here"
                                     : "two ranks per data axis exercise every collective";
  change(s.cp > 1 ? "strategy.mesh.dp_shard x strategy.cp" : "strategy.mesh.dp_shard", shard, m.dp_shard, data_why);
  change("strategy.mesh.dp_replicate", s.dp_replicate, m.dp_replicate, data_why);
  m.dp = m.dp_shard * m.dp_replicate;
  m.pp = std::min<std::int64_t>(s.pp, 4);
  change("strategy.pp", s.pp, m.pp, "four stages show every pipeline pattern");
  m.chunks = std::min<std::int64_t>(s.chunks, 2);  // a V keeps its two
  change("strategy.chunks", s.chunks, m.chunks, "two chunks per stage");
  if (!m.layers_per_stage.empty()) out.changes.push_back("strategy.layers_per_stage -> 2 layers per virtual stage");
  m.layers_per_stage.clear();
  m.microbatch_group = 0;
  m.microbatches = 2 * m.pp;
  change("strategy.microbatches", s.microbatches, m.microbatches, "2 x pp");
  m.noam = std::min(s.noam, m.pp);
  m.replicas = std::min<std::int64_t>(s.replicas, 2);
  m.local_steps = std::min<std::int64_t>(s.local_steps, 2);
  change("strategy.replicas", s.replicas, m.replicas, "two replicas");
  change("strategy.local_steps", s.local_steps, m.local_steps, "two local steps");
  if (m.placement.secondary && (m.dp_shard == 1 || m.dp_replicate == 1)) {
    out.changes.push_back("strategy.placement.parameters.secondary dp_shard -> none (" + data_why + ")");
    m.placement.secondary = false;
  }
  // A preset whose name promises an axis the miniature lacks (fsdp-tp's tp, hsdp's two data axes) becomes the
  // preset its file names for that layout; the placement is kept as it is.
  auto preset = strategy_presets().find(m.preset);
  if (preset != strategy_presets().end() && preset->second.requirement &&
      !preset->second.requirement->rule.holds(m, e.training)) {
    const std::string to = preset->second.requirement->otherwise;
    out.changes.push_back("strategy.preset " + m.preset + " -> " + to + " (the miniature's mesh lacks what " +
                          preset->second.requirement->rule.text() + " asks)");
    m.preset = to;
  }
  out.spec.strategy = m;
  out.spec.layers = static_cast<int>(m.pp * m.chunks * 2);
  out.spec.steps = async ? 6 : 3;
  out.spec.strategy = miniature_experiment(out.spec).strategy;  // resolved
  return out;
}

bool composition_rule(const std::string& rule, const StrategySpec& s) {
  if (rule == "offload-whole" || rule == "secondary-of-primary") return true;
  // Activations sharded over one data rank are a no-op the checker refuses as meaningless.
  return rule == "activations-per-replica" && s.dp_shard * s.dp_replicate * s.cp == 1;
}

Judgement judge(const ExecutorSpec& spec, const std::string& disabled_rule) {
  Judgement j;
  const Experiment e = miniature_experiment(spec);
  try {
    check_validity(e, disabled_rule);
    j.checker_valid = true;
  } catch (const InvalidStrategy& refusal) {
    j.checker_message = refusal.what();
    j.rule = cited_rule(j.checker_message);
  } catch (const InputError& refusal) {
    // Not a validity verdict: a combination placesim does not model (e.g. reshard_after_forward=false with gpipe).
    j.checker_message = refusal.what();
    j.not_executed = std::string("not modelled: ") + refusal.what();
    return j;
  }
  const Placement& p = spec.strategy.placement;
  for (State st : {State::Parameters, State::Gradients, State::Optimizer})
    if ((p.mode(st, kShardAxis) == Mode::Offloaded) != (p.mode(st, kReplicateAxis) == Mode::Offloaded)) {
      j.not_executed =
          "composition rule offload-whole: a state offloaded along one data axis only has no host "
          "layout to execute";
      return j;
    }
  if (!j.checker_valid && composition_rule(j.rule, spec.strategy)) {
    j.not_executed = "composition rule " + j.rule + ": no layout to execute";
    return j;
  }
  if (j.checker_valid) j.equivalent = training_equivalence(spec.strategy).equivalent;
  try {
    j.result = execute_placement(spec);
    j.executed = true;
  } catch (const InputError& x) {
    j.not_executed = x.what();
    return j;
  }
  const ExecutorResult& r = j.result;
  if (r.asynchronous)
    j.agree =
        r.stale_replay_deviation <= spec.tolerance && (j.checker_valid ? !j.equivalent == r.diverged : r.diverged);
  else
    j.agree = j.checker_valid == !r.diverged;
  return j;
}

AgreementCounts agreement(const ExecutorSpec& base, const std::vector<Placement>& placements,
                          const std::string& disabled_rule) {
  AgreementCounts c;
  for (const Placement& p : placements) {
    ExecutorSpec spec = base;
    spec.strategy.placement = p;
    const Judgement j = judge(spec, disabled_rule);
    ++c.placements;
    if (!j.executed) {
      ++c.not_executed[j.not_executed];
      continue;
    }
    ++c.executed;
    const double worst = *std::max_element(j.result.max_deviation.begin(), j.result.max_deviation.end());
    if (j.checker_valid) {
      ++c.valid;
      if (!j.result.asynchronous && !matches_analytic(j.result, miniature_experiment(spec))) {
        ++c.analytic_mismatches;
        if (c.disagreements.size() < 20)
          c.disagreements.push_back(placement_json_text(p) + ": executed traffic or memory differs from the analytic");
      }
      c.worst_valid_deviation = std::max(c.worst_valid_deviation, worst);
    } else {
      ++c.refused;
      ++c.refused_by_rule[j.rule];
      c.least_refused_deviation = std::min(c.least_refused_deviation, worst);
    }
    if (j.agree) {
      ++c.agreed;
      continue;
    }
    ++c.disagreed;
    if (c.disagreements.size() < 20) {
      char line[512];
      std::snprintf(line, sizeof line, "%s: checker %s, execution %s (max deviation %.3g)",
                    placement_json_text(p).c_str(), j.checker_valid ? "valid" : ("refuses, rule " + j.rule).c_str(),
                    j.result.diverged ? "diverges" : "equals one device", worst);
      c.disagreements.push_back(line);
    }
  }
  return c;
}

std::map<std::string, std::string> split_activation_refusals() {
  std::map<std::string, std::string> out;
  const std::vector<std::string> modes = {"replicated", "sharded", "sharded-with-gather", "materialized", "offloaded"};
  for (const auto& a : modes)
    for (const auto& b : modes) {
      if (a == b) continue;
      const Json strategy = Json::parse(R"({"mesh": {"dp_shard": 2, "dp_replicate": 2}, "placement": {"activations": )"
                                        R"({"dp_shard": ")" +
                                        a + R"(", "dp_replicate": ")" + b + R"("}}})");
      try {
        parse_strategy(strategy);
        out[a + " x " + b] = "(accepted)";
      } catch (const InputError& x) {
        out[a + " x " + b] = x.what();
      }
    }
  return out;
}

namespace {

std::vector<ExecutedTraffic> traffic_of(const Experiment& miniature, const Analysis& a) {
  std::vector<ExecutedTraffic> out;
  const double pb = miniature.training.param_bytes(), gb = miniature.training.grad_bytes();
  for (const StageAnalysis& st : a.stages) {
    ExecutedTraffic t;
    t.gather = st.comm.by_class[static_cast<std::size_t>(CommClass::ZeroGather)] / pb;
    t.grad_sync = st.comm.by_class[static_cast<std::size_t>(CommClass::DpGradSync)] / gb;
    // Host copies: parameters and the updated shards come in param_bytes, gradients go out in grad_bytes.
    t.h2d = st.comm.h2d / pb;
    t.d2h = st.comm.d2h / gb;
    out.push_back(t);
  }
  return out;
}

std::vector<std::array<double, 3>> resident_of(const Experiment& miniature, const Analysis& a) {
  const TrainingSpec& t = miniature.training;
  const StrategySpec& s = miniature.strategy;
  // Only FSDP under a pipeline needs the layouts (the exhaustive agreement sweep calls this for every placement).
  const std::vector<StageLayout> layouts = s.defers_grad_sync() ? stage_layouts(miniature) : std::vector<StageLayout>{};
  std::vector<std::array<double, 3>> out;
  for (const StageAnalysis& st : a.stages) {
    double gradients = st.memory.gradients / t.held_grad_bytes();
    // FSDP under a pipeline accumulates the stage's gradients unsharded (whole units, as torch's param.grad) until
    // the reduce-scatter after its last backward: the analytic memory counts that as a buffer beside the gradients'
    // shard (padded, as the reduce-scatter's input), the executor as what its devices held of the gradients at once.
    if (s.defers_grad_sync())
      gradients = std::max(gradients, static_cast<double>(layouts[static_cast<std::size_t>(st.stage)].elems()));
    out.push_back(
        {st.memory.parameters / t.held_param_bytes(), gradients, st.memory.optimizer / t.optimizer_bytes_per_param});
  }
  return out;
}

}  // namespace

std::vector<ExecutedTraffic> analytic_traffic(const Experiment& miniature) {
  return traffic_of(miniature, analyze(miniature));
}

std::vector<std::array<double, 3>> analytic_resident(const Experiment& miniature) {
  return resident_of(miniature, analyze(miniature));
}

bool matches_analytic(const ExecutorResult& r, const Experiment& miniature) {
  const Analysis analysis = analyze(miniature);  // once for both
  const std::vector<ExecutedTraffic> traffic = traffic_of(miniature, analysis);
  const std::vector<std::array<double, 3>> resident = resident_of(miniature, analysis);
  if (traffic.size() != r.traffic.size() || resident.size() != r.resident.size()) return false;
  for (std::size_t s = 0; s < traffic.size(); ++s) {
    const ExecutedTraffic &a = traffic[s], &b = r.traffic[s];
    if (a.gather != b.gather || a.grad_sync != b.grad_sync || a.h2d != b.h2d || a.d2h != b.d2h) return false;
    if (resident[s] != r.resident[s]) return false;
  }
  return true;
}

}  // namespace placesim
