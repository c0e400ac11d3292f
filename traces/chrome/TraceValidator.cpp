#include "traces/chrome/TraceValidator.hpp"

#include <algorithm>
#include <cmath>
#include <istream>
#include <set>
#include <sstream>
#include <string_view>

#include "traces/output/OutputFile.hpp"
#include "workloads/json/JsonReader.hpp"

namespace placesim {

namespace {

constexpr std::size_t kMaxProblems = 100;
const std::set<std::string, std::less<>> kKnownPhases = {"B", "E", "X", "i", "I", "C", "b", "n", "e",
                                                         "s", "t", "f", "P", "N", "O", "D", "M", "V",
                                                         "v", "R", "c", "(", ")", "S", "T", "p", "F"};

using Thread = TraceCounts::Thread;

/// Microseconds (as written) to whole nanoseconds: placesim writes 3 decimals, so this is exact for its traces.
std::int64_t ns_of(double us) {
  return std::llround(us * 1000.0);
}

std::string us_text(std::int64_t ns) {
  if (ns < 0) return "-" + us_text(-ns);
  std::ostringstream s;
  s << ns / 1000 << '.' << (ns % 1000) / 100 << (ns % 100) / 10 << ns % 10 << " us";
  return s.str();
}

struct OpenSlice {
  std::int64_t ns;
  std::string name, cat;
};

/// What the validator remembers of one thread.
struct ThreadState {
  std::int64_t last_ns = -1;
  std::int64_t x_end_ns = -1;
  double x_end_us = -1;  ///< the same end as a viewer adding ts + dur in floating point computes it
  std::string x_name;
  std::vector<OpenSlice> open;                               ///< B events waiting for their E
  std::vector<std::pair<std::int64_t, std::int64_t>> spans;  ///< closed slices, for binding flows
};

struct FlowState {
  int starts = 0, finishes = 0;
  std::int64_t start_ns = 0, finish_ns = 0;
};

struct FlowEvent {
  Thread thread;
  std::int64_t ns;
  char phase;
  bool enclosing;  ///< binds to the enclosing slice (an "s", or an "f" with bp "e") rather than the next one
  std::string what;
};

class Validator {
 public:
  void event(const Json& e);
  void problem(std::string text) {
    if (problems_.size() < kMaxProblems)
      problems_.push_back(std::move(text));
    else
      ++dropped_;
  }
  TraceCheck finish();

 private:
  bool timestamp(const Json& e, const std::string& where, std::int64_t& ns);
  void slice(const Json& e, const Thread& t, std::int64_t ns, const std::string& where);
  void counter(const Json& e, std::int64_t pid, std::int64_t ns, const std::string& where);
  void metadata(const Json& e, std::int64_t pid, const std::string& where);
  void flow(const Json& e, const Thread& t, std::int64_t ns, const std::string& ph, const std::string& where);
  void check_flows();
  void check_names();

  TraceCounts counts_;
  std::vector<std::string> problems_;
  std::size_t dropped_ = 0;
  std::map<Thread, ThreadState> threads_;
  std::map<std::pair<std::int64_t, std::string>, std::int64_t> counter_last_ns_;
  std::map<std::string, FlowState> flows_;
  std::vector<FlowEvent> flow_events_;
  std::set<std::int64_t> pids_used_;
};

std::string text_of(const Json& e, const char* key) {
  auto it = e.find(key);
  return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool integer_field(const Json& e, const char* key, std::int64_t& out) {
  auto it = e.find(key);
  if (it == e.end() || !it->is_number_integer()) return false;
  out = it->get<std::int64_t>();
  return true;
}

void Validator::event(const Json& e) {
  std::string where = "event " + std::to_string(counts_.events++);
  if (!e.is_object()) return problem(where + " is not an object");
  std::string ph = text_of(e, "ph");
  where += " (ph " + ph + " '" + text_of(e, "name") + "')";
  if (!kKnownPhases.count(ph)) return problem(where + ": unknown or missing ph");
  std::int64_t pid = 0, tid = 0;
  if (!integer_field(e, "pid", pid)) return problem(where + ": no integer pid");
  if (ph == "M") return metadata(e, pid, where);
  pids_used_.insert(pid);
  std::int64_t ns = 0;
  if (!timestamp(e, where, ns)) return;
  if (ph == "C") return counter(e, pid, ns, where);
  const bool thread_bound = ph == "X" || ph == "B" || ph == "E" || ph == "s" || ph == "t" || ph == "f";
  if (!integer_field(e, "tid", tid)) {
    if (thread_bound) problem(where + ": no integer tid");
    return;  // an instant or async event without a thread: nothing more to check here
  }
  Thread t{pid, tid};
  ThreadState& state = threads_[t];
  if (ns < state.last_ns)
    problem(where + ": ts " + us_text(ns) + " is before the previous event of its thread at " + us_text(state.last_ns));
  state.last_ns = std::max(state.last_ns, ns);
  if (ph == "X" || ph == "B" || ph == "E") return slice(e, t, ns, where);
  if (ph == "s" || ph == "t" || ph == "f") return flow(e, t, ns, ph, where);
}

bool Validator::timestamp(const Json& e, const std::string& where, std::int64_t& ns) {
  auto it = e.find("ts");
  if (it == e.end() || !it->is_number()) {
    problem(where + ": ts missing or not a number");
    return false;
  }
  ns = ns_of(it->get<double>());
  if (ns < 0) {
    problem(where + ": negative ts " + us_text(ns));
    return false;
  }
  return true;
}

void Validator::slice(const Json& e, const Thread& t, std::int64_t ns, const std::string& where) {
  ThreadState& state = threads_[t];
  std::string name = text_of(e, "name"), cat = text_of(e, "cat");
  if (e.at("ph") == "B") {
    state.open.push_back({ns, name, cat});
    return;
  }
  if (e.at("ph") == "E") {
    if (state.open.empty()) return problem(where + ": E without a matching B on its thread");
    state.spans.emplace_back(state.open.back().ns, ns);
    ++counts_.slices[t][state.open.back().cat];
    state.open.pop_back();
    return;
  }
  auto dur = e.find("dur");
  if (dur == e.end() || !dur->is_number() || ns_of(dur->get<double>()) < 0)
    return problem(where + ": X without a non-negative numeric dur");
  std::int64_t end = ns + ns_of(dur->get<double>());
  const double ts_us = e.at("ts").get<double>(), end_us = ts_us + dur->get<double>();
  if (ns < state.x_end_ns)
    problem(where + ": starts at " + us_text(ns) + ", overlapping '" + state.x_name + "' on the same thread (pid " +
            std::to_string(t.first) + " tid " + std::to_string(t.second) + "), which ends at " +
            us_text(state.x_end_ns));
  else if (ts_us < state.x_end_us)
    problem(where + ": starts at " + us_text(ns) + " where '" + state.x_name + "' ends on the same thread (pid " +
            std::to_string(t.first) + " tid " + std::to_string(t.second) + "), but that end computed as ts + dur in " +
            "floating point is later; viewers that compute it so (speedscope) nest the two");
  if (end >= state.x_end_ns) {
    state.x_end_ns = end;
    state.x_name = name;
  }
  state.x_end_us = std::max(state.x_end_us, end_us);
  state.spans.emplace_back(ns, end);
  ++counts_.slices[t][cat];
}

void Validator::counter(const Json& e, std::int64_t pid, std::int64_t ns, const std::string& where) {
  std::string name = text_of(e, "name");
  auto args = e.find("args");
  if (args == e.end() || !args->is_object() || args->empty())
    return problem(where + ": counter without an args object of values");
  double sum = 0;
  for (const auto& [key, value] : args->items()) {
    if (!value.is_number()) return problem(where + ": counter arg '" + key + "' is " + value.dump() + ", not a number");
    sum += value.get<double>();
  }
  auto& last = counter_last_ns_.try_emplace({pid, name}, -1).first->second;
  if (ns < last) problem(where + ": counter ts " + us_text(ns) + " is before its previous value at " + us_text(last));
  last = std::max(last, ns);
  auto [it, fresh] = counts_.counter_max[pid].try_emplace(name, sum);
  if (!fresh) it->second = std::max(it->second, sum);
}

void Validator::metadata(const Json& e, std::int64_t pid, const std::string& where) {
  std::string name = text_of(e, "name");
  auto args = e.find("args");
  if (args == e.end() || !args->is_object()) return problem(where + ": metadata without args");
  std::int64_t tid = 0;
  bool has_tid = integer_field(e, "tid", tid);
  if (name == "process_name" || name == "thread_name") {
    std::string label = text_of(*args, "name");
    if (label.empty()) return problem(where + ": " + name + " without a string args.name");
    if (name == "process_name")
      counts_.process_names[pid] = label;
    else if (!has_tid)
      problem(where + ": thread_name without an integer tid");
    else
      counts_.thread_names[{pid, tid}] = label;
  } else if (name == "process_sort_index" || name == "thread_sort_index") {
    auto index = args->find("sort_index");
    if (index == args->end() || !index->is_number_integer())
      problem(where + ": " + name + " without an integer sort_index");
  }
}

void Validator::flow(const Json& e, const Thread& t, std::int64_t ns, const std::string& ph, const std::string& where) {
  auto id = e.find("id");
  if (id == e.end() || !(id->is_number_integer() || id->is_string())) return problem(where + ": flow without an id");
  std::string key = text_of(e, "cat") + " id " + id->dump();
  FlowState& f = flows_[key];
  if (ph == "s") {
    if (++f.starts > 1) problem(where + ": flow " + key + " starts twice");
    f.start_ns = ns;
  } else if (ph == "f") {
    if (++f.finishes > 1) problem(where + ": flow " + key + " finishes twice");
    f.finish_ns = ns;
  }
  bool enclosing = ph != "f" || text_of(e, "bp") == "e";
  flow_events_.push_back({t, ns, ph[0], enclosing, where});
}

void Validator::check_flows() {
  for (const auto& [key, f] : flows_) {
    if (f.starts > 0 && f.finishes == 0) problem("flow " + key + " starts but never finishes");
    if (f.starts == 0 && f.finishes > 0) problem("flow " + key + " finishes but never starts");
    if (f.starts == 0 || f.finishes == 0) continue;
    ++counts_.flows;
    if (f.finish_ns < f.start_ns)
      problem("flow " + key + " finishes at " + us_text(f.finish_ns) + ", before it starts at " + us_text(f.start_ns));
  }
  for (auto& [thread, state] : threads_) std::sort(state.spans.begin(), state.spans.end());
  for (const FlowEvent& f : flow_events_) {
    const auto& spans = threads_[f.thread].spans;
    // The last slice starting at or before the flow event encloses it, if any does (slices do not overlap).
    auto after = std::upper_bound(spans.begin(), spans.end(), std::make_pair(f.ns, INT64_MAX));
    bool enclosed = after != spans.begin() && std::prev(after)->second >= f.ns;
    if (!enclosed && (f.enclosing || after == spans.end()))
      problem(f.what + ": flow event at " + us_text(f.ns) + " binds to no slice of its thread");
  }
}

void Validator::check_names() {
  for (std::int64_t pid : pids_used_)
    if (!counts_.process_names.count(pid)) problem("pid " + std::to_string(pid) + " has events but no process_name");
  for (const auto& [thread, state] : threads_) {
    if (!counts_.thread_names.count(thread))
      problem("pid " + std::to_string(thread.first) + " tid " + std::to_string(thread.second) +
              " has events but no thread_name");
    for (const OpenSlice& open : state.open)
      problem("B '" + open.name + "' at " + us_text(open.ns) + " on pid " + std::to_string(thread.first) + " tid " +
              std::to_string(thread.second) + " has no matching E");
  }
}

TraceCheck Validator::finish() {
  check_flows();
  check_names();
  if (dropped_ > 0) problems_.push_back("... " + std::to_string(dropped_) + " more problems");
  return TraceCheck{std::move(problems_), std::move(counts_)};
}

/// Parses a trace, handing each event of traceEvents to the validator and then discarding it.
TraceCheck validate_stream(std::istream& in) {
  Validator v;
  std::string key_at_depth1;
  bool root_is_array = false, saw_events = false;
  auto callback = [&](int depth, Json::parse_event_t event, Json& parsed) {
    using E = Json::parse_event_t;
    if (depth == 0 && event == E::array_start) root_is_array = true;
    if (depth == 1 && event == E::key) key_at_depth1 = parsed.get<std::string>();
    bool events_array = root_is_array ? depth == 0 : depth == 1 && key_at_depth1 == "traceEvents";
    if (events_array && event == E::array_start) saw_events = true;
    bool in_events = root_is_array ? depth == 1 : depth == 2 && key_at_depth1 == "traceEvents";
    if (!in_events || (event != E::object_end && event != E::value)) return true;
    v.event(parsed);
    return false;
  };
  try {
    Json skeleton = Json::parse(in, callback);  // the file without its events, which were discarded one by one
  } catch (const Json::exception& e) {
    v.problem(std::string("not valid JSON: ") + e.what());
  }
  if (!saw_events) v.problem("no traceEvents array");
  return v.finish();
}

}  // namespace

std::size_t TraceCounts::slices_of(std::int64_t pid, const std::string& cat) const {
  std::size_t n = 0;
  for (const auto& [thread, by_cat] : slices) {
    auto it = by_cat.find(cat);
    if (thread.first == pid && it != by_cat.end()) n += it->second;
  }
  return n;
}

TraceCheck validate_trace_file(const std::string& path) {
  GzReadBuffer buffer(path);
  std::istream in(&buffer);
  return validate_stream(in);
}

TraceCheck validate_trace_text(const std::string& text) {
  std::istringstream in(text);
  return validate_stream(in);
}

}  // namespace placesim
