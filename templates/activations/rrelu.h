/* RReLU(lower, upper) in evaluation, as torch: leaky_relu with the mean slope (lower + upper) / 2,
 * which the registry derives in double and rounds once to the compute type (KP_P_SLOPE), as torch
 * does: x > 0 ? x : x * slope (NaN stays NaN); backward x > 0 ? g : g * slope. Training draws a
 * slope per element instead (templates/common/slope.h, the training(rrelu) form). */
KP_FN KP_C kp_act_forward(KP_C x) { return x > KP_LIT(0.0) ? x : x * KP_P_SLOPE; }
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) { return x > KP_LIT(0.0) ? g : g * KP_P_SLOPE; }
KP_FN KP_C kp_act_backward_from_output(KP_C g, KP_C y) { return y > KP_LIT(0.0) ? g : g * KP_P_SLOPE; }
