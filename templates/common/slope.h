/* Per-element slopes: PReLU (KP_SLOPE 1) and RReLU in training (KP_SLOPE 2), both x > 0 ? x : s x
 * with a slope s that depends on the element's index i rather than a compile-time constant, so
 * they ride on the generic kernel (elementwise.h passes each element's index) and need six more
 * kernel arguments (runtime/backend.hpp, KernelArgs::slope):
 *   PReLU   s = weight[c], c = (i / inner) % channels (torch's channel is dim 1 of a contiguous
 *           input: inner is the product of the later dimensions), or weight[0] for one weight.
 *   RReLU   s = min(fma(u, upper - lower, lower), upper), u in [0, 1) from a counter-based hash of
 *           (seed, counter + i): SplitMix64's output function on seed + (counter + i + 1) * gamma,
 *           the top 24 bits (float math) or 53 bits (double math) of it. Nothing is stored:
 *           backward recomputes the same s from the same seed and index. The host computes the
 *           same value (src/spec/slope_noise.cpp); torch's own Philox stream is not reproduced.
 * Which branch takes x = 0 and NaN follows torch: PReLU's backward is x > 0 ? g : s g (NaN takes
 * s g); RReLU's noise is s where x <= 0 and 1 elsewhere (NaN takes g).
 * PReLU's weight gradient, grad_w[c] = sum of g x over the elements of channel c where x > 0 is
 * false, has two kernels of its own below (KP_WGRAD 1 and 2), deterministic: each block sums a
 * fixed range of one channel in the compute type (float; double for float64) and reduces it in
 * a fixed tree, then one thread per channel adds its parts in order. */
#ifndef KP_SLOPE
#define KP_SLOPE 0
#endif
#ifndef KP_WGRAD
#define KP_WGRAD 0
#endif

/* The arguments after the generic kernel's (runtime/backend.hpp, KernelArgs::slope). */
#define KP_SLOPE_KERNEL_PARAMS \
  , KP_BUFFER(const KP_T, weight), kp_u64 inner, kp_u64 channels, kp_u64 seed, kp_u64 counter, kp_u64 parts

typedef struct {
  KP_GLOBAL const KP_T* w;
  kp_u64 inner, channels, seed, counter;
  kp_u64 first; /* the index of element 0 of the pointers a step or scalar is handed */
} kp_slope_ctx;

#if KP_SLOPE == 2
/* SplitMix64's output function (Steele, Lea, Flood 2014): a bijection of 64-bit words whose
 * outputs for consecutive states pass BigCrush. */
KP_FN kp_u64 kp_mix64(kp_u64 z) {
  z = (z ^ (z >> 30)) * (kp_u64)0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * (kp_u64)0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
#endif

KP_FN KP_C kp_slope_at(kp_slope_ctx sc, kp_u64 i) {
#if KP_SLOPE == 1 && KP_FLAT
  /* Below 2^31 elements: 32-bit division, several times cheaper than 64-bit on a GPU. */
  const unsigned c = sc.channels == 1 ? 0u : ((unsigned)i / (unsigned)sc.inner) % (unsigned)sc.channels;
  return kp_to_compute(sc.w[c]);
#elif KP_SLOPE == 1
  const kp_u64 c = sc.channels == 1 ? 0 : (i / sc.inner) % sc.channels;
  return kp_to_compute(sc.w[c]);
#else
  (void)sc.w;
  const kp_u64 h = kp_mix64(sc.seed + (sc.counter + i + 1) * (kp_u64)0x9E3779B97F4A7C15ull);
#if KP_DTYPE_F64
  const KP_C u = (KP_C)(h >> 11) * 1.1102230246251565404236316680908203125e-16; /* 2^-53 */
#else
  const KP_C u = (KP_C)(unsigned)(h >> 40) * 5.9604644775390625e-08f; /* 2^-24 */
#endif
  const KP_C r = KP_FMA(u, KP_P_SPAN, KP_P_LOWER);
  return r < KP_P_UPPER ? r : KP_P_UPPER;
#endif
}

KP_FN KP_C kp_slope_forward(KP_C x, KP_C s) { return x > KP_LIT(0.0) ? x : x * s; }
#if KP_SLOPE == 1
KP_FN KP_C kp_slope_backward(KP_C g, KP_C x, KP_C s) { return x > KP_LIT(0.0) ? g : g * s; }
#else
KP_FN KP_C kp_slope_backward(KP_C g, KP_C x, KP_C s) { return x <= KP_LIT(0.0) ? g * s : g; }
#endif

#if KP_WGRAD
/* PReLU's weight gradient. Both kernels take the generic kernel's parameters and the slope's; rows
 * and the pitches are unused. KP_WGRAD 1: out is the workspace (channels x parts values of KP_C),
 * in0 the incoming gradient g, in1 the input x, cols their n elements; block b sums part b % parts
 * of channel b / parts. KP_WGRAD 2: out is the weight's gradient, in0 the workspace; thread c adds
 * channel c's parts in order. */
KP_KERNEL KP_ENTRY(KP_BUFFER(KP_T, out), KP_BUFFER(const KP_T, in0), KP_BUFFER(const KP_T, in1), kp_u64 rows,
                   kp_u64 cols, kp_u64 ld_out, kp_u64 ld_in0, kp_u64 ld_in1 KP_SLOPE_KERNEL_PARAMS) {
  (void)rows;
  (void)ld_out;
  (void)ld_in0;
  (void)ld_in1;
  (void)seed;
  (void)counter;
  (void)weight;
  const unsigned tid = KP_LOCAL_ID;
#if KP_WGRAD == 1
  KP_SHARED KP_C sum[KP_BLOCK];
  KP_GLOBAL KP_C* ws = (KP_GLOBAL KP_C*)(out + KP_OFFSET(out));
  KP_GLOBAL const KP_T* g = in0 + KP_OFFSET(in0);
  KP_GLOBAL const KP_T* x = in1 + KP_OFFSET(in1);
  const kp_u64 block = KP_GROUP_X;
  const kp_u64 c = block / parts, p = block % parts;
  const kp_u64 per_channel = cols / channels;
  const kp_u64 lo = per_channel / parts * p + (p < per_channel % parts ? p : per_channel % parts);
  const kp_u64 hi = lo + per_channel / parts + (p < per_channel % parts ? 1 : 0);
  KP_C acc = KP_LIT(0.0);
  for (kp_u64 t = lo + tid; t < hi; t += KP_BLOCK) {
    const kp_u64 o = t / inner;
    const kp_u64 i = (o * channels + c) * inner + (t - o * inner);
    const KP_C xv = kp_to_compute(KP_LD(x + i));
    if (!(xv > KP_LIT(0.0))) acc += xv * kp_to_compute(KP_LD(g + i));
  }
  sum[tid] = acc;
  KP_BARRIER();
  for (unsigned s = KP_BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) sum[tid] += sum[tid + s];
    KP_BARRIER();
  }
  if (tid == 0) ws[block] = sum[0];
#else
  (void)in1;
  (void)inner;
  KP_GLOBAL const KP_C* ws = (KP_GLOBAL const KP_C*)(in0 + KP_OFFSET(in0));
  KP_GLOBAL KP_T* gw = out + KP_OFFSET(out);
  const kp_u64 c = (kp_u64)KP_GROUP_X * KP_BLOCK + tid;
  if (c < channels) {
    KP_C acc = KP_LIT(0.0);
    for (kp_u64 p = 0; p < parts; ++p) acc += ws[c * parts + p];
    gw[c] = kp_to_storage(acc);
  }
  (void)cols;
#endif
}
#endif
