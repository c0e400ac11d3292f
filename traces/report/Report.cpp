#include "traces/report/Report.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "strategies/analytic/StepBound.hpp"
#include "strategies/pipeline/StagePlan.hpp"
#include "strategies/placement/Routing.hpp"
#include "traces/report/StackReport.hpp"
#include "workloads/json/Numbers.hpp"
#include "workloads/json/Units.hpp"

namespace placesim {

Json number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9007199254740992.0)
    return Json(static_cast<std::int64_t>(v));
  return Json(v);
}

std::string dump(const Json& j) {
  return j.dump(2) + "\n";
}

namespace {

Json memory_json(const MemoryBytes& m) {
  return Json{{"parameters_bytes", number(m.parameters)}, {"gradients_bytes", number(m.gradients)},
              {"optimizer_bytes", number(m.optimizer)},   {"activations_bytes", number(m.activations)},
              {"buffers_bytes", number(m.buffers)},       {"model_states_bytes", number(m.model_states())},
              {"total_bytes", number(m.total())},         {"host_bytes", number(m.host)}};
}

Json by_class_json(const CommBytes& c, bool moe) {
  Json j = Json::object();
  for (int k = 0; k < kCommClasses; ++k)
    if (reported_class(static_cast<CommClass>(k), moe))
      j[to_string(static_cast<CommClass>(k))] = number(c.by_class[static_cast<std::size_t>(k)]);
  return j;
}

}  // namespace

namespace {

// The share of the model's layers a full recompute runs again: 1, or with training.recompute_layers the chunks'
// first layers; 0 without a full recompute.
double recomputed_share(const Experiment& e) {
  if (e.training.recompute != Recompute::Full) return 0;
  if (!partial_recompute(e)) return 1;
  std::int64_t n = 0, r = 0;
  for (std::int64_t c : virtual_stage_layers(e)) {
    n += c;
    r += recomputed_layers(e, c);
  }
  return n > 0 ? static_cast<double>(r) / static_cast<double>(n) : 0;
}

// The bubble of the stage plan in units of one layer's forward: backward 2, plus 1 for each recomputed layer (on
// average over the layers).
std::vector<StagePlan> unit_stage_plan(const Experiment& e) {
  StageWork w;
  w.layer_forward_s = 1;
  w.layer_backward_s = 2 + recomputed_share(e);
  return stage_plan(e, w);
}

bool has_stage_plan(const Experiment& e) {
  return e.strategy.pp > 1 && !e.model.opaque();
}

std::string stage_plan_basis(const Experiment& e) {
  const double share = recomputed_share(e);
  char backward[64];
  std::snprintf(backward, sizeof backward, "%.4g (recompute of %.4g %% of the layers included)", 2 + share,
                100 * share);
  return std::string("the schedule timed with each layer's forward 1 and backward ") +
         (share == 1   ? "3 (recompute included)"
          : share == 0 ? "2"
                       : backward) +
         ", communication free";
}

}  // namespace

// Mixture of experts: the expert layout, the routing and what it costs the busiest ep rank.
Json experts_json(const Experiment& e, const Analysis& a) {
  const ModelSpec& m = e.model;
  const StrategySpec& s = e.strategy;
  const ExpertRouting r = expert_routing(e);
  Json stages = Json::array();
  for (const auto& st : a.stages) {
    Json collectives = Json::array();
    for (const auto& dc : st.expert_collectives)
      collectives.push_back(Json{{"purpose", dc.plan.purpose},
                                 {"op", to_string(dc.plan.op)},
                                 {"group", "edp"},
                                 {"group_size", dc.group_size},
                                 {"when", to_string(dc.plan.when)},
                                 {"bytes_per_step", number(dc.bytes())}});
    stages.push_back(
        Json{{"stage", st.stage}, {"ep_rank_all_to_all_bytes", st.ep_rank_bytes}, {"expert_collectives", collectives}});
  }
  Json tokens = Json::array();
  for (int j = 0; j < static_cast<int>(r.tokens_to.size()); ++j) tokens.push_back(r.computed(j));
  return Json{{"experts", m.experts},
              {"top_k", m.top_k},
              {"ep", s.ep},
              {"edp", s.edp()},
              {"experts_per_rank", m.experts / s.ep},
              {"routing", to_string(e.training.routing)},
              {"capacity_factor", m.capacity_factor},
              {"tokens_per_rank", moe_tokens_per_rank(e)},
              {"tokens_sent_to_rank", r.tokens_to},
              {"pairs_computed_per_rank", tokens},
              {"busiest_rank_factor", number(r.imbalance())},
              {"dropped_per_rank", r.dropped},
              {"per_stage", stages}};
}

// One line on the experts for the text report.
std::string experts_text(const Experiment& e) {
  const ModelSpec& m = e.model;
  const StrategySpec& s = e.strategy;
  const ExpertRouting r = expert_routing(e);
  const double mean = static_cast<double>(r.total()) / static_cast<double>(s.ep);
  char line[512];
  std::snprintf(line, sizeof line,
                "\nexperts: %lld routed (top %lld)%s on ep %lld x edp %lld (%lld per rank); routing %s: the busiest ep "
                "rank computes x%.2f the mean (%lld token-expert pairs per layer and micro-batch, the mean %.0f)%s\n",
                static_cast<long long>(m.experts), static_cast<long long>(m.top_k),
                m.shared_experts > 0 ? (" + " + std::to_string(m.shared_experts) + " shared").c_str() : "",
                static_cast<long long>(s.ep), static_cast<long long>(s.edp()), static_cast<long long>(m.experts / s.ep),
                to_string(e.training.routing).c_str(), r.imbalance(), static_cast<long long>(r.busiest()), mean,
                r.dropped > 0 ? ("; capacity drops " + std::to_string(r.dropped) + " per rank").c_str() : "");
  return line;
}

Json analysis_report(const Experiment& e, const Analysis& a) {
  Json report;
  report["placesim_version"] = PLACESIM_VERSION;
  report["experiment"] = e.name;
  report["model"] = model_to_json(e.model);
  report["training"] = training_to_json(e.training, e.provenance);
  report["strategy"] = strategy_to_json(e.strategy);
  if (e.stack) report["stack"] = stack_json(e);
  Json memory = memory_json(a.memory);
  memory["model_states_bytes"] = number(a.model_states_bytes);
  memory["total_bytes"] = number(a.total_bytes);
  memory["per_stage"] = Json::array();
  Json comm{{"bytes_per_step", number(a.bytes_per_step)},
            {"by_class", by_class_json(a.comm, e.model.moe())},
            {"offload", {{"h2d_bytes", number(a.comm.h2d)}, {"d2h_bytes", number(a.comm.d2h)}}},
            {"per_stage", Json::array()}};
  for (const auto& st : a.stages) {
    Json ms = memory_json(st.memory);
    ms["stage"] = st.stage;
    memory["per_stage"].push_back(ms);
    Json data = Json::array();
    for (const auto& dc : st.data_collectives)
      data.push_back(Json{{"purpose", dc.plan.purpose},
                          {"state", to_string(dc.plan.state)},
                          {"op", to_string(dc.plan.op)},
                          {"class", to_string(dc.plan.cls)},
                          {"axes", axes_label(e.strategy, dc.plan.group)},
                          {"group_size", dc.group_size},
                          {"when", to_string(dc.plan.when)},
                          {"runs_per_step", number(dc.runs)},
                          {"bytes_per_run", number(dc.bytes_per_run)},
                          {"bytes_per_step", number(dc.bytes())}});
    Json cs{{"stage", st.stage},
            {"bytes_per_step", number(st.comm.total())},
            {"by_class", by_class_json(st.comm, e.model.moe())},
            {"data_collectives", data},
            {"offload", {{"h2d_bytes", number(st.comm.h2d)}, {"d2h_bytes", number(st.comm.d2h)}}}};
    if (st.mirror_sync_bytes > 0) cs["mirror_sync_bytes"] = number(st.mirror_sync_bytes);  // dualpipe
    comm["per_stage"].push_back(cs);
  }
  report["memory"] = memory;
  report["communication"] = comm;
  if (has_stage_plan(e)) {
    Json stages = Json::array();
    const std::vector<StageLayout> layouts = stage_layouts(e);
    for (const StagePlan& p : unit_stage_plan(e))
      stages.push_back(
          Json{{"stage", p.stage},
               {"chunk_layers", p.chunk_layers},
               {"inflight_chunk_passes", number(p.inflight_passes)},
               {"activation_layers", number(p.activation_layers)},
               {"activation_bytes", number(stage_activation_bytes(e, layouts[static_cast<std::size_t>(p.stage)]))},
               {"bubble_fraction", number(p.bubble_fraction)}});
    report["pipeline_stages"] = Json{{"bubble_basis", stage_plan_basis(e)}, {"stages", stages}};
  }
  if (e.model.moe()) report["experts"] = experts_json(e, a);
  double device_max = 0;
  for (const auto& st : a.stages) device_max = std::max(device_max, st.hardware_flops);
  report["compute"] = Json{{"model_flops_per_step", number(a.model_flops_per_step)},
                           {"hardware_flops_per_step", number(a.hardware_flops_per_step)},
                           {"hardware_flops_per_device_max", number(device_max)},
                           {"tokens_per_step", number(a.tokens_per_step)}};
  // With a cluster: what no simulation can beat (strategies/analytic/StepBound.hpp), what search prunes with.
  if (!e.cluster.is_null() && e.pipeline.is_null())
    report["compute"]["step_time_lower_bound_s"] = number(step_time_lower_bound(e));
  if (e.device_memory_bytes > 0) {
    report["device_memory_bytes"] = number(e.device_memory_bytes);
    // The stack's reserve (CUDA context, communicators) and what is left beside it and the analytic total (a bound).
    report["memory"]["reserve_bytes"] = number(stack_reserve_bytes(e));
    report["memory"]["spare_bytes"] = number(spare_bytes(e, a.total_bytes));
  }
  return report;
}

namespace {

std::string cell(const std::string& text, std::size_t width) {
  return text.size() >= width ? text + " " : std::string(width - text.size(), ' ') + text;
}

std::string format_count(double v) {
  return format_scaled(v, {{1e12, 1e12, "%.2f T"}, {1e9, 1e9, "%.2f B"}, {1e6, 1e6, "%.2f M"}, {0, 1, "%.0f"}});
}

std::string format_flops(double v) {
  return format_scaled(v, {{1e18, 1e18, "%.2f EFLOP"}, {1e15, 1e15, "%.2f PFLOP"}, {0, 1e12, "%.2f TFLOP"}});
}

// The loss kernel when an origin gave it; the default follows the kernels (vocab-parallel when fused, else pytorch).
std::string loss_text(const Experiment& e) {
  const TrainingSpec& t = e.training;
  if (!e.provenance.present("training.loss_kernel")) return "";
  switch (t.loss_kernel) {
    case LossKernel::Fused:
      return "; loss: a fused cross-entropy kernel on the 16-bit logits (training.loss_kernel)";
    case LossKernel::PyTorch:
      return "; loss: PyTorch's cross entropy on fp32 logits (training.loss_kernel)";
    case LossKernel::VocabParallel:
      break;
  }
  return "; loss: Megatron's vocab-parallel cross entropy in fp32 (training.loss_kernel)";
}

std::string kernels_only_text(const Experiment& e) {
  const TrainingSpec& t = e.training;
  const std::string origin = e.provenance.written("training.kernels")   ? "training.kernels"
                             : e.provenance.present("training.kernels") ? e.provenance.who("training.kernels")
                                                                        : "default";
  switch (t.kernels) {
    case Kernels::Eager:
      return "eager element-wise kernels" + std::string(t.fused_norm ? " with a fused RMSNorm" : "") + " (" + origin +
             ")";
    case Kernels::Compiled:
      return "compiled element-wise kernels, costed as fused (" + origin + ")";
    case Kernels::Fused:
      break;
  }
  return "fused element-wise kernels (" + origin + ")";
}

}  // namespace

std::string kernels_text(const Experiment& e) {
  return kernels_only_text(e) + loss_text(e);
}

std::string attention_text(const Experiment& e) {
  if (!e.model.flash_attention) return "unfused attention (scores stored)";
  switch (e.training.attention_kernel) {
    case AttentionKernel::Flash1:
      return "fused attention (FlashAttention v1 kernels at their measured speed relative to FlashAttention-2: "
             "training.attention_kernel)";
    case AttentionKernel::Triton:
      return "fused attention (FlashAttention's Triton kernel at its measured speed relative to FlashAttention-2: "
             "training.attention_kernel)";
    case AttentionKernel::Cudnn:
      return "fused attention (cuDNN's, at its measured speed relative to FlashAttention-2: "
             "training.attention_kernel)";
    case AttentionKernel::Fa3:
      return "fused attention (FlashAttention-3, at its measured speed relative to FlashAttention-2: "
             "training.attention_kernel)";
    case AttentionKernel::Fa2:
      return "fused attention (FlashAttention-2, at its measured speed relative to the profile's kernel: "
             "training.attention_kernel)";
    case AttentionKernel::Fused:
      break;
  }
  return "fused attention";
}

namespace {

// Who set a training field: the field's own name when the experiment writes it, else the origin that gave it.
std::string given_by(const Experiment& e, const std::string& field) {
  return e.provenance.written(field) ? field : e.provenance.who(field);
}

// The strategy's options the mesh line names after the device count.
std::string mesh_options_text(const Experiment& e) {
  const StrategySpec& s = e.strategy;
  std::string text = s.sp ? ", sequence parallel" : "";
  if (s.costs_tp_copies())
    text +=
        ", batch-first TP activations (each sequence-parallel collective's buffer copied on the compute stream: "
        "strategy.tp_copies)";
  if (s.tp_fp8_gather)
    text += std::string(", TP all-gathers in FP8 (torchao's Float8 TP plan: strategy.tp_fp8_gather") +
            (e.provenance.present("strategy.tp_fp8_gather") ? "" : ", on with tensorwise Float8 and PyTorch's TP") +
            ")";
  if (s.gathers_once_per_step() && holds_unit_buffer(s, State::Parameters))
    text +=
        ", units gathered once per step and gradients reduce-scattered after the last backward "
        "(reshard_after_forward=false under the pipeline; torchtitan's default with pp > 1)";
  else if (s.regathers_after_backward() && holds_unit_buffer(s, State::Parameters))
    text +=
        ", units resharded after every backward and gathered again before the chunk's next op, gradients "
        "reduce-scattered after the last backward (reshard_after_backward=true under the pipeline)";
  return text;
}

// The gradients' precision and the optimizer's options, each with who set it.
std::string optimizer_options_text(const Experiment& e) {
  const TrainingSpec& t = e.training;
  std::string text = to_string(t.grad_dtype) + " gradients";
  if (t.master_weights == MasterWeights::Parameters)
    text += ", fp32 master weights as the parameters (" + given_by(e, "training.master_weights") + ")";
  if (t.optimizer_kernel == OptimizerKernel::Foreach)
    text += ", torch.optim's foreach step (" + given_by(e, "training.optimizer_kernel") + ")";
  return text;
}

// What follows "recompute <mode>": the layers a partial recompute covers, and where the mode came from.
std::string recompute_text(const Experiment& e) {
  const TrainingSpec& t = e.training;
  std::string text;
  if (partial_recompute(e))
    text += " of the first " + std::to_string(t.recompute_layers) +
            " layers of each model chunk (training.recompute_layers; the others keep every activation)";
  if (!e.provenance.present("training.recompute") && t.recompute != Recompute::None)
    text +=
        " (training.recompute not given: the placement's activations are materialized, i.e. recomputed in the "
        "backward; set training.recompute to choose)";
  return text;
}

// The model, the strategy and its mesh, the schedule and batch, precision, optimizer, recompute and kernels.
void write_heading(std::ostream& out, const Experiment& e, const Analysis& a) {
  const StrategySpec& s = e.strategy;
  const TrainingSpec& t = e.training;
  out << "placesim analyze: " << e.model.name << " (" << format_count(a.parameters) << " parameters), strategy "
      << s.preset << " " << short_form(s.placement) << " (P/O/G/A)\n";
  out << "  mesh " << mesh_string(s) << " = " << s.devices() << " devices" << mesh_options_text(e) << "; "
      << to_string(s.schedule) << ", " << s.microbatches << " micro-batches of " << t.micro_batch << ", global batch "
      << t.global_batch << "; " << to_string(t.dtype) << " " << to_string(t.optimizer) << " ("
      << optimizer_options_text(e) << "), recompute " << to_string(t.recompute) << recompute_text(e)
      << (t.fp8 ? ", FP8 linear layers (training.fp8, " + to_string(t.fp8_scaling) + " scaling)" : std::string());
  if (!e.model.opaque())
    out << "; seq " << e.model.seq_len
        << (e.model.seq_len_source.empty() ? std::string() : " (" + e.model.seq_len_source + ")") << ", "
        << attention_text(e) << ", " << kernels_text(e);
  out << "\n" << stack_summary(e) << "\n";
}

// The table's columns: the first and the last stage (they differ by embedding/head and in-flight micro-batches); the
// maximum over devices follows them.
using Columns = std::vector<const StageAnalysis*>;
constexpr std::size_t kColumnWidth = 14;

void write_column_heads(std::ostream& out, const std::string& title, const Columns& cols) {
  out << cell(title, 24);
  for (const auto* c : cols) out << cell("stage " + std::to_string(c->stage), kColumnWidth);
  out << cell("max", kColumnWidth) << "\n";
}

void write_memory_row(std::ostream& out, const Columns& cols, const std::string& label,
                      double (*get)(const MemoryBytes&), double max_value) {
  out << "  " << label << std::string(22 - label.size(), ' ');
  for (const auto* c : cols) out << cell(format_bytes(get(c->memory)), kColumnWidth);
  out << cell(format_bytes(max_value), kColumnWidth) << "\n";
}

void write_memory_rows(std::ostream& out, const Analysis& a, const Columns& cols) {
  write_column_heads(out, "memory per device", cols);
  write_memory_row(
      out, cols, "parameters", [](const MemoryBytes& m) { return m.parameters; }, a.memory.parameters);
  write_memory_row(
      out, cols, "gradients", [](const MemoryBytes& m) { return m.gradients; }, a.memory.gradients);
  write_memory_row(
      out, cols, "optimizer", [](const MemoryBytes& m) { return m.optimizer; }, a.memory.optimizer);
  write_memory_row(
      out, cols, "activations", [](const MemoryBytes& m) { return m.activations; }, a.memory.activations);
  // Buffers and total assume every transient buffer live at once: a bound, which simulate's peak stays under when
  // each layer is its own group. Named so, as simulate's validation rows name them.
  write_memory_row(
      out, cols, "buffers (bound)", [](const MemoryBytes& m) { return m.buffers; }, a.memory.buffers);
  write_memory_row(
      out, cols, "model states", [](const MemoryBytes& m) { return m.model_states(); }, a.model_states_bytes);
  write_memory_row(
      out, cols, "total (bound)", [](const MemoryBytes& m) { return m.total(); }, a.total_bytes);
  if (a.memory.host > 0)
    write_memory_row(
        out, cols, "host (offloaded)", [](const MemoryBytes& m) { return m.host; }, a.memory.host);
}

void write_comm_rows(std::ostream& out, const Experiment& e, const Analysis& a, const Columns& cols) {
  const std::size_t w = kColumnWidth;
  out << "\n";
  write_column_heads(out, "sent per device per step", cols);
  for (int k = 0; k < kCommClasses; ++k) {
    auto idx = static_cast<std::size_t>(k);
    if (static_cast<CommClass>(k) == CommClass::CpKv && e.strategy.cp == 1) continue;  // no context parallelism
    if (!reported_class(static_cast<CommClass>(k), e.model.moe())) continue;
    std::string label = to_string(static_cast<CommClass>(k));
    out << "  " << label << std::string(22 - label.size(), ' ');
    for (const auto* c : cols) out << cell(format_bytes(c->comm.by_class[idx]), w);
    out << cell(format_bytes(a.comm.by_class[idx]), w) << "\n";
  }
  out << "  total (network)       ";
  for (const auto* c : cols) out << cell(format_bytes(c->comm.total()), w);
  out << cell(format_bytes(a.bytes_per_step), w) << "\n";
  if (a.comm.h2d > 0 || a.comm.d2h > 0)
    out << "  PCIe host->device " << format_bytes(a.comm.h2d) << ", device->host " << format_bytes(a.comm.d2h) << "\n";
}

// The data-parallel classes by the collective and axis they come from (stage 0; other stages differ in size only).
void write_data_collectives(std::ostream& out, const Experiment& e, const Analysis& a) {
  const auto& data = a.stages.front().data_collectives;
  const double mirror = a.stages.front().mirror_sync_bytes;
  if (data.empty() && mirror == 0) return;
  out << "\ndata-parallel collectives, stage 0 (sent per device):\n";
  const auto head = [&](const std::string& purpose) {
    const std::string h = "  " + purpose;
    out << h << std::string(h.size() < 48 ? 48 - h.size() : 1, ' ');
  };
  for (const auto& dc : data) {
    head(dc.plan.purpose);
    out << to_string(dc.plan.op) << " over " << axes_label(e.strategy, dc.plan.group) << " (" << dc.group_size << "), "
        << to_string(dc.plan.when) << ": " << format_bytes(dc.bytes_per_run) << " x " << dc.runs << " = "
        << format_bytes(dc.bytes()) << "\n";
  }
  if (mirror > 0) {
    head("gradient sum with the mirror copy");
    out << "allreduce with stage " << e.strategy.pp - 1
        << " (2), per step, before the optimizer: " << format_bytes(mirror) << "\n";
  }
}

void write_stage_plan(std::ostream& out, const Experiment& e) {
  const StrategySpec& s = e.strategy;
  out << "\npipeline stages (" << to_string(s.schedule);
  if (s.schedule == Schedule::Interleaved)
    out << ", " << s.chunks << " chunks, groups of " << s.interleave_group() << " micro-batches";
  if (s.schedule == Schedule::InterleavedZb) out << ", " << s.chunks << " chunks";
  if (v_shaped(s.schedule)) out << ", 2 chunks per stage in a V";
  if (bidirectional(s.schedule))
    out << ", 2 chunks per stage: stage s of one direction's copy, p - 1 - s of the other's";
  out << "; bubble: " << stage_plan_basis(e) << "):\n";
  out << "  stage  layers per chunk        in flight   activations   bubble\n";
  const std::vector<StageLayout> layouts = stage_layouts(e);
  for (const StagePlan& p : unit_stage_plan(e)) {
    std::string layers;
    for (std::int64_t n : p.chunk_layers) layers += (layers.empty() ? "" : " + ") + std::to_string(n);
    char bubble[32];
    std::snprintf(bubble, sizeof bubble, std::isnan(p.bubble_fraction) ? "n/a" : "%.1f %%", 100 * p.bubble_fraction);
    char inflight[32];
    std::snprintf(inflight, sizeof inflight, "%g", p.inflight_passes);
    out << "  " << cell(std::to_string(p.stage), 5) << "  " << cell(layers, 22) << cell(inflight, 10)
        << cell(format_bytes(stage_activation_bytes(e, layouts[static_cast<std::size_t>(p.stage)])), 14)
        << cell(bubble, 9) << "\n";
  }
}

}  // namespace

std::string analysis_table(const Experiment& e, const Analysis& a) {
  std::ostringstream out;
  write_heading(out, e, a);
  Columns cols = {&a.stages.front()};
  if (a.stages.size() > 1) cols.push_back(&a.stages.back());
  write_memory_rows(out, a, cols);
  write_comm_rows(out, e, a, cols);
  write_data_collectives(out, e, a);
  if (has_stage_plan(e)) write_stage_plan(out, e);
  if (e.model.moe()) out << experts_text(e);
  if (!e.model.opaque())
    out << "\ncompute per step: model " << format_flops(a.model_flops_per_step) << ", hardware "
        << format_flops(a.hardware_flops_per_step) << ", " << format_count(a.tokens_per_step) << " tokens\n";
  return out.str();
}

}  // namespace placesim
