// Splitting activation text; see activation_text.hpp.
#include "activation_text.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kplay/error.hpp"

namespace kplay {
namespace {
std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

[[noreturn]] void malformed(const std::string& text, const std::string& why) {
  throw Error(ErrorCode::invalid_argument,
              "malformed activation '" + text + "': " + why +
                  " (write name, name(value, ...) or name(param=value, ...), e.g. leaky_relu(negative_slope=0.2))");
}

std::string unquote(const std::string& s) {
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front())
    return s.substr(1, s.size() - 2);
  return s;
}
}  // namespace

ActivationCall split_activation_call(const std::string& raw) {
  const std::string text = trim(raw);
  ActivationCall call;
  const auto open = text.find('(');
  if (open == std::string::npos) {
    if (text.find(')') != std::string::npos) malformed(text, "')' without '('");
    call.name = text;
    if (call.name.empty()) malformed(text, "empty name");
    return call;
  }
  call.name = trim(text.substr(0, open));
  if (call.name.empty()) malformed(text, "no name before '('");
  // The parenthesis that closes the first one; an argument may hold balanced parentheses of its
  // own (gated(gelu(approximate=tanh))), which only the activation that takes it reads.
  std::size_t close = std::string::npos;
  int depth = 0;
  for (std::size_t i = open; i < text.size() && close == std::string::npos; ++i) {
    if (text[i] == '(') ++depth;
    if (text[i] == ')' && --depth == 0) close = i;
  }
  if (close == std::string::npos) malformed(text, "unbalanced parentheses: expected ')' at the end");
  if (close + 1 != text.size()) malformed(text, "text after the closing parenthesis");
  const std::string inner = text.substr(open + 1, close - open - 1);
  if (trim(inner).empty()) return call;  // "selu()" is "selu"
  std::vector<std::string> items;
  std::string cur;
  depth = 0;
  for (char ch : inner) {
    if (ch == '(') ++depth;
    if (ch == ')' && --depth < 0) malformed(text, "')' without '('");
    if (ch == ',' && depth == 0) {
      items.push_back(trim(cur));
      cur.clear();
    } else {
      cur += ch;
    }
  }
  items.push_back(trim(cur));
  for (const std::string& item : items) {
    if (item.empty()) malformed(text, "empty argument");
    const auto eq = item.find('=');
    if (eq == std::string::npos || item.find('(') < eq) {  // "gelu(approximate=tanh)" is one value
      call.args.emplace_back("", unquote(item));
    } else {
      const std::string key = trim(item.substr(0, eq)), value = trim(item.substr(eq + 1));
      if (key.empty()) malformed(text, "'=' without a parameter name");
      if (value.empty()) malformed(text, "parameter '" + key + "' has no value");
      call.args.emplace_back(key, unquote(value));
    }
  }
  return call;
}

std::vector<std::string> split_activation_list(const std::string& text) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char ch : text) {
    if (ch == '(') ++depth;
    if (ch == ')') --depth;
    if (ch == ',' && depth == 0) {
      if (!trim(cur).empty()) out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!trim(cur).empty()) out.push_back(trim(cur));
  return out;
}

std::string format_number(double v) {
  // The shortest %g text that reads back exactly, without an exponent in the everyday range.
  char buf[40];
  const double a = v < 0 ? -v : v;
  const bool plain = a == 0 || (a >= 1e-5 && a < 1e16);
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v && (!plain || !std::strchr(buf, 'e'))) return buf;
  }
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace kplay
