/* ReLU as torch.relu: y = max(x, 0), but NaN stays NaN (a plain `x > 0 ? x : 0` turns NaN
 * into 0). The backward pass passes the gradient where the saved value is > 0 or NaN, like
 * torch's threshold_backward; the output has the input's sign, so either may be saved.
 * See selu.h for the macros the prelude provides. */
KP_FN KP_C kp_act_forward(KP_C x) {
  return (x > KP_LIT(0.0) || x != x) ? x : KP_LIT(0.0);
}

KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  return x <= KP_LIT(0.0) ? KP_LIT(0.0) : g;
}

KP_FN KP_C kp_act_backward_from_output(KP_C g, KP_C y) {
  return y <= KP_LIT(0.0) ? KP_LIT(0.0) : g;
}
