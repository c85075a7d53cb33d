// The table that the build generates from templates/ (see cmake/embed_templates.cmake).
#pragma once
#include <cstddef>

namespace kplay::detail {
struct EmbeddedTemplate {
  const char* name;  // path relative to templates/, e.g. "common/elementwise.h"
  const char* text;
};
extern const EmbeddedTemplate kEmbeddedTemplates[];
extern const std::size_t kEmbeddedTemplateCount;
}  // namespace kplay::detail
