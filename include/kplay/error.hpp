// kplay/error.hpp — the one error type of kplay. Inside C++ every failure is a kplay::Error;
// the C API turns it into a status code plus a thread-local message. A compile error carries
// the compiler log (whose locations name template files and lines, thanks to #line markers),
// the options and the entry name, so a user can see which template line failed and why.
#pragma once

#include <stdexcept>
#include <string>

namespace kplay {

enum class ErrorCode {
  invalid_argument = 1,  // unknown activation, malformed size, null pointer, bad knob value
  invalid_config = 2,    // a knob out of range for the dtype, backend or device
  no_device = 3,         // backend not built, driver/library missing, or no device present
  compile_failed = 4,    // NVRTC or clBuildProgram rejected the source
  runtime_failed = 5,    // a driver call failed (allocation, launch, copy)
  unsupported = 6,       // valid request the backend or activation cannot do
  io_failed = 7,         // template dir, database or cache file problems
  verification_failed = 8,
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  Error(ErrorCode code, const std::string& message, std::string log, std::string options)
      : std::runtime_error(message), code_(code), log_(std::move(log)), options_(std::move(options)) {}

  ErrorCode code() const noexcept { return code_; }
  const std::string& log() const noexcept { return log_; }          // compiler log, may be empty
  const std::string& options() const noexcept { return options_; }  // compiler options, may be empty

  // Message, options and log together, as printed by the CLI.
  std::string describe() const;

 private:
  ErrorCode code_;
  std::string log_;
  std::string options_;
};

}  // namespace kplay
