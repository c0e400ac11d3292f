#include <cstdio>
#include "strategies/TpLayerTimes.hpp"
#include "strategies/Experiment.hpp"
using namespace placesim;
int main() {
  const char* cases[][2] = {{"none","false"},{"none","true"},{"full","false"},{"selective","false"},{"selective","true"}};
  double meas[][2] = {{7.7,11.9},{7.2,11.8},{7.7,19.5},{7.7,13.2},{7.2,13.1}};
  AcceleratorSpec acc = accelerator_preset("a100-80gb", "x");
  FabricProfile f = fabric_preset("nvlink3", "x");
  for (int i = 0; i < 5; ++i) {
    std::string j = std::string(R"({"model":"gpt-22b","training":{"micro_batch":4,"recompute":")") + cases[i][0] +
      R"("},"strategy":{"preset":"megatron-3d","tp":8,"sp":)" + cases[i][1] + "}}";
    Experiment e = parse_experiment(Json::parse(j), "");
    PassTimes c = layer_times(e, acc);
    PassTimes t = layer_times_with_tp_comm(e, acc, f);
    TpExposure x = tp_exposure(e, acc, f);
    std::printf("%-10s sp=%-5s compute f=%.2f b=%.2f r=%.2f | comm f=%.2f b=%.2f | total f=%.2f (%.1f) b=%.2f (%.1f)\n",
      cases[i][0], cases[i][1], c.forward_s*1e3, c.backward_s*1e3, c.recompute_s*1e3, x.forward_s*1e3, x.backward_s*1e3,
      t.forward_s*1e3, meas[i][0], (t.backward_s+t.recompute_s)*1e3, meas[i][1]);
  }
}
