// Programs: a rendered kernel built from source into a storable binary (clBuildProgram), and a
// stored binary loaded back into a launchable kernel. Build logs are made to name template files
// and lines: drivers that honour codegen's #line markers already do; for those that print
// "<kernel>:LINE:COL" instead, the location is mapped back through the markers here.
#pragma once
#include <CL/cl.h>

#include <cstddef>
#include <string>

#include "runtime/backend.hpp"

namespace kplay::rt::opencl {

// Builds `kernel` for `device`. Throws Error(compile_failed, "OpenCL build failed for <entry> on
// <device_name>: <first error line>") carrying the (mapped) log and the options.
Binary build_program(cl_context context, cl_device_id device, const std::string& device_name,
                     const RenderedKernel& kernel);

// A built program and its one kernel; the caller releases both.
struct ProgramKernel {
  cl_program program = nullptr;
  cl_kernel kernel = nullptr;
  std::size_t element_size = 0;  // bytes per element, for the kernel's element offsets
};

// Throws Error(runtime_failed) when the binary is not an OpenCL binary, the driver refuses it,
// or it has no kernel `entry`.
ProgramKernel load_program(cl_context context, cl_device_id device, const Binary& binary, const std::string& entry);

// Bytes per element of a kernel named by codegen's entry_name ("kplay_selu_fwd_f16_v8_..."), which
// is all a loaded binary tells about its dtype. Throws Error(invalid_argument) for other names.
std::size_t entry_element_size(const std::string& entry);

// Rewrites the first "<anything>:LINE" location of each log line (drivers that ignore #line)
// into "file:line" of the template that physical LINE of `source` came from. Other lines are kept.
std::string map_log_locations(const std::string& log, const std::string& source);

// The first log line that reports an error, for the one-line message.
std::string first_error_line(const std::string& log);

}  // namespace kplay::rt::opencl
