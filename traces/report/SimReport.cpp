#include "traces/report/SimReport.hpp"

#include <algorithm>

#include "strategies/placement/Mesh.hpp"
#include "traces/report/Report.hpp"

namespace placesim {

namespace {

const State kStates[] = {State::Parameters, State::Gradients, State::Optimizer, State::Activations};

double total_sent(const DeviceStats& d) {
  double sum = 0;
  for (double b : d.bytes_sent) sum += b;
  return sum;
}

Json by_class(const std::array<double, kCommClasses>& bytes) {
  Json j = Json::object();
  for (int k = 0; k < kCommClasses; ++k) j[to_string(static_cast<CommClass>(k))] = number(bytes[static_cast<std::size_t>(k)]);
  return j;
}

Json peak_memory(const DeviceStats& d) {
  Json j = Json::object();
  for (State s : kStates) j[to_string(s)] = number(d.peak[static_cast<std::size_t>(s)]);
  j["buffers"] = number(d.peak_buffers);
  j["total"] = number(d.peak_total);
  return j;
}

Json busy(const DeviceStats& d) {
  Json j = Json::object();
  for (int s = 0; s < kStreams; ++s) j[to_string(static_cast<Stream>(s))] = d.busy_s(static_cast<Stream>(s));
  return j;
}

}  // namespace

Json simulation_section(const Experiment& e, const ClusterSpec& c, const Analysis& a, const SimResult& r) {
  const double step = r.step_time_s;
  const double peak = c.accelerator.peak_flops(e.training.dtype);
  Json sim;
  sim["step_time_s"] = step;
  sim["mfu"] = step > 0 ? a.model_flops_per_step / (step * static_cast<double>(r.devices.size()) * peak) : 0.0;
  sim["hfu"] = step > 0 ? a.hardware_flops_per_step / (step * static_cast<double>(r.devices.size()) * peak) : 0.0;
  sim["tokens_per_s"] = step > 0 ? a.tokens_per_step / step : 0.0;
  sim["model_tflops_per_gpu"] = step > 0 ? a.model_flops_per_step / step / static_cast<double>(r.devices.size()) / 1e12 : 0.0;
  sim["hardware_tflops_per_gpu"] =
      step > 0 ? a.hardware_flops_per_step / step / static_cast<double>(r.devices.size()) / 1e12 : 0.0;
  DeviceStats max;
  double exposed = 0, sent = 0;
  std::vector<double> stage_busy(static_cast<std::size_t>(e.strategy.pp), 0);
  std::vector<int> stage_count(static_cast<std::size_t>(e.strategy.pp), 0);
  Json devices = Json::array();
  for (std::size_t x = 0; x < r.devices.size(); ++x) {
    const DeviceStats& d = r.devices[x];
    MeshCoord mc = mesh_coord(e.strategy, static_cast<std::int64_t>(x));
    for (int k = 0; k < kCommClasses; ++k)
      max.bytes_sent[static_cast<std::size_t>(k)] = std::max(max.bytes_sent[static_cast<std::size_t>(k)], d.bytes_sent[static_cast<std::size_t>(k)]);
    for (int s = 0; s < 4; ++s) max.peak[static_cast<std::size_t>(s)] = std::max(max.peak[static_cast<std::size_t>(s)], d.peak[static_cast<std::size_t>(s)]);
    max.peak_buffers = std::max(max.peak_buffers, d.peak_buffers);
    max.peak_total = std::max(max.peak_total, d.peak_total);
    max.h2d_bytes = std::max(max.h2d_bytes, d.h2d_bytes);
    max.d2h_bytes = std::max(max.d2h_bytes, d.d2h_bytes);
    double dev_exposed = d.exposed_communication_s();
    exposed = std::max(exposed, dev_exposed);
    sent = std::max(sent, total_sent(d));
    stage_busy[static_cast<std::size_t>(mc.pp)] += d.busy_s(Stream::Compute);
    stage_count[static_cast<std::size_t>(mc.pp)] += 1;
    devices.push_back(Json{{"device", x},
                           {"dp", mc.dp},
                           {"tp", mc.tp},
                           {"pp", mc.pp},
                           {"bytes_sent", {{"total", number(total_sent(d))}, {"by_class", by_class(d.bytes_sent)}}},
                           {"offload", {{"h2d_bytes", number(d.h2d_bytes)}, {"d2h_bytes", number(d.d2h_bytes)}}},
                           {"peak_memory_bytes", peak_memory(d)},
                           {"busy_s", busy(d)},
                           {"exposed_communication_s", dev_exposed}});
  }
  Json bubble = Json::array();
  for (std::size_t s = 0; s < stage_busy.size(); ++s)
    bubble.push_back(step > 0 && stage_count[s] > 0 ? 1.0 - stage_busy[s] / stage_count[s] / step : 0.0);
  sim["exposed_communication_s"] = exposed;
  sim["bubble_fraction"] = bubble;
  sim["bytes_sent"] = Json{{"total", number(sent)}, {"by_class", by_class(max.bytes_sent)}};
  sim["offload"] = Json{{"h2d_bytes", number(max.h2d_bytes)}, {"d2h_bytes", number(max.d2h_bytes)}};
  sim["peak_memory_bytes"] = peak_memory(max);
  sim["activities"] = r.activities;
  sim["timers"] = r.timers;
  sim["tasks"] = r.record.tasks.size();
  sim["wall_time_s"] = r.wall_time_s;
  sim["devices"] = std::move(devices);
  return sim;
}

Json validation_section(const Experiment& e, const Analysis& a, const SimResult& r) {
  Json v = Json::array();
  auto add = [&](const std::string& figure, double analytic, double simulated) {
    v.push_back(Json{{"figure", figure}, {"analytic", number(analytic)}, {"simulated", number(simulated)},
                     {"difference", number(simulated - analytic)}});
  };
  std::array<double, kCommClasses> sim_max{};
  double sim_total = 0, h2d = 0, d2h = 0;
  std::array<double, 4> peak{};
  double buffers = 0;
  int mismatched = 0;
  for (std::size_t x = 0; x < r.devices.size(); ++x) {
    const DeviceStats& d = r.devices[x];
    const StageAnalysis& st = a.stages[static_cast<std::size_t>(mesh_coord(e.strategy, static_cast<std::int64_t>(x)).pp)];
    bool same = d.h2d_bytes == st.comm.h2d && d.d2h_bytes == st.comm.d2h;
    for (int k = 0; k < kCommClasses; ++k) {
      auto i = static_cast<std::size_t>(k);
      sim_max[i] = std::max(sim_max[i], d.bytes_sent[i]);
      same = same && d.bytes_sent[i] == st.comm.by_class[i];
    }
    mismatched += same ? 0 : 1;
    sim_total = std::max(sim_total, total_sent(d));
    h2d = std::max(h2d, d.h2d_bytes);
    d2h = std::max(d2h, d.d2h_bytes);
    for (int s = 0; s < 4; ++s) peak[static_cast<std::size_t>(s)] = std::max(peak[static_cast<std::size_t>(s)], d.peak[static_cast<std::size_t>(s)]);
    buffers = std::max(buffers, d.peak_buffers);
  }
  for (int k = 0; k < kCommClasses; ++k)
    add(std::string("communication.by_class.") + to_string(static_cast<CommClass>(k)), a.comm.by_class[static_cast<std::size_t>(k)],
        sim_max[static_cast<std::size_t>(k)]);
  add("communication.bytes_per_step", a.bytes_per_step, sim_total);
  add("communication.offload.h2d_bytes", a.comm.h2d, h2d);
  add("communication.offload.d2h_bytes", a.comm.d2h, d2h);
  add("devices whose bytes per class differ from their stage's analytic bytes", 0, mismatched);
  add("memory.parameters_bytes", a.memory.parameters, peak[0]);
  add("memory.gradients_bytes", a.memory.gradients, peak[1]);
  add("memory.optimizer_bytes", a.memory.optimizer, peak[2]);
  add("memory.activations_bytes", a.memory.activations, peak[3]);
  add("memory.buffers_bytes (analytic bound)", a.memory.buffers, buffers);
  return v;
}

}  // namespace placesim
