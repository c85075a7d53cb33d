/* Row kernel: the softmax family (softmax, log_softmax, softmin), forward and backward, one body for
 * CUDA and OpenCL C 1.2 through the same prelude as templates/common/elementwise.h (which lists the
 * dialect's macros). Codegen defines the knobs (KP_VEC, KP_VEC_BYTES, KP_VPT, KP_BLOCK, KP_TPR,
 * KP_BACKWARD, KP_STREAMING, KP_ROW, KP_CLUSTER, KP_STRIDED, KP_STAGE_KEEP, KP_XCHG1, KP_ENTRY) and
 * puts the prelude and the member's snippet (KP_ROW_LOG, KP_ROW_NEGATE) in front of this file.
 *
 * A row is `cols` contiguous elements; row r of each buffer starts r * ld elements into it (strided
 * rows, KP_STRIDED, softmax over a dimension that is not the last: see the kernel's entry). Forward
 * reads x (in0) and writes y (out); backward reads the incoming gradient g (in0) and the saved
 * output y (in1) and writes grad_in (out). A group of KP_TPR threads holds a row (KP_BLOCK / KP_TPR
 * rows a block: short rows share a block, reduced by warp shuffles on CUDA), and KP_ROW 4 a cluster
 * of blocks; groups loop over rows. Element e of a row belongs to thread t of its group when
 * e / KP_VEC = k KP_TPR + t (slot k), so each thread reads whole KP_VEC_BYTES vectors where the row
 * starts on one in every buffer, element by element elsewhere (ragged rows of a contiguous tensor),
 * and reads back only what it loaded.
 *
 * KP_ROW, how the row is held:
 *   1 registers  KP_VPT vectors per thread: rows of up to KP_TPR KP_VPT KP_VEC elements, read once;
 *                with KP_PREFETCH (a persistent grid: --grid grid-stride) each group loads its next
 *                row before it reduces this one, so that a block waiting at its reductions still
 *                has memory in flight
 *   2 shared     the same slots in shared memory (fewer registers for the same row)
 *   3 online     any row: one pass keeps a running max and a sum rescaled to it, a second reads the
 *                row again and writes (forward: 2 reads and a write; backward: 4 and a write)
 *   4 cluster    CUDA sm_90+: the row split into KP_CLUSTER slices, one per block of a thread-block
 *                cluster, each slice in dynamic shared memory (loaded KP_VPT vectors at a time);
 *                the max and the sums are reduced across the cluster through distributed shared
 *                memory, each warp pushing its value to every block (kp_xchg): one read per element. With KP_PREFETCH (--grid grid-stride) the clusters
 *                are persistent and pipelined: the bulk copy engine fills one stage of a block's
 *                slice while the block reduces the other (KP_CLUSTER 1: a block a row; one
 *                stage where two do not fit, refilled once the block is done with its row); float32
 *                softmax and softmin keep each term of the sum in the stage for the results
 *                (KP_STAGE_KEEP), in a third slice of shared memory; a forward below float64
 *                may take one exchange a row across the cluster, not two (KP_XCHG1)
 *   1 with KP_CLUSTER > 1 (CUDA sm_90+): registers across a cluster, the row split into slices as
 *                for 4, each block's slice in its registers (KP_VPT vectors a thread): one read
 *                an element and no shared-memory pass, for rows longer than a block holds
 *   3 with KP_CLUSTER > 1 (CUDA sm_90+): online across a cluster, a slice a block as for 4: the
 *                rows in flight are a cluster's worth fewer, so that their slices stay in L2 for
 *                the second pass (one read an element from memory, two from L2)
 *
 * Accuracy: the max (exact in the compute type), the sums and every result are in double (kp_acc)
 * and rounded once to the dtype. x - max is exact in double for float32 and narrower, the sums
 * are compensated where it matters (each addition's error carried, as the host reference does),
 * so float32 and 16-bit results are within a rounding of exact; float64's error is that of the
 * device's double exp and log (docs/accuracy.md). Edges as torch's max-subtracting formula gives
 * them: a row holding +inf or NaN, or all -inf, is NaN throughout; -inf elements of other rows give
 * 0 (log_softmax: -inf).
 *
 * Cost (KP_FAST_FP64, below float64): the forward takes the max in the compute type (fmax), a
 * table-driven exp (kp_row_exp, 6 FP64 operations) per element for the sum, and where the row sits
 * in registers (KP_KEEP_E) or in the pipelined cluster kernel's stages (KP_STAGE_KEEP) keeps each
 * term and scales it by the sum's reciprocal; elsewhere a second exp gives the result,
 * exp(x - max - log sum). A short row's reductions shuffle the max in
 * the compute type and the sums plainly (softmax, softmin), since every thread of a row pays for
 * each step. What sets a float32 forward's time on the H200 is issue slots and latency more than
 * the exp (Nsight Compute at 32768x1024: 60 instructions an element, 71 % of issue slots busy, 7
 * warps a scheduler, DRAM at 58 %; the lean exp is about 14 of the 60): the per-row
 * work every thread of a row repeats (two group reductions, 64-bit addressing, the row's
 * constants), some 250 instructions a thread a row over 8-16 elements, and the registers the kept
 * double terms take (docs/design.md). */
#ifndef KP_STRIDED
#define KP_STRIDED 0
#endif
#ifndef KP_STAGE_KEEP
#define KP_STAGE_KEEP 0
#endif
#ifndef KP_XCHG1
#define KP_XCHG1 0
#endif
#ifdef __OPENCL_VERSION__
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
/* TwoSum and the exact product error must be rounded as written. */
#pragma OPENCL FP_CONTRACT OFF
#define KP_LOCAL_PTR __local
#else
#define KP_LOCAL_PTR
#endif

typedef double kp_acc;
#define KP_ACC_NEG_INF KP_D_FROM_HILO((int)0xfff00000u, 0)
#define KP_ACC_NAN KP_D_FROM_HILO((int)0x7ff80000u, 0)

#ifndef KP_CLUSTER
#define KP_CLUSTER 1
#endif
/* A block holds a slice of its row, one of KP_CLUSTER, and reduces across its cluster. */
#define KP_SLICED (KP_ROW == 4 || KP_CLUSTER > 1)
#if KP_SLICED || !defined(KP_TPR)
#undef KP_TPR
#define KP_TPR KP_BLOCK
#endif
#define KP_RPB (KP_BLOCK / KP_TPR) /* rows a block holds at once */
#define KP_LEAN (KP_FAST_FP64 && KP_DTYPE_F32)
/* 16-bit dtypes: every result needs 2^-16 of relative precision, so the math is in float, exp by
 * the hardware's ex2 (CUDA: ex2.approx.f32, 2^-22 relative, subnormal results kept; OpenCL: exp2)
 * of (x - max) log2(e), whose float rounding costs 2^-24 |x - max| (2^-17 at the -130 below which
 * every bfloat16 result is 0), and a thread's terms summed in float (2^-24 a term, 2^-13 for 2^11
 * terms a thread: an eighth of a float16 ulp); the partial sums are merged in double. */
#define KP_ROW_FLOAT (KP_DTYPE_F16 || KP_DTYPE_BF16)
#define KP_LOG2E_F 1.44269502f
#ifdef __OPENCL_VERSION__
#define KP_EX2F(u) exp2(u)
#else
KP_FN float kp_ex2f(float u) {
  float r;
  asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(u));
  return r;
}
#define KP_EX2F(u) kp_ex2f(u)
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

#if KP_LEAN
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
/* e^t for t <= 0 or NaN (NaN out: a row holding NaN gets a NaN sum), relative error 2^-31.2: t =
 * (256 k + j) ln2/256 + r, |r| <= ln2/512, e^r by its quadratic (the next term, r^3/6, is the
 * error), 2^(j/256) from the table, 2^k added to its exponent as an integer. Below -708 the result
 * is 0, where every float32 or narrower result it feeds rounds to 0 (and 2^k would leave the
 * normal range). Exact at 0: log_softmax's log1p(sum - 1) needs the max's term to be 1. Six FP64
 * operations and the compare. */
KP_FN kp_acc kp_row_exp(kp_acc t KP_EXP_TAB_PARAM) {
  const double z = fma(t, 0x1.71547652b82fep+8, 0x1.8p52); /* n = round(256 t / ln2) in its low word */
  const double n = z - 0x1.8p52;
  const double r = fma(n, -0x1.62e42fefa39efp-9, t);
  const double p = fma(fma(0.5, r, 1.0), r, 1.0);
  const int ni = KP_D_LO(z);
  const double tj = tab[ni & 255];
  const double s = KP_D_FROM_HILO(KP_D_HI(tj) + (int)((unsigned)ni << 12), KP_D_LO(tj));
  return t < -708.0 ? 0.0 : p * s;
}
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

/* A compensated sum: hi + lo, each addition's rounding error carried in lo (Neumaier); where hi is
 * not finite (an infinite gradient), hi alone, as a plain sum gives it. */
typedef struct {
  kp_acc hi, lo;
} kp_sum2;
#define KP_SUM_COMPENSATED (KP_ROW_LOG || KP_DTYPE_F64)
#if KP_SUM_COMPENSATED
KP_FN void kp_sum_add(kp_sum2* s, kp_acc v) {
  const kp_acc t = s->hi + v;
  s->lo += fabs(s->hi) >= fabs(v) ? (s->hi - t) + v : (v - t) + s->hi;
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

/* Reductions over a row's group of KP_TPR threads, the result in every thread of the group.
 * CUDA: a butterfly of warp shuffles, then (groups wider than a warp) the warps' values through
 * shared memory, each warp reducing them in the same order; `red` holds 32 values per parity,
 * and alternating parity between rows lets a group write the next row's while a slower warp
 * still reads this one's, with one barrier a reduction. OpenCL C 1.2 has no shuffles: a tree in
 * shared memory over KP_BLOCK values, with a barrier after the read. */
#ifdef __OPENCL_VERSION__
#define KP_RED_SIZE KP_BLOCK
#define KP_TREE_REDUCE(red, t, T, OP)                                        \
  {                                                                          \
    for (unsigned s_ = KP_TPR / 2; s_ > 0; s_ >>= 1) {                       \
      if ((t & (KP_TPR - 1)) < s_) OP(red, t, t + s_);                       \
      KP_BARRIER();                                                          \
    }                                                                        \
  }
#define KP_MAX_STEP(red, a, b) red[a] = kp_max_of(red[a], red[b]);
KP_FN kp_acc kp_group_max(KP_LOCAL_PTR kp_acc* red, kp_acc v, unsigned parity) {
  const unsigned t = KP_LOCAL_ID;
  (void)parity;
  red[t] = v;
  KP_BARRIER();
  KP_TREE_REDUCE(red, t, kp_acc, KP_MAX_STEP)
  const kp_acc m = red[t & ~(unsigned)(KP_TPR - 1)];
  KP_BARRIER();
  return m;
}
/* The max in the compute type: of fmax results (never NaN), and of the online pass's (NaN kept). */
KP_FN KP_C kp_group_max_c(KP_LOCAL_PTR kp_acc* red, KP_C v, unsigned parity) {
  return (KP_C)kp_group_max(red, (kp_acc)v, parity);
}
#define kp_group_max_nan kp_group_max_c /* the tree's max keeps NaN */
KP_FN kp_sum2 kp_group_sum(KP_LOCAL_PTR kp_acc* hi, KP_LOCAL_PTR kp_acc* lo, kp_sum2 v, unsigned parity) {
  const unsigned t = KP_LOCAL_ID;
  (void)parity;
  hi[t] = v.hi;
  lo[t] = v.lo;
  KP_BARRIER();
  for (unsigned s = KP_TPR / 2; s > 0; s >>= 1) {
    if ((t & (KP_TPR - 1)) < s) {
      kp_sum2 a, b;
      a.hi = hi[t];
      a.lo = lo[t];
      b.hi = hi[t + s];
      b.lo = lo[t + s];
      a = kp_sum_merge(a, b);
      hi[t] = a.hi;
      lo[t] = a.lo;
    }
    KP_BARRIER();
  }
  kp_sum2 r;
  r.hi = hi[t & ~(unsigned)(KP_TPR - 1)];
  r.lo = lo[t & ~(unsigned)(KP_TPR - 1)];
  KP_BARRIER();
  return r;
}
#else
#define KP_RED_SIZE 64
#define KP_WARP_SPAN (KP_TPR < 32 ? KP_TPR : 32)
KP_FN kp_acc kp_shfl(kp_acc v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
KP_FN kp_sum2 kp_shfl2(kp_sum2 v, int o) {
  kp_sum2 r;
  r.hi = kp_shfl(v.hi, o);
  r.lo = KP_SUM_COMPENSATED ? kp_shfl(v.lo, o) : 0.0;
  return r;
}
/* The group's max, shuffled in the compute type (one shuffle a step for float where a double takes
 * two), by MAX: fmax for fmax results (never NaN), kp_max_c for the online pass's (NaN kept). */
KP_FN KP_C kp_shfl_c(KP_C v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
#if KP_TPR > 32
#define KP_GROUP_MAX_ACROSS_WARPS(MAX)                                                                    \
  const unsigned lane = KP_LOCAL_ID % 32, w = KP_LOCAL_ID / 32;                                           \
  red += parity * 32;                                                                                     \
  if (lane == 0) red[w] = (kp_acc)v;                                                                      \
  KP_BARRIER();                                                                                           \
  v = lane < KP_TPR / 32 ? (KP_C)red[(w & ~(unsigned)(KP_TPR / 32 - 1)) + lane] : (KP_C)KP_ACC_NEG_INF; \
  _Pragma("unroll") for (int o = 16; o > 0; o >>= 1) v = MAX(v, kp_shfl_c(v, o));
#else
#define KP_GROUP_MAX_ACROSS_WARPS(MAX) \
  (void)red;                           \
  (void)parity;
#endif
#define KP_GROUP_MAX(name, MAX)                                                             \
  KP_FN KP_C name(kp_acc* red, KP_C v, unsigned parity) {                                   \
    _Pragma("unroll") for (int o = KP_WARP_SPAN / 2; o > 0; o >>= 1) v = MAX(v, kp_shfl_c(v, o)); \
    KP_GROUP_MAX_ACROSS_WARPS(MAX)                                                          \
    return v;                                                                               \
  }
KP_GROUP_MAX(kp_group_max_c, KP_FMAX_C)
KP_GROUP_MAX(kp_group_max_nan, kp_max_c)
KP_FN kp_sum2 kp_group_sum(kp_acc* hi, kp_acc* lo, kp_sum2 v, unsigned parity) {
#pragma unroll
  for (int o = KP_WARP_SPAN / 2; o > 0; o >>= 1) v = kp_sum_merge(v, kp_shfl2(v, o));
#if KP_TPR > 32
  const unsigned lane = KP_LOCAL_ID % 32, w = KP_LOCAL_ID / 32;
  hi += parity * 32;
  lo += parity * 32;
  if (lane == 0) {
    hi[w] = v.hi;
    lo[w] = v.lo;
  }
  KP_BARRIER();
  const unsigned at = (w & ~(unsigned)(KP_TPR / 32 - 1)) + lane;
  v.hi = lane < KP_TPR / 32 ? hi[at] : 0.0;
  v.lo = lane < KP_TPR / 32 ? lo[at] : 0.0;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = kp_sum_merge(v, kp_shfl2(v, o));
#else
  (void)hi;
  (void)lo;
  (void)parity;
#endif
  return v;
}
#endif

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
/* The lanes of vector vi inside a row of len elements (0 past its end). */
KP_FN int kp_lanes(unsigned vi, unsigned len) {
  const unsigned e = vi * KP_VEC;
  return e >= len ? 0 : len - e >= KP_VEC ? KP_VEC : (int)(len - e);
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
 * float (log_softmax: in the compensated double sum, whose low part log1p needs). */
#if KP_ROW_FLOAT && !KP_ROW_LOG
#define KP_EXP_LANE(k) \
  if ((k) < nl) *sf += KP_EX2F((kp_row_c(KP_LANE(x, k)) - mf) * KP_LOG2E_F);
#elif KP_ROW_FLOAT
#define KP_EXP_LANE(k) \
  if ((k) < nl) kp_sum_add(s, (kp_acc)KP_EX2F((kp_row_c(KP_LANE(x, k)) - mf) * KP_LOG2E_F));
#else
#define KP_EXP_LANE(k) \
  if ((k) < nl) kp_sum_add(s, kp_term(kp_row_in(KP_LANE(x, k)), m KP_EXP_TAB_ARG));
#endif
KP_FN void kp_vec_exp_sum_n(kp_vec x, int nl, kp_acc m, KP_C mf, kp_sum2* s, KP_C* sf KP_EXP_TAB_PARAM) {
  (void)m;
  (void)mf;
  (void)s;
  (void)sf;
  KP_FOR_LANES(KP_EXP_LANE)
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
 * float. A NaN sum (a NaN row) makes the reciprocal, and so every result, NaN. */
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
    ev[k] = KP_EX2F((kp_row_c(KP_LANE(x, k)) - mf) * KP_LOG2E_F);               \
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
  const KP_C y = KP_EX2F(fma(x - k.mf, KP_LOG2E_F, -k.log2_sum_f)); /* 2^-17 relative at -130 */
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
KP_FN kp_acc kp_backward_of(kp_acc g, kp_acc y, kp_sum2 s) {
#if KP_ROW_LOG
  return g - exp(y) * kp_sum_value(s); /* the device library's exp: g and exp(y) sum(g) may cancel */
#elif KP_ROW_NEGATE
  return y * (s.hi - s.hi == 0.0 ? (s.hi - g) + s.lo : s.hi - g);
#else
  return y * (s.hi - s.hi == 0.0 ? (g - s.hi) - s.lo : g - s.hi);
#endif
}
#define KP_GRAD_LANE(k) \
  if ((k) < nl) KP_LANE(r, k) = kp_row_store(kp_backward_of(kp_row_value(KP_LANE(g, k)), kp_row_value(KP_LANE(y, k)), s));
KP_FN kp_vec kp_vec_backward_n(kp_vec g, kp_vec y, int nl, kp_sum2 s) {
  kp_vec r = g;
  KP_FOR_LANES(KP_GRAD_LANE)
  return r;
}
KP_FN kp_vec kp_vec_backward(kp_vec g, kp_vec y, int nl, kp_sum2 s) {
  return KP_WHOLE(nl) ? kp_vec_backward_n(g, y, KP_VEC, s) : kp_vec_backward_n(g, y, nl, s);
}

/* The finished forward sum: NaN where the row's max is not finite (+inf or NaN: an inf - inf or
 * NaN term; -inf: every element -inf, -inf - -inf), whatever the terms gave. */
KP_FN kp_acc kp_row_sum_of(kp_sum2 s, kp_acc m) { return m - m == 0.0 ? kp_sum_value(s) : KP_ACC_NAN; }
/* log of the finished sum: near 1 (one element dominates) as log1p of sum - 1, which the sum's
 * low part keeps exact, so that log_softmax's results near 0 keep their precision. */
KP_FN kp_acc kp_log_sum(kp_sum2 s, kp_acc sum) {
  return sum < 2.0 && sum >= 1.0 ? log1p((s.hi - 1.0) + s.lo) : log(sum);
}
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

#if KP_SLICED && !defined(__OPENCL_VERSION__)
/* Shared-memory addresses as PTX's 32-bit shared-window operands, and an mbarrier's init (one
 * arrival a phase; the fence makes it visible to the engine and to the cluster's other blocks). */
KP_FN unsigned kp_smem_u32(const void* p) {
  unsigned a;
  asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
KP_FN void kp_bar_init(unsigned bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n\tfence.mbarrier_init.release.cluster;" ::"r"(bar) : "memory");
}
#endif
#if KP_ROW == 4 && KP_CLUSTER == 1
/* One block a row: its row in dynamic shared memory, no cluster to reduce across. */
KP_FN unsigned kp_cluster_rank(void) { return 0; }
#define KP_ROW_KERNEL KP_KERNEL
#elif KP_CLUSTER > 1
/* Thread-block clusters (PTX ISA 8.0, sm_90): this block's rank, and the cluster-wide barrier
 * (release/acquire), which the kernel takes only at its start (the exchange's barriers are
 * initialized) and its end (no block leaves while another may still write to its shared memory). */
KP_FN unsigned kp_cluster_rank(void) {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
KP_FN void kp_cluster_sync(void) {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
KP_FN unsigned kp_mapa(unsigned a, unsigned rank) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
  return r;
}
#define KP_XCHG (KP_ROW == 4)
#if !KP_XCHG
/* Registers and online across a cluster: the group's value, then thread 0 of each block publishes
 * it in its slot (the slots alternate between rows by parity, so that a block may publish the next
 * row's while another still reads this one's), and after the cluster barrier lane q of every warp
 * loads block q's and the warp reduces them by shuffles, in the same order in every warp and
 * block. No barrier is needed at the end of a row: a block writes a slot again only after a
 * cluster barrier that every reader of its old value has passed. These kernels share an SM with
 * other blocks, which sleep through the barriers; the exchange below has every warp poll its
 * mbarrier instead, which took issue slots from them (4096x393216 bfloat16 backward, online
 * across clusters of 16: 35 % of copy against 53). */
KP_FN kp_acc kp_cluster_load(const kp_acc* local, unsigned rank) {
  kp_acc v;
  asm volatile("ld.shared::cluster.f64 %0, [%1];" : "=d"(v) : "r"(kp_mapa(kp_smem_u32(local), rank)) : "memory");
  return v;
}
KP_FN kp_acc kp_cluster_max(kp_acc* slot, kp_acc v) {
  if (KP_LOCAL_ID == 0) *slot = v;
  kp_cluster_sync();
  const unsigned lane = KP_LOCAL_ID % 32;
  v = lane < KP_CLUSTER ? kp_cluster_load(slot, lane) : KP_ACC_NEG_INF;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = kp_max_of(v, kp_shfl(v, o));
  return v;
}
KP_FN kp_sum2 kp_cluster_sum(kp_acc* slot, kp_sum2 s) {
  if (KP_LOCAL_ID == 0) {
    slot[0] = s.hi;
    slot[1] = s.lo;
  }
  kp_cluster_sync();
  const unsigned lane = KP_LOCAL_ID % 32;
  s.hi = lane < KP_CLUSTER ? kp_cluster_load(&slot[0], lane) : 0.0;
  s.lo = lane < KP_CLUSTER ? kp_cluster_load(&slot[1], lane) : 0.0;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s = kp_sum_merge(s, kp_shfl2(s, o));
  return s;
}
#else
/* The cluster kernel's max and sums across its cluster, with no block or cluster barrier (it is
 * alone on its SM: a waiting warp takes no other block's issue slots): each warp reduces its
 * lanes by shuffles, then lane q of every warp pushes the warp's value into block q's exchange
 * buffer (st.async into distributed shared memory, completing its bytes on block q's mbarrier),
 * and every block waits on its own mbarrier until all KP_XN values (each warp of each block) are
 * in; each warp then reduces the buffer in the same order, so every thread of every block ends
 * with the same bits. A barrier of 256 or 1024 threads in every reduction, and the cluster barrier
 * after it, left the SM idle: a block waits for its slowest warp, a cluster for its slowest block,
 * twice a row (Nsight Compute on the pipelined kernel, 4096x393216 float32: no eligible warp in
 * 49 % of cycles, DRAM at 31 %). Here a warp waits only for the values it needs. Exchanges
 * alternate between two buffers (step parity), each with its mbarrier: a block writes a buffer
 * again two exchanges later, after every block's values of the exchange between, which each block
 * sent only once it had read this buffer. Thread 0 arms its mbarrier with the bytes due, once per
 * phase; values that land before it does leave the phase open (its own arrival is still due). */
#define KP_XN ((KP_BLOCK / 32) * KP_CLUSTER) /* values an exchange gathers in each block */
/* doubles a buffer: KP_XN (hi, lo) pairs, and KP_XN maxima where a row takes one exchange */
#define KP_XSTRIDE ((2 + KP_XCHG1) * KP_XN)
typedef struct {
  KP_LOCAL_PTR kp_acc* buf; /* two buffers of KP_XSTRIDE doubles */
  unsigned bar;             /* the first of two mbarriers */
  unsigned rank;
  unsigned step; /* exchanges so far */
} kp_xchg;
KP_FN void kp_xchg_wait(unsigned bar, unsigned phase) {
  unsigned done = 0;
  while (!done)
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, "
        "p; }"
        : "=r"(done)
        : "r"(bar), "r"(phase)
        : "memory");
}
/* Starts an exchange of `bytes` a value: arms this block's barrier, returns the buffer and the
 * phase to wait for, and the slot this warp's value takes in every block. */
KP_FN KP_LOCAL_PTR kp_acc* kp_xchg_begin(kp_xchg* x, unsigned bytes, unsigned* bar, unsigned* phase, unsigned* slot) {
  const unsigned b = x->step & 1u;
  *phase = (x->step >> 1) & 1u;
  ++x->step;
  *bar = x->bar + 8u * b;
  *slot = (KP_LOCAL_ID / 32) * KP_CLUSTER + x->rank;
  if (KP_LOCAL_ID == 0)
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(*bar), "r"(KP_XN * bytes) : "memory");
  return x->buf + b * KP_XSTRIDE;
}
/* The exchanged (hi, lo) pair i of a buffer, and the empty sum. */
KP_FN kp_sum2 kp_xpair(KP_LOCAL_PTR const kp_acc* buf, unsigned i) {
  kp_sum2 v;
  v.hi = buf[2 * i];
  v.lo = buf[2 * i + 1];
  return v;
}
KP_FN kp_sum2 kp_sum_zero(void) {
  kp_sum2 z;
  z.hi = 0.0;
  z.lo = 0.0;
  return z;
}
KP_FN kp_acc kp_xchg_max(kp_xchg* x, kp_acc v, int keep_nan) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const kp_acc u = kp_shfl(v, o);
    v = keep_nan ? kp_max_of(v, u) : fmax(v, u);
  }
  unsigned bar, phase, slot;
  KP_LOCAL_PTR kp_acc* buf = kp_xchg_begin(x, 8u, &bar, &phase, &slot);
  const unsigned lane = KP_LOCAL_ID % 32;
  if (lane < KP_CLUSTER)
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.f64 [%0], %1, [%2];" ::"r"(
                     kp_mapa(kp_smem_u32(&buf[slot]), lane)),
                 "d"(v), "r"(kp_mapa(bar, lane))
                 : "memory");
  kp_xchg_wait(bar, phase);
  kp_acc r = KP_ACC_NEG_INF;
  for (unsigned i = lane; i < KP_XN; i += 32) r = keep_nan ? kp_max_of(r, buf[i]) : fmax(r, buf[i]);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const kp_acc u = kp_shfl(r, o);
    r = keep_nan ? kp_max_of(r, u) : fmax(r, u);
  }
  return r;
}
KP_FN kp_sum2 kp_xchg_sum(kp_xchg* x, kp_sum2 s) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s = kp_sum_merge(s, kp_shfl2(s, o));
  unsigned bar, phase, slot;
  KP_LOCAL_PTR kp_acc* buf = kp_xchg_begin(x, 16u, &bar, &phase, &slot);
  const unsigned lane = KP_LOCAL_ID % 32;
  if (lane < KP_CLUSTER)
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f64 [%0], {%1, %2}, [%3];" ::"r"(
                     kp_mapa(kp_smem_u32(&buf[2 * slot]), lane)),
                 "d"(s.hi), "d"(s.lo), "r"(kp_mapa(bar, lane))
                 : "memory");
  kp_xchg_wait(bar, phase);
  kp_sum2 r = kp_sum_zero();
  for (unsigned i = lane; i < KP_XN; i += 32) r = kp_sum_merge(r, kp_xpair(buf, i));
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) r = kp_sum_merge(r, kp_shfl2(r, o));
  return r;
}
#if KP_XCHG1
/* A row's max and sum in one exchange (KP_XCHG1, where codegen's row_exchanges_once asks for it:
 * the pipelined cluster kernel's forward below float64): each warp sends its own max m (fmax over its lanes; -inf
 * where it has no number) with the sum of its terms exp(x - m); each warp then takes the row's max
 * M over every warp's, and the sum of every warp's sum times exp(m - M) (a warp with no terms adds
 * nothing, so that -inf - M never meets a 0 sum), in the same order in every warp and block. The
 * results are then the max-subtracting formula's with M and that sum (float32 softmax's kept terms,
 * relative to their warp's m, scaled by exp(m - M) / sum). That saves the max's exchange, the
 * cluster-wide wait a row for the slowest warp, for an exp of each warp's value (kp_term: 2^-31.2
 * by kp_row_exp in float32, the device's exp in 16-bit rows, against their 1 ulp bound; the max's
 * own warp scales by exactly 1, so log_softmax's sum - 1 keeps its low part). The buffer holds the
 * (hi, lo) pairs, then the maxima (KP_XSTRIDE). */
KP_FN kp_acc kp_xchg_maxsum(kp_xchg* x, kp_acc m, kp_sum2* s KP_EXP_TAB_PARAM) {
  kp_sum2 v = *s;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = kp_sum_merge(v, kp_shfl2(v, o));
  unsigned bar, phase, slot;
  KP_LOCAL_PTR kp_acc* buf = kp_xchg_begin(x, 24u, &bar, &phase, &slot);
  const unsigned lane = KP_LOCAL_ID % 32;
  if (lane < KP_CLUSTER) {
    const unsigned to = kp_mapa(bar, lane);
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f64 [%0], {%1, %2}, [%3];" ::"r"(
                     kp_mapa(kp_smem_u32(&buf[2 * slot]), lane)),
                 "d"(v.hi), "d"(v.lo), "r"(to)
                 : "memory");
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.f64 [%0], %1, [%2];" ::"r"(
                     kp_mapa(kp_smem_u32(&buf[2 * KP_XN + slot]), lane)),
                 "d"(m), "r"(to)
                 : "memory");
  }
  kp_xchg_wait(bar, phase);
  kp_acc mx = KP_ACC_NEG_INF;
  for (unsigned i = lane; i < KP_XN; i += 32) mx = fmax(mx, buf[2 * KP_XN + i]);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) mx = fmax(mx, kp_shfl(mx, o));
  kp_sum2 r = kp_sum_zero();
  for (unsigned i = lane; i < KP_XN; i += 32) {
    kp_sum2 w = kp_xpair(buf, i);
    if (w.hi != 0.0) { /* NaN too */
      const kp_acc f = kp_term(buf[2 * KP_XN + i], mx KP_EXP_TAB_ARG);
      w.hi *= f;
      w.lo *= f;
      r = kp_sum_merge(r, w);
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) r = kp_sum_merge(r, kp_shfl2(r, o));
  *s = r;
  return mx;
}
#endif
#endif
#define KP_ROW_KERNEL KP_KERNEL __cluster_dims__(KP_CLUSTER, 1, 1)
#else
#define KP_ROW_KERNEL KP_KERNEL
#endif
/* The row's max (fmax; _NAN: NaN kept, the online pass) and sum over its group, or its cluster. */
#if KP_CLUSTER > 1 && KP_XCHG
#define KP_ROW_MAX(mc) kp_xchg_max(&xchg, (kp_acc)(mc), 0)
#define KP_ROW_MAX_NAN(mc) kp_xchg_max(&xchg, (kp_acc)(mc), 1)
#define KP_ROW_SUM(s) kp_xchg_sum(&xchg, s)
#elif KP_CLUSTER > 1
#define KP_ROW_MAX(mc) kp_cluster_max(&cl_slot[parity], (kp_acc)kp_group_max_c(red_mx, mc, parity))
#define KP_ROW_MAX_NAN(mc) kp_cluster_max(&cl_slot[parity], (kp_acc)kp_group_max_nan(red_mx, mc, parity))
#define KP_ROW_SUM(s) kp_cluster_sum(&cl_slot[2 + 2 * parity], kp_group_sum(red_hi, red_lo, s, parity))
#else
#define KP_ROW_MAX(mc) (kp_acc)kp_group_max_c(red_mx, mc, parity)
#define KP_ROW_MAX_NAN(mc) (kp_acc)kp_group_max_nan(red_mx, mc, parity)
#define KP_ROW_SUM(s) kp_group_sum(red_hi, red_lo, s, parity)
#endif

#if KP_ROW == 3
/* The online kernel's chunks of a row of len elements: KP_VPT vectors a thread. Its second pass
 * takes them last to first, so that what the first pass read last, the likeliest still in L2, is
 * read first; split across a cluster (a slice a block), the slices of the rows in flight fit in
 * L2 and the second pass reads them there, not from memory. */
KP_FN unsigned kp_online_chunks(unsigned len) {
  return (len + KP_VEC * KP_TPR * KP_VPT - 1) / (KP_VEC * KP_TPR * KP_VPT);
}
#endif

/* Where the slots live: registers (an array the compiler keeps in registers: every index is a
 * constant after unrolling), shared memory (KP_ROW 2), or nowhere (online reads again). */
#if KP_ROW == 1
#define KP_HOLD_DECL(name) kp_vec name[KP_VPT];
#define KP_HOLD_PUT(name, j, v) name[j] = (v)
#define KP_HOLD_GET(name, j, v) (v) = name[j]
#elif KP_ROW == 2
#define KP_HOLD_DECL(name) KP_SHARED kp_raw name[KP_BLOCK * KP_VPT];
#define KP_HOLD_PUT(name, j, v) name[(j) * KP_BLOCK + KP_LOCAL_ID] = KP_VEC_TO_RAW(v)
#define KP_HOLD_GET(name, j, v) KP_SET_RAW(v, name[(j) * KP_BLOCK + KP_LOCAL_ID])
#endif

#ifndef KP_PREFETCH
#define KP_PREFETCH 0
#endif
#if KP_ROW == 4 && KP_PREFETCH
/* The pipelined cluster kernel (--row cluster --grid grid-stride): persistent clusters, each
 * block's slice of a row in one of two stages of dynamic shared memory, filled by the bulk copy
 * engine (cp.async.bulk, PTX ISA 8.0, sm_90) and completed on the stage's mbarrier, with no thread
 * waiting on it. A block reduces and writes row i from one stage while the engine reads row i + 1
 * into the other, so that memory stays busy through the reductions: one read
 * an element, and reads in flight all the time. The engine copies 16-byte multiples from 16-byte
 * aligned addresses; the rest of a slice (a ragged tail, or a misaligned row whole) is loaded by
 * the threads when its row comes up. */
#define KP_STAGE_ALIGN (KP_VEC_BYTES > 16 ? KP_VEC_BYTES : 16)
#define KP_BULK_CHUNK 8192u /* bytes a copy: a stage's copies are spread over warp 0's lanes */
/* The dynamic shared memory this launch gave the block: one stage or two (and the kept terms). */
KP_FN unsigned kp_dynamic_smem(void) {
  unsigned r;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r));
  return r;
}
KP_FN void kp_bar_wait(unsigned bar, unsigned parity) {
  unsigned done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
}
/* The bytes of a slice of len elements at p that the engine copies: a multiple of 16 where p is
 * 16-byte aligned, else none. */
KP_FN unsigned kp_bulk_bytes(KP_GLOBAL const KP_T* p, unsigned len) {
  return ((unsigned long long)p & 15u) == 0 ? (len * (unsigned)sizeof(KP_T)) & ~15u : 0u;
}
/* Warp 0 starts the copies of a stage (backward: g and y) and arms its barrier with their bytes;
 * with nothing to copy the barrier completes at once. The proxy fence orders the threads' earlier
 * reads and writes of the stage before the engine's writes. */
KP_FN void kp_stage_issue(unsigned bar, KP_LOCAL_PTR kp_raw* d0, KP_GLOBAL const KP_T* s0, KP_LOCAL_PTR kp_raw* d1,
                          KP_GLOBAL const KP_T* s1, unsigned len) {
  const unsigned lane = KP_LOCAL_ID;
  const unsigned n0 = kp_bulk_bytes(s0, len);
#if KP_BACKWARD
  const unsigned n1 = kp_bulk_bytes(s1, len);
#else
  const unsigned n1 = 0;
  (void)d1;
  (void)s1;
#endif
  if (lane == 0) {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(n0 + n1) : "memory");
  }
  __syncwarp();
  const unsigned c0 = (n0 + KP_BULK_CHUNK - 1) / KP_BULK_CHUNK, c1 = (n1 + KP_BULK_CHUNK - 1) / KP_BULK_CHUNK;
  for (unsigned c = lane; c < c0 + c1; c += 32) {
    const int second = c >= c0;
    const unsigned off = (second ? c - c0 : c) * KP_BULK_CHUNK, n = (second ? n1 : n0) - off;
    const unsigned char* src = (const unsigned char*)(second ? s1 : s0) + off;
    const unsigned dst = kp_smem_u32((second ? d1 : d0)) + off;
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                 "l"(src), "r"(n < KP_BULK_CHUNK ? n : KP_BULK_CHUNK), "r"(bar)
                 : "memory");
  }
}
/* A pass over this thread's vectors of a stage (t, t + KP_BLOCK, ... below slice_vecs), KP_VPT at
 * a time: the chunk's vectors read first (KP_VPT in flight), then STEP(x, vi, nl) on each, with nl
 * the constant KP_VEC where every vector of the chunk is whole (the lane tests fold away: issue
 * slots are what the pass costs), else each vector's own lanes (0 past the slice). */
#define KP_STAGE_PASS(stage, STEP)                                                           \
  for (unsigned v0_ = t; v0_ < slice_vecs; v0_ += KP_VPT * KP_BLOCK) {                       \
    kp_vec xs_[KP_VPT];                                                                      \
    _Pragma("unroll") for (int j_ = 0; j_ < KP_VPT; ++j_) {                                  \
      const unsigned vi_ = v0_ + (unsigned)j_ * KP_BLOCK;                                    \
      if (vi_ < slice_vecs) KP_SET_RAW(xs_[j_], (stage)[vi_]);                               \
    }                                                                                        \
    if ((v0_ + (KP_VPT - 1) * KP_BLOCK + 1) * KP_VEC <= len) {                               \
      _Pragma("unroll") for (int j_ = 0; j_ < KP_VPT; ++j_) STEP(xs_[j_], v0_ + (unsigned)j_ * KP_BLOCK, KP_VEC) \
    } else {                                                                                 \
      _Pragma("unroll") for (int j_ = 0; j_ < KP_VPT; ++j_) {                                \
        const unsigned vi_ = v0_ + (unsigned)j_ * KP_BLOCK;                                  \
        STEP(xs_[j_], vi_, kp_lanes(vi_, len))                                               \
      }                                                                                      \
    }                                                                                        \
  }
/* The same over backward's two stages: STEP(g, y, vi, nl). */
#define KP_STAGE_PASS2(stage_g, stage_y, STEP)                                               \
  for (unsigned v0_ = t; v0_ < slice_vecs; v0_ += KP_VPT * KP_BLOCK) {                       \
    kp_vec gs_[KP_VPT], ys_[KP_VPT];                                                         \
    _Pragma("unroll") for (int j_ = 0; j_ < KP_VPT; ++j_) {                                  \
      const unsigned vi_ = v0_ + (unsigned)j_ * KP_BLOCK;                                    \
      if (vi_ < slice_vecs) {                                                                \
        KP_SET_RAW(gs_[j_], (stage_g)[vi_]);                                                 \
        KP_SET_RAW(ys_[j_], (stage_y)[vi_]);                                                 \
      }                                                                                      \
    }                                                                                        \
    if ((v0_ + (KP_VPT - 1) * KP_BLOCK + 1) * KP_VEC <= len) {                               \
      _Pragma("unroll") for (int j_ = 0; j_ < KP_VPT; ++j_) STEP(gs_[j_], ys_[j_], v0_ + (unsigned)j_ * KP_BLOCK, KP_VEC) \
    } else {                                                                                 \
      _Pragma("unroll") for (int j_ = 0; j_ < KP_VPT; ++j_) {                                \
        const unsigned vi_ = v0_ + (unsigned)j_ * KP_BLOCK;                                  \
        STEP(gs_[j_], ys_[j_], vi_, kp_lanes(vi_, len))                                      \
      }                                                                                      \
    }                                                                                        \
  }
/* KP_STAGE_KEEP (codegen's row_keeps_stage_terms: float32 softmax and softmin forward): the sum's
 * pass keeps each term e = exp(x - max), in double, where the result needs it, so that the results
 * are e times the sum's reciprocal, as the registers kernel's KP_KEEP_E makes them: one exp an
 * element, not two, and one conversion to double, not two. The H200's FP64 units convert 16
 * values a cycle an SM against 64 fused multiply-adds, so the second exp and its conversion cost
 * the forward more than its instruction count says. e's high word takes x's place in the stage
 * (each thread rewrites only its own vectors), its low word goes to one more part of the slice's
 * size after the stage or stages (kp_lo); row_slice_bytes counts it. */
#if KP_STAGE_KEEP
#define KP_STAGE_KEEP_LANE(k)                                         \
  if ((k) < nl) {                                                     \
    const kp_acc e_ = kp_term(kp_row_in(KP_LANE(x, k)), m KP_EXP_TAB_ARG); \
    kp_sum_add(s, e_);                                                \
    KP_LANE(h, k) = KP_AS_FLOAT(KP_D_HI(e_));                         \
    KP_LANE(l, k) = KP_AS_FLOAT(KP_D_LO(e_));                         \
  }
KP_FN void kp_vec_exp_stage_n(kp_vec x, int nl, kp_acc m, kp_sum2* s, KP_LOCAL_PTR kp_raw* hi,
                              KP_LOCAL_PTR kp_raw* lo KP_EXP_TAB_PARAM) {
  if (nl == 0) return; /* a vector past the slice (KP_STAGE_PASS's last chunk): no slot to write */
  kp_vec h = x, l = x;
  KP_FOR_LANES(KP_STAGE_KEEP_LANE)
  *hi = KP_VEC_TO_RAW(h);
  *lo = KP_VEC_TO_RAW(l);
}
#define KP_STAGE_SCALE_LANE(k) \
  if ((k) < nl) KP_LANE(y, k) = kp_row_store(KP_D_FROM_HILO(KP_AS_INT(KP_LANE(h, k)), KP_AS_INT(KP_LANE(l, k))) * inv);
KP_FN kp_vec kp_vec_scale_stage_n(kp_vec h, kp_raw lo, int nl, kp_acc inv) {
  kp_vec l, y = h;
  KP_SET_RAW(l, lo);
  KP_FOR_LANES(KP_STAGE_SCALE_LANE)
  return y;
}
#endif
/* What the engine left of a slice (from element kp_bulk_bytes / size on), by the threads. */
KP_FN void kp_stage_rest(KP_LOCAL_PTR kp_raw* d, KP_GLOBAL const KP_T* s, unsigned len) {
  for (unsigned e = kp_bulk_bytes(s, len) / (unsigned)sizeof(KP_T) + KP_LOCAL_ID; e < len; e += KP_BLOCK)
    ((KP_LOCAL_PTR KP_T*)d)[e] = KP_LD(s + e);
}
#endif
#if KP_PREFETCH && KP_ROW != 4
/* The vectors of row block rb's row for group `sub` (nothing past the last row), with the input's
 * own alignment: what the loop's iteration for rb finds in v0 (and v1, backward's y). */
KP_FN void kp_row_fetch(kp_vec* v0, kp_vec* v1, KP_GLOBAL const KP_T* in0, KP_GLOBAL const KP_T* in1, kp_u64 rb,
                        unsigned sub, unsigned t, kp_u64 rows, kp_u64 cols, kp_u64 off0, kp_u64 off1, kp_u64 ld0,
                        kp_u64 ld1) {
  const kp_u64 r = rb * KP_RPB + sub;
  const unsigned len = r < rows ? (unsigned)cols : 0u;
  const kp_u64 rr = r < rows ? r : rows - 1;
  const kp_u64 a_at = off0 + rr * ld0;
  KP_GLOBAL const KP_T* a = in0 + a_at;
#if KP_BACKWARD
  const kp_u64 b_at = off1 + rr * ld1;
  KP_GLOBAL const KP_T* b = in1 + b_at;
  const kp_access acc = KP_MISALIGNMENT(a, a_at) == 0 && KP_MISALIGNMENT(b, b_at) == 0;
#else
  const kp_access acc = KP_MISALIGNMENT(a, a_at) == 0;
  (void)in1;
  (void)off1;
  (void)ld1;
  (void)v1;
#endif
#pragma unroll
  for (int j = 0; j < KP_VPT; ++j) {
    kp_row_load(&v0[j], a, (unsigned)j * KP_TPR + t, len, acc);
#if KP_BACKWARD
    kp_row_load(&v1[j], b, (unsigned)j * KP_TPR + t, len, acc);
#endif
  }
}
#endif

/* Strided rows (KP_STRIDED): each buffer is [outer, cols, inner] with its own pitch ld between
 * outer blocks; row r is (r / inner, r % inner), its elements inner apart. A thread a row (KP_TPR
 * 1, vectors of one element): a warp's lanes hold neighbouring rows, so each of its loads is one
 * contiguous run of the buffer. */
#if KP_STRIDED
#if KP_VEC != 1 || KP_TPR != 1 || KP_PREFETCH || KP_SLICED || KP_ROW == 2
#error "strided rows: a thread a row, vectors of one element, registers or online, one-shot grid"
#endif
#define KP_STRIDED_PARAM , kp_u64 inner
#define KP_ROW_AT(r, ld) ((r) / inner * (ld) + (r) % inner)
#else
#define KP_STRIDED_PARAM
#define KP_ROW_AT(r, ld) ((r) * (ld))
#endif
KP_ROW_KERNEL KP_ENTRY(KP_BUFFER(KP_T, out), KP_BUFFER(const KP_T, in0), KP_BUFFER(const KP_T, in1), kp_u64 rows,
                       kp_u64 cols, kp_u64 ld_out, kp_u64 ld_in0, kp_u64 ld_in1 KP_STRIDED_PARAM) {
  KP_SHARED kp_acc red_hi[KP_RED_SIZE];
  KP_SHARED kp_acc red_lo[KP_RED_SIZE];
#ifdef __OPENCL_VERSION__
#define red_mx red_hi /* the tree's barrier after its read frees it for the next reduction */
#else
  __shared__ kp_acc red_mx[KP_RED_SIZE];
#endif
  KP_EXP_TAB_DECL
#if KP_ROW == 1 || KP_ROW == 2
  KP_HOLD_DECL(hold0)
#if KP_BACKWARD
  KP_HOLD_DECL(hold1)
#endif
#endif
  const unsigned t = KP_LOCAL_ID % KP_TPR, sub = KP_LOCAL_ID / KP_TPR;
#if KP_SLICED
#if KP_ROW == 4
  extern __shared__ __attribute__((aligned(16))) kp_raw kp_slice[];
#endif
  const unsigned rank = kp_cluster_rank();
#if KP_CLUSTER > 1 && !KP_XCHG
  __shared__ kp_acc cl_slot[6]; /* by parity: the max, and the sum's hi and lo */
#elif KP_CLUSTER > 1
  __shared__ __attribute__((aligned(16))) kp_acc kp_xbuf[2 * KP_XSTRIDE];
  __shared__ unsigned long long kp_xbar[2];
  kp_xchg xchg;
  xchg.buf = kp_xbuf;
  xchg.bar = kp_smem_u32(&kp_xbar[0]);
  xchg.rank = rank;
  xchg.step = 0;
  if (KP_LOCAL_ID == 0) {
    kp_bar_init(xchg.bar);
    kp_bar_init(xchg.bar + 8);
  }
  kp_cluster_sync(); /* every block's barriers initialized before any value is pushed to them */
#endif
  const kp_u64 first = KP_GROUP_X / KP_CLUSTER, step = KP_NUM_GROUPS_X / KP_CLUSTER;
  /* Slices of whole vectors: this block's elements [lo, lo + slice_len) of the row. */
  const unsigned slice_vecs = (unsigned)((cols + KP_VEC - 1) / KP_VEC + KP_CLUSTER - 1) / KP_CLUSTER;
  const kp_u64 lo = (kp_u64)rank * slice_vecs * KP_VEC;
  const unsigned slice_len = cols > lo ? (unsigned)(cols - lo < slice_vecs * KP_VEC ? cols - lo : slice_vecs * KP_VEC) : 0u;
  const unsigned slots = (slice_vecs + KP_BLOCK - 1) / KP_BLOCK;
  (void)slots;
#else
  const kp_u64 first = KP_GROUP_X, step = KP_NUM_GROUPS_X;
  const kp_u64 lo = 0;
#endif
  (void)ld_in1;
#if KP_ROW == 4 && KP_PREFETCH
  /* two stages, each the slice rounded up to KP_STAGE_ALIGN bytes (backward: g's, then y's), where
   * the launch gave the shared memory for them (row_slice_bytes: where they fit), else one, which
   * the engine refills with the next row once the block is done with this one */
  __shared__ unsigned long long kp_bar[2];
  const unsigned part_vecs =
      (unsigned)(((kp_u64)slice_vecs * KP_VEC_BYTES + KP_STAGE_ALIGN - 1) / KP_STAGE_ALIGN * KP_STAGE_ALIGN /
                 KP_VEC_BYTES);
  const unsigned stage_vecs = part_vecs * (1 + KP_BACKWARD);
  const unsigned two = kp_dynamic_smem() >= (2u * stage_vecs + KP_STAGE_KEEP * part_vecs) * (unsigned)KP_VEC_BYTES;
#if KP_STAGE_KEEP
  KP_LOCAL_PTR kp_raw* const kp_lo = kp_slice + (1 + two) * stage_vecs; /* the kept terms' low words */
#endif
  const unsigned bar0 = kp_smem_u32(&kp_bar[0]);
  if (KP_LOCAL_ID == 0) {
    kp_bar_init(bar0);
    kp_bar_init(bar0 + 8);
  }
  KP_BARRIER();
  /* the slices of row block rb (and backward's y) into stage st */
#define KP_ISSUE(rb_, st_)                                                                               \
  kp_stage_issue(bar0 + 8 * (st_), kp_slice + (st_)*stage_vecs, in0 + KP_OFFSET(in0) + (rb_)*ld_in0 + lo, \
                 kp_slice + (st_)*stage_vecs + part_vecs, in1 + KP_OFFSET(in1) + (rb_)*ld_in1 + lo, slice_len)
  if (KP_LOCAL_ID < 32) {
    if (first < rows) KP_ISSUE(first, 0u);
    if (two && first + step < rows) KP_ISSUE(first + step, 1u);
  }
  unsigned iter = 0;
  /* this row's stage, and the phase of its barrier that its fill completes */
#define KP_STAGE_OF(p_) (two ? (p_) : 0u)
#define KP_PHASE_OF(i_) (two ? ((i_) >> 1) & 1u : (i_)&1u)
#endif
#if KP_PREFETCH && KP_ROW != 4
  kp_vec pf0[KP_VPT], pf1[KP_VPT]; /* the next row's vectors (pf1: backward's y) */
  kp_row_fetch(pf0, pf1, in0, in1, first, sub, t, rows, cols, KP_OFFSET(in0), KP_OFFSET(in1), ld_in0, ld_in1);
#endif
  unsigned parity = 0;
  for (kp_u64 rb = first; rb * KP_RPB < rows; rb += step, parity ^= 1u) {
#if KP_PREFETCH && KP_ROW != 4
    kp_vec cur0[KP_VPT];
#if KP_BACKWARD
    kp_vec cur1[KP_VPT];
#endif
#pragma unroll
    for (int j = 0; j < KP_VPT; ++j) {
      cur0[j] = pf0[j];
#if KP_BACKWARD
      cur1[j] = pf1[j];
#endif
    }
    if ((rb + step) * KP_RPB < rows)
      kp_row_fetch(pf0, pf1, in0, in1, rb + step, sub, t, rows, cols, KP_OFFSET(in0), KP_OFFSET(in1), ld_in0, ld_in1);
#endif
    /* every thread of a block runs every row block (the reductions need them all); a group past
     * the last row has an empty row */
    const kp_u64 r = rb * KP_RPB + sub < rows ? rb * KP_RPB + sub : rows - 1;
#if KP_SLICED
    const unsigned len = slice_len;
#else
    const unsigned len = rb * KP_RPB + sub < rows ? (unsigned)cols : 0u;
#endif
    const kp_u64 o_at = KP_OFFSET(out) + KP_ROW_AT(r, ld_out) + lo, a_at = KP_OFFSET(in0) + KP_ROW_AT(r, ld_in0) + lo;
    KP_GLOBAL KP_T* o = out + o_at;
    KP_GLOBAL const KP_T* a = in0 + a_at;
#if KP_BACKWARD
    const kp_u64 b_at = KP_OFFSET(in1) + KP_ROW_AT(r, ld_in1) + lo;
    KP_GLOBAL const KP_T* b = in1 + b_at;
#endif
#if KP_STRIDED
    const kp_access acc = inner;
#elif KP_BACKWARD
    const kp_access acc =
        KP_MISALIGNMENT(o, o_at) == 0 && KP_MISALIGNMENT(a, a_at) == 0 && KP_MISALIGNMENT(b, b_at) == 0;
#else
    const kp_access acc = KP_MISALIGNMENT(o, o_at) == 0 && KP_MISALIGNMENT(a, a_at) == 0;
#endif

#if !KP_BACKWARD
    /* ---- forward: the max, the sum of exp(x - max), then the results ---- */
    KP_C mc = (KP_C)KP_ACC_NEG_INF;
    kp_acc m;
    kp_sum2 s;
    s.hi = 0.0;
    s.lo = 0.0;
    KP_C sf = (KP_C)0; /* the 16-bit dtypes' float sum, folded into s before the reduction */
#if KP_KEEP_E
    kp_e ev[KP_VPT][KP_VEC]; /* each element's term */
#endif
#if KP_ROW == 3
    m = KP_ACC_NEG_INF;
    for (unsigned base = 0; base * KP_VEC < len; base += KP_TPR * KP_VPT) {
      kp_vec xs[KP_VPT];
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) kp_row_load(&xs[j], a, base + (unsigned)j * KP_TPR + t, len, acc);
      KP_C cmc = (KP_C)KP_ACC_NEG_INF;
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) cmc = kp_vec_max(xs[j], kp_lanes(base + (unsigned)j * KP_TPR + t, len), cmc);
      const kp_acc cm = (kp_acc)cmc;
      if (cm > m || cm != cm) {
        if (s.hi != 0.0 || sf != (KP_C)0) { /* rescale the sum to the new max (0 stays 0: no -inf - -inf) */
          const kp_acc f = kp_term(m, cm KP_EXP_TAB_ARG); /* float64: m - cm's rounding carried too */
          s.hi *= f;
          s.lo *= f;
          sf *= (KP_C)f;
        }
        m = kp_max_of(m, cm);
      }
      if (m != KP_ACC_NEG_INF) /* else every element so far is -inf: each term 0, and -inf - -inf NaN */
#pragma unroll
        for (int j = 0; j < KP_VPT; ++j)
          kp_vec_exp_sum(xs[j], kp_lanes(base + (unsigned)j * KP_TPR + t, len), m, (KP_C)m, &s, &sf KP_EXP_TAB_ARG);
    }
    const kp_acc mx = KP_ROW_MAX_NAN((KP_C)m); /* m is a KP_C value */
    s.hi += (kp_acc)sf;
    if (s.hi != 0.0) {
      const kp_acc f = kp_term(m, mx KP_EXP_TAB_ARG);
      s.hi *= f;
      s.lo *= f;
    }
    m = mx;
    s = KP_ROW_SUM(s);
#elif KP_ROW == 4 && KP_PREFETCH
    KP_LOCAL_PTR kp_raw* stg = kp_slice + KP_STAGE_OF(parity) * stage_vecs;
    kp_bar_wait(bar0 + 8 * KP_STAGE_OF(parity), KP_PHASE_OF(iter));
    if (kp_bulk_bytes(a, len) < len * (unsigned)sizeof(KP_T)) {
      kp_stage_rest(stg, a, len);
      KP_BARRIER();
    }
#define KP_MAX_STEP_(x, vi, nl) mc = kp_vec_max_n(x, nl, mc);
    KP_STAGE_PASS(stg, KP_MAX_STEP_)
#if KP_XCHG1
    /* this warp's max; its terms relative to it (to 0 where it has no number: each term 0, or NaN
     * for a NaN element), the row's max and sum from the one exchange */
    kp_acc mw = (kp_acc)mc;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) mw = fmax(mw, kp_shfl(mw, o));
    m = mw == KP_ACC_NEG_INF ? 0.0 : mw;
#else
    m = KP_ROW_MAX(mc);
#endif
    {
      const KP_C mf_ = (KP_C)m;
#if KP_STAGE_KEEP
      (void)mf_;
#define KP_SUM_STEP_(x, vi, nl) kp_vec_exp_stage_n(x, nl, m, &s, stg + (vi), kp_lo + (vi)KP_EXP_TAB_ARG);
#else
#define KP_SUM_STEP_(x, vi, nl) kp_vec_exp_sum_n(x, nl, m, mf_, &s, &sf KP_EXP_TAB_ARG);
#endif
      KP_STAGE_PASS(stg, KP_SUM_STEP_)
    }
    s.hi += (kp_acc)sf;
#if KP_XCHG1
    m = kp_xchg_maxsum(&xchg, mw, &s KP_EXP_TAB_ARG);
#else
    s = KP_ROW_SUM(s);
#endif
#elif KP_ROW == 4
    /* the slice read once into shared memory, KP_VPT vectors a thread in flight */
    for (unsigned j0 = 0; j0 < slots; j0 += KP_VPT) {
      kp_vec xs[KP_VPT];
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) kp_row_load(&xs[j], a, (j0 + j) * KP_BLOCK + t, len, acc);
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) {
        const unsigned vi = (j0 + j) * KP_BLOCK + t;
        if (vi < slice_vecs) {
          kp_slice[vi] = KP_VEC_TO_RAW(xs[j]);
          mc = kp_vec_max(xs[j], kp_lanes(vi, len), mc);
        }
      }
    }
    m = KP_ROW_MAX(mc);
    for (unsigned vi = t; vi < slice_vecs; vi += KP_BLOCK) {
      kp_vec x;
      KP_SET_RAW(x, kp_slice[vi]);
      kp_vec_exp_sum(x, kp_lanes(vi, len), m, (KP_C)m, &s, &sf KP_EXP_TAB_ARG);
    }
    s.hi += (kp_acc)sf;
    s = KP_ROW_SUM(s);
#else
    /* registers, shared: the row read once into the slots */
#pragma unroll
    for (int j = 0; j < KP_VPT; ++j) {
      kp_vec x;
#if KP_PREFETCH && KP_ROW != 4
      x = cur0[j];
#else
      kp_row_load(&x, a, (unsigned)j * KP_TPR + t, len, acc);
#endif
      KP_HOLD_PUT(hold0, j, x);
    }
#pragma unroll
    for (int j = 0; j < KP_VPT; ++j) {
      kp_vec x;
      KP_HOLD_GET(hold0, j, x);
      mc = kp_vec_max(x, kp_lanes((unsigned)j * KP_TPR + t, len), mc);
    }
    m = KP_ROW_MAX(mc);
#pragma unroll
    for (int j = 0; j < KP_VPT; ++j) {
      kp_vec x;
      KP_HOLD_GET(hold0, j, x);
#if KP_KEEP_E
      kp_vec_exp_keep(x, kp_lanes((unsigned)j * KP_TPR + t, len), m, (KP_C)m, &s, &sf, ev[j] KP_EXP_TAB_ARG);
#else
      kp_vec_exp_sum(x, kp_lanes((unsigned)j * KP_TPR + t, len), m, (KP_C)m, &s, &sf KP_EXP_TAB_ARG);
#endif
    }
    s.hi += (kp_acc)sf;
    s = KP_ROW_SUM(s);
#endif
    const kp_row_k rk = kp_row_constants(m, s);
#if KP_STAGE_KEEP && KP_XCHG1
    /* the kept terms are relative to this warp's max: exp(mw - m) / sum (a warp with no number
     * has no result to write) */
    const kp_acc keep_inv = mw == KP_ACC_NEG_INF ? rk.inv : kp_term(mw, m KP_EXP_TAB_ARG) * rk.inv;
#elif KP_STAGE_KEEP
    const kp_acc keep_inv = rk.inv;
#endif
    /* ---- the results ---- */
#if KP_ROW == 3
    for (unsigned c = kp_online_chunks(len); c > 0; --c) {
      const unsigned base = (c - 1) * (KP_TPR * KP_VPT);
      kp_vec xs[KP_VPT];
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) kp_row_load(&xs[j], a, base + (unsigned)j * KP_TPR + t, len, acc);
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) {
        const unsigned vi = base + (unsigned)j * KP_TPR + t;
        kp_row_store_vec(kp_vec_forward(xs[j], kp_lanes(vi, len), rk KP_EXP_TAB_ARG), o, vi, len, acc);
      }
    }
#elif KP_ROW == 4 && KP_PREFETCH && KP_STAGE_KEEP
#define KP_OUT_STEP_(x, vi, nl) \
  if ((nl) > 0) kp_row_store_vec(kp_vec_scale_stage_n(x, kp_lo[vi], nl, keep_inv), o, vi, len, acc);
    KP_STAGE_PASS(stg, KP_OUT_STEP_)
#elif KP_ROW == 4 && KP_PREFETCH
#define KP_OUT_STEP_(x, vi, nl) kp_row_store_vec(kp_vec_forward_n(x, nl, rk KP_EXP_TAB_ARG), o, vi, len, acc);
    KP_STAGE_PASS(stg, KP_OUT_STEP_)
#elif KP_ROW == 4
    for (unsigned vi = t; vi < slice_vecs; vi += KP_BLOCK) {
      kp_vec x;
      KP_SET_RAW(x, kp_slice[vi]);
      kp_row_store_vec(kp_vec_forward(x, kp_lanes(vi, len), rk KP_EXP_TAB_ARG), o, vi, len, acc);
    }
#else
#pragma unroll
    for (int j = 0; j < KP_VPT; ++j) {
      kp_vec x;
      KP_HOLD_GET(hold0, j, x);
      const unsigned vi = (unsigned)j * KP_TPR + t;
#if KP_KEEP_E
      kp_row_store_vec(kp_vec_scale(x, kp_lanes(vi, len), ev[j], rk), o, vi, len, acc);
#else
      kp_row_store_vec(kp_vec_forward(x, kp_lanes(vi, len), rk KP_EXP_TAB_ARG), o, vi, len, acc);
#endif
    }
#endif

#else
    /* ---- backward: the sum over the row, then the results ---- */
    kp_sum2 s;
    s.hi = 0.0;
    s.lo = 0.0;
#if KP_ROW == 3
    for (unsigned base = 0; base * KP_VEC < len; base += KP_TPR * KP_VPT) {
      kp_vec gs[KP_VPT], ys[KP_VPT];
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) {
        kp_row_load(&gs[j], a, base + (unsigned)j * KP_TPR + t, len, acc);
#if !KP_ROW_LOG
        kp_row_load(&ys[j], b, base + (unsigned)j * KP_TPR + t, len, acc);
#else
        ys[j] = gs[j];
#endif
      }
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) kp_vec_terms(gs[j], ys[j], kp_lanes(base + (unsigned)j * KP_TPR + t, len), &s);
    }
    s = KP_ROW_SUM(s);
#elif KP_ROW == 4 && KP_PREFETCH
    KP_LOCAL_PTR kp_raw* stg = kp_slice + KP_STAGE_OF(parity) * stage_vecs;
    KP_LOCAL_PTR kp_raw* stg_y = stg + part_vecs;
    kp_bar_wait(bar0 + 8 * KP_STAGE_OF(parity), KP_PHASE_OF(iter));
    if (kp_bulk_bytes(a, len) < len * (unsigned)sizeof(KP_T) || kp_bulk_bytes(b, len) < len * (unsigned)sizeof(KP_T)) {
      kp_stage_rest(stg, a, len);
      kp_stage_rest(stg_y, b, len);
      KP_BARRIER();
    }
#define KP_TERMS_STEP_(g, y, vi, nl) kp_vec_terms_n(g, y, nl, &s);
    KP_STAGE_PASS2(stg, stg_y, KP_TERMS_STEP_)
    s = KP_ROW_SUM(s);
#elif KP_ROW == 4
    kp_raw* kp_slice_y = kp_slice + slice_vecs;
    for (unsigned j0 = 0; j0 < slots; j0 += KP_VPT) {
      kp_vec gs[KP_VPT], ys[KP_VPT];
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) {
        kp_row_load(&gs[j], a, (j0 + j) * KP_BLOCK + t, len, acc);
        kp_row_load(&ys[j], b, (j0 + j) * KP_BLOCK + t, len, acc);
      }
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) {
        const unsigned vi = (j0 + j) * KP_BLOCK + t;
        if (vi < slice_vecs) {
          kp_slice[vi] = KP_VEC_TO_RAW(gs[j]);
          kp_slice_y[vi] = KP_VEC_TO_RAW(ys[j]);
          kp_vec_terms(gs[j], ys[j], kp_lanes(vi, len), &s);
        }
      }
    }
    s = KP_ROW_SUM(s);
#else
#pragma unroll
    for (int j = 0; j < KP_VPT; ++j) {
      kp_vec g, y;
#if KP_PREFETCH
      g = cur0[j];
      y = cur1[j];
#else
      kp_row_load(&g, a, (unsigned)j * KP_TPR + t, len, acc);
      kp_row_load(&y, b, (unsigned)j * KP_TPR + t, len, acc);
#endif
      KP_HOLD_PUT(hold0, j, g);
      KP_HOLD_PUT(hold1, j, y);
    }
#pragma unroll
    for (int j = 0; j < KP_VPT; ++j) {
      kp_vec g, y;
      KP_HOLD_GET(hold0, j, g);
      KP_HOLD_GET(hold1, j, y);
      kp_vec_terms(g, y, kp_lanes((unsigned)j * KP_TPR + t, len), &s);
    }
    s = KP_ROW_SUM(s);
#endif
    /* one rounding of the finished sum, so that hi + lo is one value in every term */
    {
      const kp_acc v = kp_sum_value(s);
      s.lo = s.hi - s.hi == 0.0 ? (s.hi - v) + s.lo : 0.0;
      s.hi = v;
    }
#if KP_ROW == 3
    for (unsigned c = kp_online_chunks(len); c > 0; --c) {
      const unsigned base = (c - 1) * (KP_TPR * KP_VPT);
      kp_vec gs[KP_VPT], ys[KP_VPT];
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) {
        kp_row_load(&gs[j], a, base + (unsigned)j * KP_TPR + t, len, acc);
        kp_row_load(&ys[j], b, base + (unsigned)j * KP_TPR + t, len, acc);
      }
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) {
        const unsigned vi = base + (unsigned)j * KP_TPR + t;
        kp_row_store_vec(kp_vec_backward(gs[j], ys[j], kp_lanes(vi, len), s), o, vi, len, acc);
      }
    }
#elif KP_ROW == 4 && KP_PREFETCH
#define KP_GRAD_STEP_(g, y, vi, nl) kp_row_store_vec(kp_vec_backward_n(g, y, nl, s), o, vi, len, acc);
    KP_STAGE_PASS2(stg, stg_y, KP_GRAD_STEP_)
#elif KP_ROW == 4
    for (unsigned vi = t; vi < slice_vecs; vi += KP_BLOCK) {
      kp_vec g, y;
      KP_SET_RAW(g, kp_slice[vi]);
      KP_SET_RAW(y, kp_slice_y[vi]);
      kp_row_store_vec(kp_vec_backward(g, y, kp_lanes(vi, len), s), o, vi, len, acc);
    }
#else
#pragma unroll
    for (int j = 0; j < KP_VPT; ++j) {
      kp_vec g, y;
      KP_HOLD_GET(hold0, j, g);
      KP_HOLD_GET(hold1, j, y);
      const unsigned vi = (unsigned)j * KP_TPR + t;
      kp_row_store_vec(kp_vec_backward(g, y, kp_lanes(vi, len), s), o, vi, len, acc);
    }
#endif
#endif
#if KP_ROW == 4 && KP_PREFETCH
    /* every thread is done with this stage: the engine may fill it with the row after next (one
     * stage: the next) */
    KP_BARRIER();
    if (KP_LOCAL_ID < 32) {
      if (two && rb + 2 * step < rows) KP_ISSUE(rb + 2 * step, parity);
      if (!two && rb + step < rows) KP_ISSUE(rb + step, 0u);
    }
    ++iter;
#endif
  }
#if KP_CLUSTER > 1
  /* no block may leave while another still reads its slots */
  kp_cluster_sync();
#endif
}
