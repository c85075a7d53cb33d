// Problem sizes as typed on the command line: "--n 1000", "--n 2^31+5", "--shape 4096x393216".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kplay {

// Throws Error(invalid_argument) naming the flag and the accepted forms.
std::uint64_t parse_count(const std::string& text, const char* flag = "--n");
// Comma-separated sizes; an item "A..B" (A, B powers of two) is every power of two from A to B:
// "2^16..2^31", "1000,2^20..2^22". Throws Error(invalid_argument) naming the flag.
std::vector<std::uint64_t> parse_size_list(const std::string& text, const char* flag = "--n");
// "AxBxC" -> {A, B, C}, each > 0; product must fit in 64 bits.
std::vector<std::uint64_t> parse_shape(const std::string& text);
std::uint64_t shape_elements(const std::vector<std::uint64_t>& shape);
std::string shape_string(const std::vector<std::uint64_t>& shape);

}  // namespace kplay
