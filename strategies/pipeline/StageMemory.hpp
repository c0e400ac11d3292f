#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "strategies/placement/Layout.hpp"

// The activations a stage holds at its peak under its pipeline schedule: micro-batches in flight, the interleaved
// schedule's op order walked.
namespace placesim {

/// Layers of activations a device of the stage keeps while offloading: one per chunk and micro-batch in flight.
double kept_activation_layers(const Experiment& e, const StageLayout& st);

/// Most chunk-forwards per step placesim walks for the interleaved schedule's activation peak.
inline constexpr std::int64_t kMaxInterleavedPasses = 50'000'000;
/// The interleaved schedule's peak on stage st, its op order walked: layers of the chunk-forwards in flight
/// (weighted), or their number.
/// `chunk_weights`: per chunk, the load a chunk-forward holds (bytes of its layers), instead of layers or 1.
double interleaved_peak(const Experiment& e, const StageLayout& st, bool weighted,
                        const std::vector<double>* chunk_weights = nullptr);

/// The last stage's activation peak under the interleaved schedule with uneven chunks, the loss walked with the
/// layers: chunk_bytes[c] held by each forward of chunk c until its backward, `saved` from each head forward (the
/// last chunk) to its backward, `transient` during that backward. Empty elsewhere, and with even chunks, where the
/// peak of the layers and a live loss coincide (the last stage's first steady-state forward is of the last chunk).
std::optional<double> interleaved_peak_with_loss(const Experiment& e, const StageLayout& st,
                                                 const std::vector<double>& chunk_bytes, double saved,
                                                 double transient);

/// The peak on stage st with the schedule's op order walked (make_schedule): each chunk-forward holds chunk_load[chunk]
/// until its weight gradient (or its backward, when that is not split). Serves zb-v, dualpipev and interleaved-zb.
double walked_peak(const Experiment& e, const StageLayout& st, const std::vector<double>& chunk_load);

/// The peak on stage st under the schedules whose pairs overlap layer by layer (DualPipe's, Megatron-Core's combined
/// 1F1B; the expansion's expand_pair): the op order walked part by part, each forward holding layer_loads[chunk][l]
/// for each of its chunk's layers until its backward or weight gradient; in a pair the forward's parts and the
/// backward's alternate (an MoE layer in four parts, any other in one), the forward's activations held from a layer's
/// first part (its last when it holds the output layer), the backward's freed at its last. On the stage with the
/// output layer the loss is walked too: `loss_saved` from each head forward to its backward, `loss_transient` while
/// that backward's first part runs.
double paired_walked_peak(const Experiment& e, const StageLayout& st,
                          const std::vector<std::vector<double>>& layer_loads, double loss_saved = 0,
                          double loss_transient = 0);

/// Layer-equivalents of activations a device of `stage` holds at its peak under the schedule (in-flight micro-batches
/// times layers, or the interleaved schedule's chunk count).
double activation_layer_equivalents(const Experiment& e, const StageLayout& s);

}  // namespace placesim
