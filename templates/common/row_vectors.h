/* The row kernel's work on a row's vectors (templates/common/rowwise.h): loads and stores (whole
 * where the row is aligned, lane by lane at a ragged end, an element at a time for strided rows),
 * and each step over a vector's lanes -- its max, its terms of the sum (kept for the results where
 * the row sits in registers: KP_KEEP_E), its forward results, the backward's terms and results --
 * with the row's constants from its max and sum. */
/* Vector vi of a row of len elements at p: whole where the row is vector-aligned and the vector
 * complete, else lane by lane (lanes past the row are left unset and never read). In-row indices
 * are 32-bit (codegen refuses rows of 2^31 elements or more): fewer instructions an element.
 * acc says how the row's elements are reached: for rows of contiguous elements, whether the row
 * starts on a vector in every buffer; for strided rows (KP_STRIDED, vectors of one element), the
 * distance between a row's elements. */
#if KP_STRIDED
typedef kp_u64 kp_access;
KP_FN void kp_row_load(kp_vec* v, KP_GLOBAL const KP_T* p, unsigned vi, unsigned len, kp_access acc) {
  if (vi < len) KP_LANE(*v, 0) = KP_LD(p + (kp_u64)vi * acc);
}
KP_FN void kp_row_store_vec(kp_vec v, KP_GLOBAL KP_T* p, unsigned vi, unsigned len, kp_access acc) {
  if (vi < len) KP_ST(p + (kp_u64)vi * acc, KP_LANE(v, 0));
}
#elif KP_WHOLE_ROWS
/* Every row of every buffer starts on a vector and holds whole vectors (the host launches this
 * form only then: launch_layout.hpp's row_whole): a vector inside the row is whole. */
typedef int kp_access;
KP_FN void kp_row_load(kp_vec* v, KP_GLOBAL const KP_T* p, unsigned vi, unsigned len, kp_access aligned) {
  (void)aligned;
  if (vi * KP_VEC < len) KP_SET_RAW(*v, KP_LD((KP_GLOBAL const kp_raw*)p + vi));
}
KP_FN void kp_row_store_vec(kp_vec v, KP_GLOBAL KP_T* p, unsigned vi, unsigned len, kp_access aligned) {
  (void)aligned;
  if (vi * KP_VEC < len) KP_ST((KP_GLOBAL kp_raw*)p + vi, KP_VEC_TO_RAW(v));
}
#else
typedef int kp_access;
#define KP_ROW_LOAD_LANE(k) \
  if (e + (k) < len) KP_LANE(*v, k) = KP_LD(p + e + (k));
KP_FN void kp_row_load(kp_vec* v, KP_GLOBAL const KP_T* p, unsigned vi, unsigned len, kp_access aligned) {
  const unsigned e = vi * KP_VEC;
  if (e >= len) return;
  if (aligned && e + KP_VEC <= len) {
    KP_SET_RAW(*v, KP_LD((KP_GLOBAL const kp_raw*)p + vi));
  } else {
    KP_FOR_LANES(KP_ROW_LOAD_LANE)
  }
}
#define KP_ROW_STORE_LANE(k) \
  if (e + (k) < len) KP_ST(p + e + (k), KP_LANE(v, k));
KP_FN void kp_row_store_vec(kp_vec v, KP_GLOBAL KP_T* p, unsigned vi, unsigned len, kp_access aligned) {
  const unsigned e = vi * KP_VEC;
  if (e >= len) return;
  if (aligned && e + KP_VEC <= len) {
    KP_ST((KP_GLOBAL kp_raw*)p + vi, KP_VEC_TO_RAW(v));
  } else {
    KP_FOR_LANES(KP_ROW_STORE_LANE)
  }
}
#endif
/* The lanes of vector vi inside a row of len elements (0 past its end; whole rows: 0 or all). */
KP_FN int kp_lanes(unsigned vi, unsigned len) {
  const unsigned e = vi * KP_VEC;
#if KP_WHOLE_ROWS
  return e < len ? KP_VEC : 0;
#else
  return e >= len ? 0 : len - e >= KP_VEC ? KP_VEC : (int)(len - e);
#endif
}

/* What a row's results need: its max m (and in the compute type), its sum (float64: divided by),
 * the sum's reciprocal, log and (16-bit) log2 in float, and whether the row is NaN throughout. */
typedef struct {
  kp_acc m, sum, inv, log_sum;
  KP_C mf, inv_f, log_sum_f, log2_sum_f;
  int nan_row;
} kp_row_k;

/* Per-vector steps over the nl lanes inside the row. Each step is written once for any nl (the
 * _n form); on CUDA it is called with nl = KP_VEC for complete vectors, where the lane tests fold
 * away (issue slots set a long row's time there). OpenCL calls the one form: the second copy
 * doubles PoCL's compile time for no gain on a CPU. */
#ifdef __OPENCL_VERSION__
#define KP_WHOLE(nl) 0
#elif KP_WHOLE_ROWS
#define KP_WHOLE(nl) ((nl) != 0) /* nl is 0 or KP_VEC; the other form, at nl = 0, does nothing */
#else
#define KP_WHOLE(nl) ((nl) == KP_VEC)
#endif
#if KP_ROW == 3
/* the online pass keeps NaN in the max: it skips the terms while its max is -inf */
#define KP_MAX_LANE(k) \
  if ((k) < nl) m = kp_max_c(m, kp_row_c(KP_LANE(x, k)));
#else
#define KP_MAX_LANE(k) \
  if ((k) < nl) m = KP_FMAX_C(m, kp_row_c(KP_LANE(x, k)));
#endif
KP_FN KP_C kp_vec_max_n(kp_vec x, int nl, KP_C m) {
  KP_FOR_LANES(KP_MAX_LANE)
  return m;
}
KP_FN KP_C kp_vec_max(kp_vec x, int nl, KP_C m) {
  return KP_WHOLE(nl) ? kp_vec_max_n(x, KP_VEC, m) : kp_vec_max_n(x, nl, m);
}

/* The sum's terms: float32 and float64 in double (kp_term); 16-bit by ex2 in float, summed in
 * float, and folded into the double sum before the reduction (KP_FOLD_SF). log_softmax's float
 * sum holds its terms times 2^64 (KP_EXP_LANE), which KP_SF_UNIT takes out. */
#if KP_ROW_FLOAT && KP_ROW_LOG
#define KP_SF_UNIT 0x1p-64
#define KP_FOLD_SF(s, sf) kp_sum_add(&(s), (kp_acc)(sf) * KP_SF_UNIT)
#elif KP_SUM_BIASED
#define KP_FOLD_SF(s, sf) ((s).hi -= KP_SUM_START) /* float32 has no float sum: the bias out */
#else
#define KP_FOLD_SF(s, sf) ((s).hi += (kp_acc)(sf))
#endif
#if KP_ROW_FLOAT && !KP_ROW_LOG
#define KP_EXP_LANE(k) \
  if ((k) < nl) *sf += KP_EX2F_FTZ((kp_row_c(KP_LANE(x, k)) - mf) * KP_LOG2E_F);
#elif KP_ROW_FLOAT
/* log_softmax: a term of 1 (x the max) counts in the double sum, the rest sum in float, as
 * softmax's: log1p(sum - 1) next to 0 needs that rest to its own precision, which a float sum
 * holding the 1 would lose (docs/accuracy.md); KP_FOLD_SF adds it to the count compensated. The
 * vector's 1s are counted in float (exact) and added to the double sum once, with no branch. The
 * rest keeps its tiniest terms too (a result next to 0 is -(sum - 1)): each is 2^64 e, the
 * flushing ex2 of (x - max) log2 e + 64 (one fma, within 2^-18 of it: 2^-18.5 relative), normal
 * for e >= 2^-190, below which a term moves no 16-bit result. */
#define KP_EXP_LANE(k)                                         \
  if ((k) < nl) {                                              \
    const KP_C d_ = kp_row_c(KP_LANE(x, k)) - mf;              \
    const KP_C e_ = KP_EX2F_FTZ(fma(d_, KP_LOG2E_F, 64.0f));   \
    ones += d_ == (KP_C)0 ? (KP_C)1 : (KP_C)0;                 \
    *sf += d_ == (KP_C)0 ? (KP_C)0 : e_;                       \
  }
#else
#define KP_EXP_LANE(k) \
  if ((k) < nl) kp_sum_add_term(s, kp_term(kp_row_in(KP_LANE(x, k)), m KP_EXP_TAB_ARG));
#endif
KP_FN void kp_vec_exp_sum_n(kp_vec x, int nl, kp_acc m, KP_C mf, kp_sum2* s, KP_C* sf KP_EXP_TAB_PARAM) {
  (void)m;
  (void)mf;
  (void)s;
  (void)sf;
#if KP_ROW_FLOAT && KP_ROW_LOG
  KP_C ones = (KP_C)0;
  KP_FOR_LANES(KP_EXP_LANE)
  if (ones != (KP_C)0) s->hi += (kp_acc)ones;
#else
  KP_FOR_LANES(KP_EXP_LANE)
#endif
}
KP_FN void kp_vec_exp_sum(kp_vec x, int nl, kp_acc m, KP_C mf, kp_sum2* s, KP_C* sf KP_EXP_TAB_PARAM) {
  if (KP_WHOLE(nl))
    kp_vec_exp_sum_n(x, KP_VEC, m, mf, s, sf KP_EXP_TAB_ARG);
  else
    kp_vec_exp_sum_n(x, nl, m, mf, s, sf KP_EXP_TAB_ARG);
}

/* Forward softmax and softmin whose row sits in registers keep each term until the sum is known
 * and scale it: one exp an element, not two. Within KP_KEEP_E_BYTES of registers a thread (terms
 * in double for float32 and float64, in float for 16-bit dtypes); longer slots recompute. A
 * float32 result e / sum is then e (2^-31.2) times the double reciprocal, rounded once: within
 * 0.51 ulp; float64 divides, as kp_term / sum does; 16-bit: e (2^-22) times the reciprocal in
 * float. A NaN sum (a NaN row) makes the reciprocal, and so every result, NaN.
 * 16-bit terms are kept as 2^64 e, by the flushing ex2 of (x - max) log2 e + 64 (one fma, within
 * 2^-18 of it, so 2^-18.5 relative: 2^-9.5 of a bfloat16 ulp): a term whose result is not 0 in the
 * dtype (e >= 2^-134) is then normal, where the subnormal-keeping ex2 took 4 instructions more, and
 * the sum holds the same 2^64, which its reciprocal takes out of each result (a sum of at most 2^31
 * terms in [0, 2^64] stays inside float's range). */
#define KP_KEEP_E_BYTES 128
#if KP_ROW_FLOAT
typedef float kp_e;
#define KP_E_BYTES 4
#else
typedef kp_acc kp_e;
#define KP_E_BYTES 8
#endif
#define KP_KEEP_E (KP_ROW == 1 && !KP_BACKWARD && !KP_ROW_LOG && KP_VPT * KP_VEC * KP_E_BYTES <= KP_KEEP_E_BYTES)
#if KP_KEEP_E
#if KP_ROW_FLOAT
#define KP_KEEP_LANE(k)                                                         \
  if ((k) < nl) {                                                               \
    ev[k] = KP_EX2F_FTZ(fma(kp_row_c(KP_LANE(x, k)) - mf, KP_LOG2E_F, 64.0f));  \
    *sf += ev[k];                                                               \
  }
#else
#define KP_KEEP_LANE(k)                                                         \
  if ((k) < nl) {                                                               \
    ev[k] = kp_term(kp_row_in(KP_LANE(x, k)), m KP_EXP_TAB_ARG);                \
    kp_sum_add(s, ev[k]);                                                       \
  }
#endif
KP_FN void kp_vec_exp_keep_n(kp_vec x, int nl, kp_acc m, KP_C mf, kp_sum2* s, KP_C* sf, kp_e* ev KP_EXP_TAB_PARAM) {
  (void)m;
  (void)mf;
  (void)s;
  (void)sf;
  KP_FOR_LANES(KP_KEEP_LANE)
}
KP_FN void kp_vec_exp_keep(kp_vec x, int nl, kp_acc m, KP_C mf, kp_sum2* s, KP_C* sf, kp_e* ev KP_EXP_TAB_PARAM) {
  if (KP_WHOLE(nl))
    kp_vec_exp_keep_n(x, KP_VEC, m, mf, s, sf, ev KP_EXP_TAB_ARG);
  else
    kp_vec_exp_keep_n(x, nl, m, mf, s, sf, ev KP_EXP_TAB_ARG);
}
#if KP_ROW_FLOAT
#define KP_SCALE_LANE(k) \
  if ((k) < nl) KP_LANE(y, k) = kp_to_storage(ev[k] * rk.inv_f);
#elif KP_DTYPE_F64
#define KP_SCALE_LANE(k) \
  if ((k) < nl) KP_LANE(y, k) = kp_row_store(ev[k] / rk.sum);
#else
#define KP_SCALE_LANE(k) \
  if ((k) < nl) KP_LANE(y, k) = kp_row_store(ev[k] * rk.inv);
#endif
KP_FN kp_vec kp_vec_scale_n(kp_vec y, int nl, const kp_e* ev, kp_row_k rk) {
  KP_FOR_LANES(KP_SCALE_LANE)
  return y;
}
KP_FN kp_vec kp_vec_scale(kp_vec y, int nl, const kp_e* ev, kp_row_k rk) {
  return KP_WHOLE(nl) ? kp_vec_scale_n(y, KP_VEC, ev, rk) : kp_vec_scale_n(y, nl, ev, rk);
}
#endif

/* The forward result from x (already negated for softmin). */
#if KP_ROW_FLOAT
KP_FN KP_C kp_forward_f(KP_C x, kp_row_k k) {
#if KP_ROW_LOG
  return (x - k.mf) - k.log_sum_f; /* -inf stays -inf; a NaN row has a NaN log */
#else
  const KP_C y = KP_EX2F_OUT(fma(x - k.mf, KP_LOG2E_F, -k.log2_sum_f)); /* 2^-17 relative at -130 */
  return k.nan_row ? (KP_C)KP_ACC_NAN : y;
#endif
}
#define KP_OUT_LANE(k) \
  if ((k) < nl) KP_LANE(y, k) = kp_to_storage(kp_forward_f(kp_row_c(KP_LANE(x, k)), rk));
#else
KP_FN kp_acc kp_forward_of(kp_acc x, kp_row_k k KP_EXP_TAB_PARAM) {
#if KP_ROW_LOG
#if KP_DTYPE_F64
  const kp_acc d = x - k.m, bb = d - x;
  const kp_acc lo = d - d == 0.0 ? (x - (d - bb)) + (-k.m - bb) : 0.0;
  return (d - k.log_sum) + lo; /* -inf stays -inf; a NaN sum (and so log_sum) makes the row NaN */
#else
  return (x - k.m) - k.log_sum; /* -inf stays -inf; a NaN sum (and so log_sum) makes the row NaN */
#endif
#elif KP_DTYPE_F64
  return kp_term(x, k.m) / k.sum;
#elif KP_LEAN
  /* exp(x - m - log sum): x - m exact, its difference with log sum rounded in double (2^-46 of
   * the result's exponent at the -104 below which every float32 result is 0) */
  const kp_acc y = kp_row_exp((x - k.m) - k.log_sum KP_EXP_TAB_ARG);
  return k.nan_row ? KP_ACC_NAN : y;
#else
  return kp_term(x, k.m) * k.inv;
#endif
}
#define KP_OUT_LANE(k) \
  if ((k) < nl) KP_LANE(y, k) = kp_row_store(kp_forward_of(kp_row_in(KP_LANE(x, k)), rk KP_EXP_TAB_ARG));
#endif
KP_FN kp_vec kp_vec_forward_n(kp_vec x, int nl, kp_row_k rk KP_EXP_TAB_PARAM) {
  kp_vec y = x;
  KP_FOR_LANES(KP_OUT_LANE)
  return y;
}
KP_FN kp_vec kp_vec_forward(kp_vec x, int nl, kp_row_k rk KP_EXP_TAB_PARAM) {
  return KP_WHOLE(nl) ? kp_vec_forward_n(x, KP_VEC, rk KP_EXP_TAB_ARG) : kp_vec_forward_n(x, nl, rk KP_EXP_TAB_ARG);
}

/* Backward: the sum's terms (g y, or g for log_softmax; float64's products split exactly by an
 * fma into the product and its rounding error) and the result from it. */
#if KP_ROW_LOG
#define KP_TERM_LANE(k) \
  if ((k) < nl) kp_sum_add(s, kp_row_value(KP_LANE(g, k)));
#elif KP_DTYPE_F64
#define KP_TERM_LANE(k)                                                              \
  if ((k) < nl) {                                                                    \
    const kp_acc g_ = kp_row_value(KP_LANE(g, k)), y_ = kp_row_value(KP_LANE(y, k)); \
    const kp_acc p_ = g_ * y_;                                                       \
    kp_sum_add(s, p_);                                                               \
    kp_sum_add(s, fma(g_, y_, -p_));                                                 \
  }
#elif KP_ROW_FLOAT
/* 16-bit: g y is exact in float (8 or 11 significant bits each; a bfloat16 product below 2^-126
 * is rounded to a subnormal, 2^-150: docs/accuracy.md), so a term takes one conversion to double,
 * not two and a double product. Conversions to and from double issue at an eighth of the float
 * rate on sm_90; with the float results below an element takes one, not five: bfloat16
 * 4096x393216 backward 75.5 % of copy against 68.5 on an H100 (`kplay bench --no-db`). */
#define KP_TERM_LANE(k) \
  if ((k) < nl) kp_sum_add(s, (kp_acc)(kp_to_compute(KP_LANE(g, k)) * kp_to_compute(KP_LANE(y, k))));
#else
#define KP_TERM_LANE(k) \
  if ((k) < nl) kp_sum_add(s, kp_row_value(KP_LANE(g, k)) * kp_row_value(KP_LANE(y, k)));
#endif
KP_FN void kp_vec_terms_n(kp_vec g, kp_vec y, int nl, kp_sum2* s) {
  (void)y;
  KP_FOR_LANES(KP_TERM_LANE)
}
KP_FN void kp_vec_terms(kp_vec g, kp_vec y, int nl, kp_sum2* s) {
  if (KP_WHOLE(nl))
    kp_vec_terms_n(g, y, KP_VEC, s);
  else
    kp_vec_terms_n(g, y, nl, s);
}
/* float32 log_softmax backward by the table exp, except in the pipelined cluster kernel (below). */
#define KP_LOG_GRAD_TABLE (KP_ROW_LOG && KP_LEAN && !(KP_ROW == 4 && KP_PREFETCH))
#if (KP_ROW_LOG && KP_ROW_FLOAT) || KP_LOG_GRAD_TABLE
/* log_softmax: g - exp(y) sum, where the two may cancel to 2^-24 of the terms (docs/accuracy.md),
 * which the device's double exp keeps exact. The 16-bit results and float32's take an estimate
 * where a rounding test allows and this formula only where it does not: out of line, so that its
 * registers do not weigh on the estimate's loop. float32's estimate (kp_backward_of): exp(y) by
 * the table (kp_row_exp_fine, 2^-43.4), p = e sum and r = g - p in double within 2^-43.3 |p| of
 * themselves; where |r| >= 2^-12 |p| that is 2^-31.3 |r|, 2^-7 ulp of a float32 result before its
 * rounding; elsewhere (terms that cancel to 2^-12, y > 0 or NaN) this formula. kp_row_exp's
 * quadratic (2^-31.2) would pass only |r| >= |p| / 4, which about 3 % of bench's elements fail (g
 * mostly uniform in [-8, 8]); a warp takes the formula for all its lanes if one fails, so that
 * it took 28 % of the kernel's instructions (Nsight Compute at 32768x1024 on an H100). */
KP_COLD_FN kp_acc kp_log_grad_exact(kp_acc g, kp_acc y, kp_acc sum) { return g - exp(y) * sum; }
#endif
#if KP_LOG_GRAD_TABLE || (KP_ROW_LOG && KP_ROW_FLOAT && KP_EXP_TABLE)
/* The table's estimate: r within 2^-43.3 |p| of itself, so within 2^-31.3 |r| where the test
 * passes float32's 2^-12 and 2^-23.3 where it passes 16-bit's 2^-20 (their results need 2^-29 and
 * 2^-16); else the device's exp. */
#define KP_LOG_GRAD_TEST (KP_DTYPE_F32 ? 0x1p-12 : 0x1p-20)
KP_FN kp_acc kp_log_grad_table(kp_acc g, kp_acc y, kp_acc sum KP_EXP_TAB_PARAM) {
  const kp_acc p = kp_row_exp_fine(y KP_EXP_TAB_ARG) * sum, r = g - p;
  return y <= 0.0 && fabs(r) >= KP_LOG_GRAD_TEST * fabs(p) ? r : kp_log_grad_exact(g, y, sum);
}
#endif
KP_FN kp_acc kp_backward_of(kp_acc g, kp_acc y, kp_sum2 s KP_EXP_TAB_PARAM) {
#if KP_ROW_LOG && KP_ROW_FLOAT
  return kp_log_grad_exact(g, y, kp_sum_value(s));
#elif KP_LOG_GRAD_TABLE
  return kp_log_grad_table(g, y, kp_sum_value(s) KP_EXP_TAB_ARG);
#elif KP_ROW_LOG
  /* float64, and float32 in the pipelined cluster kernel: the device's double exp, inline. There a
   * table exp in its place (kp_row_exp's table and a quartic, to 2^-50) ran slower, most likely as
   * the table shares shared memory with the kernel's stages (H200, `kplay bench --act log_softmax
   * --direction backward --shape 8192x32768 --no-db`: 38.8 % of copy against 55.6). */
  return g - exp(y) * kp_sum_value(s);
#elif KP_ROW_NEGATE
  return y * (s.hi - s.hi == 0.0 ? (s.hi - g) + s.lo : s.hi - g);
#else
  return y * (s.hi - s.hi == 0.0 ? (g - s.hi) - s.lo : g - s.hi);
#endif
}
#define KP_GRAD_LANE(k) \
  if ((k) < nl) KP_LANE(r, k) = kp_row_store(kp_backward_of(kp_row_value(KP_LANE(g, k)), kp_row_value(KP_LANE(y, k)), s KP_EXP_TAB_ARG));
#if KP_ROW_FLOAT
/* 16-bit: the results in float from the row's sum split into floats hi + lo (within 2^-48 of it),
 * with no conversion to double an element. Softmax and softmin, y (g - sum): y g is exact and y hi
 * is split exactly into p and its rounding error (fma), so that a - p and the rest, q = (y hi - p)
 * + y lo, are each rounded once:
 * the result is within 2^-23 of itself plus 2^-46 |y sum| before its one rounding to the dtype, at
 * most 2^-21.4 of the larger of itself and 2^-24 |y| (|g| + sum |g y|) (docs/accuracy.md): 2^-10.4
 * ulp of a float16 result, 2^-13.4 of a bfloat16. A sum beyond float's range takes the double
 * formula. */
typedef struct {
  float hi, lo;
  int in_range;
} kp_sum_f;
KP_FN kp_sum_f kp_sum_split(kp_sum2 s) {
  const kp_acc v = kp_sum_value(s);
  kp_sum_f r;
  r.hi = (float)v;
  r.lo = (float)(v - (kp_acc)r.hi);
  r.in_range = r.hi - r.hi == 0.0f;
  return r;
}
KP_FN float kp_backward_f(float g, float y, kp_sum_f s) {
  const float a = y * g, p = y * s.hi;
  const float q = fma(y, s.lo, fma(y, s.hi, -p));
#if KP_ROW_NEGATE
  return (p - a) + q;
#else
  return (a - p) - q;
#endif
}
#if KP_ROW_LOG
#if KP_EXP_TABLE
#define KP_LOG_GRAD_NARROW(g, y, sum) kp_log_grad_table(g, y, sum KP_EXP_TAB_ARG)
#else
#define KP_LOG_GRAD_NARROW(g, y, sum) kp_log_grad_exact(g, y, sum)
#endif
/* 16-bit log_softmax: r = g - e hi in float, e = 2^(y log2 e) by the hardware (2^-21.4 relative;
 * OpenCL's exp2: 3 ulp) at y >= -87 (e normal: its flush below is never taken), so that with the
 * roundings of y log2 e (1.25 2^-24 |y|), of the sum to float and of e hi (2^-24 each) p = e hi
 * is within 2^-20 + 2^-23 |y| of itself; where |r| >= 2^16 times that of |p|, r is within 2^-16
 * of itself (and 2^-149 where p is subnormal): 2^-5 ulp of a float16 result, 2^-8 of a bfloat16.
 * y = -inf gives e = 0 exactly. Elsewhere the table's estimate where FP64 is fast, then the formula. */
#define KP_GRAD_F_LANE(k)                                                                          \
  if ((k) < nl) {                                                                                  \
    const float g_ = kp_to_compute(KP_LANE(g, k)), y_ = kp_to_compute(KP_LANE(y, k));              \
    const float p_ = KP_EX2F_FTZ(y_ * KP_LOG2E_F) * sf.hi, r_ = g_ - p_;                           \
    const int ok_ = (y_ <= 0.0f && y_ >= -87.0f && fabs(p_) * fma(-y_, 0x1p-7f, 0x1p-4f) <= fabs(r_)) \
                    || y_ < -0x1.fffffep127f;                                                      \
    KP_LANE(r, k) = ok_ ? kp_to_storage(r_) : kp_row_store(KP_LOG_GRAD_NARROW(g_, y_, kp_sum_value(s))); \
  }
#else
#define KP_GRAD_F_LANE(k) \
  if ((k) < nl) KP_LANE(r, k) = kp_to_storage(kp_backward_f(kp_to_compute(KP_LANE(g, k)), kp_to_compute(KP_LANE(y, k)), sf));
#endif
#endif
KP_FN kp_vec kp_vec_backward_n(kp_vec g, kp_vec y, int nl, kp_sum2 s KP_EXP_TAB_PARAM) {
  kp_vec r = g;
#if KP_ROW_FLOAT
  const kp_sum_f sf = kp_sum_split(s);
  if (sf.in_range) {
    KP_FOR_LANES(KP_GRAD_F_LANE)
    return r;
  }
#endif
  KP_FOR_LANES(KP_GRAD_LANE)
  return r;
}
KP_FN kp_vec kp_vec_backward(kp_vec g, kp_vec y, int nl, kp_sum2 s KP_EXP_TAB_PARAM) {
  return KP_WHOLE(nl) ? kp_vec_backward_n(g, y, KP_VEC, s KP_EXP_TAB_ARG) : kp_vec_backward_n(g, y, nl, s KP_EXP_TAB_ARG);
}

/* The finished forward sum: NaN where the row's max is not finite (+inf or NaN: an inf - inf or
 * NaN term; -inf: every element -inf, -inf - -inf), whatever the terms gave. */
KP_FN kp_acc kp_row_sum_of(kp_sum2 s, kp_acc m) { return m - m == 0.0 ? kp_sum_value(s) : KP_ACC_NAN; }
/* log of the finished sum: near 1 (one element dominates) as log1p of sum - 1, which the sum's
 * low part keeps exact, so that log_softmax's results near 0 keep their precision. Float64 takes
 * the device's log1p and log. Below it a result needs the log to 2^-30 relative (log_softmax's
 * results x - max - log are at least the log in magnitude; softmax's exp(x - max - log) takes its
 * absolute error, up to log 2^31 = 21.5), and every thread of a row computes it once a row: the
 * device's log takes some 80 instructions and its log1p some 140 (a division among them), 10 to
 * 17 an element where a thread holds 8 (the float32 defaults at 65536x128 to 16384x4096); the
 * table's takes 30 (sm_90 SASS, nvdisasm). */
#if KP_DTYPE_F64
KP_FN kp_acc kp_log_sum(kp_sum2 s, kp_acc sum) {
  return sum < 2.0 && sum >= 1.0 ? log1p((s.hi - 1.0) + s.lo) : log(sum);
}
#else
/* 1 / c_j rounded to double, c_j = 1 + j / 128, and -log of that, rounded. */
KP_D_TABLE kp_log_inv[128] = {
    0x1.0000000000000p+0, 0x1.fc07f01fc07f0p-1, 0x1.f81f81f81f820p-1, 0x1.f44659e4a4271p-1,
    0x1.f07c1f07c1f08p-1, 0x1.ecc07b301ecc0p-1, 0x1.e9131abf0b767p-1, 0x1.e573ac901e574p-1,
    0x1.e1e1e1e1e1e1ep-1, 0x1.de5d6e3f8868ap-1, 0x1.dae6076b981dbp-1, 0x1.d77b654b82c34p-1,
    0x1.d41d41d41d41dp-1, 0x1.d0cb58f6ec074p-1, 0x1.cd85689039b0bp-1, 0x1.ca4b3055ee191p-1,
    0x1.c71c71c71c71cp-1, 0x1.c3f8f01c3f8f0p-1, 0x1.c0e070381c0e0p-1, 0x1.bdd2b899406f7p-1,
    0x1.bacf914c1bad0p-1, 0x1.b7d6c3dda338bp-1, 0x1.b4e81b4e81b4fp-1, 0x1.b2036406c80d9p-1,
    0x1.af286bca1af28p-1, 0x1.ac5701ac5701bp-1, 0x1.a98ef606a63bep-1, 0x1.a6d01a6d01a6dp-1,
    0x1.a41a41a41a41ap-1, 0x1.a16d3f97a4b02p-1, 0x1.9ec8e951033d9p-1, 0x1.9c2d14ee4a102p-1,
    0x1.999999999999ap-1, 0x1.970e4f80cb872p-1, 0x1.948b0fcd6e9e0p-1, 0x1.920fb49d0e229p-1,
    0x1.8f9c18f9c18fap-1, 0x1.8d3018d3018d3p-1, 0x1.8acb90f6bf3aap-1, 0x1.886e5f0abb04ap-1,
    0x1.8618618618618p-1, 0x1.83c977ab2beddp-1, 0x1.8181818181818p-1, 0x1.7f405fd017f40p-1,
    0x1.7d05f417d05f4p-1, 0x1.7ad2208e0ecc3p-1, 0x1.78a4c8178a4c8p-1, 0x1.767dce434a9b1p-1,
    0x1.745d1745d1746p-1, 0x1.724287f46debcp-1, 0x1.702e05c0b8170p-1, 0x1.6e1f76b4337c7p-1,
    0x1.6c16c16c16c17p-1, 0x1.6a13cd1537290p-1, 0x1.6816816816817p-1, 0x1.661ec6a5122f9p-1,
    0x1.642c8590b2164p-1, 0x1.623fa77016240p-1, 0x1.6058160581606p-1, 0x1.5e75bb8d015e7p-1,
    0x1.5c9882b931057p-1, 0x1.5ac056b015ac0p-1, 0x1.58ed2308158edp-1, 0x1.571ed3c506b3ap-1,
    0x1.5555555555555p-1, 0x1.5390948f40febp-1, 0x1.51d07eae2f815p-1, 0x1.5015015015015p-1,
    0x1.4e5e0a72f0539p-1, 0x1.4cab88725af6ep-1, 0x1.4afd6a052bf5bp-1, 0x1.49539e3b2d067p-1,
    0x1.47ae147ae147bp-1, 0x1.460cbc7f5cf9ap-1, 0x1.446f86562d9fbp-1, 0x1.42d6625d51f87p-1,
    0x1.4141414141414p-1, 0x1.3fb013fb013fbp-1, 0x1.3e22cbce4a902p-1, 0x1.3c995a47babe7p-1,
    0x1.3b13b13b13b14p-1, 0x1.3991c2c187f63p-1, 0x1.3813813813814p-1, 0x1.3698df3de0748p-1,
    0x1.3521cfb2b78c1p-1, 0x1.33ae45b57bcb2p-1, 0x1.323e34a2b10bfp-1, 0x1.30d190130d190p-1,
    0x1.2f684bda12f68p-1, 0x1.2e025c04b8097p-1, 0x1.2c9fb4d812ca0p-1, 0x1.2b404ad012b40p-1,
    0x1.29e4129e4129ep-1, 0x1.288b01288b013p-1, 0x1.27350b8812735p-1, 0x1.25e22708092f1p-1,
    0x1.2492492492492p-1, 0x1.23456789abcdfp-1, 0x1.21fb78121fb78p-1, 0x1.20b470c67c0d9p-1,
    0x1.1f7047dc11f70p-1, 0x1.1e2ef3b3fb874p-1, 0x1.1cf06ada2811dp-1, 0x1.1bb4a4046ed29p-1,
    0x1.1a7b9611a7b96p-1, 0x1.19453808ca29cp-1, 0x1.1811811811812p-1, 0x1.16e0689427379p-1,
    0x1.15b1e5f75270dp-1, 0x1.1485f0e0acd3bp-1, 0x1.135c81135c811p-1, 0x1.12358e75d3033p-1,
    0x1.1111111111111p-1, 0x1.0fef010fef011p-1, 0x1.0ecf56be69c90p-1, 0x1.0db20a88f4696p-1,
    0x1.0c9714fbcda3bp-1, 0x1.0b7e6ec259dc8p-1, 0x1.0a6810a6810a7p-1, 0x1.0953f39010954p-1,
    0x1.0842108421084p-1, 0x1.073260a47f7c6p-1, 0x1.0624dd2f1a9fcp-1, 0x1.05197f7d73404p-1,
    0x1.0410410410410p-1, 0x1.03091b51f5e1ap-1, 0x1.0204081020408p-1, 0x1.0101010101010p-1};
KP_D_TABLE kp_log_tab[128] = {
    0.0, 0x1.fe02a6b106799p-8, 0x1.fc0a8b0fc03c4p-7, 0x1.7b91b07d5b126p-6,
    0x1.f829b0e7832f8p-6, 0x1.39e87b9febd68p-5, 0x1.77458f632dcffp-5, 0x1.b42dd711971b9p-5,
    0x1.f0a30c01162a8p-5, 0x1.16536eea37ae3p-4, 0x1.341d7961bd1d0p-4, 0x1.51b073f06183cp-4,
    0x1.6f0d28ae56b4ep-4, 0x1.8c345d6319b23p-4, 0x1.a926d3a4ad562p-4, 0x1.c5e548f5bc743p-4,
    0x1.e27076e2af2eap-4, 0x1.fec9131dbeabcp-4, 0x1.0d77e7cd08e5bp-3, 0x1.1b72ad52f67a2p-3,
    0x1.29552f81ff521p-3, 0x1.371fc201e8f75p-3, 0x1.44d2b6ccb7d1cp-3, 0x1.526e5e3a1b438p-3,
    0x1.5ff3070a793d6p-3, 0x1.6d60fe719d21bp-3, 0x1.7ab890210d907p-3, 0x1.87fa06520c911p-3,
    0x1.9525a9cf456b6p-3, 0x1.a23bc1fe2b561p-3, 0x1.af3c94e80bff3p-3, 0x1.bc286742d8cd4p-3,
    0x1.c8ff7c79a9a20p-3, 0x1.d5c216b4fbb94p-3, 0x1.e27076e2af2e8p-3, 0x1.ef0adcbdc5935p-3,
    0x1.fb9186d5e3e29p-3, 0x1.0402594b4d041p-2, 0x1.0a324e27390e2p-2, 0x1.1058bf9ae4ad4p-2,
    0x1.1675cababa60fp-2, 0x1.1c898c16999fbp-2, 0x1.22941fbcf7966p-2, 0x1.2895a13de86a4p-2,
    0x1.2e8e2bae11d31p-2, 0x1.347dd9a987d56p-2, 0x1.3a64c556945eap-2, 0x1.404308686a7e4p-2,
    0x1.4618bc21c5ec2p-2, 0x1.4be5f957778a1p-2, 0x1.51aad872df82ep-2, 0x1.5767717455a6cp-2,
    0x1.5d1bdbf5809cap-2, 0x1.62c82f2b9c796p-2, 0x1.686c81e9b14adp-2, 0x1.6e08eaa2ba1e4p-2,
    0x1.739d7f6bbd007p-2, 0x1.792a55fdd47a1p-2, 0x1.7eaf83b82afc2p-2, 0x1.842d1da1e8b18p-2,
    0x1.89a3386c1425bp-2, 0x1.8f11e873662c8p-2, 0x1.947941c2116fbp-2, 0x1.99d958117e08ap-2,
    0x1.9f323ecbf984dp-2, 0x1.a484090e5bb09p-2, 0x1.a9cec9a9a084ap-2, 0x1.af1293247786bp-2,
    0x1.b44f77bcc8f64p-2, 0x1.b9858969310fdp-2, 0x1.beb4d9da71b7ap-2, 0x1.c3dd7a7cdad4dp-2,
    0x1.c8ff7c79a9a21p-2, 0x1.ce1af0b85f3ecp-2, 0x1.d32fe7e00ebd5p-2, 0x1.d83e7258a2f3ep-2,
    0x1.dd46a04c1c4a1p-2, 0x1.e24881a7c6c26p-2, 0x1.e744261d68789p-2, 0x1.ec399d2468cc1p-2,
    0x1.f128f5faf06ecp-2, 0x1.f6123fa7028adp-2, 0x1.faf588f78f31dp-2, 0x1.ffd2e0857f497p-2,
    0x1.02552a5a5d0ffp-1, 0x1.04bdf9da926d2p-1, 0x1.0723e5c1cdf41p-1, 0x1.0986f4f573521p-1,
    0x1.0be72e4252a83p-1, 0x1.0e44985d1cc8cp-1, 0x1.109f39e2d4c96p-1, 0x1.12f719593efbdp-1,
    0x1.154c3d2f4d5eap-1, 0x1.179eabbd899a0p-1, 0x1.19ee6b467c96fp-1, 0x1.1c3b81f713c25p-1,
    0x1.1e85f5e7040d1p-1, 0x1.20cdcd192ab6ep-1, 0x1.23130d7bebf43p-1, 0x1.2555bce98f7cap-1,
    0x1.2795e1289b11bp-1, 0x1.29d37fec2b08bp-1, 0x1.2c0e9ed448e8cp-1, 0x1.2e47436e40268p-1,
    0x1.307d7334f10bep-1, 0x1.32b1339121d71p-1, 0x1.34e289d9ce1d2p-1, 0x1.37117b54747b6p-1,
    0x1.393e0d3562a1ap-1, 0x1.3b68449fffc23p-1, 0x1.3d9026a7156fbp-1, 0x1.3fb5b84d16f43p-1,
    0x1.41d8fe84672afp-1, 0x1.43f9fe2f9ce67p-1, 0x1.4618bc21c5ec2p-1, 0x1.48353d1ea88dfp-1,
    0x1.4a4f85db03ebbp-1, 0x1.4c679afccee39p-1, 0x1.4e7d811b75bb0p-1, 0x1.50913cc01686bp-1,
    0x1.52a2d265bc5abp-1, 0x1.54b2467999498p-1, 0x1.56bf9d5b3f399p-1, 0x1.58cadb5cd7989p-1,
    0x1.5ad404c359f2dp-1, 0x1.5cdb1dc6c1765p-1, 0x1.5ee02a9241676p-1, 0x1.60e32f44788d9p-1};
/* log of sum = 2^e M (M in [1, 2), in [c_j, c_j+1)) as e log 2 + (-log(1/c_j rounded)) + log1p(r),
 * r = M (1/c_j rounded) - 1 in [-2^-53, 2^-7) by one fma (exact before its rounding, 2^-61), and
 * log1p(r) by its degree-5 Taylor polynomial (the next term, r^6/6 < 2^-44.6, is the error); for
 * sum in [1, 1 + 2^-7), r = (hi - 1) + lo, so that the log of a sum next to 1 is relative to
 * itself (r^5/6 < 2^-37.6). Elsewhere the log is at least log(1 + 2^-7) > 2^-7: within 2^-37
 * relative. A sum is at least 1 (the max's term) or NaN; anything else takes the device's log. */
KP_FN kp_acc kp_log_sum(kp_sum2 s, kp_acc sum) {
  if (!(sum >= 1.0 && sum < 0x1p1023)) return log(sum);
  const int hw = KP_D_HI(sum);
  const int e = (hw >> 20) - 1023, j = (hw >> 13) & 127;
  const kp_acc mant = KP_D_FROM_HILO((hw & 0x000fffff) | 0x3ff00000, KP_D_LO(sum));
  const kp_acc r = e == 0 && j == 0 ? (s.hi - 1.0) + s.lo : fma(mant, kp_log_inv[j], -1.0);
  const kp_acc q = fma(fma(fma(fma(r, 0.2, -0.25), r, 0x1.5555555555555p-2), r, -0.5), r, 1.0);
  return fma((kp_acc)e, 0x1.62e42fefa39efp-1, kp_log_tab[j] + r * q);
}
#endif
/* The row's constants from its max and sum. */
KP_FN kp_row_k kp_row_constants(kp_acc m, kp_sum2 s) {
  kp_row_k k;
  k.m = m;
  k.sum = kp_row_sum_of(s, m);
  k.inv = 1.0 / k.sum;
  k.log_sum = kp_log_sum(s, k.sum);
  k.nan_row = !(k.sum - k.sum == 0.0);
  k.mf = (KP_C)m;
  k.inv_f = (KP_C)k.inv;
  k.log_sum_f = (KP_C)k.log_sum;
  k.log2_sum_f = (KP_C)(k.log_sum * 1.4426950408889634);
  return k;
}
