#pragma once
#include <string>

namespace placesim {

/// Symmetry folding of a step: the data lanes (cp ranks within dp ranks; device = t + tp * (lane + lanes * stage))
/// fall into `blocks()` congruent blocks of `folded_lanes` consecutive lanes, each block on whole nodes. Every block
/// runs the same schedule at the same times, so the simulation expands and runs block 0 only (its devices are the
/// representatives) and gives every other device the figures of its representative. Collectives whose groups span
/// blocks still have every member: their bytes, ring steps and exact times are those of the whole group, and the
/// ring hops that leave the simulated blocks are routed back into block 0 (see Runner), so the links carry the load of
/// all members.
///
/// Blocks an imperfection touches (a straggler, a degraded NIC or NVLink) are simulated apart. The simulation runs in
/// a frame rotated by `rotation` blocks (frame device f is real device shift(f, rotation)) so that the touched blocks
/// fall in frame blocks 1 .. window - 1 and frame block 0 is untouched: it simulates the `window` blocks at the start
/// of the frame, and every other block takes frame block 0's figures. With nothing apart, window = 1, rotation = 0.
struct Folding {
  int tp = 1;
  int lanes = 1;         ///< data lanes of the mesh (cp x dp)
  int folded_lanes = 1;  ///< lanes of a block: dividing `lanes`, and dividing cp or a multiple of it
  int window = 1;        ///< blocks simulated: frame blocks 0 .. window - 1
  int rotation = 0;      ///< frame block b is real block b + rotation (mod blocks)
  std::string reason;    ///< why the step was not folded (empty when folded, or when there is nothing to fold)
  std::string note;      ///< folded approximately: what is approximated (empty when exact)
  std::string apart;     ///< the blocks simulated apart and why, e.g. "block 17 (node 17 at 0.8x, cluster.slow)"

  bool active() const { return folded_lanes < lanes; }
  int blocks() const { return lanes / folded_lanes; }
  /// Of every device, the share the simulation runs.
  double simulated_share() const { return active() ? static_cast<double>(window) / blocks() : 1.0; }
  int lane(int device) const { return (device / tp) % lanes; }
  /// Is frame device `device` one of the simulated blocks' devices?
  bool simulated(int device) const { return !active() || block(device) < window; }
  int block(int device) const { return lane(device) / folded_lanes; }
  /// `device` moved by k blocks along the data lanes, wrapping around (same stage, TP rank and position in its block).
  int shift(int device, int k) const {
    const int l = lane(device);
    const int moved = ((l + k * folded_lanes) % lanes + lanes) % lanes;
    return device + (moved - l) * tp;
  }
  /// The simulated frame device that stands for frame device `device`: itself, or its block-0 copy.
  int representative(int device) const { return simulated(device) ? device : shift(device, -block(device)); }
  /// The frame device of real device `device`, and back.
  int frame(int device) const { return active() ? shift(device, -rotation) : device; }
  int real(int device) const { return active() ? shift(device, rotation) : device; }
  /// The simulated frame device whose figures real device `device` takes.
  int source(int device) const { return representative(frame(device)); }
};

}  // namespace placesim
