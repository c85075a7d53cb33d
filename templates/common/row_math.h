/* The row kernel's arithmetic (templates/common/rowwise.h says what the kernel is): the
 * accumulator (double), the value whose softmax is taken, a max that keeps NaN, the exp (float32
 * where FP64 is fast: kp_row_exp, a table and 6 FP64 operations; 16-bit dtypes: the hardware's ex2
 * in float), one element's term exp(x - max), and the sums of terms, compensated where a result
 * needs it. A result's error comes from here alone; docs/accuracy.md ("Softmax") has the bounds. */
typedef double kp_acc;
#define KP_ACC_NEG_INF KP_D_FROM_HILO((int)0xfff00000u, 0)
#define KP_ACC_NAN KP_D_FROM_HILO((int)0x7ff80000u, 0)

#define KP_LEAN (KP_FAST_FP64 && KP_DTYPE_F32 && !KP_ROW_TIER)
/* 16-bit dtypes: every result needs 2^-16 of relative precision, so the math is in float, exp by
 * the hardware's ex2 (CUDA: ex2.approx, 2^-22 relative, below; OpenCL: exp2)
 * of (x - max) log2(e), whose float rounding costs 2^-24 |x - max| (2^-17 at the -130 below which
 * every bfloat16 result is 0), and a thread's terms summed in float (2^-24 a term, 2^-13 for 2^11
 * terms a thread: an eighth of a float16 ulp); the partial sums are merged in double. */
#define KP_ROW_FLOAT (KP_DTYPE_F16 || KP_DTYPE_BF16 || KP_ROW_TIER)
#define KP_LOG2E_F 1.44269502f
/* KP_EX2F keeps subnormal results (ptxas wraps MUFU.EX2 in a halving, a squaring and their test:
 * 4 instructions more); KP_EX2F_FTZ flushes them to 0: for softmax's sums (each holds the max's
 * term, 1, so n flushed terms move it by less than n 2^-126 of itself), for arguments the caller
 * keeps at or above -126, and for terms kept times 2^64 (row_vectors.h). float16's softmax results
 * below 2^-126 round to 0 (its least subnormal is 2^-24), bfloat16's do not (2^-133): KP_EX2F_OUT
 * for results. */
#ifdef __OPENCL_VERSION__
#define KP_EX2F(u) exp2(u)
#define KP_EX2F_FTZ(u) exp2(u)
#else
KP_FN float kp_ex2f(float u) {
  float r;
  asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(u));
  return r;
}
KP_FN float kp_ex2f_ftz(float u) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(u));
  return r;
}
#define KP_EX2F(u) kp_ex2f(u)
#define KP_EX2F_FTZ(u) kp_ex2f_ftz(u)
#endif
#if KP_DTYPE_F16
#define KP_EX2F_OUT(u) KP_EX2F_FTZ(u)
#else
#define KP_EX2F_OUT(u) KP_EX2F(u)
#endif
/* float32 at torch's accuracy (KP_ROW_TIER, the family's forward with accuracy=torch):
 * torch's formula, exp(x - max) with x - max rounded to float as torch rounds it, by the hardware's
 * ex2 of u = (x - max) log2 e. kp_tier_exp_c gives 2^u and the correction c with 2^u (1 + c) the
 * exp of the rounded difference to within ex2's own error: u's rounding (exact, by an fma) and
 * log2 e's rounding to float (its low part, 0x1.4ae0cp-26) taken back, to 2^-24 of themselves, so
 * that only the difference's rounding is left, torch's own (2^-24 |x - max| relative). The sum's
 * terms take 2^u alone: their error, 2.25 2^-24 |x - max| of each, is weighted by the term, so it
 * counts as the row's term-weighted mean of |x - max| (docs/accuracy.md, "The softmax family at
 * torch's accuracy"). log_softmax's terms are 2^u alone (row_vectors.h). */
#if KP_ROW_TIER
#define KP_LOG2E_LO_F 0x1.4ae0cp-26f
#define KP_LN2_F 0x1.62e43p-1f
KP_FN float kp_tier_exp_c(float d, float* c) {
  /* -inf (an element of -inf) to -200, where 2^u is 0 and the correction finite, not inf - inf;
   * NaN stays NaN (the compare fails), and so makes its row NaN */
  d = d < -200.0f ? -200.0f : d;
  const float u = d * KP_LOG2E_F;
  *c = (fma(d, KP_LOG2E_F, -u) + d * KP_LOG2E_LO_F) * KP_LN2_F;
  return KP_EX2F(u);
}
#endif

/* fmax in the compute type: the non-NaN operand where one is NaN. The row's max takes it (one
 * instruction, where a NaN-keeping max takes three) wherever the terms are summed after the whole
 * row's max is known: a NaN element then makes its term, and so the sum and the row, NaN. */
#if defined(__OPENCL_VERSION__) || KP_DTYPE_F64
#define KP_FMAX_C(a, b) fmax(a, b)
#else
#define KP_FMAX_C(a, b) fmaxf(a, b)
#endif

/* The value whose softmax is taken: x, or -x for softmin; in the compute type (exact) and in double. */
KP_FN KP_C kp_row_c(KP_T v) {
  const KP_C x = kp_to_compute(v);
  return KP_ROW_NEGATE ? -x : x;
}
KP_FN kp_acc kp_row_in(KP_T v) { return (kp_acc)kp_row_c(v); }
KP_FN kp_acc kp_row_value(KP_T v) { return (kp_acc)kp_to_compute(v); }
/* One rounding to the dtype (16-bit: through float, within 2^-13 ulp of one rounding). */
KP_FN KP_T kp_row_store(kp_acc v) { return kp_to_storage((KP_C)v); }
/* max that keeps a NaN on either side (a row holding NaN is NaN). */
KP_FN kp_acc kp_max_of(kp_acc a, kp_acc b) { return b > a || b != b ? b : a; }
KP_FN KP_C kp_max_c(KP_C a, KP_C b) { return b > a || b != b ? b : a; }

/* The table-driven double exp below: float32 on devices with fast FP64, and the 16-bit
 * log_softmax backward's second estimate there (row_vectors.h) where a block fills the table at
 * little cost: once for all its rows on the persistent grid (not in the pipelined cluster kernel,
 * whose stages take the shared memory), one-shot where a row holds 1024 elements or more (bfloat16
 * 65536x128 one-shot ran at 77.5 % of copy with it, 83.2 without, on an H100). */
#define KP_EXP_TABLE                                                                          \
  (KP_LEAN || (KP_FAST_FP64 && KP_ROW_FLOAT && KP_ROW_LOG && KP_BACKWARD && !KP_ROW_TIER && \
               (KP_PREFETCH ? KP_ROW != 4 : KP_TPR * KP_VPT * KP_VEC >= 1024)))
#if KP_EXP_TABLE
/* 2^(i/32) and 2^(i/256), each rounded to double: their products make the exp's table. */
KP_D_TABLE kp_exp2_32[32] = {
    0x1.0000000000000p+0, 0x1.059b0d3158574p+0, 0x1.0b5586cf9890fp+0, 0x1.11301d0125b51p+0, 0x1.172b83c7d517bp+0,
    0x1.1d4873168b9aap+0, 0x1.2387a6e756238p+0, 0x1.29e9df51fdee1p+0, 0x1.306fe0a31b715p+0, 0x1.371a7373aa9cbp+0,
    0x1.3dea64c123422p+0, 0x1.44e086061892dp+0, 0x1.4bfdad5362a27p+0, 0x1.5342b569d4f82p+0, 0x1.5ab07dd485429p+0,
    0x1.6247eb03a5585p+0, 0x1.6a09e667f3bcdp+0, 0x1.71f75e8ec5f74p+0, 0x1.7a11473eb0187p+0, 0x1.82589994cce13p+0,
    0x1.8ace5422aa0dbp+0, 0x1.93737b0cdc5e5p+0, 0x1.9c49182a3f090p+0, 0x1.a5503b23e255dp+0, 0x1.ae89f995ad3adp+0,
    0x1.b7f76f2fb5e47p+0, 0x1.c199bdd85529cp+0, 0x1.cb720dcef9069p+0, 0x1.d5818dcfba487p+0, 0x1.dfc97337b9b5fp+0,
    0x1.ea4afa2a490dap+0, 0x1.f50765b6e4540p+0};
KP_D_TABLE kp_exp2_256[8] = {0x1.0000000000000p+0, 0x1.00b1afa5abcbfp+0, 0x1.0163da9fb3335p+0, 0x1.02168143b0281p+0,
                             0x1.02c9a3e778061p+0, 0x1.037d42e11bbccp+0, 0x1.04315e86e7f85p+0, 0x1.04e5f72f654b1p+0};
/* Entry j of the exp's table: 2^(j/256) (within 2^-51 relative: two roundings and the product's),
 * its high word less j << 12, so that kp_row_exp adds the scale 2^k and takes the index back out
 * with one addition of n << 12 (n = 256 k + j). */
KP_FN double kp_exp_entry(int j) {
  const double v = kp_exp2_32[j >> 3] * kp_exp2_256[j & 7];
  return KP_D_FROM_HILO(KP_D_HI(v) - (j << 12), KP_D_LO(v));
}
/* The table as `tab` in the kernel and in the helpers it is passed to: a block's copy in shared
 * memory, which lanes index at random (constant memory serializes distinct addresses), filled
 * once per block. 256 entries and a quadratic take one FP64 operation an exp less than 32 and a
 * cubic: up to 4 points of copy on the H200's float32 row kernels (16 entries and a quartic,
 * which cannot conflict in shared memory's banks, gained nothing: the table's bank conflicts do
 * not bound them). */
#define KP_EXP_TAB_DECL                                                             \
  KP_SHARED double tab[256];                                                        \
  for (int j_ = (int)KP_LOCAL_ID; j_ < 256; j_ += KP_BLOCK) tab[j_] = kp_exp_entry(j_); \
  KP_BARRIER();
#define KP_EXP_TAB_PARAM , KP_LOCAL_PTR const double* tab
#define KP_EXP_TAB_ARG , tab
/* e^t for t <= 0 or NaN (NaN out: a row holding NaN gets a NaN sum): t = (256 k + j) ln2/256 + r,
 * |r| <= ln2/512, e^r by a polynomial, 2^(j/256) from the table, 2^k added to its exponent as an
 * integer. Below -708 the result is 0, where every float32 or narrower result it feeds rounds to 0
 * (and 2^k would leave the normal range). Exact at 0: log_softmax's log1p(sum - 1) needs the max's
 * term to be 1. `quartic` is a constant at each call (kp_row_exp, kp_row_exp_fine), so that each
 * compiles to its own polynomial alone. */
KP_FN kp_acc kp_row_exp_poly(kp_acc t, int quartic KP_EXP_TAB_PARAM) {
  const double z = fma(t, 0x1.71547652b82fep+8, 0x1.8p52); /* n = round(256 t / ln2) in its low word */
  const double n = z - 0x1.8p52;
  const double r = fma(n, -0x1.62e42fefa39efp-9, t);
  const double q = quartic ? fma(fma(0x1.5555555555555p-5, r, 0x1.5555555555555p-3), r, 0.5) : 0.5;
  const double p = fma(fma(q, r, 1.0), r, 1.0);
  const int ni = KP_D_LO(z);
  const double tj = tab[ni & 255];
  const double s = KP_D_FROM_HILO(KP_D_HI(tj) + (int)((unsigned)ni << 12), KP_D_LO(tj));
  return t < -708.0 ? 0.0 : p * s;
}
/* Relative error 2^-31.2: the quadratic's next term, r^3/6. Six FP64 operations and the compare. */
KP_FN kp_acc kp_row_exp(kp_acc t KP_EXP_TAB_PARAM) { return kp_row_exp_poly(t, 0 KP_EXP_TAB_ARG); }
/* Relative error 2^-43.4, for log_softmax's backward (row_vectors.h), whose rounding test passes a
 * result only where its error is far below it: the quartic's next term, r^5/120, is 2^-54.5, so
 * that the error is ln2/256's rounding to double times n (2^-61.5 |n|, |n| < 2^18 above -708:
 * 2^-43.5), the entry's 2^-51 and two roundings. Two FP64 operations more. */
KP_FN kp_acc kp_row_exp_fine(kp_acc t KP_EXP_TAB_PARAM) { return kp_row_exp_poly(t, 1 KP_EXP_TAB_ARG); }
#else
#define KP_EXP_TAB_DECL
#define KP_EXP_TAB_ARG
#define KP_EXP_TAB_PARAM
#endif

/* exp(x - m) of one element. Below float64 x - m is exact. -inf elements are 0 whatever m, so
 * that a row's -inf elements do not make it NaN before its max is known (the online pass); a row
 * whose max is -inf is made NaN where the sum is finished (kp_row_sum_of). */
KP_FN kp_acc kp_term(kp_acc x, kp_acc m KP_EXP_TAB_PARAM) {
#if KP_DTYPE_F64
  if (x == KP_ACC_NEG_INF) return 0.0;
  /* float64: x - m is rounded in double, and exp magnifies that by |x - m| (7 ulp at -13); its
   * rounding error lo (TwoSum), carried as exp(d + lo) = exp(d) (1 + lo), takes it back. */
  const kp_acc d = x - m, bb = d - x;
  const kp_acc lo = d - d == 0.0 ? (x - (d - bb)) + (-m - bb) : 0.0;
  const kp_acc e = exp(d);
  return e + e * lo;
#elif KP_LEAN
  /* -inf - m is -inf, which kp_row_exp takes to 0; a NaN x makes the row NaN (kp_row_sum_of) */
  return kp_row_exp(x - m KP_EXP_TAB_ARG);
#else
  if (x == KP_ACC_NEG_INF) return 0.0;
  return exp(x - m);
#endif
}

/* A compensated sum: hi + lo, each addition's rounding error carried in lo; where hi is not
 * finite (an infinite gradient), hi alone, as a plain sum gives it. The error is Knuth's TwoSum,
 * exact in either order with no comparison: Neumaier's test of the larger operand and its select
 * cost more SASS than TwoSum's two extra additions (float32 log_softmax backward, registers kernel
 * of 64 threads a row, 4 vectors a thread: 1305 -> 1272 instructions a thread, bfloat16's 1267 ->
 * 1234; `kplay emit --ptx`, ptxas and nvdisasm for sm_90), with the same results. */
typedef struct {
  kp_acc hi, lo;
} kp_sum2;
#define KP_SUM_COMPENSATED (KP_ROW_LOG || KP_DTYPE_F64)
#if KP_SUM_COMPENSATED
KP_FN void kp_sum_add(kp_sum2* s, kp_acc v) {
  const kp_acc t = s->hi + v, vv = t - s->hi;
  s->lo += (s->hi - (t - vv)) + (v - vv);
  s->hi = t;
}
#else
/* softmax and softmin below float64: a thread's own terms in a plain double sum. A thread adds at
 * most cols / KP_TPR of them, so its relative error is at most 2^-53 cols / KP_TPR (2^-27 for
 * 2^31 columns and a thread a row), below the 2^-24 that would move a float32 result by a
 * sixteenth of an ulp, and three FP64 operations a term cheaper. The partial sums are merged
 * plainly too: a merge tree as deep as log2 of the threads of a row (and its cluster) adds 2^-53
 * a level, and a short row pays for every level of it in every thread. log_softmax keeps the
 * compensated sum: its log1p(sum - 1) needs the low part. */
KP_FN void kp_sum_add(kp_sum2* s, kp_acc v) { s->hi += v; }
#endif
/* The merge is symmetric (TwoSum's error is exact in either order; a plain sum commutes), so that
 * every lane of a shuffle butterfly ends with the same bits. */
KP_FN kp_sum2 kp_sum_merge(kp_sum2 a, kp_sum2 b) {
  kp_sum2 r;
  r.hi = a.hi + b.hi;
#if KP_SUM_COMPENSATED
  const kp_acc bb = r.hi - a.hi;
  r.lo = (a.lo + b.lo) + ((a.hi - (r.hi - bb)) + (b.hi - bb));
#else
  r.lo = 0.0;
#endif
  return r;
}
KP_FN kp_acc kp_sum_value(kp_sum2 s) { return s.hi - s.hi == 0.0 ? s.hi + s.lo : s.hi; }
/* log_softmax's float32 forward terms, each in [0, 1] (or NaN), summed on a bias: a thread's sum
 * starts at KP_SUM_START = 1, so that hi >= 1 >= v and Fast2Sum's error (hi - t) + v is exact with
 * no comparison (4 FP64 additions a term, where Neumaier's compare and select take 9 instructions);
 * KP_FOLD_SF takes the 1 back out before the reduction (hi - 1 is exact for hi in [1, 2^53)). The
 * low part gathers the same exact errors as kp_sum_add's, so the sum is as accurate. The online
 * kernel's rescale by exp(old max - new max) moves the biased sum's value to the low part first
 * (KP_SUM_RESCALE): hi keeps the 1, so that the rounding of hi * f cannot swamp a sum next to 1. */
#define KP_SUM_BIASED (KP_ROW_LOG && KP_DTYPE_F32 && !KP_BACKWARD && !KP_ROW_TIER)
#if KP_SUM_BIASED
#define KP_SUM_START 1.0
KP_FN void kp_sum_add_term(kp_sum2* s, kp_acc v) {
  const kp_acc t = s->hi + v;
  s->lo += (s->hi - t) + v;
  s->hi = t;
}
#define KP_SUM_RESCALE(s, f)                  \
  {                                           \
    (s).lo = ((s).lo + ((s).hi - 1.0)) * (f); \
    (s).hi = 1.0;                             \
  }
#else
#define KP_SUM_START 0.0
#define kp_sum_add_term kp_sum_add
#define KP_SUM_RESCALE(s, f) \
  {                          \
    (s).hi *= (f);           \
    (s).lo *= (f);           \
  }
#endif
