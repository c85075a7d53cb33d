// Where this build put what the tests start or read: the kplay command, kplay_db_stress and the
// source tree's templates/. Defined in build_paths.cpp alone, the one file compiled with these
// absolute paths, so that every other test file compiles to the same command line in any clone
// (ccache then serves it to the next clone: CI's clean clone of each run, .ci/run).
#pragma once

namespace kplay::test {

const char* built_cli_path();        // the kplay command of this build
const char* built_db_stress_path();  // kplay_db_stress of this build
const char* source_templates_dir();  // templates/ of the source tree this build came from

}  // namespace kplay::test
