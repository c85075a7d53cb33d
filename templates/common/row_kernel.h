/* The row kernel's entry (templates/common/rowwise.h): for each row its group or cluster holds,
 * the max, the sum and the results, as KP_ROW says the row is held, over contiguous or strided
 * rows. */
/* Strided rows (KP_STRIDED): each buffer is [outer, cols, inner] with its own pitch ld between
 * outer blocks; row r is (r / inner, r % inner), its elements inner apart. Vectors of one element;
 * a group's KP_TPR threads are neighbouring lanes, as for contiguous rows, and thread t takes the
 * row's columns t, t + KP_TPR, ..., so that a warp's load of one column from each of its 32 / KP_TPR
 * neighbouring rows is one contiguous run of the buffer (a 32-byte sector of float32 at groups of
 * 4), its KP_TPR columns KP_TPR such runs, and a long row is spread over its group, reduced by
 * shuffles, instead of read by one thread element after element. */
#if KP_STRIDED
#if KP_VEC != 1 || KP_PREFETCH || KP_SLICED || KP_ROW == 2
#error "strided rows: vectors of one element, registers or online, one-shot grid"
#endif
#define KP_STRIDED_PARAM , kp_u64 inner
/* r / inner in 32 bits where both fit (a 64-bit division is a long software sequence) */
KP_FN kp_u64 kp_row_at(kp_u64 r, kp_u64 ld, kp_u64 inner) {
  if (((r | inner) >> 32) == 0) {
    const unsigned q = (unsigned)r / (unsigned)inner;
    return (kp_u64)q * ld + ((unsigned)r - q * (unsigned)inner);
  }
  return r / inner * ld + r % inner;
}
#define KP_ROW_AT(r, ld) kp_row_at(r, ld, inner)
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
  /* the kept terms' bytes (KP_STAGE_KEEP): one an element, a vector's in a kp_lo_raw, after the stages */
  const unsigned lo_bytes = KP_STAGE_KEEP * ((part_vecs * (unsigned)KP_VEC + 15u) & ~15u);
  const unsigned two = kp_dynamic_smem() >= 2u * stage_vecs * (unsigned)KP_VEC_BYTES + lo_bytes;
#if KP_STAGE_KEEP
  KP_LOCAL_PTR kp_lo_raw* const kp_lo = (KP_LOCAL_PTR kp_lo_raw*)(kp_slice + (1 + two) * stage_vecs);
#else
  (void)lo_bytes;
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
    s.hi = KP_SUM_START;
    s.lo = 0.0;
    KP_C sf = (KP_C)0; /* the 16-bit dtypes' float sum, folded into s before the reduction */
#if KP_KEEP_E
    kp_e ev[KP_VPT][KP_VEC]; /* each element's term */
#endif
#if KP_ROW == 3 && KP_DTYPE_F64
    /* float64 reads the row once more: its max, then each term relative to it. An online sum's
     * rescalings by exp(old max - new max) each add the device exp's error (up to an ulp) to every
     * earlier term, and where a result is all rescaled terms (log_softmax's -log1p(sum - 1) next to
     * 0) a few of them exceed float64's 4-ulp bound (5.25 ulp in a row of 21 on an H100). */
    for (unsigned base = 0; base * KP_VEC < len; base += KP_TPR * KP_VPT) {
      kp_vec xs[KP_VPT];
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) kp_row_load(&xs[j], a, base + (unsigned)j * KP_TPR + t, len, acc);
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) mc = kp_vec_max(xs[j], kp_lanes(base + (unsigned)j * KP_TPR + t, len), mc);
    }
    m = KP_ROW_MAX_NAN(mc);
    if (m - m == 0.0) /* else the row is NaN (kp_row_sum_of), whatever its terms */
      for (unsigned base = 0; base * KP_VEC < len; base += KP_TPR * KP_VPT) {
        kp_vec xs[KP_VPT];
#pragma unroll
        for (int j = 0; j < KP_VPT; ++j) kp_row_load(&xs[j], a, base + (unsigned)j * KP_TPR + t, len, acc);
#pragma unroll
        for (int j = 0; j < KP_VPT; ++j)
          kp_vec_exp_sum(xs[j], kp_lanes(base + (unsigned)j * KP_TPR + t, len), m, m, &s, &sf KP_EXP_TAB_ARG);
      }
    s = KP_ROW_SUM(s);
#elif KP_ROW == 3
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
        if (s.hi != KP_SUM_START || s.lo != 0.0 || sf != (KP_C)0) { /* rescale to the new max (0 stays 0: no -inf - -inf) */
          const kp_acc f = kp_term(m, cm KP_EXP_TAB_ARG); /* float64: m - cm's rounding carried too */
#if KP_ROW_FLOAT && KP_ROW_LOG
          /* 16-bit log_softmax counts the max's terms of 1 in the high part (KP_EXP_LANE): the sum
           * so far, the old max's count with it, goes to the low part, so that the new max's 1s
           * count exactly again and do not absorb it */
          s.lo = ((s.lo + (kp_acc)sf * KP_SF_UNIT) + s.hi) * f;
          s.hi = 0.0;
          sf = (KP_C)0;
#else
          KP_SUM_RESCALE(s, f)
          sf *= (KP_C)f;
#endif
        }
        m = kp_max_of(m, cm);
      }
      if (m != KP_ACC_NEG_INF) /* else every element so far is -inf: each term 0, and -inf - -inf NaN */
#pragma unroll
        for (int j = 0; j < KP_VPT; ++j)
          kp_vec_exp_sum(xs[j], kp_lanes(base + (unsigned)j * KP_TPR + t, len), m, (KP_C)m, &s, &sf KP_EXP_TAB_ARG);
    }
    const kp_acc mx = KP_ROW_MAX_NAN((KP_C)m); /* m is a KP_C value */
    KP_FOLD_SF(s, sf);
    if (s.hi != 0.0 || s.lo != 0.0) {
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
    KP_FOLD_SF(s, sf);
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
    KP_FOLD_SF(s, sf);
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
    KP_FOLD_SF(s, sf);
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
#define KP_OUT_STEP_(x, l, vi, nl) \
  if ((nl) > 0) kp_row_store_vec(kp_vec_scale_stage_n(x, l, nl, keep_inv), o, vi, len, acc);
#define KP_OUT_WHOLE_(x, l, vi) KP_ST((KP_GLOBAL kp_raw*)o + (vi), KP_VEC_TO_RAW(kp_vec_scale_stage_n(x, l, KP_VEC, keep_inv)));
    KP_STAGE_PASS_LO(stg, kp_lo, KP_OUT_STEP_, acc, KP_OUT_WHOLE_)
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
        kp_row_store_vec(kp_vec_backward(gs[j], ys[j], kp_lanes(vi, len), s KP_EXP_TAB_ARG), o, vi, len, acc);
      }
    }
#elif KP_ROW == 4 && KP_PREFETCH
#define KP_GRAD_STEP_(g, y, vi, nl) kp_row_store_vec(kp_vec_backward_n(g, y, nl, s KP_EXP_TAB_ARG), o, vi, len, acc);
    KP_STAGE_PASS2(stg, stg_y, KP_GRAD_STEP_)
#elif KP_ROW == 4
    for (unsigned vi = t; vi < slice_vecs; vi += KP_BLOCK) {
      kp_vec g, y;
      KP_SET_RAW(g, kp_slice[vi]);
      KP_SET_RAW(y, kp_slice_y[vi]);
      kp_row_store_vec(kp_vec_backward(g, y, kp_lanes(vi, len), s KP_EXP_TAB_ARG), o, vi, len, acc);
    }
#else
#pragma unroll
    for (int j = 0; j < KP_VPT; ++j) {
      kp_vec g, y;
      KP_HOLD_GET(hold0, j, g);
      KP_HOLD_GET(hold1, j, y);
      const unsigned vi = (unsigned)j * KP_TPR + t;
      kp_row_store_vec(kp_vec_backward(g, y, kp_lanes(vi, len), s KP_EXP_TAB_ARG), o, vi, len, acc);
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
