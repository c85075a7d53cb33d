// Directories kplay creates for itself (the database's folder, its locks/ folder), made safe to
// use beside other users: missing parts are created with mode 0700, several processes may
// create them at once, and nothing is used below a component that another user could have
// written (the way OpenSSH checks ~/.ssh): a folder or a symlink planted by someone else, in
// /tmp or anywhere on the way, is refused instead of followed.
#pragma once
#include <string>

namespace kplay {

// Why `path` (a file or a directory; its missing tail is fine) cannot be trusted, naming the
// component, or "" when it can. Every component that exists, from the root down, must be owned
// by this user or by root, and not writable by its group or others; a directory with the sticky
// bit (/tmp) may be writable by others, who can add entries there but not replace this user's.
// A symbolic link must be owned by this user or root, and its target is checked the same way.
// So from the first component this user owns down, everything is the user's (or root's), and
// above it only root's: no other user could have replaced anything kplay reads there.
std::string untrusted_path_reason(const std::string& path);

// Creates `dir` (and its missing parents) and checks it as above; the directory itself may not be
// a symlink inside a world-writable directory. `owned_only`: the directory must be this user's
// and not a symlink wherever it is (for folders only kplay writes into); such a directory that
// others may write to (an older kplay under umask 002) is closed with chmod rather than refused.
// Throws Error(io_failed) naming `what`, the component and the reason.
void ensure_private_directory(const std::string& dir, const std::string& what, bool owned_only);

// The user's kplay cache folder: $XDG_CACHE_HOME/kplay (an absolute XDG_CACHE_HOME only), else
// $HOME/.cache/kplay (the password entry's home where HOME is unset), else
// /tmp/kplay-<uid>/.cache/kplay. Not created here.
std::string user_cache_directory();

}  // namespace kplay
