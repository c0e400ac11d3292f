#pragma once
#include <cstddef>
#include <string>

#include "strategies/graph/Record.hpp"
#include "traces/chrome/TraceOptions.hpp"

namespace placesim {

/// What a static timeline overview shows.
struct SvgOptions {
  TraceOptions trace;   ///< device selection and collective detail, as for the Chrome trace
  std::string title;    ///< heading, e.g. the experiment name
  int max_rows = 32;    ///< devices drawn; further selected devices are only counted in a note
  int width_px = 1600;  ///< width of the picture
};

/// What was drawn.
struct SvgSummary {
  std::size_t devices = 0;          ///< device rows drawn
  std::size_t devices_omitted = 0;  ///< selected devices beyond max_rows
  std::size_t boxes = 0;            ///< task boxes (<rect class="box ...">)
};

/// Writes a static SVG overview of a simulation to `path` ("-" for stdout): one row per selected device in mesh
/// order (at most max_rows), a sub-row per stream with tasks, boxes coloured by task kind (a tooltip names the
/// task), a strip with the device's resident memory (the maximum within each pixel column, so peaks always show),
/// a legend and a time axis. A task narrower than a pixel that follows a box of its kind within half a pixel joins
/// that box, which keeps the file small for long runs. Well-formed XML; same input → byte-identical output.
/// Throws InputError when `path` cannot be written or max_rows/width_px are not positive.
SvgSummary write_timeline_svg(const std::string& path, const SimulationRecord& record, const SvgOptions& options);

}  // namespace placesim
