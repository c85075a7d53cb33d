// Activations that users write: a snippet of the same form as templates/activations/*.h
// (kp_act_forward required; kp_act_backward_from_input and kp_act_backward_from_output optional),
// given by path (`./my_act.h`), by name from a folder on KPLAY_ACTIVATION_PATH (`my_act` finds
// my_act.h), or registered from memory through the API. Each is named `name@<hash of its text>`
// everywhere a kernel is keyed (binaries, tunings), so an edited snippet never meets stale results.
// User activations have no double reference: they are checked against themselves compiled for
// float64, which checks rounding, not the formula. Thread-safe; entries live until the process ends.
#pragma once
#include <string>

#include "activations.hpp"

namespace kplay {

// Registers (or replaces) `name`; `origin` is the file it came from, for #line and messages.
// Throws Error(invalid_argument) for a bad name (not an identifier, or a built-in's), an empty or
// oversized snippet, or one that does not define kp_act_forward.
const Activation& register_user_activation(const std::string& name, const std::string& source,
                                           const std::string& origin = "");

// A path, a registered name or canonical name, or a name found on KPLAY_ACTIVATION_PATH; nullptr
// when none of those. Throws Error(io_failed / invalid_argument) for a path that cannot be read or
// a snippet that is not valid.
const Activation* find_user_activation(const std::string& text);

std::string user_canonical_name(const Activation& a);  // "my_act@1a2b3c4d"
void describe_user_backward(const Activation& a, ResolvedActivation& r);

}  // namespace kplay
