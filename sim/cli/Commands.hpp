#pragma once
#include "sim/cli/Cli.hpp"

namespace placesim {

// One function per subcommand, each defined in its own sim/cli/Cmd*.cpp file.
Command command_analyze();
Command command_calibrate();
Command command_check();
Command command_presets();
Command command_simulate();
Command command_pipeline_sweep();
Command command_search();
Command command_sweep();
Command command_converge();
Command command_converge_sweep();

}  // namespace placesim
