/* Where the row kernel (templates/common/rowwise.h) holds a row between its passes: the online
 * kernel's chunks, the slots of the registers and shared-memory kernels, and the pipelined cluster
 * kernel's stages of dynamic shared memory, which the bulk copy engine fills while the block works
 * on the other (with the terms KP_STAGE_KEEP keeps); and the persistent grid's fetch of a group's
 * next row. */
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
    if ((v0_ + (KP_VPT - 1) * KP_BLOCK + 1) * KP_VEC <= len) {                               \
      _Pragma("unroll") for (int j_ = 0; j_ < KP_VPT; ++j_) KP_SET_RAW(xs_[j_], (stage)[v0_ + (unsigned)j_ * KP_BLOCK]); \
      _Pragma("unroll") for (int j_ = 0; j_ < KP_VPT; ++j_) STEP(xs_[j_], v0_ + (unsigned)j_ * KP_BLOCK, KP_VEC) \
    } else {                                                                                 \
      _Pragma("unroll") for (int j_ = 0; j_ < KP_VPT; ++j_) {                                \
        const unsigned vi_ = v0_ + (unsigned)j_ * KP_BLOCK;                                  \
        if (vi_ < slice_vecs) KP_SET_RAW(xs_[j_], (stage)[vi_]);                             \
      }                                                                                      \
      _Pragma("unroll") for (int j_ = 0; j_ < KP_VPT; ++j_) {                                \
        const unsigned vi_ = v0_ + (unsigned)j_ * KP_BLOCK;                                  \
        STEP(xs_[j_], vi_, kp_lanes(vi_, len))                                               \
      }                                                                                      \
    }                                                                                        \
  }
/* The results pass over a stage whose terms kept a byte each in `lo`: the chunk's kept bytes are
 * read with its vectors, KP_VPT of each in flight, then STEP(x, l, vi, nl) on each. Read in each
 * step, next to its use and behind the vector's store branches, the byte held its warp on the
 * shared load (Nsight Compute: 5 % of the pipelined kernel's stall samples at 4096x393216). */
#define KP_STAGE_PASS_LO(stage, lo, STEP, WHOLE_OK, WHOLE)                                   \
  for (unsigned v0_ = t; v0_ < slice_vecs; v0_ += KP_VPT * KP_BLOCK) {                       \
    kp_vec xs_[KP_VPT];                                                                      \
    kp_lo_raw ls_[KP_VPT];                                                                   \
    if ((v0_ + (KP_VPT - 1) * KP_BLOCK + 1) * KP_VEC <= len) {                               \
      _Pragma("unroll") for (int j_ = 0; j_ < KP_VPT; ++j_) {                                \
        KP_SET_RAW(xs_[j_], (stage)[v0_ + (unsigned)j_ * KP_BLOCK]);                         \
        ls_[j_] = (lo)[v0_ + (unsigned)j_ * KP_BLOCK];                                       \
      }                                                                                      \
      if (WHOLE_OK) {                                                                        \
        _Pragma("unroll") for (int j_ = 0; j_ < KP_VPT; ++j_) WHOLE(xs_[j_], ls_[j_], v0_ + (unsigned)j_ * KP_BLOCK) \
      } else {                                                                               \
        _Pragma("unroll") for (int j_ = 0; j_ < KP_VPT; ++j_) STEP(xs_[j_], ls_[j_], v0_ + (unsigned)j_ * KP_BLOCK, KP_VEC) \
      }                                                                                      \
    } else {                                                                                 \
      _Pragma("unroll") for (int j_ = 0; j_ < KP_VPT; ++j_) {                                \
        const unsigned vi_ = v0_ + (unsigned)j_ * KP_BLOCK;                                  \
        ls_[j_] = 0;                                                                         \
        if (vi_ < slice_vecs) {                                                              \
          KP_SET_RAW(xs_[j_], (stage)[vi_]);                                                 \
          ls_[j_] = (lo)[vi_];                                                               \
        }                                                                                    \
      }                                                                                      \
      _Pragma("unroll") for (int j_ = 0; j_ < KP_VPT; ++j_) {                                \
        const unsigned vi_ = v0_ + (unsigned)j_ * KP_BLOCK;                                  \
        STEP(xs_[j_], ls_[j_], vi_, kp_lanes(vi_, len))                                      \
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
 * the forward more than its instruction count says. e's high word (its sign, exponent and 20
 * bits of its significand) takes x's place in the stage (each thread rewrites only its own
 * vectors), and the top byte of its low word goes to a byte per element after the stage or stages
 * (kp_lo, a quarter of a stage: row_slice_bytes counts it), so that two stages and the kept terms
 * fit where the low words whole would not (24,576 float32 elements a block: 216 KiB against 288).
 * The result takes the low word back as that byte and half of what it dropped: e to 28 bits,
 * within 2^-29 of it relative, 2^-5 ulp of a float32 result beside its rounding (docs/accuracy.md). */
#if KP_STAGE_KEEP
#if KP_VEC == 4
typedef unsigned kp_lo_raw; /* a vector's kept bytes, lane k's in bits 8k to 8k + 7 */
#elif KP_VEC == 2
typedef unsigned short kp_lo_raw;
#else
typedef unsigned char kp_lo_raw;
#endif
#define KP_STAGE_KEEP_LANE(k)                                              \
  if ((k) < nl) {                                                          \
    const kp_acc e_ = kp_term(kp_row_in(KP_LANE(x, k)), m KP_EXP_TAB_ARG); \
    kp_sum_add(s, e_);                                                     \
    KP_LANE(h, k) = KP_AS_FLOAT(KP_D_HI(e_));                              \
    lb |= ((unsigned)KP_D_LO(e_) >> 24) << (8 * (k));                      \
  }
KP_FN void kp_vec_exp_stage_n(kp_vec x, int nl, kp_acc m, kp_sum2* s, KP_LOCAL_PTR kp_raw* hi,
                              KP_LOCAL_PTR kp_lo_raw* lo KP_EXP_TAB_PARAM) {
  if (nl == 0) return; /* a vector past the slice (KP_STAGE_PASS's last chunk): no slot to write */
  kp_vec h = x;
  unsigned lb = 0;
  KP_FOR_LANES(KP_STAGE_KEEP_LANE)
  *hi = KP_VEC_TO_RAW(h);
  *lo = (kp_lo_raw)lb;
}
/* e from its high word and kept byte, the dropped bits' midpoint below it (bit 23 of the low word) */
#define KP_STAGE_SCALE_LANE(k)                                                                       \
  if ((k) < nl)                                                                                      \
    KP_LANE(y, k) = kp_row_store(                                                                    \
        KP_D_FROM_HILO(KP_AS_INT(KP_LANE(h, k)), (int)(((lb >> (8 * (k))) << 24) | 0x00800000u)) * inv);
KP_FN kp_vec kp_vec_scale_stage_n(kp_vec h, kp_lo_raw lo, int nl, kp_acc inv) {
  const unsigned lb = lo;
  kp_vec y = h;
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
