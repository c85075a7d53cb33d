/* leaky_relu(negative_slope=0.2) with the slope in constant memory (a kernel argument's cost). */
__constant__ KP_C kp_arg_negative_slope = KP_LIT(0.2);
KP_FN KP_C kp_act_forward(KP_C x) { return x > KP_LIT(0.0) ? x : x * kp_arg_negative_slope; }
