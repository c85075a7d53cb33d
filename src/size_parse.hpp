// Problem sizes as typed on the command line: "--n 1000", "--n 2^31+5", "--shape 4096x393216".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kplay {

// Throws Error(invalid_argument) naming the flag and the accepted forms.
std::uint64_t parse_count(const std::string& text, const char* flag = "--n");
// "AxBxC" -> {A, B, C}, each > 0; product must fit in 64 bits.
std::vector<std::uint64_t> parse_shape(const std::string& text);
std::uint64_t shape_elements(const std::vector<std::uint64_t>& shape);
std::string shape_string(const std::vector<std::uint64_t>& shape);

}  // namespace kplay
