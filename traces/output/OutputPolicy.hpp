#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace placesim {

/// One output a command was asked to write: the flag that named it ("--report"; "OUT" for a positional) and its path.
struct OutputPath {
  std::string flag, path;
};

/// Whether the existing file at `path` is placesim's own earlier output, or an output of a kind placesim writes,
/// which a command may replace: the word "placesim" in its first 64 KB (decompressed when gzip: reports, profiler
/// traces, calibrations), sweep or search result rows (a first line {"index":..., "sweep":...}), a Chrome trace
/// (starting {"traceEvents":), an SVG picture, a ".jsonl" path whose first line is a JSON object, or a ".csv" path
/// whose first line is a CSV header (comma-separated names, no spaces).
bool written_by_placesim(const std::string& path);

/// The output policy every command applies before any work. Refused (InputError naming both paths): an output that
/// is one of the command's `inputs` (the same file, however spelled); two outputs naming the same file; an output
/// that is a directory or cannot be created. An existing regular, non-empty file that placesim did not write
/// (written_by_placesim) is refused unless `force`, with `force_flag` named as the way out (empty: "remove it
/// first"). "-" (stdout) and special files (devices, FIFOs, /dev/stdout) are never refused for existing.
void check_outputs(const std::vector<OutputPath>& outputs, const std::vector<std::string>& inputs, bool force,
                   const std::string& force_flag);

/// Where a complete output of `path` is written before it replaces `path`: "<path>.tmp<pid>" in its directory, or
/// `path` itself when it exists and is not a regular file (a device, a FIFO, /dev/stdout: written in place, never
/// renamed over). Removes the temporaries of earlier runs that died before renaming theirs (a process that no
/// longer exists).
std::string output_temporary(const std::string& path);
/// Replaces `path` by its complete temporary (output_temporary's), after the writer flushed, synced and closed it;
/// no-op when they are the same file. InputError naming the path when the rename fails.
void replace_with_temporary(const std::string& temporary, const std::string& path);

}  // namespace placesim
