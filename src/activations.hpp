// The activation registry: one entry per activation ties its name to its template snippet and
// its double-precision reference. Adding an activation = one snippet in templates/activations/,
// its reference functions in reference.cpp, one line in activations.cpp (and a row in the tests).
#pragma once
#include <string>
#include <vector>

namespace kplay {

struct Activation {
  const char* name;     // lower-case identifier, used in entry names and on the command line
  const char* snippet;  // path under templates/
  double (*forward)(double x);
  double (*grad_from_input)(double grad, double x);
  double (*grad_from_output)(double grad, double y);  // nullptr: the output does not determine it
};

const std::vector<Activation>& activations();

// Throws Error(invalid_argument) listing the known names.
const Activation& find_activation(const std::string& name);

std::string activation_names();  // "selu, relu"

}  // namespace kplay
