/* The row kernel's reductions (templates/common/rowwise.h): a row's max and sum over the group of
 * threads that holds it (warp shuffles, then shared memory, on CUDA; a tree in shared memory on
 * OpenCL C 1.2), and on sm_90 across a thread-block cluster through distributed shared memory
 * (slots behind a cluster barrier for the registers and online kernels; pushes completed on each
 * block's mbarrier for the cluster kernel), ending in KP_ROW_MAX and KP_ROW_SUM, which the kernel
 * calls whatever holds the row, and KP_ROW_KERNEL, its qualifiers (the cluster's dimensions). The
 * merges are symmetric and taken in the same order everywhere, so every thread of a row ends with
 * the same bits. */
/* Reductions over a row's group of KP_TPR threads, the result in every thread of the group.
 * CUDA: a butterfly of warp shuffles, then (groups wider than a warp) the warps' values through
 * shared memory, each warp reducing them in the same order; `red` holds 32 values per parity,
 * and alternating parity between rows lets a group write the next row's while a slower warp
 * still reads this one's, with one barrier a reduction. OpenCL C 1.2 has no shuffles: a tree in
 * shared memory over KP_BLOCK values, with a barrier after the read. */
#if defined(__OPENCL_VERSION__)
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
/* Across warps: lane l of each warp takes warp l mod W's value (W = KP_TPR / 32 warps a group), so
 * that a butterfly of log2(W) steps, not 5, gives every lane the group's value. */
/* The values pass as KP_C (a float where that is the compute type: no conversions to double). */
#define KP_GROUP_MAX_ACROSS_WARPS(MAX)                                                          \
  const unsigned lane = KP_LOCAL_ID % 32, w = KP_LOCAL_ID / 32;                                 \
  KP_C* const redc = (KP_C*)(red + parity * 32);                                                \
  if (lane == 0) redc[w] = v;                                                                   \
  KP_BARRIER();                                                                                 \
  v = redc[(w & ~(unsigned)(KP_TPR / 32 - 1)) + lane % (KP_TPR / 32)];                          \
  _Pragma("unroll") for (int o = KP_TPR / 64; o > 0; o >>= 1) v = MAX(v, kp_shfl_c(v, o));
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
    if (KP_SUM_COMPENSATED) lo[w] = v.lo; /* else 0 */
  }
  KP_BARRIER();
  const unsigned at = (w & ~(unsigned)(KP_TPR / 32 - 1)) + lane % (KP_TPR / 32); /* as the max's */
  v.hi = hi[at];
  v.lo = KP_SUM_COMPENSATED ? lo[at] : 0.0;
#pragma unroll
  for (int o = KP_TPR / 64; o > 0; o >>= 1) v = kp_sum_merge(v, kp_shfl2(v, o));
#else
  (void)hi;
  (void)lo;
  (void)parity;
#endif
  return v;
}
#endif

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
/* doubles a buffer: KP_XN (hi, lo) pairs, and KP_XN maxima where a row takes one exchange; a plain
 * sum's lo is 0, so there a row's one exchange sends (hi, max) pairs: 16 bytes a warp, not 24 (at
 * blocks of 512 in clusters of 16 that leaves room for a 393216-column float32 row's two stages) */
#define KP_XCHG_PAIRS (KP_XCHG1 && !KP_SUM_COMPENSATED)
#define KP_XSTRIDE ((KP_XCHG_PAIRS ? 2 : 2 + KP_XCHG1) * KP_XN)
typedef struct {
  KP_LOCAL_PTR kp_acc* buf; /* two buffers of KP_XSTRIDE doubles */
  unsigned bar;             /* the first of two mbarriers */
  unsigned rank;
  unsigned step; /* exchanges so far */
} kp_xchg;
/* The wait acquires at CTA scope (try_wait's default), as CUTLASS's ClusterTransactionBarrier
 * waits: the values arrive by st.async, whose complete-tx on this block's mbarrier makes them
 * visible to a thread that sees the phase complete. An acquire at cluster scope adds an L1
 * invalidation (CCTL.IVALL) per warp and exchange. */
KP_FN void kp_xchg_wait(unsigned bar, unsigned phase) {
  unsigned done = 0;
  while (!done)
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, "
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
 * (hi, lo) pairs, then the maxima (KP_XSTRIDE); for a plain sum (hi, max) pairs. */
KP_FN kp_acc kp_xchg_maxsum(kp_xchg* x, kp_acc m, kp_sum2* s KP_EXP_TAB_PARAM) {
  kp_sum2 v = *s;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = kp_sum_merge(v, kp_shfl2(v, o));
  unsigned bar, phase, slot;
#if KP_XCHG_PAIRS
  KP_LOCAL_PTR kp_acc* buf = kp_xchg_begin(x, 16u, &bar, &phase, &slot);
  const unsigned lane = KP_LOCAL_ID % 32;
  if (lane < KP_CLUSTER)
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f64 [%0], {%1, %2}, [%3];" ::"r"(
                     kp_mapa(kp_smem_u32(&buf[2 * slot]), lane)),
                 "d"(v.hi), "d"(m), "r"(kp_mapa(bar, lane))
                 : "memory");
  kp_xchg_wait(bar, phase);
#define KP_XMAX_AT(i) buf[2 * (i) + 1]
#define KP_XLO_AT(i) 0.0
#define KP_XHI_AT(i) buf[2 * (i)]
#else
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
#define KP_XMAX_AT(i) buf[2 * KP_XN + (i)]
#define KP_XLO_AT(i) buf[2 * (i) + 1]
#define KP_XHI_AT(i) buf[2 * (i)]
#endif
  kp_acc mx = KP_ACC_NEG_INF;
  for (unsigned i = lane; i < KP_XN; i += 32) mx = fmax(mx, KP_XMAX_AT(i));
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) mx = fmax(mx, kp_shfl(mx, o));
  kp_sum2 r = kp_sum_zero();
  for (unsigned i = lane; i < KP_XN; i += 32) {
    kp_sum2 w;
    w.hi = KP_XHI_AT(i);
    w.lo = KP_XLO_AT(i);
    if (w.hi != 0.0) { /* NaN too */
      const kp_acc f = kp_term(KP_XMAX_AT(i), mx KP_EXP_TAB_ARG);
      w.hi *= f;
      w.lo *= f;
      r = kp_sum_merge(r, w);
    }
  }
#undef KP_XMAX_AT
#undef KP_XLO_AT
#undef KP_XHI_AT
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
