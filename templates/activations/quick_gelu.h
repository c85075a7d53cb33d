/* QuickGELU: x * sigmoid(beta x), beta = 1.702 by default: transformers' QuickGELUActivation and
 * timm's QuickGELU, `input * torch.sigmoid(1.702 * input)` (TensorFlow's silu(x, beta)); silu with
 * a scaled argument. What is rounded: beta, as torch rounds the Python float for the tensor (to
 * float for float32, float16 and bfloat16, whose opmath type is float: 1.702f = 1.702 + 2.2e-8;
 * to double for float64), which KP_P_BETA is. The product z = beta x is not: e^z multiplies its
 * rounding by |z| (float32 would lose 2^-24 |z|, about 18 ulp at x = -50), so float32 carries z
 * exactly (in double on fast-FP64 devices, as a float-float otherwise) and float64 carries its low
 * part; the 16-bit results vanish before |z| reaches 90, where the float product's 2^-17.5 is far
 * below their ulp. torch rounds z too (and in 16-bit dtypes z, the sigmoid and the product each to
 * the dtype); kplay holds the exact x sigmoid(z) to its bounds. The sigmoid comes from
 * exp(-|z|), which never overflows (silu.h). -inf: NaN, as torch's -inf * 0.
 * Backward: d/dx x sigmoid(beta x) = silu'(z) = s (1 + z (1 - s)), s = sigmoid(z), NaN at +-inf as
 * torch's autograd of the formula (inf * 0); the output does not determine it. */
#if KP_FAST_FP64
/* float32, fast FP64: z exact in double (two floats' product), one rounding (fp64_math.h). */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_d_mul_sigmoid(x, x, (double)x * (double)KP_P_BETA); }
#elif KP_F32_IEEE
/* float32: z = zh + zl exactly, x / (1 + e^-z) rounded once (precise_math.h); the _wide form
 * scales a huge x, whose x e^z 2^64 would overflow for a small beta. */
KP_FN KP_C kp_act_forward(KP_C x) {
  const float zh = KP_P_BETA * x;
  return kp_pm_mul_sigmoid_wide(x, zh, KP_FMAF(KP_P_BETA, x, -zh), 1);
}
#elif KP_DTYPE_F64 && !KP_FAST_MATH
/* float64: x sigmoid(z + zl), z's low part in e^z and the 2^n of e^z applied last (float64_math.h):
 * z rounded alone costs |z| / 2 ulp in the tail. */
KP_FN KP_C kp_act_forward(KP_C x) {
  const double z = x * KP_P_BETA;
  const double zl = KP_FMA(x, KP_P_BETA, -z);
  return kp_f64_mul_sigmoid_lo(x, z, KP_F64_NEG(z) ? zl : -zl);
}
#else
KP_FN KP_C kp_act_forward(KP_C x) {
  const KP_C z = KP_P_BETA * x;
  const KP_C e = KP_EXP_FACTOR(-KP_FABS(z));
  return KP_DIV_1P(z >= KP_LIT(0.0) ? x : x * e, e);
}
#endif
#if KP_FAST_FP64
/* float32, fast FP64: silu's derivative at the exact double z, one rounding (fp64_math.h). */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  return kp_d_silu_grad_at(g, (double)x * (double)KP_P_BETA, KP_P_BETA * x);
}
#elif KP_F32_IEEE
/* float32: silu's float-float derivative at z = zh + zl, its root in z (precise_grad.h). */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) { return kp_precise_quick_gelu_grad(g, x, KP_P_BETA); }
#elif KP_DTYPE_F64 && !KP_FAST_MATH
/* float64: z's low part and the 2^n of e^-|z| carried as in the forward (float64_math.h). */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  const double z = x * KP_P_BETA;
  const double zl = KP_FMA(x, KP_P_BETA, -z);
  return kp_f64_silu_grad_lo(g, z, KP_F64_NEG(z) ? zl : -zl, x);
}
#else
/* s (1 + z (1 - s)) as s + (s x) (beta (1 - s)): beta x overflows where x does not (bfloat16
 * beyond 2e38, whose derivative is 1 or 0), s x does not, and the infinities still give NaN. Where
 * s underflows to 0 the sum is +0 and the derivative a negative zero: s x is that (x < 0). */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  const KP_C z = KP_P_BETA * x;
  const KP_C e = KP_EXP_FACTOR(-KP_FABS(z));
  const KP_C r = KP_RCP_1P(e);
  const KP_C s = z >= KP_LIT(0.0) ? r : e * r;  /* sigmoid(z) */
  const KP_C sm = z >= KP_LIT(0.0) ? e * r : r; /* sigmoid(-z) = 1 - s */
  const KP_C sx = s * x;
  const KP_C d = KP_FMA(sx, KP_P_BETA * sm, s);
  return g * (d != KP_LIT(0.0) ? d : sx);
}
#endif
