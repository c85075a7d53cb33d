// The text form of an activation, as written on the command line, in the C/C++ API and in the
// database: `name`, `name(value, ...)` or `name(param=value, ...)`, e.g.
// "leaky_relu(negative_slope=0.2)", "gelu(approximate=tanh)", "./my_act.h", and the gated form of
// any of them, "gated(silu)", "gated(gelu(approximate=tanh))". This file only splits
// text; what the names and values mean is the registry's business (activations.hpp).
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace kplay {

struct ActivationCall {
  std::string name;  // as written, trimmed
  // (parameter name or "" for a positional value, value text with quotes removed)
  std::vector<std::pair<std::string, std::string>> args;
};

// An argument may hold balanced parentheses, kept as its text: gated(gelu(approximate=tanh)) is
// "gated" with one positional argument "gelu(approximate=tanh)". Throws Error(invalid_argument)
// for malformed text (unbalanced parentheses, empty argument, text after the closing
// parenthesis), quoting the text.
ActivationCall split_activation_call(const std::string& text);

// Splits "selu,hardtanh(min_val=-2, max_val=2),relu" at the commas outside parentheses.
std::vector<std::string> split_activation_list(const std::string& text);

// Shortest decimal text that reads back as exactly `v` ("0.2", "20", "-1.5e-07").
std::string format_number(double v);

}  // namespace kplay
