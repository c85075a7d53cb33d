/* Helpers of the float32 accuracy=torch kernels (codegen appends this file to those alone): torch's
 * formulas, kept from a failure of torch's own kernels where that costs an instruction or two.
 *
 * A derivative g c e^t (elu, celu, selu; softplus' and logsigmoid's g e^t / (1 + e^t)) is a normal
 * float for |g c| > 1 where e^t is already subnormal (t < -87.34) and keeps fewer bits: torch's
 * kernels lose up to all of them there (6.3 ulp over every float32 with gradients up to 8 on the
 * H200, half the result's value with larger ones). Below t = -87 these kernels take e^(t + 64),
 * normal, and fold e^-64 into the gradient's constant: g (c e^-64) e^(t + 64). t + 64 is exact: t
 * and 64 are multiples of t's ulp below 2^30 in magnitude, and the sum is smaller than t (beyond,
 * e^t is 0 either way). At and above -87 the formula is torch's. */
#define KP_TIER_DEEP(t) ((t) < -87.0f)
#define KP_TIER_E64 0x1.969d48p-93f /* e^-64, rounded */
KP_FN float kp_tier_exp(float t) { return KP_EXP(KP_TIER_DEEP(t) ? t + 64.0f : t); }
/* g c e^t for a constant c: (g (c e^-64)) e^(t + 64) below t = -87, g (c e^t) above. The
 * constants' product first also keeps g c from overflowing where the result does not (torch's
 * (g c) e^t is +-inf for |g c| > 3.4e38). */
KP_FN float kp_tier_scaled_exp(float g, float c, float t) {
  const float e = kp_tier_exp(t);
  return KP_TIER_DEEP(t) ? (g * (c * KP_TIER_E64)) * e : g * (c * e);
}
/* g sigmoid(z) from e = e^-|z| (softplus' and logsigmoid's derivatives): g e / (1 + e) for z < 0,
 * where e may be subnormal (1 + e is 1 there either way), g / (1 + e) otherwise. */
KP_FN float kp_tier_mul_sigmoid(float g, float z) {
  const float e = kp_tier_exp(-KP_FABS(z));
  const float gs = z < 0.0f && KP_TIER_DEEP(z) ? g * KP_TIER_E64 : g;
  return gs * ((z >= 0.0f ? 1.0f : e) / (1.0f + e));
}
