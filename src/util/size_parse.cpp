// Size parsing; see size_parse.hpp.
#include "size_parse.hpp"

#include <cctype>

#include "kplay/error.hpp"

namespace kplay {
namespace {
[[noreturn]] void bad(const char* flag, const std::string& text, const char* forms) {
  throw Error(ErrorCode::invalid_argument, std::string(flag) + " '" + text + "': " + forms);
}

// Parses [0-9]+ at pos; false on overflow or no digits.
bool digits(const std::string& s, std::size_t& pos, std::uint64_t& v) {
  const std::size_t start = pos;
  v = 0;
  while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
    const std::uint64_t d = static_cast<std::uint64_t>(s[pos] - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
    ++pos;
  }
  return pos > start;
}
}  // namespace

std::uint64_t parse_count(const std::string& text, const char* flag) {
  const char* forms = "expected a whole number such as 1000000, 2^31 or 2^31+5";
  std::size_t pos = 0;
  std::uint64_t v = 0;
  if (!digits(text, pos, v)) bad(flag, text, forms);
  if (pos < text.size() && text[pos] == '^') {
    ++pos;
    std::uint64_t e = 0;
    if (v != 2 || !digits(text, pos, e) || e > 62) bad(flag, text, "powers must be 2^0 .. 2^62");
    v = 1ull << e;
    if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
      const char op = text[pos++];
      std::uint64_t d = 0;
      if (!digits(text, pos, d) || (op == '-' && d > v)) bad(flag, text, forms);
      if (op == '+' && d > UINT64_MAX - v) bad(flag, text, "the number does not fit in 64 bits");
      v = op == '+' ? v + d : v - d;
    }
  }
  if (pos != text.size()) bad(flag, text, forms);
  return v;
}

std::vector<std::uint64_t> parse_shape(const std::string& text) {
  const char* forms = "expected dimensions joined by 'x', each at least 1, such as 4096x393216";
  std::vector<std::uint64_t> dims;
  std::size_t pos = 0;
  while (true) {
    std::uint64_t v = 0;
    if (!digits(text, pos, v) || v == 0) bad("--shape", text, forms);
    dims.push_back(v);
    if (pos == text.size()) break;
    if (text[pos] != 'x' && text[pos] != 'X') bad("--shape", text, forms);
    ++pos;
  }
  std::uint64_t total = 1;
  for (auto d : dims) {
    if (total > UINT64_MAX / d) bad("--shape", text, "the number of elements does not fit in 64 bits");
    total *= d;
  }
  return dims;
}

std::uint64_t shape_elements(const std::vector<std::uint64_t>& shape) {
  std::uint64_t total = 1;
  for (auto d : shape) total *= d;
  return total;
}

std::string shape_string(const std::vector<std::uint64_t>& shape) {
  std::string s;
  for (auto d : shape) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

std::vector<std::uint64_t> parse_size_list(const std::string& text, const char* flag) {
  std::vector<std::uint64_t> out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    std::size_t comma = text.find(',', begin);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(begin, comma - begin);
    const std::size_t dots = item.find("..");
    if (dots == std::string::npos) {
      out.push_back(parse_count(item, flag));
    } else {
      const std::uint64_t lo = parse_count(item.substr(0, dots), flag), hi = parse_count(item.substr(dots + 2), flag);
      auto pow2 = [](std::uint64_t v) { return v && !(v & (v - 1)); };
      if (!pow2(lo) || !pow2(hi) || lo > hi)
        bad(flag, item, "a range A..B needs powers of two with A <= B, e.g. 2^16..2^31");
      for (std::uint64_t v = lo; v <= hi && v; v *= 2) out.push_back(v);
    }
    begin = comma + 1;
  }
  return out;
}

}  // namespace kplay
