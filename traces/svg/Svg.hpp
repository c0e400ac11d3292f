#pragma once
#include <cstddef>
#include <optional>
#include <string>

#include "strategies/graph/Record.hpp"
#include "traces/chrome/TraceOptions.hpp"
#include "traces/svg/TimeWindow.hpp"

namespace placesim {

/// What a static timeline overview shows.
struct SvgOptions {
  TraceOptions trace;                  ///< device selection and collective detail, as for the Chrome trace
  std::string title;                   ///< heading, e.g. the experiment name
  int max_rows = 32;                   ///< devices drawn; further selected devices are only counted in a note
  int width_px = 1600;                 ///< width of the picture
  std::optional<TimeWindow> window{};  ///< only this span of simulated time; the whole step when empty
  bool all_tp_ranks = false;           ///< every selected tp rank gets a row, not only the lowest of each stage
};

/// What was drawn.
struct SvgSummary {
  std::size_t devices = 0;          ///< device rows drawn
  std::size_t devices_omitted = 0;  ///< selected devices beyond max_rows
  std::size_t tp_ranks_hidden = 0;  ///< selected devices left out as a higher tp rank of a drawn device's group
  std::size_t boxes = 0;            ///< task boxes (<rect class="box ...">)
  std::size_t labels = 0;           ///< micro-batch numbers written on compute blocks
};

/// Writes a static SVG overview of a simulation to `path` ("-" for stdout).
///
/// Rows: the selected devices in mesh order. Devices that differ only in their tp coordinate run the same schedule,
/// so only the lowest tp rank of each (pp, dp, cp) group gets a row unless `all_tp_ranks`; a note names the tp ranks
/// left out. At most max_rows rows; a note counts the rest. Each row has a sub-row per stream with tasks, boxes
/// coloured by task kind (a tooltip names the task), and a strip with the device's resident memory (the maximum
/// within each pixel column, so peaks always show); a legend and a time axis follow.
///
/// Blocks: consecutive compute boxes of one pass (forward, or backward with its recompute), micro-batch and chunk
/// form a block, also across the short gaps between layers; adjoining blocks are parted by a 1 px gap, and a block
/// wide enough for it carries its micro-batch number. A task narrower than a pixel that follows
/// a box of its kind within half a pixel joins that box, which keeps the file small for long runs.
///
/// With a window, only tasks overlapping it are drawn, clipped to it, and the axis spans it. All text is at least
/// 12 px. Well-formed XML; same input → byte-identical output.
/// Throws InputError when `path` cannot be written, max_rows/width_px are not positive or the window starts at or
/// after the end of the step (naming `--time-window`).
SvgSummary write_timeline_svg(const std::string& path, const SimulationRecord& record, const SvgOptions& options);

}  // namespace placesim
