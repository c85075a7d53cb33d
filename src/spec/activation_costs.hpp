// The arithmetic of each built-in activation, counted rather than estimated: machine instructions
// per element of its math as NVRTC compiles it (sm_90 SASS, `tools/sass_count.sh --costs`: all
// instructions but NOPs, per element of a thread that handles one 16-byte vector, over a kernel
// with the same loads and stores and no math). The default config model (src/tuner/) reads it as
// the work a thread does per element; a count is a property of the code, the same on every device
// (another architecture's instruction set differs by little). activation_costs.inc holds the
// counts; `tools/sass_count.sh --costs >src/spec/activation_costs.inc` recounts them after a math
// change.
#pragma once
#include <optional>

#include "activations.hpp"

namespace kplay {

// Instructions per element of `act`'s math for this dtype and direction (backward: from the
// input; the derivative from the output is never dearer). float32 counts the path the device runs:
// double where it has fast FP64 (`fp64_math`), float-float elsewhere, and on both the lean float
// routine (templates/common/f32_math.h) where the activation has one. nullopt for an activation
// that has not been counted (a user snippet, a built-in added since): the model then takes the
// dearest counted math of that dtype and direction, so that it never gives such an activation
// fewer bytes in flight than a counted one.
std::optional<double> counted_cost(const ResolvedActivation& act, Dtype dtype, Direction direction, bool fp64_math);

// The dearest counted math of any built-in for this dtype, direction and path.
double dearest_counted_cost(Dtype dtype, Direction direction, bool fp64_math);

}  // namespace kplay
