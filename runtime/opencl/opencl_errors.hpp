// OpenCL status codes as names, and the one check that turns a failed call into a kplay::Error
// naming the call and the error ("clEnqueueNDRangeKernel: CL_OUT_OF_RESOURCES (-5)").
#pragma once
#include <CL/cl.h>

#include <string>

#include "kplay/error.hpp"

namespace kplay::rt::opencl {

// "CL_OUT_OF_RESOURCES"; "OpenCL error -1234" for codes no header of ours names.
std::string error_name(cl_int status);

// Throws Error(code, "<what>: <error name> (<status>)") unless status == CL_SUCCESS.
void check(cl_int status, const std::string& what, ErrorCode code = ErrorCode::runtime_failed);

}  // namespace kplay::rt::opencl
