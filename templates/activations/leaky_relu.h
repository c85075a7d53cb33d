/* LeakyReLU(negative_slope) as torch: x > 0 ? x : x * slope (NaN stays NaN); backward
 * x > 0 ? g : g * slope. With a positive slope the output has the input's sign, so the
 * registry offers the saved output then. */
KP_FN KP_C kp_act_forward(KP_C x) { return x > KP_LIT(0.0) ? x : x * KP_P_NEGATIVE_SLOPE; }
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) { return x > KP_LIT(0.0) ? g : g * KP_P_NEGATIVE_SLOPE; }
KP_FN KP_C kp_act_backward_from_output(KP_C g, KP_C y) { return y > KP_LIT(0.0) ? g : g * KP_P_NEGATIVE_SLOPE; }
