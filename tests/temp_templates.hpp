// A temporary KPLAY_TEMPLATE_DIR holding copies of the embedded templates, for tests that edit
// a template and check what changes. Restores the environment on destruction.
#pragma once
#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "codegen/template_store.hpp"

namespace kplay::test {

class TempTemplates {
 public:
  TempTemplates() {
    unsetenv("KPLAY_TEMPLATE_DIR");
    dir_ = std::filesystem::temp_directory_path() / ("kplay-templates-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    for (const auto& name : embedded_template_names()) write(name, template_text(name));
    setenv("KPLAY_TEMPLATE_DIR", dir_.c_str(), 1);
  }
  ~TempTemplates() {
    unsetenv("KPLAY_TEMPLATE_DIR");
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  void write(const std::string& name, const std::string& text) {
    const auto path = dir_ / name;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
  }
  std::string dir() const { return dir_.string(); }

 private:
  std::filesystem::path dir_;
};

}  // namespace kplay::test
