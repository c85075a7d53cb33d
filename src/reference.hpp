// Double-precision host reference of every activation, written from the definitions (torch's
// formulas and constants) and not from the kernel templates, so a slip in a template shows up
// as a test failure instead of being copied into the expected values.
#pragma once

namespace kplay::reference {

double selu(double x);
double selu_grad_from_input(double grad, double x);
double selu_grad_from_output(double grad, double y);

double relu(double x);
double relu_grad_from_input(double grad, double x);
double relu_grad_from_output(double grad, double y);

}  // namespace kplay::reference
