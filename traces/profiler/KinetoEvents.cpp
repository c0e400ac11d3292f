#include "traces/profiler/KinetoEvents.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <istream>
#include <nlohmann/json.hpp>

#include "traces/output/OutputFile.hpp"
#include "workloads/json/EnumNames.hpp"
#include "workloads/json/Error.hpp"

namespace placesim::kineto {

namespace {

using Json = nlohmann::json;

/// The members of an event object that are kept; every other member is skipped.
enum class Field : std::uint8_t { Other, Ph, Cat, Name, Pid, Tid, Ts, Dur, Args };
/// The members of an event's "args" that are kept.
enum class Arg : std::uint8_t {
  Other,
  Correlation,
  ExternalId,
  Device,
  Stream,
  InputDims,
  InputType,
  InNelems,
  OutNelems,
  GroupSize,
  Dtype,
  CollectiveName
};
enum class Top : std::uint8_t { Other, TraceEvents, DistributedInfo };

// The names of the kept members as Kineto writes them.
constexpr EnumName<Field> kFieldNames[] = {{Field::Ph, "ph"},   {Field::Cat, "cat"},  {Field::Name, "name"},
                                           {Field::Pid, "pid"}, {Field::Tid, "tid"},  {Field::Ts, "ts"},
                                           {Field::Dur, "dur"}, {Field::Args, "args"}};
constexpr EnumName<Arg> kArgNames[] = {{Arg::Correlation, "correlation"},
                                       {Arg::ExternalId, "External id"},
                                       {Arg::Device, "device"},
                                       {Arg::Stream, "stream"},
                                       {Arg::InputDims, "Input Dims"},
                                       {Arg::InputType, "Input type"},
                                       {Arg::InNelems, "In msg nelems"},
                                       {Arg::OutNelems, "Out msg nelems"},
                                       {Arg::GroupSize, "Group size"},
                                       {Arg::Dtype, "dtype"},
                                       {Arg::CollectiveName, "Collective name"}};
// The "cat" of each GPU activity.
constexpr EnumName<GpuCategory> kGpuCategoryNames[] = {
    {GpuCategory::Kernel, "kernel"}, {GpuCategory::Memcpy, "gpu_memcpy"}, {GpuCategory::Memset, "gpu_memset"}};

Field field_of(std::string_view k) {
  return value_named(kFieldNames, k).value_or(Field::Other);
}

Arg arg_of(std::string_view k) {
  return value_named(kArgNames, k).value_or(Arg::Other);
}

/// Operators name at most this many inputs that matter (addmm's third is the last).
constexpr std::size_t kInputsKept = 4;

/// The event being read. Cleared, not freed, between events, so that its strings keep their capacity.
struct Event {
  std::string ph, cat, name, dtype, collective;
  double ts = NAN, dur = 0, in_nelems = 0, out_nelems = 0;
  std::int64_t pid = -1, tid = -1, correlation = -1, external_id = -1, device = -1, stream = 0, group_size = 0;
  std::array<std::vector<double>, kInputsKept> dims;  ///< "Input Dims" of the first inputs
  std::array<bool, kInputsKept> list_input{};         ///< the input is a TensorList (dims nested deeper)
  std::size_t n_dims = 0;
  std::array<std::string, kInputsKept> types;  ///< "Input type" of the first inputs
  std::size_t n_types = 0;

  void clear() {
    ph.clear(), cat.clear(), name.clear(), dtype.clear(), collective.clear();
    ts = NAN, dur = in_nelems = out_nelems = 0;
    pid = tid = correlation = external_id = device = -1;
    stream = group_size = 0;
    for (std::size_t i = 0; i < n_dims; ++i) dims[i].clear(), list_input[i] = false;
    n_dims = n_types = 0;
  }
  /// Input `i`: its dims when it is a tensor whose dims the trace recorded, and its type.
  OperatorInput input(std::size_t i) const {
    return {i < n_dims && !list_input[i] ? &dims[i] : nullptr, i < n_types ? std::string_view(types[i]) : ""};
  }
};

std::int64_t to_int(double v) {
  return std::isfinite(v) && std::fabs(v) < 9e18 ? static_cast<std::int64_t>(v) : -1;
}

/// The nlohmann::json SAX handler: keeps the members above of the events in the top-level "traceEvents" array and
/// "distributedInfo".rank; skips everything else by counting depth.
class Reader {
 public:
  Reader(FileEvents& out, NameTable& names) : out_(out), names_(names) {}

  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(std::int64_t v) { return number(static_cast<double>(v), v); }
  bool number_unsigned(std::uint64_t v) { return number(static_cast<double>(v), to_int(static_cast<double>(v))); }
  bool number_float(double v, const std::string&) { return number(v, to_int(v)); }
  bool binary(Json::binary_t&) { return true; }
  bool start_object(std::size_t) { return open(true); }
  bool start_array(std::size_t) { return open(false); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& k);
  bool string(std::string& s);
  bool parse_error(std::size_t byte, const std::string&, const nlohmann::detail::exception& e) {
    std::string what = e.what();
    if (auto end = what.find("] "); what.rfind("[json.exception", 0) == 0 && end != std::string::npos)
      what.erase(0, end + 2);
    error_ = "not JSON at byte " + std::to_string(byte) + " (" + what + ")";
    return false;
  }
  const std::string& error() const { return error_; }

 private:
  bool open(bool object);
  bool close();
  bool number(double d, std::int64_t i);
  void finish_event();
  void gpu_activity(GpuCategory category);
  void host_span();
  void comm_operator();

  FileEvents& out_;
  NameTable& names_;
  Event ev_;
  std::string error_;
  // Depth 1 is the top-level object, 2 traceEvents (or distributedInfo), 3 an event, 4 its args, 5 an args list,
  // 6 one input's dims. A container not kept is skipped whole: skip_depth_ is where it opened.
  int depth_ = 0, skip_depth_ = 0;
  bool skipping_ = false, in_events_ = false, in_dist_ = false, rank_key_ = false;
  Top top_ = Top::Other;
  Field field_ = Field::Other;
  Arg arg_ = Arg::Other, list_ = Arg::Other;
  std::size_t dims_input_ = kInputsKept;
};

bool Reader::open(bool object) {
  ++depth_;
  if (skipping_) return true;
  bool keep = false;
  switch (depth_) {
    case 1:
      keep = object;
      break;
    case 2:
      in_events_ = top_ == Top::TraceEvents && !object;
      in_dist_ = top_ == Top::DistributedInfo && object;
      out_.saw_trace_events = out_.saw_trace_events || in_events_;
      keep = in_events_ || in_dist_;
      break;
    case 3:
      keep = in_events_ && object;
      if (keep) ev_.clear();
      break;
    case 4:
      keep = field_ == Field::Args && object;
      break;
    case 5:
      keep = !object && (arg_ == Arg::InputDims || arg_ == Arg::InputType);
      list_ = keep ? arg_ : Arg::Other;
      break;
    case 6:
      keep = !object && list_ == Arg::InputDims;
      if (keep) dims_input_ = ev_.n_dims < kInputsKept ? ev_.n_dims++ : kInputsKept;
      break;
    default:  // a list inside an input's dims: a TensorList, whose dims are not one tensor's
      if (depth_ == 7 && dims_input_ < kInputsKept) ev_.list_input[dims_input_] = true;
  }
  if (!keep) skipping_ = true, skip_depth_ = depth_;
  return true;
}

bool Reader::close() {
  if (skipping_) {
    skipping_ = depth_ != skip_depth_;
  } else if (depth_ == 2) {
    in_events_ = in_dist_ = false;
  } else if (depth_ == 3) {
    finish_event();
  } else if (depth_ == 5) {
    list_ = Arg::Other;
  }
  --depth_;
  return true;
}

bool Reader::key(std::string& k) {
  if (skipping_) return true;
  if (depth_ == 1)
    top_ = k == "traceEvents" ? Top::TraceEvents : k == "distributedInfo" ? Top::DistributedInfo : Top::Other;
  if (depth_ == 2) rank_key_ = k == "rank";
  if (depth_ == 3) field_ = field_of(k);
  if (depth_ == 4) arg_ = arg_of(k);
  return true;
}

bool Reader::number(double d, std::int64_t i) {
  if (skipping_) return true;
  if (depth_ == 2 && in_dist_ && rank_key_) out_.rank = static_cast<int>(i);
  if (depth_ == 3) {
    switch (field_) {
      case Field::Pid:
        ev_.pid = i;
        break;
      case Field::Tid:
        ev_.tid = i;
        break;
      case Field::Ts:
        ev_.ts = d;
        break;
      case Field::Dur:
        ev_.dur = d;
        break;
      default:
        break;
    }
  }
  if (depth_ == 4) {
    switch (arg_) {
      case Arg::Correlation:
        ev_.correlation = i;
        break;
      case Arg::ExternalId:
        ev_.external_id = i;
        break;
      case Arg::Device:
        ev_.device = i;
        break;
      case Arg::Stream:
        ev_.stream = i;
        break;
      case Arg::InNelems:
        ev_.in_nelems = d;
        break;
      case Arg::OutNelems:
        ev_.out_nelems = d;
        break;
      case Arg::GroupSize:
        ev_.group_size = i;
        break;
      default:
        break;
    }
  }
  if (depth_ == 6 && dims_input_ < kInputsKept) ev_.dims[dims_input_].push_back(d);
  return true;
}

bool Reader::string(std::string& s) {
  if (skipping_) return true;
  if (depth_ == 3) {
    // A thread or process named by a string ("Spans", "PyTorch Profiler") gets an id from its name.
    auto id = [&] { return static_cast<std::int64_t>(std::hash<std::string>{}(s) >> 2) | (std::int64_t{1} << 61); };
    switch (field_) {
      case Field::Ph:
        ev_.ph.assign(s);
        break;
      case Field::Cat:
        ev_.cat.assign(s);
        break;
      case Field::Name:
        ev_.name.assign(s);
        break;
      case Field::Pid:
        ev_.pid = id();
        break;
      case Field::Tid:
        ev_.tid = id();
        break;
      default:
        break;
    }
  }
  if (depth_ == 4 && arg_ == Arg::Dtype) ev_.dtype.assign(s);
  if (depth_ == 4 && arg_ == Arg::CollectiveName) ev_.collective.assign(s);
  if (depth_ == 5 && list_ == Arg::InputType && ev_.n_types < kInputsKept) ev_.types[ev_.n_types++].assign(s);
  return true;
}

void Reader::finish_event() {
  if (ev_.ph != "X" || std::isnan(ev_.ts)) return;
  const std::string& cat = ev_.cat;
  if (const std::optional<GpuCategory> gpu = value_named(kGpuCategoryNames, cat)) return gpu_activity(*gpu);
  if (cat == "cuda_runtime" || cat == "cuda_driver") {
    out_.hip_runtime = out_.hip_runtime || ev_.name.starts_with("hip");
    if (ev_.pid >= 0 && ev_.pid == ev_.tid && !out_.main_tid) out_.main_tid = ev_.tid;
    if (ev_.correlation >= 0) out_.launches.push_back({ev_.correlation, ev_.tid, ev_.ts});
    return;
  }
  if (cat == "cpu_op" || cat == "user_annotation") host_span();
}

void Reader::gpu_activity(GpuCategory category) {
  out_.gpu.push_back({ev_.ts, ev_.dur, ev_.correlation, ev_.external_id, ev_.stream, names_.intern(ev_.name),
                      static_cast<std::int32_t>(ev_.device >= 0 ? ev_.device : ev_.pid), category});
}

void Reader::host_span() {
  const std::string& name = ev_.name;
  constexpr std::string_view kStep = "ProfilerStep#";
  if (name.starts_with(kStep)) {
    long number = 0;
    const char *first = name.data() + kStep.size(), *last = name.data() + name.size();
    if (auto [end, ec] = std::from_chars(first, last, number); ec == std::errc() && end == last)
      out_.steps.push_back({ev_.tid, ev_.ts, ev_.ts + ev_.dur, number});
  } else if (name.starts_with("Optimizer.step")) {
    out_.optimizer_spans.push_back({ev_.tid, ev_.ts, ev_.ts + ev_.dur, 0});
  } else if (name == "record_param_comms" || name.starts_with("nccl:")) {
    comm_operator();
  } else if (ev_.cat == "cpu_op" && name.starts_with("aten::")) {
    const std::array<OperatorInput, kInputsKept> inputs = {ev_.input(0), ev_.input(1), ev_.input(2), ev_.input(3)};
    if (std::optional<GemmShape> s = gemm_shape(name, inputs)) {
      s->external_id = ev_.external_id;
      out_.shapes.push_back(*s);
    }
  }
}

void Reader::comm_operator() {
  CommOp op{ev_.external_id, ev_.ts};
  if (ev_.name == "record_param_comms") {
    // Older traces name no collective; "wait" is a work.wait(), which launches no kernel.
    if (ev_.collective.empty() || ev_.collective == "wait") return;
    op.op = collective_op(ev_.collective);
    op.bytes = std::max(ev_.in_nelems, ev_.out_nelems) * dtype_bytes(ev_.dtype);
    op.group_size = static_cast<int>(ev_.group_size);
    op.param_comms = true;
  } else {
    op.op = collective_op(std::string_view(ev_.name).substr(5));
    if (const OperatorInput in = ev_.input(0); in.dims && !in.dims->empty())
      op.bytes = elements(*in.dims) * dtype_bytes(in.type);
  }
  out_.comms.push_back(op);
}

}  // namespace

std::uint32_t NameTable::intern(const std::string& name) {
  auto [it, inserted] = ids_.try_emplace(name, static_cast<std::uint32_t>(names.size()));
  if (inserted) names.push_back(name);
  return it->second;
}

const char* to_string(GpuCategory c) {
  return name_of(kGpuCategoryNames, c, "kernel");
}

FileEvents read_kineto_events(const std::string& path, NameTable& names) {
  FileEvents out;
  GzReadBuffer buffer(path);  // zlib reads gzip by its magic bytes 1f 8b and passes any other file through
  std::istream in(&buffer);
  Reader reader(out, names);
  if (!Json::sax_parse(in, &reader)) throw InputError(path + ": " + reader.error());
  return out;
}

}  // namespace placesim::kineto
