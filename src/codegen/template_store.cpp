// Template lookup: embedded table, or KPLAY_TEMPLATE_DIR when set (only where no other user may write).
#include "template_store.hpp"

#include <sys/stat.h>

#include <cstdlib>

#include "embedded_templates.hpp"
#include "kplay/error.hpp"
#include "util/bounded_file.hpp"
#include "util/private_dir.hpp"

namespace kplay {
namespace {
// The largest template is about 25 KB; a file far beyond that in KPLAY_TEMPLATE_DIR is not one.
constexpr std::uint64_t kMaxTemplateBytes = 1u << 20;

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
    // Templates are kernel source, compiled and run in this process on PoCL: read only from a
    // place no other user could have written (the database folder's rule, private_dir.hpp).
    if (const std::string why = untrusted_path_reason(path); !why.empty())
      throw Error(ErrorCode::invalid_argument, "refusing the template " + path + " (KPLAY_TEMPLATE_DIR): " + why);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
      throw Error(ErrorCode::invalid_argument, "template '" + name + "' not found in KPLAY_TEMPLATE_DIR (" + path +
                                                   "): the folder must hold every template, as templates/ does");
    return read_bounded_file(path, kMaxTemplateBytes, "template " + path + " (KPLAY_TEMPLATE_DIR)");
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
