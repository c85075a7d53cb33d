// Template lookup: embedded table, or KPLAY_TEMPLATE_DIR when set.
#include "template_store.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "embedded_templates.hpp"
#include "kplay/error.hpp"

namespace kplay {
namespace {
const char* override_dir() {
  const char* dir = std::getenv("KPLAY_TEMPLATE_DIR");
  return (dir && *dir) ? dir : nullptr;
}
}  // namespace

std::string template_origin() {
  const char* dir = override_dir();
  return dir ? std::string(dir) : std::string("embedded");
}

std::string template_text(const std::string& name) {
  if (const char* dir = override_dir()) {
    const std::string path = std::string(dir) + "/" + name;
    std::ifstream in(path, std::ios::binary);
    if (!in)
      throw Error(ErrorCode::io_failed, "template '" + name + "' not found in KPLAY_TEMPLATE_DIR (" + path + ")");
    std::ostringstream os;
    os << in.rdbuf();
    return os.str();
  }
  for (std::size_t i = 0; i < detail::kEmbeddedTemplateCount; ++i)
    if (name == detail::kEmbeddedTemplates[i].name) return detail::kEmbeddedTemplates[i].text;
  throw Error(ErrorCode::io_failed, "template '" + name + "' is not embedded in this build");
}

std::vector<std::string> embedded_template_names() {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < detail::kEmbeddedTemplateCount; ++i)
    names.emplace_back(detail::kEmbeddedTemplates[i].name);
  return names;
}

}  // namespace kplay
