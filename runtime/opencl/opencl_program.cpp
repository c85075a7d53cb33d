// Building and loading programs; see opencl_program.hpp.
#include "opencl_program.hpp"

#include <cstdio>
#include <mutex>
#include <regex>
#include <sstream>
#include <vector>

#include "kplay/error.hpp"
#include "kplay/types.hpp"
#include "opencl_errors.hpp"
#include "util/file_lock.hpp"
#include "util/hash.hpp"
#include "util/private_dir.hpp"

namespace kplay::rt::opencl {
namespace {

std::string build_log(cl_program program, cl_device_id device) {
  std::size_t size = 0;
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) != CL_SUCCESS || size == 0)
    return {};
  std::string log(size, '\0');
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, &log[0], nullptr) != CL_SUCCESS) return {};
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n' || log.back() == ' ')) log.pop_back();
  return log;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Releases a program on every path out of a function that has not handed it on.
struct ProgramGuard {
  cl_program program = nullptr;
  ~ProgramGuard() {
    if (program) clReleaseProgram(program);
  }
  cl_program release() {
    cl_program p = program;
    program = nullptr;
    return p;
  }
};

}  // namespace

std::string first_error_line(const std::string& log) {
  for (const auto& line : split_lines(log))
    if (line.find("error") != std::string::npos) return line;
  return "see the compiler log";
}

std::string map_log_locations(const std::string& log, const std::string& source) {
  // origin[p - 1]: template file and line of physical source line p ("" before the first marker).
  struct Origin {
    std::string file;
    long line = 0;
  };
  std::vector<Origin> origin;
  const std::regex marker(R"(^\s*#\s*line\s+(\d+)\s+"([^"]*)\".*)");
  std::string file;
  long next = 0;
  for (const auto& line : split_lines(source)) {
    origin.push_back({file, file.empty() ? 0 : next++});
    std::smatch m;
    if (std::regex_match(line, m, marker)) {  // the next line is line m[1] of file m[2]
      file = m[2];
      next = std::stol(m[1]);
    }
  }
  // "<kernel>:12:3: error: ..." (NVIDIA), "error: <source>:12:3: ..." (clang-style drivers).
  const std::regex location(R"(<[^<>\s]*>:(\d+))");
  std::string out;
  for (const auto& line : split_lines(log)) {
    std::smatch m;
    std::string mapped = line;
    if (std::regex_search(line, m, location)) {
      const unsigned long p = std::stoul(m[1]);
      if (p >= 1 && p <= origin.size() && !origin[p - 1].file.empty())
        mapped = m.prefix().str() + origin[p - 1].file + ":" + std::to_string(origin[p - 1].line) + m.suffix().str();
    }
    out += (out.empty() ? "" : "\n") + mapped;
  }
  return out;
}

std::size_t entry_element_size(const std::string& entry) {
  std::vector<std::string> parts;
  std::istringstream in(entry);
  for (std::string p; std::getline(in, p, '_');) parts.push_back(p);
  for (std::size_t i = 0; i + 1 < parts.size(); ++i)
    if (parts[i] == "fwd" || parts[i] == "bwdx" || parts[i] == "bwdy") {
      try {
        return dtype_size(parse_dtype(parts[i + 1]));
      } catch (const Error&) {
        break;
      }
    }
  throw Error(ErrorCode::invalid_argument,
              "cannot tell the element type of OpenCL kernel '" + entry + "' from its name");
}

namespace {
// PoCL keeps one kernel cache folder per user, and two processes building the same program in
// it at once can leave a binary that PoCL later aborts on (pocl_binary_get_kernels_metadata:
// Assertion `len > 0'), seen with two test processes (docs/opencl.md). Processes that share a
// kernel database already take turns per kernel; these locks cover processes with different
// databases or none. Without a writable cache folder the build goes ahead unlocked, with one
// warning.
std::unique_ptr<HeldLock> lock_build(const std::string& device_name, const std::string& options,
                                     const std::string& source) {
  try {
    return acquire_file_lock(user_cache_directory() + "/locks/opencl-builds", hash_hex({device_name, options, source}));
  } catch (const std::exception& e) {
    static std::once_flag warned;
    std::call_once(warned, [&] {
      std::fprintf(stderr, "kplay: warning: OpenCL builds are not locked against other processes: %s\n", e.what());
    });
    return nullptr;
  }
}
}  // namespace

Binary build_program(cl_context context, cl_device_id device, const std::string& device_name,
                     const RenderedKernel& kernel) {
  const char* text = kernel.source.c_str();
  const std::size_t length = kernel.source.size();
  const std::string options = kernel.options_string();
  const std::unique_ptr<HeldLock> held = lock_build(device_name, options, kernel.source);  // until the binary is read
  cl_int status = CL_SUCCESS;
  ProgramGuard guard{clCreateProgramWithSource(context, 1, &text, &length, &status)};
  check(status, "clCreateProgramWithSource", ErrorCode::compile_failed);

  status = clBuildProgram(guard.program, 1, &device, options.c_str(), nullptr, nullptr);
  const std::string log = map_log_locations(build_log(guard.program, device), kernel.source);
  if (status != CL_SUCCESS) {
    const std::string why =
        status == CL_BUILD_PROGRAM_FAILURE ? first_error_line(log) : "clBuildProgram: " + error_name(status);
    throw Error(ErrorCode::compile_failed,
                "OpenCL build failed for " + kernel.entry + " on " + device_name + ": " + why, log, options);
  }

  std::size_t size = 0;
  check(clGetProgramInfo(guard.program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr),
        "clGetProgramInfo(CL_PROGRAM_BINARY_SIZES)");
  if (size == 0)
    throw Error(ErrorCode::runtime_failed,
                "the OpenCL driver for " + device_name + " returned an empty program binary");
  Binary b;
  b.format = "opencl-binary";
  b.bytes.resize(size);
  unsigned char* where = reinterpret_cast<unsigned char*>(&b.bytes[0]);
  check(clGetProgramInfo(guard.program, CL_PROGRAM_BINARIES, sizeof where, &where, nullptr),
        "clGetProgramInfo(CL_PROGRAM_BINARIES)");
  b.log = log;
  return b;
}

ProgramKernel load_program(cl_context context, cl_device_id device, const Binary& binary, const std::string& entry) {
  if (binary.format != "opencl-binary")
    throw Error(ErrorCode::runtime_failed, "cannot load a '" + binary.format + "' binary on OpenCL");
  if (binary.bytes.empty()) throw Error(ErrorCode::runtime_failed, "cannot load an empty OpenCL binary");
  ProgramKernel pk;
  pk.element_size = entry_element_size(entry);

  const auto* bytes = reinterpret_cast<const unsigned char*>(binary.bytes.data());
  const std::size_t length = binary.bytes.size();
  cl_int binary_status = CL_SUCCESS, status = CL_SUCCESS;
  ProgramGuard guard{clCreateProgramWithBinary(context, 1, &device, &length, &bytes, &binary_status, &status)};
  check(status, "clCreateProgramWithBinary");
  check(binary_status, "clCreateProgramWithBinary (binary status)");
  status = clBuildProgram(guard.program, 1, &device, "", nullptr, nullptr);
  if (status != CL_SUCCESS)
    throw Error(ErrorCode::runtime_failed, "clBuildProgram (from binary): " + error_name(status) + ": " +
                                               first_error_line(build_log(guard.program, device)));
  pk.kernel = clCreateKernel(guard.program, entry.c_str(), &status);
  check(status, "clCreateKernel(" + entry + ")");
  pk.program = guard.release();
  return pk;
}

}  // namespace kplay::rt::opencl
