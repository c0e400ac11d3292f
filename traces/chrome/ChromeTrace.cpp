#include "traces/chrome/ChromeTrace.hpp"

#include <algorithm>
#include <stdexcept>
#include <tuple>
#include <type_traits>

#include "traces/chrome/TraceCounters.hpp"
#include "traces/chrome/TraceFlows.hpp"
#include "traces/chrome/TraceLayout.hpp"
#include "traces/output/OutputFile.hpp"
#include "traces/report/JsonText.hpp"

namespace placesim {

namespace {

static_assert(kStreams <= 16, "trace_tid() spaces overflow lanes 16 apart (streams take tids 1..16)");

/// Builds one flat JSON object into a string, keys in call order.
class Obj {
 public:
  explicit Obj(std::string& out) : out_(out) { out_ += '{'; }
  ~Obj() { out_ += '}'; }
  Obj(const Obj&) = delete;
  Obj& operator=(const Obj&) = delete;

  Obj& str(const char* k, std::string_view v) { return key(k), append_json_string(out_, v), *this; }
  Obj& num(const char* k, double v) { return key(k), append_json_number(out_, v), *this; }
  Obj& integer(const char* k, std::int64_t v) { return key(k), out_ += std::to_string(v), *this; }
  Obj& us(const char* k, std::int64_t ns) { return key(k), append_us(out_, ns), *this; }
  /// Starts a nested value: the caller appends it (e.g. with another Obj) before the next key.
  std::string& nested(const char* k) { return key(k), out_; }

 private:
  void key(const char* k) {
    if (!first_) out_ += ',';
    first_ = false;
    append_json_string(out_, k);
    out_ += ':';
  }
  std::string& out_;
  bool first_ = true;
};

/// A flow end attached to the slice it binds to.
struct FlowEnd {
  SliceRef at;
  char phase = 's';
  std::uint64_t id = 0;
  TaskKind kind = TaskKind::P2P;
};

std::vector<FlowEnd> flow_ends(const std::vector<FlowLink>& links) {
  std::vector<FlowEnd> ends;
  ends.reserve(links.size() * 2);
  for (const FlowLink& l : links) {
    ends.push_back({l.from, 's', l.id, l.kind});
    ends.push_back({l.to, 'f', l.id, l.kind});
  }
  std::sort(ends.begin(), ends.end(), [](const FlowEnd& a, const FlowEnd& b) {
    return std::tie(a.at.lane, a.at.slice, a.phase, a.id) < std::tie(b.at.lane, b.at.slice, b.phase, b.id);
  });
  return ends;
}

void slice_args(std::string& out, const SimulationRecord& record, const Slice& s) {
  const TaskRecord& t = record.tasks[s.task];
  Obj a(out);
  a.integer("task", static_cast<std::int64_t>(t.task));
  if (t.layer >= 0) a.integer("layer", t.layer);
  if (t.microbatch >= 0) a.integer("microbatch", t.microbatch);
  if (t.stage >= 0) a.integer("stage", t.stage);
  if (t.chunk >= 0) a.integer("chunk", t.chunk);
  if (t.weight_version >= 0) a.integer("weight_version", t.weight_version);
  if (s.bytes > 0) a.num("bytes", s.bytes);
  if (t.flops > 0) a.num("flops", t.flops);
  if (t.kind == TaskKind::Collective || t.kind == TaskKind::P2P) a.str("class", to_string(t.comm_class));
  if (s.received)
    a.integer("from", t.device);
  else if (t.peer >= 0)
    a.integer("to", t.peer);
  if (t.collective != 0) a.integer("collective", static_cast<std::int64_t>(t.collective));
  if (!t.algorithm.empty()) a.str("algorithm", t.algorithm);
  if (s.steps > 1) {
    a.integer("steps", s.steps).integer("first_step", t.step).integer("last_step", record.tasks[s.last_task].step);
  } else if (t.step >= 0) {
    a.integer("step", t.step);
  }
}

/// The end written for slice i of a lane: 1 ns early when the next slice starts exactly there. Viewers that add
/// ts + dur in floating point (speedscope) round about one such sum in nine past the next ts (526.191 + 88.363 >
/// 614.554), then nest the next slice inside this one and never close it; a 1 ns gap is far above that rounding.
std::int64_t written_end_ns(const std::vector<Slice>& slices, std::size_t i) {
  const Slice& s = slices[i];
  bool touches = i + 1 < slices.size() && slices[i + 1].start_ns == s.end_ns && s.end_ns > s.start_ns;
  return touches ? s.end_ns - 1 : s.end_ns;
}

std::string thread_name(const Lane& lane) {
  std::string name = to_string(lane.stream);
  return lane.index == 0 ? name : name + " #" + std::to_string(lane.index + 1);
}

/// Streams the events of one trace, one per line.
class ChromeWriter {
 public:
  ChromeWriter(OutputFile& out, const SimulationRecord& record, const TraceLayout& layout)
      : out_(out), record_(record), layout_(layout) {}

  void metadata();
  void lane(std::size_t l, const std::vector<FlowEnd>& ends, std::size_t& cursor);
  void memory(const MemorySeries& series);
  void in_flight(int device, const std::vector<FlightPoint>& points);
  TraceSummary& summary() { return summary_; }

 private:
  void emit() {
    out_.write(first_ ? "\n" : ",\n");
    out_.write(line_);
    first_ = false;
    line_.clear();
  }
  /// A metadata event naming (args.name) or ordering (args.sort_index) a process (tid < 0) or a thread.
  template <typename Value>
  void meta(int pid, int tid, const char* name, const char* key, const Value& value);

  OutputFile& out_;
  const SimulationRecord& record_;
  const TraceLayout& layout_;
  std::string line_;
  bool first_ = true;
  TraceSummary summary_;
};

template <typename Value>
void ChromeWriter::meta(int pid, int tid, const char* name, const char* key, const Value& value) {
  {
    Obj e(line_);
    e.str("ph", "M").integer("pid", pid);
    if (tid >= 0) e.integer("tid", tid);
    e.str("name", name);
    Obj args(e.nested("args"));
    if constexpr (std::is_integral_v<Value>)
      args.integer(key, value);
    else
      args.str(key, value);
  }
  emit();
}

void ChromeWriter::metadata() {
  for (std::size_t i = 0; i < layout_.devices.size(); ++i) {
    int pid = trace_pid(layout_.devices[i]);
    meta(pid, -1, "process_name", "name", record_.devices[static_cast<std::size_t>(layout_.devices[i])].name());
    meta(pid, -1, "process_sort_index", "sort_index", static_cast<std::int64_t>(i));
  }
  for (const Lane& lane : layout_.lanes) {
    int pid = trace_pid(lane.device), tid = trace_tid(lane.stream, lane.index);
    meta(pid, tid, "thread_name", "name", thread_name(lane));
    meta(pid, tid, "thread_sort_index", "sort_index", std::int64_t{10 * static_cast<int>(lane.stream) + lane.index});
  }
}

void ChromeWriter::lane(std::size_t l, const std::vector<FlowEnd>& ends, std::size_t& cursor) {
  const Lane& lane = layout_.lanes[l];
  const int pid = trace_pid(lane.device), tid = trace_tid(lane.stream, lane.index);
  for (std::size_t i = 0; i < lane.slices.size(); ++i) {
    const Slice& s = lane.slices[i];
    const TaskRecord& t = record_.tasks[s.task];
    {
      Obj e(line_);
      e.str("ph", "X").integer("pid", pid).integer("tid", tid).us("ts", s.start_ns);
      e.us("dur", written_end_ns(lane.slices, i) - s.start_ns);
      e.str("name", slice_name(record_, s)).str("cat", to_string(t.kind));
      slice_args(e.nested("args"), record_, s);
    }
    emit();
    for (; cursor < ends.size() && ends[cursor].at.lane == l && ends[cursor].at.slice == i; ++cursor) {
      const FlowEnd& f = ends[cursor];
      {
        Obj e(line_);
        e.str("ph", std::string_view(&f.phase, 1)).integer("pid", pid).integer("tid", tid);
        e.us("ts", flow_time_ns(s)).integer("id", static_cast<std::int64_t>(f.id));
        e.str("cat", to_string(f.kind)).str("name", to_string(f.kind));
        if (f.phase == 'f') e.str("bp", "e");
      }
      emit();
    }
  }
  summary_.threads += 1;
  summary_.slices += lane.slices.size();
}

void ChromeWriter::memory(const MemorySeries& series) {
  for (const MemoryPoint& p : series.points) {
    {
      Obj e(line_);
      e.str("ph", "C").integer("pid", trace_pid(series.device)).us("ts", p.ns).str("name", "memory");
      Obj args(e.nested("args"));
      for (int s = 0; s < kStates; ++s)
        args.num(to_string(static_cast<State>(s)).c_str(), p.bytes[static_cast<std::size_t>(s)]);
    }
    emit();
  }
  summary_.counter_events += series.points.size();
}

void ChromeWriter::in_flight(int device, const std::vector<FlightPoint>& points) {
  for (const FlightPoint& p : points) {
    {
      Obj e(line_);
      e.str("ph", "C").integer("pid", trace_pid(device)).us("ts", p.ns).str("name", "bytes in flight");
      Obj(e.nested("args")).num("bytes", p.bytes);
    }
    emit();
  }
  summary_.counter_events += points.size();
}

Json other_data_with_fields(const Json& given, const SimulationRecord& record, const TraceOptions& options,
                            const TraceSummary& summary) {
  Json other = given.is_null() ? Json::object() : given;
  other["placesim_version"] = PLACESIM_VERSION;
  other["step_time_s"] = record.step_time_s;
  other["trace_detail"] = to_string(options.detail);
  other["devices_total"] = record.devices.size();
  other["devices_shown"] = summary.devices;
  other["threads"] = summary.threads;
  other["slices"] = summary.slices;
  other["flows"] = summary.flows;
  other["counter_events"] = summary.counter_events;
  return other;
}

}  // namespace

int trace_pid(int device) {
  return device + 1;
}
int trace_tid(Stream stream, int lane) {
  return static_cast<int>(stream) + 1 + 16 * lane;
}

TraceSummary write_chrome_trace(const std::string& path, const SimulationRecord& record, const Json& other_data,
                                const TraceOptions& options) {
  if (!other_data.is_null() && !other_data.is_object())
    throw std::invalid_argument("write_chrome_trace: other_data must be a JSON object or null");
  TraceLayout layout = layout_trace(record, options);
  std::vector<FlowEnd> ends = flow_ends(link_flows(record, layout, options.detail));
  std::vector<MemorySeries> memory = memory_series(record, layout.devices);
  OutputFile out(path);
  out.write("{\"traceEvents\":[");
  ChromeWriter writer(out, record, layout);
  writer.metadata();
  std::size_t lane = 0, cursor = 0;
  for (std::size_t d = 0; d < layout.devices.size(); ++d) {
    std::size_t first = lane;
    for (; lane < layout.lanes.size() && layout.lanes[lane].device == layout.devices[d]; ++lane)
      writer.lane(lane, ends, cursor);
    writer.memory(memory[d]);
    writer.in_flight(layout.devices[d], in_flight_series(record, layout.lanes, first, lane));
  }
  TraceSummary& summary = writer.summary();
  summary.devices = layout.devices.size();
  summary.flows = ends.size() / 2;
  out.write("\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":");
  out.write(other_data_with_fields(other_data, record, options, summary).dump());
  out.write("}\n");
  out.close();
  return summary;
}

}  // namespace placesim
