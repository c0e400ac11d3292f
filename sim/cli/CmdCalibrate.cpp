#include <filesystem>
#include <iostream>

#include "sim/cli/Commands.hpp"
#include "strategies/calibrate/Calibration.hpp"

namespace placesim {

/// The command's usage line, summary and flags as `--help` prints them (see command_from_help).
constexpr const char* kHelp = R"(
calibrate MEASURED.json --out PROFILE.json
fit an accelerator/fabric profile to measured GEMM, memory, attention, collective and layer points
--out FILE                write the fitted profile file here (default: stdout)
)";

namespace {

int run_calibrate(const Args& args) {
  if (args.positional().size() != 1)
    throw InputError("expected one measurements file (placesim calibrate MEASURED.json --out PROFILE.json)");
  const std::string path = args.positional().front();
  const Calibration cal = calibrate(read_json_file(path), std::filesystem::path(path).parent_path().string());
  const std::string out = args.value("--out").value_or("-");
  // The residual table goes to stderr when the profile itself goes to stdout, so the JSON stays parseable.
  summary_stream(out) << residual_table(cal);
  write_output(out, calibration_profile_json(cal).dump(2) + "\n");
  return 0;
}

}  // namespace

Command command_calibrate() {
  return command_from_help(kHelp, run_calibrate);
}

}  // namespace placesim
