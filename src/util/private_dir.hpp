// Directories kplay creates for itself (the database's folder, its locks/ folder), made safe to
// use beside other users: missing parts are created with mode 0700, several processes may
// create them at once, and a directory inside a shared temporary directory (world-writable,
// like /tmp) must be a real directory owned by this user, so a symlink or folder planted there
// by someone else is refused instead of followed.
#pragma once
#include <string>

namespace kplay {

// Creates `dir` (and its missing parents) and checks it as above. `owned_only`: the directory
// must be this user's and not a symlink wherever it is (for folders only kplay writes into).
// Throws Error(io_failed) naming `what` and the reason.
void ensure_private_directory(const std::string& dir, const std::string& what, bool owned_only);

// The user's kplay cache folder: $XDG_CACHE_HOME/kplay (an absolute XDG_CACHE_HOME only), else
// $HOME/.cache/kplay (the password entry's home where HOME is unset), else
// /tmp/kplay-<uid>/.cache/kplay. Not created here.
std::string user_cache_directory();

}  // namespace kplay
