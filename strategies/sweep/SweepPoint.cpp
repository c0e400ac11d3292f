#include "strategies/sweep/SweepPoint.hpp"

#include <algorithm>
#include <exception>
#include <functional>
#include <unordered_map>

#include "strategies/analytic/Validity.hpp"
#include "strategies/placement/Condition.hpp"
#include "strategies/placement/StackApply.hpp"
#include "workloads/json/EnumNames.hpp"

namespace placesim {

namespace {

constexpr EnumName<PointStatus> kPointStatusNames[] = {{PointStatus::Ok, "ok"},
                                                       {PointStatus::Invalid, "invalid"},
                                                       {PointStatus::Filtered, "filtered"},
                                                       {PointStatus::Error, "error"}};

}  // namespace

const char* to_string(PointStatus s) {
  return name_of(kPointStatusNames, s);
}

namespace {

// Sections above this many value combinations are parsed per point rather than cached (bounds the memory).
constexpr std::uint64_t kMaxCachedCombinations = 1 << 16;

std::string section_of(const std::string& path) {
  return path.substr(0, path.find('.'));
}

// The parsed form of one or more experiment sections (read together: training, strategy and stack resolve as one)
// for each combination of the values of the axes that touch them. Errors are kept and rethrown so that a cached point
// fails exactly as a parsed one.
template <class Value>
class SectionCache {
 public:
  /// `parse` gets an object holding the point's values of `sections` (a section the point lacks is absent).
  SectionCache(const SweepSpec& spec, std::vector<std::string> sections, std::function<Value(const Json&)> parse)
      : spec_(spec), sections_(std::move(sections)), parse_(std::move(parse)) {
    std::uint64_t combinations = 1;
    for (auto [a, p] : application_order(spec))
      if (mine(section_of(spec.axes[a].paths[p]))) positions_.emplace_back(a, p);
    for (std::size_t a = spec.axes.size(); a-- > 0;) {
      bool touches = false;
      for (auto [pa, pp] : positions_) touches = touches || pa == a;
      if (!touches) continue;
      strides_.emplace_back(a, combinations);
      combinations *= spec.axes[a].size();
      cached_ = cached_ && combinations <= kMaxCachedCombinations;
    }
  }

  struct Entry {
    Json json;  ///< the sections as the point's JSON has them
    Value value{};
    std::exception_ptr error;
  };

  const Entry& get(const std::vector<std::size_t>& coords) {
    if (!cached_) return scratch_ = make(coords);
    std::uint64_t key = 0;
    for (auto [a, stride] : strides_) key += coords[a] * stride;
    auto it = entries_.find(key);
    if (it == entries_.end()) it = entries_.emplace(key, make(coords)).first;
    return it->second;
  }

 private:
  bool mine(const std::string& section) const {
    return std::find(sections_.begin(), sections_.end(), section) != sections_.end();
  }

  Entry make(const std::vector<std::size_t>& coords) const {
    Json root = Json::object();
    for (const std::string& section : sections_)
      if (spec_.base.contains(section)) root[section] = spec_.base[section];
    for (auto [a, p] : positions_) set_path(root, spec_.axes[a].paths[p], spec_.axes[a].values[coords[a]][p]);
    Entry e;
    e.json = root;
    try {
      e.value = parse_(e.json);
    } catch (...) {
      e.error = std::current_exception();
    }
    return e;
  }

  const SweepSpec& spec_;
  std::vector<std::string> sections_;
  std::function<Value(const Json&)> parse_;
  std::vector<std::pair<std::size_t, std::size_t>> positions_;
  std::vector<std::pair<std::size_t, std::uint64_t>> strides_;
  bool cached_ = true;
  std::unordered_map<std::uint64_t, Entry> entries_;
  Entry scratch_;
};

template <class Value>
const Value& checked(const typename SectionCache<Value>::Entry& entry) {
  if (entry.error) std::rethrow_exception(entry.error);
  return entry.value;
}

// The cached path reproduces parse_experiment() section by section; it applies when every axis lies in one of the
// four sections and nothing else in the experiment varies or needs the whole document (an abstract pipeline).
bool sections_apply(const SweepSpec& spec) {
  const Json& base = spec.base;
  if (base.contains("pipeline") || (base.contains("name") && !base["name"].is_string())) return false;
  // Any other top-level key (a typo such as "treining", or a convergence section) is the whole parser's to judge.
  for (const auto& [key, value] : base.items())
    if (key != "name" && key != "description" && key != "model" && key != "training" && key != "strategy" &&
        key != "cluster" && key != "stack")
      return false;
  std::vector<std::string> swept;
  for (const auto& path : spec.paths()) swept.push_back(section_of(path));
  for (const auto& s : swept)
    if (s != "model" && s != "training" && s != "strategy" && s != "cluster" && s != "stack") return false;
  for (const char* required : {"model", "strategy"}) {
    bool given = base.contains(required) || std::find(swept.begin(), swept.end(), required) != swept.end();
    if (!given) return false;  // the parser's "required but missing" message stays the parser's
  }
  return true;
}

}  // namespace

// A section of `root`, or null when the point has none.
const Json* section(const Json& root, const char* name) {
  return root.contains(name) ? &root[name] : nullptr;
}

struct PointEvaluator::Sections {
  explicit Sections(const SweepSpec& spec)
      : model(spec, {"model"}, [dir = spec.base_dir](const Json& v) { return parse_model(v["model"], dir); }),
        run(spec, {"training", "strategy", "stack"},
            [dir = spec.base_dir](const Json& v) {
              return parse_run_sections(section(v, "training"), section(v, "strategy"), section(v, "stack"), dir);
            }),
        cluster(spec, {"cluster"},
                [](const Json& v) {
                  // As build_whole(): a null cluster is no cluster.
                  const Json* c = section(v, "cluster");
                  return !c || c->is_null() ? std::optional<ClusterFit>{} : std::optional<ClusterFit>{cluster_fit(*c)};
                }),
        name(spec.base.contains("name") ? spec.base["name"].get<std::string>() : "experiment") {}

  SectionCache<ModelSpec> model;
  SectionCache<RunSections> run;
  SectionCache<std::optional<ClusterFit>> cluster;
  std::string name;
};

PointEvaluator::PointEvaluator(const SweepSpec& spec, double device_memory_bytes, bool reuse_sections)
    : spec_(spec), device_memory_bytes_(device_memory_bytes) {
  for (const auto& f : spec.filters.values)
    for (std::size_t a = 0; a < spec.axes.size(); ++a)
      for (std::size_t p = 0; p < spec.axes[a].paths.size(); ++p)
        if (spec.axes[a].paths[p] == f.path) filter_positions_.emplace_back(a, p);
  if (reuse_sections && sections_apply(spec)) sections_ = std::make_unique<Sections>(spec);
}

PointEvaluator::~PointEvaluator() = default;

std::optional<std::string> PointEvaluator::filtered_by_value() const {
  for (std::size_t k = 0; k < filter_positions_.size(); ++k) {
    auto [a, p] = filter_positions_[k];
    if (!spec_.filters.values[k].accepts(spec_.axes[a].values[coords_[a]][p]))
      return "filters." + spec_.filters.values[k].path;
  }
  return std::nullopt;
}

std::optional<ClusterFit> PointEvaluator::build_whole() {
  Json j = point_experiment(spec_, coords_);
  experiment_ = parse_experiment(j, spec_.base_dir);
  if (j.contains("cluster") && !j["cluster"].is_null()) return cluster_fit(j["cluster"]);
  return std::nullopt;
}

std::optional<ClusterFit> PointEvaluator::build_from_sections() {
  Sections& s = *sections_;
  // The order of parse_experiment(): model, training, strategy, then resolve(); the cluster is read after it.
  const auto& model = s.model.get(coords_);
  experiment_.model = checked<ModelSpec>(model);
  const RunSections& run = checked<RunSections>(s.run.get(coords_));
  experiment_.training = run.training;
  experiment_.strategy = run.strategy;
  experiment_.stack = run.stack;
  experiment_.stack_from = run.stack_from;
  experiment_.provenance = run.provenance;
  const auto& cluster = s.cluster.get(coords_);
  experiment_.name = s.name;
  // The entry holds the sections it caches ({"cluster": ...}); the experiment holds the cluster section itself.
  experiment_.cluster = cluster.json.contains("cluster") ? cluster.json["cluster"] : Json();
  experiment_.pipeline = nullptr;
  experiment_.device_memory_bytes = 0;
  resolve(experiment_);
  return checked<std::optional<ClusterFit>>(cluster);
}

PointOutcome PointEvaluator::check_and_analyze(const std::optional<ClusterFit>& cluster) {
  Experiment& e = experiment_;
  if (cluster && spec_.filters.mesh_matches_cluster && e.strategy.devices() != cluster->devices)
    return {PointStatus::Filtered, "filters.mesh_matches_cluster", false};
  // Most points of a grid miss the cluster's GPU count; saying so without throwing keeps them cheap.
  if (cluster) {
    std::string mismatch = cluster_mesh_mismatch(e, *cluster);
    if (!mismatch.empty()) return {PointStatus::Invalid, std::move(mismatch), false};
  }
  check_validity(e);
  if (spec_.filters.stack_can_run && e.stack)
    for (const StackLimit& limit : e.stack->cannot_run)
      if (Condition(limit.when, e.stack->file + " cannot_run").holds(e.strategy, e.training))
        return {PointStatus::Invalid,
                "the " + e.stack->name + " stack cannot run it (" + limit.when + "): " + limit.why, false};
  e.device_memory_bytes = device_memory_bytes_ > 0 ? device_memory_bytes_ : cluster ? cluster->device_memory_bytes : 0;
  analysis_ = analyze(e);
  analyzed_ = true;
  check_fits(e, analysis_);
  return {PointStatus::Ok, "", true};
}

PointOutcome PointEvaluator::evaluate(std::uint64_t index) {
  coords_ = point_coords(spec_, index);
  if (auto filter = filtered_by_value()) return {PointStatus::Filtered, *filter, false};
  analyzed_ = false;
  try {
    return check_and_analyze(sections_ ? build_from_sections() : build_whole());
  } catch (const InputError& e) {
    return {PointStatus::Invalid, e.what(), analyzed_};
  } catch (const std::exception& e) {
    return {PointStatus::Error, std::string("internal error: ") + e.what(), false};
  }
}

}  // namespace placesim
