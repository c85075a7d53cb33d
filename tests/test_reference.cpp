// The double reference against torch's definitions and the known pitfalls.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "activations.hpp"
#include "reference.hpp"

using namespace kplay;

TEST_CASE("SELU uses torch's constants and keeps the -1 of the negative branch") {
  const double scale = 1.0507009873554804934193349852946, alpha = 1.6732632423543772848170429916717;
  CHECK(reference::selu(2.0) == doctest::Approx(2.0 * scale).epsilon(1e-15));
  CHECK(reference::selu(-1.0) == doctest::Approx(scale * alpha * (std::exp(-1.0) - 1.0)).epsilon(1e-15));
  // Saturation: large negative inputs approach -scale*alpha, not 0 (the dropped "-1" bug).
  CHECK(reference::selu(-50.0) == doctest::Approx(-scale * alpha).epsilon(1e-15));
  // Precision near 0: expm1, not exp(x)-1.
  const double tiny = -1e-12;
  CHECK(reference::selu(tiny) == doctest::Approx(scale * alpha * tiny).epsilon(1e-11));
  CHECK(std::isnan(reference::selu(std::nan(""))));
  CHECK(reference::selu(-std::numeric_limits<double>::infinity()) == doctest::Approx(-scale * alpha));
}

TEST_CASE("ReLU keeps NaN, as torch.relu does") {
  CHECK(std::isnan(reference::relu(std::nan(""))));
  CHECK(reference::relu(-3.0) == 0.0);
  CHECK(reference::relu(3.5) == 3.5);
}

TEST_CASE("backward from the saved output agrees with backward from the input") {
  for (const auto& act : activations()) {
    REQUIRE(static_cast<bool>(act.grad_from_output));
    for (double x : {-20.0, -3.0, -0.5, -1e-6, 1e-6, 0.25, 4.0}) {
      const double y = act.forward(x);
      CAPTURE(act.name);
      CAPTURE(x);
      CHECK(act.grad_from_output(0.75, y) == doctest::Approx(act.grad_from_input(0.75, x)).epsilon(1e-12));
    }
  }
}

TEST_CASE("SELU's derivative is lambda for x > 0 and lambda*alpha*exp(x) below") {
  const double scale = 1.0507009873554804934193349852946, alpha = 1.6732632423543772848170429916717;
  CHECK(reference::selu_grad_from_input(2.0, 1.0) == doctest::Approx(2.0 * scale));
  CHECK(reference::selu_grad_from_input(2.0, -1.0) == doctest::Approx(2.0 * scale * alpha * std::exp(-1.0)));
  CHECK(reference::relu_grad_from_input(5.0, -1.0) == 0.0);
  CHECK(reference::relu_grad_from_input(5.0, 2.0) == 5.0);
}

TEST_CASE("the registry finds activations by name and refuses unknown ones") {
  CHECK(std::string(find_activation("selu").snippet) == "activations/selu.h");
  CHECK_THROWS_WITH(find_activation("gelu"), doctest::Contains("known: selu, relu"));
}
