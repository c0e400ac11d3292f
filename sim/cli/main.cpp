#include "sim/cli/Cli.hpp"

int main(int argc, char** argv) {
  return placesim::run_cli(argc, argv);
}
