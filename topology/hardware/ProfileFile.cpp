#include <algorithm>
#include <cmath>

#include "topology/hardware/Accelerator.hpp"
#include "workloads/json/Numbers.hpp"

namespace placesim {

double AttentionSeries::fwd_bwd(std::size_t i) const {
  if (!fwd_bwd_tflops.empty()) return fwd_bwd_tflops[i];
  return 3.5 / (1 / fwd[i] + 2.5 / bwd[i]);
}

std::vector<const AttentionSeries*> AttentionBenchmark::of(const std::string& kernel) const {
  std::vector<const AttentionSeries*> out;
  for (const AttentionSeries& s : series)
    if (s.kernel == kernel) out.push_back(&s);
  std::sort(out.begin(), out.end(), [](const auto* a, const auto* b) { return a->head_dim < b->head_dim; });
  return out;
}

namespace {

std::vector<double> positive_list(ObjectReader& r, const char* key, std::size_t size) {
  const Json& v = r.require(key);
  if (!v.is_array() || v.size() != size || size == 0)
    throw InputError(r.field(key) + " must be a list of " + std::to_string(size) +
                     " numbers (one per sequence length of the benchmark)");
  std::vector<double> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number() || !(v[i].get<double>() > 0))
      throw InputError(r.field(key) + "[" + std::to_string(i) + "]=" + show(v[i]) + " must be a positive number");
    out.push_back(v[i].get<double>());
  }
  return out;
}

}  // namespace

AttentionBenchmark parse_attention_benchmark(const Json& value, const std::string& field) {
  ObjectReader r(value, field);
  AttentionBenchmark b;
  b.name = r.require_string("name");
  b.source = r.require_string("source");
  const Json& seq = r.require("seq");
  b.seq = positive_list(r, "seq", seq.is_array() ? seq.size() : 0);
  for (std::size_t i = 1; i < b.seq.size(); ++i)
    if (!(b.seq[i] > b.seq[i - 1])) throw InputError(r.field("seq") + " must be ascending");
  const Json& series = r.require("series");
  if (!series.is_array() || series.empty()) throw InputError(r.field("series") + " must be a list of series");
  for (std::size_t i = 0; i < series.size(); ++i) {
    ObjectReader q(series[i], r.field("series") + "[" + std::to_string(i) + "]");
    AttentionSeries s;
    s.kernel = q.require_string("kernel");
    s.head_dim = q.require_positive("head_dim");
    if (q.has("fwd_bwd")) {
      s.fwd_bwd_tflops = positive_list(q, "fwd_bwd", b.seq.size());
    } else {
      s.fwd = positive_list(q, "fwd", b.seq.size());
      s.bwd = positive_list(q, "bwd", b.seq.size());
    }
    q.finish();
    for (const AttentionSeries& other : b.series)
      if (other.kernel == s.kernel && other.head_dim == s.head_dim)
        throw InputError(q.field("kernel") + "=" + s.kernel + " at head_dim " + format_significant(s.head_dim) +
                         " is measured twice in one benchmark");
    b.series.push_back(std::move(s));
  }
  r.finish();
  return b;
}

AttentionData parse_attention_data(const Json& value, const std::string& field) {
  ObjectReader r(value, field);
  AttentionData a;
  a.kernel = r.require_string("kernel");
  a.title = r.require_string("title");
  ObjectReader ref(r.require("reference"), r.field("reference"));
  a.reference_seq = ref.require_positive("seq");
  a.reference_head_dim = ref.require_positive("head_dim");
  ref.finish();
  if (const Json* list = r.child("benchmarks")) {
    if (!list->is_array()) throw InputError(r.field("benchmarks") + " must be a list");
    for (std::size_t i = 0; i < list->size(); ++i)
      a.benchmarks.push_back(
          parse_attention_benchmark((*list)[i], r.field("benchmarks") + "[" + std::to_string(i) + "]"));
  }
  if (const Json* list = r.child("stand_ins")) {
    if (!list->is_array()) throw InputError(r.field("stand_ins") + " must be a list");
    for (std::size_t i = 0; i < list->size(); ++i) {
      ObjectReader q((*list)[i], r.field("stand_ins") + "[" + std::to_string(i) + "]");
      a.stand_ins.push_back({q.require_string("kernel"), q.require_string("by"), q.require_string("why")});
      q.finish();
    }
  }
  a.note = r.get_string("note", "");
  r.finish();
  return a;
}

Json attention_benchmark_to_json(const AttentionBenchmark& b) {
  Json series = Json::array();
  for (const AttentionSeries& s : b.series) {
    Json j{{"kernel", s.kernel}, {"head_dim", s.head_dim}};
    if (!s.fwd_bwd_tflops.empty()) {
      j["fwd_bwd"] = s.fwd_bwd_tflops;
    } else {
      j["fwd"] = s.fwd;
      j["bwd"] = s.bwd;
    }
    series.push_back(j);
  }
  return Json{{"name", b.name}, {"source", b.source}, {"seq", b.seq}, {"series", series}};
}

Json attention_data_to_json(const AttentionData& a) {
  Json benchmarks = Json::array();
  for (const AttentionBenchmark& b : a.benchmarks) benchmarks.push_back(attention_benchmark_to_json(b));
  Json stand_ins = Json::array();
  for (const AttentionStandIn& s : a.stand_ins)
    stand_ins.push_back(Json{{"kernel", s.kernel}, {"by", s.by}, {"why", s.why}});
  Json j{{"kernel", a.kernel},
         {"title", a.title},
         {"reference", {{"seq", a.reference_seq}, {"head_dim", a.reference_head_dim}}},
         {"benchmarks", benchmarks},
         {"stand_ins", stand_ins}};
  if (!a.note.empty()) j["note"] = a.note;
  return j;
}

std::vector<NotMeasured> parse_not_measured(const Json& value, const std::string& field) {
  if (!value.is_array()) throw InputError(field + " must be a list of {component, treatment}");
  std::vector<NotMeasured> out;
  // compare_with names a built-in accelerator whose measured interference the report charges against (by its
  // profile's name: the accelerators themselves are being loaded when their profiles are read).
  const std::vector<std::string> known = builtin_profile_names();
  for (std::size_t i = 0; i < value.size(); ++i) {
    ObjectReader r(value[i], field + "[" + std::to_string(i) + "]");
    NotMeasured n{r.require_string("component"), r.require_string("treatment"), r.get_string("compare_with", "")};
    if (!n.compare_with.empty() && std::find(known.begin(), known.end(), n.compare_with) == known.end())
      refuse_name(r.field("compare_with"), n.compare_with, "a built-in accelerator", known, known_names(known));
    r.finish();
    out.push_back(n);
  }
  return out;
}

Json not_measured_to_json(const std::vector<NotMeasured>& list) {
  Json out = Json::array();
  for (const NotMeasured& n : list) {
    Json j{{"component", n.component}, {"treatment", n.treatment}};
    if (!n.compare_with.empty()) j["compare_with"] = n.compare_with;
    out.push_back(j);
  }
  return out;
}

std::vector<std::string> parse_sources(ObjectReader& r, std::vector<std::string>* labels) {
  const Json* value = r.child("sources");
  if (!value) return {};
  if (value->is_object()) {
    std::vector<std::string> out;
    for (auto it = value->begin(); it != value->end(); ++it) {
      if (!it.value().is_string())
        throw InputError(r.field("sources") + "." + it.key() + " must be a citation (a string)");
      out.push_back(it.value().get<std::string>());
      if (labels) labels->push_back(it.key());
    }
    return out;
  }
  if (!value->is_array())
    throw InputError(r.field("sources") + " must be a list of citations or an object of label: citation");
  return r.get_strings("sources", {});
}

namespace {

// How a profile file may give one scalar field.
enum class Range {
  Fraction,     // in (0, 1]
  NonNegative,  // >= 0
  AtLeastOne,   // >= 1
  WholeCount,   // optional (profiles written before it existed lack it): a whole number, 0 = off
};

// One scalar field of a compute profile: its key in a profile file (and in calibrate's "fixed"), its member, its
// range, and whether calibrate fits it (the rest are hardware facts or conventions).
struct ScalarField {
  const char* key;
  double ComputeProfile::*member;
  Range range;
  bool fitted;
};

constexpr ScalarField kScalarFields[] = {
    {"gemm_peak_efficiency", &ComputeProfile::gemm_peak_efficiency, Range::Fraction, true},
    {"gemm_latency_s", &ComputeProfile::gemm_latency_s, Range::NonNegative, true},
    {"gemm_k_overhead", &ComputeProfile::gemm_k_overhead, Range::NonNegative, true},
    {"gemm_tile", &ComputeProfile::gemm_tile, Range::AtLeastOne, false},
    {"gemm_sms", &ComputeProfile::gemm_sms, Range::WholeCount, false},
    {"gemm_roofline_p", &ComputeProfile::gemm_roofline_p, Range::AtLeastOne, true},
    {"memory_efficiency", &ComputeProfile::memory_efficiency, Range::Fraction, true},
    {"kernel_latency_s", &ComputeProfile::kernel_latency_s, Range::NonNegative, true},
    {"flash_attention_efficiency", &ComputeProfile::flash_attention_efficiency, Range::Fraction, true},
    {"overlap_penalty", &ComputeProfile::overlap_penalty, Range::NonNegative, true},
};

void read_scalar(ObjectReader& r, const ScalarField& f, ComputeProfile& p) {
  double& v = p.*f.member;
  if (f.range == Range::Fraction)
    v = r.require_fraction(f.key);
  else
    v = f.range == Range::WholeCount ? r.get_non_negative(f.key, v) : r.require_non_negative(f.key);
  if (f.range == Range::AtLeastOne) r.check(v >= 1, f.key, "must be >= 1");
  if (f.range == Range::WholeCount) r.check(v == std::floor(v), f.key, "must be a whole number of SMs");
}

}  // namespace

std::vector<std::string> fitted_profile_fields() {
  std::vector<std::string> out;
  for (const ScalarField& f : kScalarFields)
    if (f.fitted) out.emplace_back(f.key);
  return out;
}

// Every field of a profile is required: a profile that silently fell back to a default would no longer say what was
// measured.
ComputeProfile parse_compute_profile(const Json& value, const std::string& field) {
  ObjectReader r(value, field);
  ComputeProfile p;
  for (const ScalarField& f : kScalarFields) read_scalar(r, f, p);
  if (const Json* a = r.child("attention")) p.attention = parse_attention_data(*a, r.field("attention"));
  // Optional: profiles without interference measurements model none.
  if (const Json* i = r.child("interference")) parse_interference(*i, r.field("interference"), p);
  // Optional: measured power limits (calibrate's power_limited_gemm group), ascending.
  if (const Json* list = r.child("power_scales")) {
    const std::string at = r.field("power_scales");
    if (!list->is_array()) throw InputError(at + " must be a list of {power_limit_w, compute_scale}");
    for (std::size_t i = 0; i < list->size(); ++i) {
      ObjectReader e((*list)[i], at + "[" + std::to_string(i) + "]");
      PowerScale m{e.require_positive("power_limit_w"), e.require_positive("compute_scale")};
      e.check(m.compute_scale <= 1, "compute_scale", "must be in (0, 1]: a power limit below the rated power");
      if (!p.power_scales.empty())
        e.check(m.power_limit_w > p.power_scales.back().power_limit_w, "power_limit_w",
                "must be above the previous entry's (ascending, one entry per limit)");
      e.finish();
      p.power_scales.push_back(m);
    }
  }
  r.finish();
  return p;
}

void parse_interference(const Json& value, const std::string& field, ComputeProfile& p) {
  if (value.is_string()) {
    if (value.get<std::string>() != "off")
      throw InputError(field + "=" + value.get<std::string>() +
                       ": give \"off\" or an object with intra_node/inter_node");
    p.intra_node_interference = p.inter_node_interference = {};
    return;
  }
  ObjectReader r(value, field);
  for (auto [key, target] :
       {std::pair{"intra_node", &p.intra_node_interference}, {"inter_node", &p.inter_node_interference}}) {
    if (!r.has(key)) continue;
    const Json& v = r.require(key);
    if (v.is_string() && v.get<std::string>() == "off") {
      *target = {};
      continue;
    }
    ObjectReader f(v, r.field(key));
    target->compute_slowdown = f.require_non_negative("compute_slowdown");
    target->comm_slowdown = f.require_non_negative("comm_slowdown");
    f.check(target->compute_slowdown >= 1 && target->compute_slowdown <= 4, "compute_slowdown",
            "must be in [1, 4] (a factor: time beside communication / time alone)");
    f.check(target->comm_slowdown >= 1 && target->comm_slowdown <= 4, "comm_slowdown",
            "must be in [1, 4] (a factor: time beside compute / time alone)");
    f.finish();
  }
  r.finish();
}

Json interference_to_json(const ComputeProfile& p) {
  Json j = Json::object();
  for (auto [key, i] :
       {std::pair{"intra_node", &p.intra_node_interference}, {"inter_node", &p.inter_node_interference}})
    j[key] = i->active() ? Json{{"compute_slowdown", i->compute_slowdown}, {"comm_slowdown", i->comm_slowdown}}
                         : Json("off");
  return j;
}

ProfileFile load_profile_file(const std::string& path) {
  return parse_profile_file(read_json_file(path), path);
}

ProfileFile parse_profile_file(const Json& j, const std::string& path) {
  ObjectReader r(j, path);
  r.skip("accelerator");
  r.skip("fit");
  r.skip("description");
  r.skip("excluded");  // measurements the fit left out, for the reader
  r.skip("training");  // a trace calibration's training fields, which an experiment's "calibration" applies
  const Json* compute = r.child("compute");
  if (!compute) throw InputError(path + ": compute is required but missing");
  ProfileFile file;
  ComputeProfile& p = file.compute;
  p = parse_compute_profile(*compute, path + ": compute");
  if (const Json* comm = r.child("comm")) {
    ObjectReader c(*comm, path + ": comm");
    if (c.has("fabric"))
      throw InputError(c.field("fabric") +
                       ": a profile's fabric names where it runs, intra_node or inter_node "
                       "(re-run placesim calibrate, or rename the key)");
    if (const Json* f = c.child("intra_node")) file.intra_node = parse_fabric_profile(*f, c.field("intra_node"));
    if (const Json* f = c.child("inter_node")) file.inter_node = parse_fabric_profile(*f, c.field("inter_node"));
    c.finish();
  }
  p.sources = parse_sources(r);
  if (const Json* list = r.child("not_measured")) p.not_measured = parse_not_measured(*list, r.field("not_measured"));
  r.finish();
  return file;
}

Json compute_profile_to_json(const ComputeProfile& p) {
  Json j{{"interference", interference_to_json(p)}};
  for (const ScalarField& f : kScalarFields) j[f.key] = p.*f.member;
  if (!p.attention.kernel.empty()) j["attention"] = attention_data_to_json(p.attention);
  if (!p.power_scales.empty()) {
    Json scales = Json::array();
    for (const PowerScale& m : p.power_scales)
      scales.push_back(Json{{"power_limit_w", m.power_limit_w}, {"compute_scale", m.compute_scale}});
    j["power_scales"] = scales;
  }
  return j;
}

}  // namespace placesim
