#pragma once
// Sweep files in the tests: parsing one from text, the error it is refused with, and running `placesim sweep`.
#include <string>

#include "strategies/sweep/Sweep.hpp"
#include "tests/Helpers.hpp"
#include "workloads/json/Error.hpp"

namespace placesim::test {

/// A sweep parsed from JSON text (base dir: the source tree).
inline SweepSpec sweep(const std::string& text) {
  return parse_sweep_text(text, "test.json", PLACESIM_SOURCE_DIR);
}

/// The message a sweep text is refused with, or "(no error)".
inline std::string sweep_error(const std::string& text) {
  return refusal_message([&] { sweep(text); });
}

/// A base experiment for small sweeps: GPT 1.7B with Megatron-LM 3D.
inline const char* const kSmallBase = R"("base": {"model": "gpt-1.7b", "training": {"global_batch": 64},
                                      "strategy": {"preset": "megatron-3d"}})";

/// Runs `placesim sweep <arguments>`; returns the exit code, output in `output` when given.
inline int sweep_cli(const std::string& arguments, std::string* output = nullptr) {
  std::string ignored;
  return run_placesim("sweep " + arguments, output ? output : &ignored);
}

}  // namespace placesim::test
