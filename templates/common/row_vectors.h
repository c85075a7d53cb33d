/* The row kernel's work on a row's vectors (templates/common/rowwise.h): loads and stores (whole
 * where the row is aligned, lane by lane at a ragged end, an element at a time for strided rows),
 * and each step over a vector's lanes -- its max, its terms of the sum (kept for the results where
 * the row sits in registers: KP_KEEP_E), its forward results, the backward's terms and results
 * (from the row's constants, row_constants.h). */
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
#if KP_ROW_TIER && KP_ROW_LOG
/* log_softmax's float32 at torch's accuracy: the max's terms of 1 counted (exact, in float) into
 * the high part, the rest 2^u, each in double into the low part (a sum of its own, which the merge
 * keeps: the high parts are whole numbers), so that log1p(sum - 1) next to 0 has the rest to ex2's
 * precision (a result next to 0 is -(sum - 1)). Terms below 2^-64 are 2^(u + 64) (exact: u has no
 * bits below 2^-17 there) times 2^-64, so that none flushes above 2^-190, where a term moves no
 * float32 result by an ulp. */
#define KP_EXP_LANE(k)                                                                \
  if ((k) < nl) {                                                                     \
    const float d_ = kp_row_c(KP_LANE(x, k)) - mf, u_ = d_ * KP_LOG2E_F;              \
    const int tiny_ = u_ < -64.0f;                                                    \
    const float e_ = KP_EX2F_FTZ(tiny_ ? u_ + 64.0f : u_);                            \
    ones += d_ == 0.0f ? 1.0f : 0.0f;                                                 \
    s->lo = fma((kp_acc)(d_ == 0.0f ? 0.0f : e_), tiny_ ? 0x1p-64 : 1.0, s->lo);      \
  }
#elif KP_ROW_TIER
/* float32 at torch's accuracy: 2^u in float (row_math.h), flushed below 2^-126 (n such terms move a
 * sum that holds the max's 1 by less than n 2^-126 of itself), each summed in double, so that a
 * thread's sum adds no error of its own however many terms it takes (a float sum would add 2^-24
 * of itself a term). */
#define KP_EXP_LANE(k) \
  if ((k) < nl) kp_sum_add(s, (kp_acc)KP_EX2F_FTZ((kp_row_c(KP_LANE(x, k)) - mf) * KP_LOG2E_F));
#elif KP_ROW_FLOAT && !KP_ROW_LOG
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
#if KP_ROW_TIER
/* float32 at torch's accuracy: the term corrected (kp_tier_exp_c), subnormal terms kept for their
 * results, rounded once to float and summed in double */
#define KP_KEEP_LANE(k)                                                          \
  if ((k) < nl) {                                                                \
    float c_;                                                                    \
    const float e_ = kp_tier_exp_c(kp_row_c(KP_LANE(x, k)) - mf, &c_);           \
    ev[k] = fma(e_, c_, e_);                                                     \
    kp_sum_add(s, (kp_acc)ev[k]);                                                \
  }
#elif KP_ROW_FLOAT
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
#if KP_ROW_FLOAT && KP_PAIR_STORE
  if (nl == KP_VEC) { /* a whole vector: 16-bit results two at a time (the prelude's kp_to_storage2) */
#pragma unroll
    for (int p = 0; p < KP_VEC / 2; ++p) y.w[p] = kp_to_storage2(ev[2 * p] * rk.inv_f, ev[2 * p + 1] * rk.inv_f);
    return y;
  }
#endif
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
#elif KP_ROW_TIER
  /* 2^u times the sum's reciprocal, then the correction: three roundings in float and ex2's error
   * (docs/accuracy.md, "The softmax family at torch's accuracy"); a NaN row has a NaN reciprocal */
  float c;
  const float t = kp_tier_exp_c(x - k.mf, &c) * k.inv_f;
  return fma(t, c, t);
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
#if KP_ROW_FLOAT && KP_PAIR_STORE
  if (nl == KP_VEC) {
#pragma unroll
    for (int p = 0; p < KP_VEC / 2; ++p)
      y.w[p] = kp_to_storage2(kp_forward_f(kp_row_c(KP_LANE(x, 2 * p)), rk),
                              kp_forward_f(kp_row_c(KP_LANE(x, 2 * p + 1)), rk));
    return y;
  }
#endif
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
#if KP_ROW_LOG && KP_ROW_TIER
/* float32 log_softmax at torch's accuracy: torch's g - e sum in float, e = 2^(y log2 e) by ex2
 * (2^-22 relative; OpenCL's exp2: 3 ulp), its u's rounding and log2 e's taken back by the
 * correction c (kp_tier_exp_c), sum the float high part of the row's double sum of g: within 2^-22
 * + 2^-23 of e |sum| and a rounding of the result, 6 2^-24 of the terms |g| + e |sum| (OpenCL's
 * exp2: 8; the backward check's 2^27, src/spec/activations.cpp). y = -inf gives e = 0 and g; where
 * e sum or the result is not finite (y beyond 88, or a NaN) the result is g - e sum as it stands,
 * as torch's. */
#define KP_GRAD_F_LANE(k)                                                                 \
  if ((k) < nl) {                                                                         \
    float c_;                                                                             \
    const float p_ = kp_tier_exp_c(kp_to_compute(KP_LANE(y, k)), &c_) * sf.hi;           \
    const float r_ = kp_to_compute(KP_LANE(g, k)) - p_;                                   \
    KP_LANE(r, k) = kp_to_storage(r_ - r_ == 0.0f ? fma(-p_, c_, r_) : r_);               \
  }
#elif KP_ROW_LOG
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
#if !KP_ROW_LOG && KP_PAIR_STORE
    if (nl == KP_VEC) {
#pragma unroll
      for (int p = 0; p < KP_VEC / 2; ++p)
        r.w[p] = kp_to_storage2(
            kp_backward_f(kp_to_compute(KP_LANE(g, 2 * p)), kp_to_compute(KP_LANE(y, 2 * p)), sf),
            kp_backward_f(kp_to_compute(KP_LANE(g, 2 * p + 1)), kp_to_compute(KP_LANE(y, 2 * p + 1)), sf));
      return r;
    }
#endif
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
