// Analytic step-time estimate for examples/validation/*.json (docs/validation.md): per-layer times (compute plus
// exposed TP collectives) x layers per stage x (micro-batches + pipeline bubble), plus the data-parallel gradient
// all-reduce (not overlapped, as in Megatron-LM 2021) and the optimizer step. DGX A100 / Selene only.
#include <cstdio>

#include "strategies/analytic/ExperimentFile.hpp"
#include "strategies/analytic/TpLayerTimes.hpp"
#include "strategies/placement/Layout.hpp"

using namespace placesim;

int main(int argc, char** argv) {
  const AcceleratorSpec acc = accelerator_preset("a100-80gb", "estimate");
  const CommProfile comm{*acc.intra_node_fabric, *acc.inter_node_fabric};
  std::printf("%-24s %9s %9s %9s %9s %11s %8s\n", "experiment", "layer ms", "pipe s", "dp s", "step s", "TFLOP/s/GPU",
              "MFU %");
  for (int i = 1; i < argc; ++i) {
    Experiment e = load_experiment(argv[i]);
    const auto& s = e.strategy;
    const auto& m = e.model;
    PassTimes t = layer_times_with_tp_comm(e, acc, comm.intra_node);
    PassTimes head = logit_times(e, acc);
    const double layer_s = t.forward_s + t.backward_s + t.recompute_s;
    const double stage_s = static_cast<double>(m.layers) / s.pp * layer_s + head.forward_s + head.backward_s;
    const double mb = static_cast<double>(s.microbatches);
    const double pipe_s = (mb + (s.pp - 1.0) / s.chunks) * stage_s;
    const double device_params = total_parameters(m) / static_cast<double>(s.tp * s.pp);
    const double dp_s =
        collective_time_s(CollectiveKind::AllReduce, CollectiveAlgorithm::Ring, device_params * e.training.grad_bytes(),
                          static_cast<int>(s.dp), comm.inter_node);
    const double step_s = pipe_s + dp_s + optimizer_step_s(device_params, e, acc);
    // Narayanan et al. count model FLOPs with full recompute (factor 96); MFU counts none (factor 72).
    const double B = e.training.global_batch, S = m.seq_len, l = m.layers, h = m.hidden, V = m.vocab;
    const double with_recompute = 96 * B * S * l * h * h * (1 + S / (6 * h) + V / (16 * l * h));
    const double model = 72 * B * S * l * h * h * (1 + S / (6 * h) + V / (12 * l * h));
    const double gpus = static_cast<double>(s.devices());
    std::printf("%-24s %9.2f %9.3f %9.3f %9.3f %11.1f %8.1f\n", e.name.c_str(), layer_s * 1e3, pipe_s, dp_s, step_s,
                (e.training.recompute == Recompute::Full ? with_recompute : model) / step_s / gpus / 1e12,
                100 * model / step_s / gpus / acc.peak_bf16_flops);
  }
}
