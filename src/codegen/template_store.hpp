// Where kernel template text comes from: the copy embedded at build time, or, when the
// environment variable KPLAY_TEMPLATE_DIR names a folder, that folder, read at every call so an
// edited template takes effect without a rebuild (the changed text changes the cache key).
#pragma once
#include <string>
#include <vector>

namespace kplay {

// Text of a template by its path relative to templates/. Throws Error(io_failed) naming the
// file (and the folder, when KPLAY_TEMPLATE_DIR is set) if it does not exist.
std::string template_text(const std::string& name);

// "embedded" or the override folder, for messages.
std::string template_origin();

// Names of every embedded template.
std::vector<std::string> embedded_template_names();

}  // namespace kplay
