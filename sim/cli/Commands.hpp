#pragma once
#include "sim/cli/Cli.hpp"

namespace placesim {

// One function per subcommand, defined in sim/cli/Cmd*.cpp: analyze, check and presets in CmdAnalyze.cpp,
// pipeline-sweep in CmdPipeline.cpp, the others in the file named after them.
Command command_analyze();
Command command_calibrate();
Command command_compare();
Command command_check();
Command command_presets();
Command command_stacks();
Command command_simulate();
Command command_pipeline_sweep();
Command command_search();
Command command_sweep();
Command command_converge();
Command command_converge_sweep();
Command command_verify();

}  // namespace placesim
