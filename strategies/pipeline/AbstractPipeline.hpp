#pragma once
#include "strategies/graph/Record.hpp"
#include "strategies/pipeline/PipelineEval.hpp"
#include "strategies/pipeline/PipelineSchedule.hpp"
#include "strategies/pipeline/UpdateLog.hpp"
#include "workloads/json/JsonReader.hpp"

namespace placesim {

/// An experiment's abstract "pipeline" section: a pipeline of uniform stages with fixed op times, in place of a
/// model and a cluster.
struct AbstractPipeline {
  PipelineShape shape;
  PipelineTimes times;
};

/// The range of an abstract pipeline's op times: a pass of at least a nanosecond (shorter is a unit mistake, and
/// throughputs past 1e300 micro-batches/s overflow) and any op of at most 1e6 s (11.6 days, as simulate's
/// kMaxTaskSeconds), so that a run of the most ops the evaluator accepts stays finite.
constexpr double kMinPassSeconds = 1e-9, kMaxOpSeconds = 1e6;

/// Parses the section strictly (unknown keys refused; InputError naming "pipeline.<field>" and the value).
///
///   {"stages": S, "microbatches": M, "forward_s": f, "backward_s": b,            required; counts >= 1, times in
///    "p2p_s": c, "apply_s": u, "steps": n, "schedule": "1f1b",                 [kMinPassSeconds, kMaxOpSeconds];
///                                                                               defaults 0, 0, 1, "1f1b"
///    "chunks": v, "microbatch_group": N,              interleaved only; defaults 2, S
///    "noam": n,                                       pipedream, pipedream-2bw only; >= 1, default S
///    "replicas": R, "local_steps": H, "average_s": a, localsgd only; defaults 1, 1, 0
///    "weight_s": w}                                   zb-h1, zb-h2, zb-v only: the weight-gradient part of backward_s
///                                                     (their B takes b - w, their W w); default b / 2, below b
AbstractPipeline parse_abstract_pipeline(const Json& section);

/// Evaluates an abstract pipeline and returns its report:
///   {"pipeline": <pipeline_json + "times">,
///    "simulation": {"step_time_s", "makespan_s", "microbatches", "throughput_microbatches_per_s"}}
/// step_time_s = makespan / steps. Fills *record_out (see evaluate_pipeline) and *trace_out (see update_log) when
/// they are not null. Throws InputError for a bad section.
Json simulate_abstract_pipeline(const Json& section, SimulationRecord* record_out, UpdateLog* trace_out);

}  // namespace placesim
