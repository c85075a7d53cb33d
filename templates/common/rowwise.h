/* Row kernel: the softmax family (softmax, log_softmax, softmin), forward and backward, one body for
 * CUDA and OpenCL C 1.2 through the same prelude as templates/common/elementwise.h (which lists the
 * dialect's macros). Codegen defines the knobs (KP_VEC, KP_VEC_BYTES, KP_VPT, KP_BLOCK,
 * KP_BACKWARD, KP_STREAMING, KP_ROW, KP_CLUSTER, KP_ENTRY) and puts the prelude and the member's
 * snippet (KP_ROW_LOG, KP_ROW_NEGATE) in front of this file.
 *
 * A row is `cols` contiguous elements; row r of each buffer starts r * ld elements into it. Forward
 * reads x (in0) and writes y (out); backward reads the incoming gradient g (in0) and the saved
 * output y (in1) and writes grad_in (out). One block (KP_ROW 4: one cluster) per row, looping over
 * rows. Element e of a row belongs to thread t when e / KP_VEC = k KP_BLOCK + t (slot k), so each
 * thread reads whole KP_VEC_BYTES vectors where the row starts on one in every buffer, element by
 * element elsewhere (ragged rows of a contiguous tensor), and reads back only what it loaded.
 *
 * KP_ROW, how the row is held:
 *   1 registers  KP_VPT vectors per thread: rows of up to KP_BLOCK KP_VPT KP_VEC elements, read once
 *   2 shared     the same slots in shared memory (fewer registers for the same row)
 *   3 online     any row: one pass keeps a running max and a sum rescaled to it, a second reads the
 *                row again and writes (forward: 2 reads and a write; backward: 4 and a write)
 *   4 cluster    CUDA sm_90+: the row split into KP_CLUSTER slices, one per block of a thread-block
 *                cluster, each slice in dynamic shared memory; the max and the sums are reduced
 *                across the cluster through distributed shared memory: one read per element
 *
 * Accuracy: the max, the sums and every result are in double (kp_acc) and rounded once to the
 * dtype. x - max is exact in double for float32 and narrower, the sums are compensated (each
 * addition's error carried, as the host reference does), so float32 and 16-bit results are within
 * a rounding of exact; float64's error is that of the device's double exp and log (docs/accuracy.md).
 * Edges as torch's max-subtracting formula gives them: a row holding +inf or NaN, or all -inf, is
 * NaN throughout; -inf elements of other rows give 0 (log_softmax: -inf). */
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

/* The value whose softmax is taken: x, or -x for softmin. */
KP_FN kp_acc kp_row_in(KP_T v) {
  const kp_acc x = (kp_acc)kp_to_compute(v);
  return KP_ROW_NEGATE ? -x : x;
}
KP_FN kp_acc kp_row_value(KP_T v) { return (kp_acc)kp_to_compute(v); }
/* One rounding to the dtype (16-bit: through float, within 2^-13 ulp of one rounding). */
KP_FN KP_T kp_row_store(kp_acc v) { return kp_to_storage((KP_C)v); }
KP_FN kp_acc kp_max_of(kp_acc a, kp_acc b) { return b > a ? b : a; }
/* exp(x - m) of one element; -inf elements are 0 whatever m, so that a row's -inf elements do not
 * make it NaN before its max is known (the online pass); a row whose max is -inf is made NaN where
 * the sum is finished (kp_row_sum_of). */
KP_FN kp_acc kp_term(kp_acc x, kp_acc m) {
  if (x == KP_ACC_NEG_INF) return 0.0;
#if KP_DTYPE_F64
  /* float64: x - m is rounded in double, and exp magnifies that by |x - m| (7 ulp at -13); its
   * rounding error lo (TwoSum), carried as exp(d + lo) = exp(d) (1 + lo), takes it back. */
  const kp_acc d = x - m, bb = d - x;
  const kp_acc lo = d - d == 0.0 ? (x - (d - bb)) + (-m - bb) : 0.0;
  const kp_acc e = exp(d);
  return e + e * lo;
#elif KP_FAST_FP64
  /* x - m is exact (float32 or narrower); kp_d_exp is 2^-29 relative and gives 0 below -708, where
   * every result rounds to 0 anyway, but neither NaN nor e^0 = 1 exactly, which log_softmax's
   * log1p(sum - 1) needs for its results near 0: both are selected here. */
  const kp_acc d = x - m;
  return d != d ? d : d == 0.0 ? 1.0 : kp_d_exp(d);
#else
  return exp(x - m); /* exact: x and m are float32 or narrower */
#endif
}

/* A compensated sum: hi + lo, each addition's rounding error carried in lo (Neumaier); where hi is
 * not finite (an infinite gradient), hi alone, as a plain sum gives it. */
typedef struct {
  kp_acc hi, lo;
} kp_sum2;
#if KP_ROW_LOG || KP_DTYPE_F64
KP_FN void kp_sum_add(kp_sum2* s, kp_acc v) {
  const kp_acc t = s->hi + v;
  s->lo += fabs(s->hi) >= fabs(v) ? (s->hi - t) + v : (v - t) + s->hi;
  s->hi = t;
}
#else
/* softmax and softmin below float64: a thread's own terms in a plain double sum. A thread adds at
 * most cols / KP_BLOCK of them, so its relative error is at most 2^-53 cols / KP_BLOCK (2^-31 for
 * 2^31 columns in blocks of 32; the partial sums are then merged compensated), far below the
 * 2^-24 that would move a float32 result by a sixteenth of an ulp, and three FP64 operations a
 * term cheaper. log_softmax keeps the compensated sum: its log1p(sum - 1) needs the low part. */
KP_FN void kp_sum_add(kp_sum2* s, kp_acc v) { s->hi += v; }
#endif
KP_FN kp_sum2 kp_sum_merge(kp_sum2 a, kp_sum2 b) {
  kp_sum2 r;
  r.hi = a.hi + b.hi;
  const kp_acc bb = r.hi - a.hi;
  r.lo = a.lo + b.lo + ((a.hi - (r.hi - bb)) + (b.hi - bb));
  return r;
}
KP_FN kp_acc kp_sum_value(kp_sum2 s) { return s.hi - s.hi == 0.0 ? s.hi + s.lo : s.hi; }

/* Block reductions through a tree in shared memory (red: KP_BLOCK values), the result in every
 * thread; red is free again on return. */
KP_FN kp_acc kp_block_max(KP_LOCAL_PTR kp_acc* red, kp_acc v) {
  const unsigned t = KP_LOCAL_ID;
  red[t] = v;
  KP_BARRIER();
  for (unsigned s = KP_BLOCK / 2; s > 0; s >>= 1) {
    if (t < s) red[t] = kp_max_of(red[t], red[t + s]);
    KP_BARRIER();
  }
  const kp_acc m = red[0];
  KP_BARRIER();
  return m;
}
KP_FN kp_sum2 kp_block_sum(KP_LOCAL_PTR kp_acc* hi, KP_LOCAL_PTR kp_acc* lo, kp_sum2 v) {
  const unsigned t = KP_LOCAL_ID;
  hi[t] = v.hi;
  lo[t] = v.lo;
  KP_BARRIER();
  for (unsigned s = KP_BLOCK / 2; s > 0; s >>= 1) {
    if (t < s) {
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
  r.hi = hi[0];
  r.lo = lo[0];
  KP_BARRIER();
  return r;
}

/* Vector vi of a row of len elements at p: whole where the row is vector-aligned and the vector
 * complete, else lane by lane (lanes past the row are left unset and never read). */
#define KP_ROW_LOAD_LANE(k) \
  if (e + (k) < len) KP_LANE(*v, k) = KP_LD(p + e + (k));
KP_FN void kp_row_load(kp_vec* v, KP_GLOBAL const KP_T* p, kp_u64 vi, kp_u64 len, int aligned) {
  const kp_u64 e = vi * KP_VEC;
  if (e >= len) return;
  if (aligned && e + KP_VEC <= len) {
    KP_SET_RAW(*v, KP_LD((KP_GLOBAL const kp_raw*)p + vi));
  } else {
    KP_FOR_LANES(KP_ROW_LOAD_LANE)
  }
}
#define KP_ROW_STORE_LANE(k) \
  if (e + (k) < len) KP_ST(p + e + (k), KP_LANE(v, k));
KP_FN void kp_row_store_vec(kp_vec v, KP_GLOBAL KP_T* p, kp_u64 vi, kp_u64 len, int aligned) {
  const kp_u64 e = vi * KP_VEC;
  if (e >= len) return;
  if (aligned && e + KP_VEC <= len) {
    KP_ST((KP_GLOBAL kp_raw*)p + vi, KP_VEC_TO_RAW(v));
  } else {
    KP_FOR_LANES(KP_ROW_STORE_LANE)
  }
}

/* Per-vector steps, lane by lane over the lanes inside the row (e: the vector's first element). */
#define KP_MAX_LANE(k) \
  if (e + (k) < len) m = kp_max_of(m, kp_row_in(KP_LANE(x, k)));
KP_FN kp_acc kp_vec_max(kp_vec x, kp_u64 e, kp_u64 len, kp_acc m) {
  KP_FOR_LANES(KP_MAX_LANE)
  return m;
}
#define KP_EXP_LANE(k) \
  if (e + (k) < len) kp_sum_add(s, kp_term(kp_row_in(KP_LANE(x, k)), m));
KP_FN void kp_vec_exp_sum(kp_vec x, kp_u64 e, kp_u64 len, kp_acc m, kp_sum2* s) { KP_FOR_LANES(KP_EXP_LANE) }

/* The forward result from x (already negated for softmin), the row's max m, the sum's reciprocal
 * (float64: the sum itself, divided by, one rounding fewer) and its log. */
KP_FN kp_acc kp_forward_of(kp_acc x, kp_acc m, kp_acc sum, kp_acc inv, kp_acc log_sum) {
#if KP_ROW_LOG
  (void)sum;
  (void)inv;
#if KP_DTYPE_F64
  const kp_acc d = x - m, bb = d - x;
  const kp_acc lo = d - d == 0.0 ? (x - (d - bb)) + (-m - bb) : 0.0;
  return (d - log_sum) + lo; /* -inf stays -inf; a NaN sum (and so log_sum) makes the row NaN */
#else
  return (x - m) - log_sum; /* -inf stays -inf; a NaN sum (and so log_sum) makes the row NaN */
#endif
#elif KP_DTYPE_F64
  (void)inv;
  (void)log_sum;
  return kp_term(x, m) / sum;
#else
  (void)sum;
  (void)log_sum;
  return kp_term(x, m) * inv;
#endif
}
#define KP_OUT_LANE(k) \
  if (e + (k) < len) KP_LANE(y, k) = kp_row_store(kp_forward_of(kp_row_in(KP_LANE(x, k)), m, sum, inv, log_sum));
KP_FN kp_vec kp_vec_forward(kp_vec x, kp_u64 e, kp_u64 len, kp_acc m, kp_acc sum, kp_acc inv, kp_acc log_sum) {
  kp_vec y = x;
  KP_FOR_LANES(KP_OUT_LANE)
  return y;
}

/* Backward: the sum's terms (g y, or g for log_softmax; float64's products split exactly by an
 * fma into the product and its rounding error) and the result from it. */
#if KP_ROW_LOG
#define KP_TERM_LANE(k) \
  if (e + (k) < len) kp_sum_add(s, kp_row_value(KP_LANE(g, k)));
#elif KP_DTYPE_F64
#define KP_TERM_LANE(k)                                                   \
  if (e + (k) < len) {                                                    \
    const kp_acc g_ = kp_row_value(KP_LANE(g, k)), y_ = kp_row_value(KP_LANE(y, k)); \
    const kp_acc p_ = g_ * y_;                                            \
    kp_sum_add(s, p_);                                                    \
    kp_sum_add(s, fma(g_, y_, -p_));                                      \
  }
#else
#define KP_TERM_LANE(k) \
  if (e + (k) < len) kp_sum_add(s, kp_row_value(KP_LANE(g, k)) * kp_row_value(KP_LANE(y, k)));
#endif
KP_FN void kp_vec_terms(kp_vec g, kp_vec y, kp_u64 e, kp_u64 len, kp_sum2* s) {
  (void)y;
  KP_FOR_LANES(KP_TERM_LANE)
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
  if (e + (k) < len) KP_LANE(r, k) = kp_row_store(kp_backward_of(kp_row_value(KP_LANE(g, k)), kp_row_value(KP_LANE(y, k)), s));
KP_FN kp_vec kp_vec_backward(kp_vec g, kp_vec y, kp_u64 e, kp_u64 len, kp_sum2 s) {
  kp_vec r = g;
  KP_FOR_LANES(KP_GRAD_LANE)
  return r;
}

/* The finished forward sum: NaN where the row's max is -inf (every element -inf: -inf - -inf). */
KP_FN kp_acc kp_row_sum_of(kp_sum2 s, kp_acc m) { return m == KP_ACC_NEG_INF ? KP_ACC_NAN : kp_sum_value(s); }
/* log of the finished sum: near 1 (one element dominates) as log1p of sum - 1, which the sum's
 * low part keeps exact, so that log_softmax's results near 0 keep their precision. */
KP_FN kp_acc kp_log_sum(kp_sum2 s, kp_acc sum) {
  return sum < 2.0 && sum >= 1.0 ? log1p((s.hi - 1.0) + s.lo) : log(sum);
}

#if KP_ROW == 4
/* Thread-block clusters (PTX ISA 7.8, sm_90): this block's rank, the cluster-wide barrier (with
 * release/acquire: shared-memory writes before it are seen by every block after it), and a load
 * of a double from the shared memory of block `rank` at the address of `local` in this one. */
KP_FN unsigned kp_cluster_rank(void) {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
KP_FN void kp_cluster_sync(void) {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
KP_FN kp_acc kp_cluster_load(const kp_acc* local, unsigned rank) {
  unsigned a, remote;
  asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(local));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(a), "r"(rank));
  kp_acc v;
  asm volatile("ld.shared::cluster.f64 %0, [%1];" : "=d"(v) : "r"(remote) : "memory");
  return v;
}
/* The cluster's sum: each block's (thread 0 publishes it in slot[1..2]) merged in rank order in
 * every block, so that all of them finish with the same sum; returned to every thread. */
KP_FN kp_sum2 kp_cluster_sum(kp_acc* slot, kp_acc* red_hi, kp_acc* red_lo, kp_sum2 s) {
  const unsigned t = KP_LOCAL_ID;
  if (t == 0) {
    slot[1] = s.hi;
    slot[2] = s.lo;
  }
  kp_cluster_sync();
  if (t == 0) {
    kp_sum2 cs;
    cs.hi = 0.0;
    cs.lo = 0.0;
    for (unsigned q = 0; q < KP_CLUSTER; ++q) {
      kp_sum2 p;
      p.hi = kp_cluster_load(&slot[1], q);
      p.lo = kp_cluster_load(&slot[2], q);
      cs = kp_sum_merge(cs, p);
    }
    red_hi[0] = cs.hi;
    red_lo[0] = cs.lo;
  }
  KP_BARRIER();
  s.hi = red_hi[0];
  s.lo = red_lo[0];
  KP_BARRIER();
  return s;
}
#define KP_ROW_KERNEL KP_KERNEL __cluster_dims__(KP_CLUSTER, 1, 1)
#else
#define KP_ROW_KERNEL KP_KERNEL
#endif

/* Where the slots live: registers (an array the compiler keeps in registers: every index is a
 * constant after unrolling), shared memory (KP_ROW 2, 4), or nowhere (online reads again). */
#if KP_ROW == 1
#define KP_HOLD_DECL(name) kp_vec name[KP_VPT];
#define KP_HOLD_PUT(name, j, v) name[j] = (v)
#define KP_HOLD_GET(name, j, v) (v) = name[j]
#elif KP_ROW == 2
#define KP_HOLD_DECL(name) KP_SHARED kp_raw name[KP_BLOCK * KP_VPT];
#define KP_HOLD_PUT(name, j, v) name[(j) * KP_BLOCK + KP_LOCAL_ID] = KP_VEC_TO_RAW(v)
#define KP_HOLD_GET(name, j, v) KP_SET_RAW(v, name[(j) * KP_BLOCK + KP_LOCAL_ID])
#endif

KP_ROW_KERNEL KP_ENTRY(KP_BUFFER(KP_T, out), KP_BUFFER(const KP_T, in0), KP_BUFFER(const KP_T, in1), kp_u64 rows,
                       kp_u64 cols, kp_u64 ld_out, kp_u64 ld_in0, kp_u64 ld_in1) {
  KP_SHARED kp_acc red_hi[KP_BLOCK];
  KP_SHARED kp_acc red_lo[KP_BLOCK];
#if KP_ROW == 1 || KP_ROW == 2
  KP_HOLD_DECL(hold0)
#if KP_BACKWARD
  KP_HOLD_DECL(hold1)
#endif
#endif
#if KP_ROW == 4
  extern __shared__ kp_raw kp_slice[];
  __shared__ kp_acc cl_slot[3];
  const unsigned rank = kp_cluster_rank();
  const kp_u64 first_row = KP_GROUP_X / KP_CLUSTER, row_step = KP_NUM_GROUPS_X / KP_CLUSTER;
  /* Slices of whole vectors: this block's elements [lo, lo + len) of the row. */
  const kp_u64 slice_vecs = ((cols + KP_VEC - 1) / KP_VEC + KP_CLUSTER - 1) / KP_CLUSTER;
  const kp_u64 lo = (kp_u64)rank * slice_vecs * KP_VEC;
  const kp_u64 len = cols > lo ? (cols - lo < slice_vecs * KP_VEC ? cols - lo : slice_vecs * KP_VEC) : 0;
  const kp_u64 slots = (slice_vecs + KP_BLOCK - 1) / KP_BLOCK;
#else
  const kp_u64 first_row = KP_GROUP_X, row_step = KP_NUM_GROUPS_X;
  const kp_u64 lo = 0, len = cols;
#endif
  (void)ld_in1;
  const unsigned t = KP_LOCAL_ID;
  for (kp_u64 r = first_row; r < rows; r += row_step) {
    const kp_u64 o_at = KP_OFFSET(out) + r * ld_out + lo, a_at = KP_OFFSET(in0) + r * ld_in0 + lo;
    KP_GLOBAL KP_T* o = out + o_at;
    KP_GLOBAL const KP_T* a = in0 + a_at;
#if KP_BACKWARD
    const kp_u64 b_at = KP_OFFSET(in1) + r * ld_in1 + lo;
    KP_GLOBAL const KP_T* b = in1 + b_at;
    const int aligned = KP_MISALIGNMENT(o, o_at) == 0 && KP_MISALIGNMENT(a, a_at) == 0 && KP_MISALIGNMENT(b, b_at) == 0;
#else
    const int aligned = KP_MISALIGNMENT(o, o_at) == 0 && KP_MISALIGNMENT(a, a_at) == 0;
#endif

#if !KP_BACKWARD
    /* ---- forward: the max, the sum of exp(x - max), then the results ---- */
    kp_acc m = KP_ACC_NEG_INF;
    kp_sum2 s;
    s.hi = 0.0;
    s.lo = 0.0;
#if KP_ROW == 3
    for (kp_u64 base = 0; base * KP_VEC < len; base += (kp_u64)KP_BLOCK * KP_VPT) {
      kp_vec xs[KP_VPT];
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) kp_row_load(&xs[j], a, base + (kp_u64)j * KP_BLOCK + t, len, aligned);
      kp_acc cm = m;
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) cm = kp_vec_max(xs[j], (base + (kp_u64)j * KP_BLOCK + t) * KP_VEC, len, cm);
      if (cm > m) {
        if (s.hi != 0.0) { /* rescale the sum to the new max (0 stays 0: no -inf - -inf) */
          const kp_acc f = exp(m - cm);
          s.hi *= f;
          s.lo *= f;
        }
        m = cm;
      }
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) kp_vec_exp_sum(xs[j], (base + (kp_u64)j * KP_BLOCK + t) * KP_VEC, len, m, &s);
    }
    const kp_acc mx = kp_block_max(red_hi, m);
    if (s.hi != 0.0) {
      const kp_acc f = exp(m - mx);
      s.hi *= f;
      s.lo *= f;
    }
    m = mx;
    s = kp_block_sum(red_hi, red_lo, s);
#else
    /* registers, shared, cluster: the row (slice) read once into the slots */
#if KP_ROW == 4
    for (kp_u64 j = 0; j < slots; ++j) {
      const kp_u64 vi = j * KP_BLOCK + t;
      if (vi >= slice_vecs) break;
      kp_vec x;
      kp_row_load(&x, a, vi, len, aligned);
      kp_slice[vi] = KP_VEC_TO_RAW(x);
      m = kp_vec_max(x, vi * KP_VEC, len, m);
    }
#else
#pragma unroll
    for (int j = 0; j < KP_VPT; ++j) {
      kp_vec x;
      kp_row_load(&x, a, (kp_u64)j * KP_BLOCK + t, len, aligned);
      KP_HOLD_PUT(hold0, j, x);
    }
#pragma unroll
    for (int j = 0; j < KP_VPT; ++j) {
      kp_vec x;
      KP_HOLD_GET(hold0, j, x);
      m = kp_vec_max(x, ((kp_u64)j * KP_BLOCK + t) * KP_VEC, len, m);
    }
#endif
    m = kp_block_max(red_hi, m);
#if KP_ROW == 4
    if (t == 0) cl_slot[0] = m;
    kp_cluster_sync();
    if (t == 0) {
      kp_acc cm = KP_ACC_NEG_INF;
      for (unsigned q = 0; q < KP_CLUSTER; ++q) cm = kp_max_of(cm, kp_cluster_load(&cl_slot[0], q));
      red_hi[0] = cm;
    }
    KP_BARRIER();
    m = red_hi[0];
    KP_BARRIER();
    for (kp_u64 j = 0; j < slots; ++j) {
      const kp_u64 vi = j * KP_BLOCK + t;
      if (vi >= slice_vecs) break;
      kp_vec x;
      KP_SET_RAW(x, kp_slice[vi]);
      kp_vec_exp_sum(x, vi * KP_VEC, len, m, &s);
    }
#else
#pragma unroll
    for (int j = 0; j < KP_VPT; ++j) {
      kp_vec x;
      KP_HOLD_GET(hold0, j, x);
      kp_vec_exp_sum(x, ((kp_u64)j * KP_BLOCK + t) * KP_VEC, len, m, &s);
    }
#endif
    s = kp_block_sum(red_hi, red_lo, s);
#if KP_ROW == 4
    s = kp_cluster_sum(cl_slot, red_hi, red_lo, s);
#endif
#endif
    const kp_acc sum = kp_row_sum_of(s, m);
    const kp_acc inv = 1.0 / sum, log_sum = kp_log_sum(s, sum);
    /* ---- the results ---- */
#if KP_ROW == 3
    for (kp_u64 base = 0; base * KP_VEC < len; base += (kp_u64)KP_BLOCK * KP_VPT) {
      kp_vec xs[KP_VPT];
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) kp_row_load(&xs[j], a, base + (kp_u64)j * KP_BLOCK + t, len, aligned);
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) {
        const kp_u64 vi = base + (kp_u64)j * KP_BLOCK + t;
        kp_row_store_vec(kp_vec_forward(xs[j], vi * KP_VEC, len, m, sum, inv, log_sum), o, vi, len, aligned);
      }
    }
#elif KP_ROW == 4
    for (kp_u64 j = 0; j < slots; ++j) {
      const kp_u64 vi = j * KP_BLOCK + t;
      if (vi >= slice_vecs) break;
      kp_vec x;
      KP_SET_RAW(x, kp_slice[vi]);
      kp_row_store_vec(kp_vec_forward(x, vi * KP_VEC, len, m, sum, inv, log_sum), o, vi, len, aligned);
    }
#else
#pragma unroll
    for (int j = 0; j < KP_VPT; ++j) {
      kp_vec x;
      KP_HOLD_GET(hold0, j, x);
      const kp_u64 vi = (kp_u64)j * KP_BLOCK + t;
      kp_row_store_vec(kp_vec_forward(x, vi * KP_VEC, len, m, sum, inv, log_sum), o, vi, len, aligned);
    }
#endif

#else
    /* ---- backward: the sum over the row, then the results ---- */
    kp_sum2 s;
    s.hi = 0.0;
    s.lo = 0.0;
#if KP_ROW == 3
    for (kp_u64 base = 0; base * KP_VEC < len; base += (kp_u64)KP_BLOCK * KP_VPT) {
      kp_vec gs[KP_VPT], ys[KP_VPT];
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) {
        kp_row_load(&gs[j], a, base + (kp_u64)j * KP_BLOCK + t, len, aligned);
#if !KP_ROW_LOG
        kp_row_load(&ys[j], b, base + (kp_u64)j * KP_BLOCK + t, len, aligned);
#else
        ys[j] = gs[j];
#endif
      }
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) kp_vec_terms(gs[j], ys[j], (base + (kp_u64)j * KP_BLOCK + t) * KP_VEC, len, &s);
    }
#elif KP_ROW == 4
    kp_raw* kp_slice_y = kp_slice + slice_vecs;
    for (kp_u64 j = 0; j < slots; ++j) {
      const kp_u64 vi = j * KP_BLOCK + t;
      if (vi >= slice_vecs) break;
      kp_vec g, y;
      kp_row_load(&g, a, vi, len, aligned);
      kp_row_load(&y, b, vi, len, aligned);
      kp_slice[vi] = KP_VEC_TO_RAW(g);
      kp_slice_y[vi] = KP_VEC_TO_RAW(y);
      kp_vec_terms(g, y, vi * KP_VEC, len, &s);
    }
#else
#pragma unroll
    for (int j = 0; j < KP_VPT; ++j) {
      kp_vec g, y;
      kp_row_load(&g, a, (kp_u64)j * KP_BLOCK + t, len, aligned);
      kp_row_load(&y, b, (kp_u64)j * KP_BLOCK + t, len, aligned);
      KP_HOLD_PUT(hold0, j, g);
      KP_HOLD_PUT(hold1, j, y);
    }
#pragma unroll
    for (int j = 0; j < KP_VPT; ++j) {
      kp_vec g, y;
      KP_HOLD_GET(hold0, j, g);
      KP_HOLD_GET(hold1, j, y);
      kp_vec_terms(g, y, ((kp_u64)j * KP_BLOCK + t) * KP_VEC, len, &s);
    }
#endif
    s = kp_block_sum(red_hi, red_lo, s);
#if KP_ROW == 4
    s = kp_cluster_sum(cl_slot, red_hi, red_lo, s);
#endif
    /* one rounding of the finished sum, so that hi + lo is one value in every term */
    {
      const kp_acc v = kp_sum_value(s);
      s.lo = s.hi - s.hi == 0.0 ? (s.hi - v) + s.lo : 0.0;
      s.hi = v;
    }
#if KP_ROW == 3
    for (kp_u64 base = 0; base * KP_VEC < len; base += (kp_u64)KP_BLOCK * KP_VPT) {
      kp_vec gs[KP_VPT], ys[KP_VPT];
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) {
        kp_row_load(&gs[j], a, base + (kp_u64)j * KP_BLOCK + t, len, aligned);
        kp_row_load(&ys[j], b, base + (kp_u64)j * KP_BLOCK + t, len, aligned);
      }
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) {
        const kp_u64 vi = base + (kp_u64)j * KP_BLOCK + t;
        kp_row_store_vec(kp_vec_backward(gs[j], ys[j], vi * KP_VEC, len, s), o, vi, len, aligned);
      }
    }
#elif KP_ROW == 4
    for (kp_u64 j = 0; j < slots; ++j) {
      const kp_u64 vi = j * KP_BLOCK + t;
      if (vi >= slice_vecs) break;
      kp_vec g, y;
      KP_SET_RAW(g, kp_slice[vi]);
      KP_SET_RAW(y, kp_slice_y[vi]);
      kp_row_store_vec(kp_vec_backward(g, y, vi * KP_VEC, len, s), o, vi, len, aligned);
    }
#else
#pragma unroll
    for (int j = 0; j < KP_VPT; ++j) {
      kp_vec g, y;
      KP_HOLD_GET(hold0, j, g);
      KP_HOLD_GET(hold1, j, y);
      const kp_u64 vi = (kp_u64)j * KP_BLOCK + t;
      kp_row_store_vec(kp_vec_backward(g, y, vi * KP_VEC, len, s), o, vi, len, aligned);
    }
#endif
#endif
#if KP_ROW == 4
    /* no block may overwrite its slots (next row) or leave while another still reads them */
    kp_cluster_sync();
#endif
  }
}
