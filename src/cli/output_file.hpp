// Files the command line writes (bench --csv/--json, db export): every write, the flush and the
// close are checked, so a full disk or /dev/full is an error (exit 1), not a silent success.
#pragma once
#include <string>

namespace kplay::cli {

// Replaces `path` with `text`, or writes it to stdout for "-". Throws Error(io_failed) naming
// `flag` ("--csv") and the reason.
void write_output_file(const std::string& path, const std::string& text, const std::string& flag);

// Checks before a long run that `path` can be opened for writing (creating it, empty, if missing;
// an existing file is left as it is). Throws Error(io_failed) as above.
void check_output_file(const std::string& path, const std::string& flag);

}  // namespace kplay::cli
