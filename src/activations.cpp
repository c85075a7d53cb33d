// The registry itself: one line per activation.
#include "activations.hpp"

#include "kplay/error.hpp"
#include "reference.hpp"

namespace kplay {

const std::vector<Activation>& activations() {
  namespace ref = reference;
  static const std::vector<Activation> registry = {
      {"selu", "activations/selu.h", ref::selu, ref::selu_grad_from_input, ref::selu_grad_from_output},
      {"relu", "activations/relu.h", ref::relu, ref::relu_grad_from_input, ref::relu_grad_from_output},
  };
  return registry;
}

std::string activation_names() {
  std::string out;
  for (const auto& a : activations()) out += (out.empty() ? "" : ", ") + std::string(a.name);
  return out;
}

const Activation& find_activation(const std::string& name) {
  for (const auto& a : activations())
    if (name == a.name) return a;
  throw Error(ErrorCode::invalid_argument,
              "unknown activation '" + name + "' (known: " + activation_names() + ")");
}

}  // namespace kplay
