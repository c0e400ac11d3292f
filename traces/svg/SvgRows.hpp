#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "strategies/graph/Record.hpp"

namespace placesim {

/// The devices a timeline gives a row, and what it leaves out.
struct SvgRows {
  std::vector<int> devices;   ///< in mesh order (pp, dp, cp, tp)
  std::size_t omitted = 0;    ///< selected devices beyond max_rows
  std::size_t tp_hidden = 0;  ///< higher tp ranks of a drawn device's (pp, dp, cp) group
  std::string tp_note;        ///< names the tp ranks left out ("tp ranks 1-7 of each stage ..."); empty when none
};

/// Picks the rows of a timeline from `selection` (empty = every device): in mesh order, only the lowest tp rank of
/// each group of devices that differ only in tp (they run the same schedule) unless `all_tp_ranks`, then at most
/// `max_rows` (>= 1) of them.
SvgRows svg_rows(const SimulationRecord& record, const std::vector<int>& selection, bool all_tp_ranks, int max_rows);

}  // namespace placesim
