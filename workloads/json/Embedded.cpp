#include "workloads/json/Embedded.hpp"

#include <filesystem>

namespace placesim {

std::optional<std::string_view> embedded_file(std::string_view path) {
  const auto& files = embedded_files();
  auto it = files.find(path);
  if (it == files.end()) return std::nullopt;
  return std::string_view(it->second);
}

std::vector<std::string> embedded_folder(std::string_view folder) {
  std::vector<std::string> out;
  const std::string prefix = std::string(folder) + "/";
  for (const auto& [path, text] : embedded_files())
    if (path.rfind(prefix, 0) == 0 && path.find('/', prefix.size()) == std::string::npos) out.push_back(path);
  return out;
}

Json embedded_json(const std::string& path) {
  return parse_json_text(std::string(*embedded_file(path)), path);
}

void check_named_after_file(const std::string& path, const std::string& name) {
  if (std::filesystem::path(path).stem().string() != name)
    throw InputError(path + ": name=" + name + " differs from the file's name");
}

}  // namespace placesim
