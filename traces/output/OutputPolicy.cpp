#include "traces/output/OutputPolicy.hpp"

#include <signal.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "workloads/json/Error.hpp"

namespace placesim {

namespace fs = std::filesystem;

namespace {

// The first `limit` bytes of a file, gunzipped when it is gzip ("" when it cannot be read).
std::string head_of(const std::string& path, std::size_t limit) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return "";  // a device or FIFO: nothing to read (it could block)
  gzFile gz = gzopen(path.c_str(), "rb");
  if (!gz) return "";
  std::string text(limit, '\0');
  const int n = gzread(gz, text.data(), static_cast<unsigned>(limit));
  gzclose(gz);
  text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return text;
}

// Whether two spellings name one file: the same file when both exist, else the same normalised absolute path.
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec) && !ec;
  return fs::weakly_canonical(fs::absolute(a), ec) == fs::weakly_canonical(fs::absolute(b), ec);
}

}  // namespace

bool written_by_placesim(const std::string& path) {
  const std::string head = head_of(path, 1 << 16);
  if (head.find("placesim") != std::string::npos) return true;
  const std::string first = head.substr(0, head.find('\n'));
  // Sweep and search results: rows that start with their index and sweep hash.
  if (first.rfind("{\"index\":", 0) == 0 && first.find("\"sweep\":") != std::string::npos) return true;
  // Outputs of the kinds placesim writes, which name no writer early: a Chrome trace, an SVG picture.
  if (head.rfind("{\"traceEvents\":", 0) == 0 || head.rfind("<svg", 0) == 0 ||
      (head.rfind("<?xml", 0) == 0 && head.find("<svg") != std::string::npos))
    return true;
  // A JSON-lines table (placesim's converge and pipeline-sweep rows).
  if (path.ends_with(".jsonl")) return first.size() > 1 && first.front() == '{' && first.back() == '}';
  if (!path.ends_with(".csv")) return false;
  return first.find(',') != std::string::npos && first.find(' ') == std::string::npos;
}

void check_outputs(const std::vector<OutputPath>& outputs, const std::vector<std::string>& inputs, bool force,
                   const std::string& force_flag) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const OutputPath& o = outputs[i];
    if (o.path == "-" || o.path.empty()) continue;
    for (const std::string& in : inputs)
      if (in != "-" && same_file(o.path, in))
        throw InputError(o.flag + "=" + o.path + " is the input " + in +
                         ": writing it would destroy the input; name another file");
    for (std::size_t j = 0; j < i; ++j)
      if (outputs[j].path != "-" && same_file(o.path, outputs[j].path))
        throw InputError(outputs[j].flag + "=" + outputs[j].path + " and " + o.flag + "=" + o.path +
                         " name the same file: one output would replace the other; name two files");
    std::error_code ec;
    const fs::file_status status = fs::status(o.path, ec);
    if (force || !fs::is_regular_file(status) || fs::file_size(o.path, ec) == 0) continue;
    if (!written_by_placesim(o.path))
      throw InputError(o.flag + "=" + o.path + " exists and is not an output placesim wrote: " +
                       (force_flag.empty() ? "remove it first, or name another file"
                                           : "give " + force_flag + " to replace it, or name another file"));
  }
}

std::string output_temporary(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::exists(status) && !fs::is_regular_file(status)) return path;
  // Temporaries of earlier runs that died before their rename: "<name>.tmp<pid>" of a process that is gone.
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const std::string prefix = p.filename().string() + ".tmp";
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string pid = name.substr(prefix.size());
    if (pid.find_first_not_of("0123456789") != std::string::npos || pid.size() > 9) continue;
    const pid_t owner = static_cast<pid_t>(std::stol(pid));
    if (owner != ::getpid() && ::kill(owner, 0) != 0 && errno == ESRCH) fs::remove(entry.path(), ec);
  }
  return path + ".tmp" + std::to_string(::getpid());
}

void replace_with_temporary(const std::string& temporary, const std::string& path) {
  if (temporary == path) return;
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    throw InputError("cannot replace '" + path + "': " + std::strerror(error));
  }
}

}  // namespace placesim
