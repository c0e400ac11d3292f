#include <filesystem>
#include <iostream>

#include "sim/cli/Commands.hpp"
#include "strategies/calibrate/Calibration.hpp"

namespace placesim {

Command command_calibrate() {
  Command c;
  c.name = "calibrate";
  c.summary = "fit an accelerator/fabric profile to measured GEMM, memory, attention, collective and layer points";
  c.usage = "MEASURED.json --out PROFILE.json";
  c.flags = {{"--out", "FILE", "write the fitted profile file here (default: stdout)"}};
  c.run = [](const Args& args) {
    if (args.positional().size() != 1)
      throw InputError("expected one measurements file (placesim calibrate MEASURED.json --out PROFILE.json)");
    const std::string path = args.positional().front();
    Calibration cal = calibrate(read_json_file(path), std::filesystem::path(path).parent_path().string());
    std::string out = args.value("--out").value_or("");
    // The residual table goes to stderr when the profile itself goes to stdout, so the JSON stays parseable.
    (out.empty() || out == "-" ? std::cerr : std::cout) << residual_table(cal);
    write_output(out, calibration_profile_json(cal).dump(2) + "\n");
    return 0;
  };
  return c;
}

}  // namespace placesim
