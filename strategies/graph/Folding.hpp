#pragma once
#include <string>

namespace placesim {

/// Symmetry folding of a step: the data lanes (cp ranks within dp ranks; device = t + tp * (lane + lanes * stage))
/// fall into `blocks()` congruent blocks of `folded_lanes` consecutive lanes, each block on whole nodes. Every block
/// runs the same schedule at the same times, so the simulation expands and runs block 0 only (its devices are the
/// representatives) and gives every other device the figures of its representative. Collectives whose groups span
/// blocks still have every member: their bytes, ring steps and exact times are those of the whole group, and the
/// ring hops that leave block 0 are routed back into it (see Runner), so the links carry the load of all members.
struct Folding {
  int tp = 1;
  int lanes = 1;         ///< data lanes of the mesh (cp x dp)
  int folded_lanes = 1;  ///< lanes simulated: dividing `lanes`, and dividing cp or a multiple of it
  std::string reason;    ///< why the step was not folded (empty when folded, or when there is nothing to fold)
  std::string note;      ///< folded approximately: what is approximated (empty when exact)

  bool active() const { return folded_lanes < lanes; }
  int blocks() const { return lanes / folded_lanes; }
  int lane(int device) const { return (device / tp) % lanes; }
  /// Is `device` one of block 0's (simulated) devices?
  bool simulated(int device) const { return !active() || lane(device) < folded_lanes; }
  int block(int device) const { return lane(device) / folded_lanes; }
  /// `device` moved by k blocks along the data lanes, wrapping around (same stage, TP rank and position in its block).
  int shift(int device, int k) const {
    const int l = lane(device);
    const int moved = ((l + k * folded_lanes) % lanes + lanes) % lanes;
    return device + (moved - l) * tp;
  }
  /// The block-0 device that stands for `device`.
  int representative(int device) const { return shift(device, -block(device)); }
};

}  // namespace placesim
