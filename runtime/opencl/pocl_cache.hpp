// Where PoCL keeps its kernel cache, settled before the OpenCL platform is first touched. PoCL
// stores each compiled kernel as a shared object under its cache folder and dlopen()s what it
// finds there, so that folder is code that runs in kplay's process: it must be one no other user
// could have written, by the rule of kplay's own folders (util/private_dir.hpp).
#pragma once
#include <string>

namespace kplay::rt::opencl {

// Once per process, before the ICD loader loads PoCL (idempotent and thread-safe; later calls do
// nothing): a POCL_CACHE_DIR the user set is kept when no other user may write it; otherwise
// POCL_CACHE_DIR becomes <kplay's cache folder>/pocl, made private. Where neither can be trusted,
// it becomes a new private folder under /tmp with PoCL's kernel cache off (POCL_KERNEL_CACHE=0:
// nothing is reused between runs; the folder is removed at exit), with
// one warning on stderr. Where not even that is possible, throws Error(no_device) saying why,
// at every call. Other OpenCL drivers ignore both variables.
void settle_pocl_cache();

// What settle_pocl_cache() chose, for tests and messages: the folder, or "" before the first call.
std::string pocl_cache_folder();

}  // namespace kplay::rt::opencl
