#include "strategies/placement/Strategy.hpp"

#include <map>
#include <optional>

#include "strategies/placement/Presets.hpp"
#include "workloads/json/EnumNames.hpp"
#include "workloads/json/Units.hpp"
#include "workloads/model/Model.hpp"

namespace placesim {

namespace {

Json preset_json(const std::string& name, const std::string& field) {
  return strategy_preset(name, field).strategy;
}

constexpr EnumName<Schedule> kScheduleNames[] = {{Schedule::GPipe, "gpipe"},
                                                 {Schedule::OneFOneB, "1f1b"},
                                                 {Schedule::Interleaved, "interleaved"},
                                                 {Schedule::PipeDream, "pipedream"},
                                                 {Schedule::PipeDream2BW, "pipedream-2bw"},
                                                 {Schedule::LocalSGD, "localsgd"},
                                                 {Schedule::ZbH1, "zb-h1"},
                                                 {Schedule::ZbH2, "zb-h2"},
                                                 {Schedule::ZbV, "zb-v"},
                                                 {Schedule::DualPipeV, "dualpipev"},
                                                 {Schedule::InterleavedZb, "interleaved-zb"},
                                                 {Schedule::DualPipe, "dualpipe"}};
constexpr EnumName<PipelineP2P> kPipelineP2PNames[] = {
    {PipelineP2P::Async, "async"}, {PipelineP2P::Megatron, "megatron"}, {PipelineP2P::DeepSpeed, "deepspeed"}};
// The names to_string writes; cp_comm also reads "p2p" for ring and "all_gather".
constexpr EnumName<CpComm> kCpCommNames[] = {{CpComm::AllGather, "all-gather"}, {CpComm::Ring, "ring"}};
constexpr EnumName<CpImpl> kCpImplNames[] = {{CpImpl::TransformerEngine, "te"}, {CpImpl::PyTorch, "pytorch"}};
constexpr EnumName<CollectiveScheme> kCollectiveSchemeNames[] = {{CollectiveScheme::Ring, "ring"},
                                                                 {CollectiveScheme::Hierarchical, "hierarchical"}};

// One state's modes along the mesh axes: a string is one mode along both data axes; an object names each axis.
// Along tp and pp the modes are fixed by construction and only those are accepted: tp shards each layer's
// parameters, gradients and optimizer state (Megatron's column- and row-parallel layers) and shards activations
// only with sequence parallelism; pp places whole layers, with their states and activations, on stages.
struct StateModes {
  Mode shard = Mode::Replicated, replicate = Mode::Replicated;
  std::optional<bool> sequence_parallel;  ///< activations along tp, when given
  bool secondary = false;
};

StateModes parse_state_modes(const Json& value, const std::string& field, State state, ErrorList* errors) {
  StateModes out;
  if (!value.is_object()) {
    if (!value.is_string())
      throw InputError(field + "=" + show(value) + " must be a mode (a string) or an object of modes per mesh axis");
    out.shard = out.replicate = parse_mode(value.get<std::string>(), field);
    return out;
  }
  ObjectReader r(value, field, errors);
  if (!r.has("dp_shard") || !r.has("dp_replicate"))
    throw InputError(field + "=" + show(value) +
                     " must give a mode for both dp_shard and dp_replicate (a string gives one mode to both)");
  out.shard = parse_mode(r.get_string("dp_shard", ""), r.field("dp_shard"));
  out.replicate = parse_mode(r.get_string("dp_replicate", ""), r.field("dp_replicate"));
  if (r.has("tp")) {
    Mode tp = parse_mode(r.get_string("tp", ""), r.field("tp"));
    if (state == State::Activations) {
      if (tp != Mode::Sharded && tp != Mode::Replicated)
        throw InputError(r.field("tp") + "=" + to_string(tp) +
                         ": activations along tp are sharded (sequence parallelism) or replicated in the norm regions");
      out.sequence_parallel = tp == Mode::Sharded;
    } else if (tp != Mode::Sharded) {
      throw InputError(r.field("tp") + "=" + to_string(tp) + ": rule tp-shards-weights: tensor parallelism shards " +
                       to_string(state) + " of every layer along tp by construction; only sharded is accepted");
    }
  }
  if (r.has("pp")) {
    Mode pp = parse_mode(r.get_string("pp", ""), r.field("pp"));
    if (pp != Mode::Sharded)
      throw InputError(r.field("pp") + "=" + to_string(pp) + ": rule pp-places-layers: the pipeline places whole " +
                       "layers (their " + to_string(state) + ") on stages; only sharded is accepted");
  }
  if (r.has("secondary")) {
    std::string axis = r.get_string("secondary", "");
    if (state != State::Parameters)
      throw InputError(r.field("secondary") + "=" + axis + ": only parameters have a secondary shard (ZeRO++ hpZ)");
    if (axis != "dp_shard")
      throw InputError(r.field("secondary") + "=" + axis + " is not accepted; the secondary shard is along dp_shard");
    out.secondary = true;
  }
  r.finish();
  return out;
}

Placement parse_placement(const Json& value, std::optional<bool>& sequence_parallel, ErrorList* errors) {
  ObjectReader r(value, "strategy.placement", errors);
  Placement p;
  auto read = [&](const char* key, State state, Mode& shard, Mode* replicate) {
    if (!r.has(key)) return;
    const std::optional<StateModes> modes = r.guarded(key, std::optional<StateModes>(), [&] {
      return std::optional<StateModes>(parse_state_modes(*r.child(key), r.field(key), state, errors));
    });
    if (!modes) return;
    const StateModes& m = *modes;
    shard = m.shard;
    if (replicate) *replicate = m.replicate;
    if (m.secondary) p.secondary = true;
    if (m.sequence_parallel) sequence_parallel = m.sequence_parallel;
    if (!replicate && m.shard != m.replicate)
      r.refuse(key, r.field(key) + ": rule activations-per-replica: activations have one mode along both data " +
                        "axes (dp_shard " + to_string(m.shard) + ", dp_replicate " + to_string(m.replicate) +
                        "); every data-parallel rank computes the activations of its own samples");
  };
  read("parameters", State::Parameters, p.parameters, &p.replicate.parameters);
  read("gradients", State::Gradients, p.gradients, &p.replicate.gradients);
  read("optimizer", State::Optimizer, p.optimizer, &p.replicate.optimizer);
  read("activations", State::Activations, p.activations, nullptr);
  r.finish();
  return p;
}

// strategy.layers_per_stage: the layers of every virtual stage, in model order.
std::vector<std::int64_t> parse_layers_per_stage(const Json& list) {
  const std::string field = "strategy.layers_per_stage";
  if (!list.is_array() || list.empty())
    throw InputError(field + "=" + show(list) +
                     " must be a non-empty list of layer counts, one per virtual stage in model order (pp entries, "
                     "pp x chunks with the interleaved schedule)");
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Json& v = list[i];
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > kMaxModelDim)
      throw InputError(field + "[" + std::to_string(i) + "]=" + show(v) +
                       " must be a non-negative integer number of layers (0 only for the first virtual stage, which "
                       "then holds the embedding alone, or the last, the output layer and loss alone)");
    out.push_back(v.get<std::int64_t>());
  }
  return out;
}

// strategy.mesh: the named axes and their degrees. The rank order is fixed (tp fastest, then cp, dp_shard,
// dp_replicate, pp), whatever order the keys are written in.
void read_mesh(ObjectReader& outer, const Json& /*object*/, StrategySpec& s) {
  const Json* mesh = outer.child("mesh");
  auto shorthand = [&](const char* key) -> std::optional<std::int64_t> {
    if (!outer.has(key)) return std::nullopt;
    return outer.get_positive_int(key, 1);
  };
  std::optional<std::int64_t> dp = shorthand("dp"), tp = shorthand("tp"), pp = shorthand("pp"), cp = shorthand("cp"),
                              ep = shorthand("ep");
  s.ep = ep.value_or(1);
  s.tp = tp.value_or(1);
  s.pp = pp.value_or(1);
  s.cp = cp.value_or(1);
  s.dp_shard = dp.value_or(1);
  s.dp_replicate = 1;
  if (mesh) {
    ObjectReader r(*mesh, "strategy.mesh", outer.errors());
    auto axis = [&](const char* key, std::optional<std::int64_t> given, const char* shorthand_field) {
      std::int64_t v = r.get_positive_int(key, given.value_or(1));
      if (given && r.has(key) && *given != v)
        r.refuse(key, r.field(key) + "=" + std::to_string(v) + " contradicts " + shorthand_field + "=" +
                          std::to_string(*given));
      return v;
    };
    s.tp = axis("tp", tp, "strategy.tp");
    s.pp = axis("pp", pp, "strategy.pp");
    s.cp = axis("cp", cp, "strategy.cp");
    s.ep = axis("ep", ep, "strategy.ep");
    const bool split = r.has("dp_shard") || r.has("dp_replicate");
    s.dp_replicate = r.get_positive_int("dp_replicate", 1);
    s.dp_shard = r.get_positive_int("dp_shard", split ? 1 : dp.value_or(1));
    if (dp && split && r.ok({"dp_replicate", "dp_shard"}) && *dp != s.dp_replicate * s.dp_shard)
      outer.refuse("dp", "strategy.dp=" + std::to_string(*dp) +
                             " contradicts strategy.mesh dp_replicate x dp_shard = " + std::to_string(s.dp_replicate) +
                             " x " + std::to_string(s.dp_shard));
    r.finish();
  }
  // Every product of degrees must stay a plausible device count: a wrapped product would be a silent wrong figure.
  std::int64_t devices = 1;
  for (std::int64_t degree : {s.dp_replicate, s.dp_shard, s.cp, s.tp, s.pp})
    if (__builtin_mul_overflow(devices, degree, &devices) || devices > kMaxDevices)
      throw InputError("strategy mesh dp_replicate x dp_shard x cp x tp x pp = " + std::to_string(s.dp_replicate) +
                       " x " + std::to_string(s.dp_shard) + " x " + std::to_string(s.cp) + " x " +
                       std::to_string(s.tp) + " x " + std::to_string(s.pp) + " exceeds " + std::to_string(kMaxDevices) +
                       " devices");
  s.dp = s.dp_replicate * s.dp_shard;
}

// The pipeline schedule's fields: schedule, exchange, micro-batches, chunks, stage split, LocalSGD replicas.
void read_schedule(ObjectReader& r, const Json& object, StrategySpec& s) {
  s.schedule = get_enum(r, "schedule", kScheduleNames, Schedule::OneFOneB);
  s.p2p = get_enum(r, "p2p", kPipelineP2PNames, PipelineP2P::Megatron);
  s.microbatches = r.get_positive_int("microbatches", 0);
  // The interleaved schedule without chunks would be 1F1B under another name: it gets 2 chunks, as pipeline-sweep; a
  // V holds two.
  s.chunks = r.get_positive_int(
      "chunks", interleaves_chunks(s.schedule) || v_shaped(s.schedule) || bidirectional(s.schedule) ? 2 : 1);
  if (r.has("microbatch_group")) {
    if (s.schedule != Schedule::Interleaved)
      r.refuse("microbatch_group", r.field("microbatch_group") + "=" + show(object["microbatch_group"]) +
                                       " is only meaningful with strategy.schedule=interleaved (got " +
                                       to_string(s.schedule) + ")");
    else
      s.microbatch_group = r.get_positive_int("microbatch_group", 0);
  }
  if (const Json* list = r.child("layers_per_stage"))
    s.layers_per_stage =
        r.guarded("layers_per_stage", std::vector<std::int64_t>(), [&] { return parse_layers_per_stage(*list); });
  if (r.has("noam")) {
    std::int64_t noam = r.get_int("noam", 0);
    if (noam < 1)
      r.refuse("noam", r.field("noam") + "=" + std::to_string(noam) + " must be at least 1");
    else
      s.noam = noam;
  }
  s.replicas = r.get_positive_int("replicas", 1);
  s.local_steps = r.get_int("local_steps", 1);
  if (s.local_steps < 1) {
    r.refuse("local_steps", r.field("local_steps") + "=" + std::to_string(s.local_steps) + " must be at least 1");
    s.local_steps = 1;
  }
}

// How sharded parameters are gathered and gradients bucketed (FSDP's and DDP's settings).
void read_gathers(ObjectReader& r, StrategySpec& s) {
  s.bucket_bytes = r.get_positive("bucket_bytes", 25e6, parse_bytes);
  s.reshard_after_forward = r.get_bool("reshard_after_forward", true);
  s.reshard_after_backward = r.get_bool("reshard_after_backward", false);
  for (auto [key, target] :
       {std::pair{"prefetch_forward", &s.prefetch_forward}, {"prefetch_backward", &s.prefetch_backward}}) {
    *target = r.get_int(key, 1);
    if (*target < 0 || *target > 8) {
      r.refuse(key, r.field(key) + "=" + std::to_string(*target) +
                        " must be 0 (no prefetch: each gather waits for the previous unit) to 8 units");
      *target = 1;
    }
  }
  s.gather_copies = r.get_bool("gather_copies", true);
  s.flat_params = r.get_bool("flat_params", false);
  if (s.flat_params && !s.gather_copies)
    r.refuse("flat_params", r.field("flat_params") +
                                "=true changes what gather_copies costs (FSDP1's gradient copy-in "
                                "instead of FSDP2's copy-out and copy-in), but " +
                                r.field("gather_copies") + "=false costs no copies: set one or the other");
}

StrategySpec read_strategy_object(const Json& object, ErrorList* errors) {
  ObjectReader r(object, "strategy", errors);
  StrategySpec s;
  s.preset = r.get_string("preset", "custom");
  read_mesh(r, object, s);
  s.sp = r.get_bool("sp", false);
  if (r.has("cp_comm")) {
    const std::string comm = r.get_choice("cp_comm", {"ring", "p2p", "all-gather", "all_gather"}, "ring");
    s.cp_comm = comm == "all-gather" || comm == "all_gather" ? CpComm::AllGather : CpComm::Ring;
  }
  s.cp_impl = get_enum(r, "cp_impl", kCpImplNames, CpImpl::TransformerEngine);
  s.tp_overlap = r.get_bool("tp_overlap", true);
  s.ep_overlap = r.get_bool("ep_overlap", false);
  s.param_gather_overlap = r.get_bool("param_gather_overlap", false);
  s.grad_allreduce = r.get_bool("grad_allreduce", false);
  s.tp_copies = r.get_bool("tp_copies", false);
  s.tp_fp8_gather = r.get_bool("tp_fp8_gather", false);
  read_schedule(r, object, s);
  read_gathers(r, s);
  // Both algorithms send 2(N-1)/N of an all-reduce's buffer per device, so the analytic volumes hold for either.
  s.collective = get_enum(r, "collective", kCollectiveSchemeNames, CollectiveScheme::Ring);
  if (const Json* p = r.child("placement")) {
    std::optional<bool> sequence_parallel;
    s.placement = r.guarded("placement", Placement(), [&] { return parse_placement(*p, sequence_parallel, errors); });
    if (sequence_parallel) {
      if (object.contains("sp") && r.ok({"sp"}) && s.sp != *sequence_parallel)
        r.refuse("sp", "strategy.placement.activations.tp contradicts strategy.sp=" + show(object["sp"]));
      s.sp = *sequence_parallel;
    }
  }
  r.finish();
  return s;
}

}  // namespace

bool synchronous_schedule(Schedule schedule) {
  return schedule == Schedule::GPipe || schedule == Schedule::OneFOneB || schedule == Schedule::Interleaved ||
         splits_backward(schedule);
}

std::int64_t updates_per_step(const StrategySpec& s) {
  return s.schedule == Schedule::PipeDream ? s.microbatches : 1;
}

bool overlaps_pairs(Schedule schedule) {
  return schedule == Schedule::DualPipeV || schedule == Schedule::DualPipe;
}

bool v_shaped(Schedule schedule) {
  return schedule == Schedule::ZbV || schedule == Schedule::DualPipeV;
}

bool bidirectional(Schedule schedule) {
  return schedule == Schedule::DualPipe;
}

std::int64_t chunks_per_stage(const StrategySpec& s) {
  return interleaves_chunks(s.schedule) ? s.chunks : v_shaped(s.schedule) || bidirectional(s.schedule) ? 2 : 1;
}

std::int64_t model_stages(const StrategySpec& s) {
  return bidirectional(s.schedule) ? s.pp : s.pp * chunks_per_stage(s);
}

bool starts_model(Schedule schedule, int stages, int vstage) {
  return model_position(schedule, stages, vstage) == 0;
}

bool ends_model(Schedule schedule, int stages, int vstages, int vstage) {
  return bidirectional(schedule) ? vstage % stages == stages - 1 : vstage == vstages - 1;
}

int model_position(Schedule schedule, int stages, int vstage) {
  return bidirectional(schedule) ? vstage % stages : vstage;
}

bool interleaves_chunks(Schedule schedule) {
  return schedule == Schedule::Interleaved || schedule == Schedule::InterleavedZb;
}

int virtual_stage_of(Schedule schedule, int stages, int chunk, int stage) {
  const bool mirrored = v_shaped(schedule) || bidirectional(schedule);
  return mirrored && chunk == 1 ? 2 * stages - 1 - stage : chunk * stages + stage;
}

int stage_of_virtual(Schedule schedule, int stages, int vstage) {
  if ((v_shaped(schedule) || bidirectional(schedule)) && vstage >= stages) return 2 * stages - 1 - vstage;
  return vstage % stages;
}

std::int64_t head_stage(const StrategySpec& s) {
  return v_shaped(s.schedule) ? 0 : s.pp - 1;
}

bool holds_head(const StrategySpec& s, std::int64_t stage) {
  return stage == head_stage(s) || (bidirectional(s.schedule) && stage == 0);
}

bool holds_embedding(const StrategySpec& s, std::int64_t stage) {
  return stage == 0 || (bidirectional(s.schedule) && stage == s.pp - 1);
}

double chunk_microbatch_share(const StrategySpec& s) {
  return bidirectional(s.schedule) ? 0.5 : 1.0;
}

bool splits_backward(Schedule schedule) {
  return schedule == Schedule::ZbH1 || schedule == Schedule::ZbH2 || schedule == Schedule::ZbV ||
         schedule == Schedule::DualPipeV || schedule == Schedule::InterleavedZb || schedule == Schedule::DualPipe;
}

StrategySpec parse_strategy(const Json& value, ErrorList* errors) {
  if (value.is_string()) {
    Json merged = preset_json(value.get<std::string>(), "strategy");
    merged["preset"] = value;
    return read_strategy_object(merged, errors);
  }
  if (!value.is_object()) throw InputError("strategy=" + show(value) + " must be a preset name or an object");
  Json merged = Json::object();
  if (value.contains("preset")) {
    if (!value["preset"].is_string())
      throw InputError("strategy.preset=" + show(value["preset"]) + " must be a string");
    merged = preset_json(value["preset"].get<std::string>(), "strategy.preset");
  }
  merged.merge_patch(value);
  return read_strategy_object(merged, errors);
}

std::string axes_label(const StrategySpec& s, AxisSet axes) {
  std::string label = s.dp_replicate == 1 && axes != kNoAxes ? "dp" : axes_name(axes);
  if (s.cp > 1 && (axes & kShardAxis) != 0) label += "+cp";
  return label;
}

std::string mesh_string(const StrategySpec& s) {
  std::string dp = "dp " + std::to_string(s.dp);
  if (s.dp_replicate > 1)
    dp += " (dp_replicate " + std::to_string(s.dp_replicate) + " x dp_shard " + std::to_string(s.dp_shard) + ")";
  const std::string cp = " x cp " + std::to_string(s.cp) + " (" + to_string(s.cp_comm) +
                         (s.cp_impl == CpImpl::PyTorch ? ", PyTorch" : "") + ")";
  return dp + (s.cp > 1 ? cp : std::string()) + " x tp " + std::to_string(s.tp) + " x pp " + std::to_string(s.pp) +
         (s.ep > 1 ? " (experts: ep " + std::to_string(s.ep) + " x edp " + std::to_string(s.edp()) + ")"
                   : std::string());
}

std::string to_string(PipelineP2P p) {
  return name_of(kPipelineP2PNames, p, "async");
}

std::string to_string(CpComm c) {
  return name_of(kCpCommNames, c, "ring");
}

std::string to_string(CpImpl c) {
  return name_of(kCpImplNames, c, "te");
}

std::string to_string(CollectiveScheme c) {
  return name_of(kCollectiveSchemeNames, c, "ring");
}

std::string to_string(Schedule s) {
  return name_of(kScheduleNames, s);
}

std::vector<PresetTable> strategy_preset_tables() {
  std::vector<PresetTable> out;
  for (const auto& [name, preset] : strategy_presets()) {
    StrategySpec s = parse_strategy(Json(name));
    PresetTable t{name, preset.description, {}};
    for (State state : {State::Parameters, State::Gradients, State::Optimizer, State::Activations}) {
      const bool weights = state != State::Activations;
      std::string shard = short_name(s.placement.mode(state, kShardAxis));
      if (state == State::Parameters && s.placement.secondary) shard += "+hpZ";
      t.modes.push_back({shard, short_name(s.placement.mode(state, kReplicateAxis)), weights || s.sp ? "S" : "R", "S"});
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> strategy_preset_list() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, p] : strategy_presets()) out.emplace_back(name, p.description);
  return out;
}

}  // namespace placesim
