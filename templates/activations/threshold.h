/* Threshold(threshold, value) as torch: x <= threshold ? value : x (NaN stays NaN); backward
 * x <= threshold ? 0 : g. Both parameters are required. The output does not determine the
 * derivative (value may lie above the threshold). */
KP_FN KP_C kp_act_forward(KP_C x) { return x <= KP_P_THRESHOLD ? KP_P_VALUE : x; }
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) { return x <= KP_P_THRESHOLD ? KP_LIT(0.0) : g; }
