// The paths tests/CMakeLists.txt gives this file alone (build_paths.hpp says why).
#include "build_paths.hpp"

namespace kplay::test {

const char* built_cli_path() { return KPLAY_CLI_PATH; }
const char* built_db_stress_path() { return KPLAY_DB_STRESS_PATH; }
const char* source_templates_dir() { return KPLAY_SOURCE_TEMPLATES; }

}  // namespace kplay::test
