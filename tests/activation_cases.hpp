// The table that drives every activation test: each built-in with its parameter sets (torch's
// defaults, and values that move its edges). A test checks that every registry entry has a row,
// so adding an activation without one fails (docs/adding-an-activation.md).
#pragma once
#include <string>
#include <vector>

namespace kplay::test {

inline const std::vector<std::string>& activation_cases() {
  static const std::vector<std::string> cases = {
      "relu",
      "relu6",
      "relu2",
      "leaky_relu",
      "leaky_relu(negative_slope=0.2)",
      "leaky_relu(negative_slope=-0.5)",
      "rrelu",
      "elu",
      "elu(alpha=0.5)",
      "celu",
      "celu(alpha=2.5)",
      "selu",
      "gelu",
      "gelu(approximate=tanh)",
      "silu",
      "quick_gelu",
      "quick_gelu(beta=1)",  // silu's function by another path
      "quick_gelu(beta=0.3)",
      "mish",
      "softplus",
      "softplus(beta=2, threshold=10)",
      "softplus(beta=0.7)",  // beta x rounds: float64 carries its low part
      "softsign",
      "sigmoid",
      "tanh",
      "hardtanh",
      "hardtanh(min_val=-2, max_val=3.5)",
      "hardsigmoid",
      "hardswish",
      "logsigmoid",
      "tanhshrink",
      "softshrink",
      "softshrink(lambd=1.25)",
      "hardshrink",
      "hardshrink(lambd=0.25)",
      "hardshrink(lambd=-0.5)",  // torch's OpInfo sample: an empty band, everything passes
      "threshold(threshold=0.1, value=20)",
      "threshold(-1, -2)",
  };
  return cases;
}

// The torch accuracy tier's rows: every case above whose activation has the tier (the registry's
// `accuracy` parameter), with accuracy=torch added. float32 only: other dtypes refuse it.
std::vector<std::string> torch_tier_cases();

}  // namespace kplay::test
