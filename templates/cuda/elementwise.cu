/* Generic element-wise kernel for CUDA. Codegen defines the knobs (KP_VEC, KP_VEC_BYTES,
 * KP_VPT, KP_BLOCK, KP_BACKWARD, KP_SAVED_OUTPUT, KP_STREAMING, KP_FLAT, KP_LATE_GRAD, KP_ENTRY)
 * and puts the prelude and one activation snippet in front of this file.
 *
 * Layout (KP_FLAT 0, the general kernel): `rows` rows of `cols` elements with row pitches (in
 * elements); a flat buffer is one row. Each row is split into a scalar head (so that the output
 * becomes KP_VEC_BYTES-aligned), a body of whole vectors and a scalar tail. An input that does
 * not share the output's alignment is read with scalar loads in the same layout; stores stay
 * wide. Indices are 64-bit.
 * KP_FLAT 1, the flat kernel: one row of fewer than 2^31 elements whose pointers are all
 * KP_VEC_BYTES-aligned (the engine checks this on the host, src/launch_layout.cpp): no head, no
 * row loop, no unaligned path, 32-bit indices.
 * Every thread reads all its vectors before it writes any, so out == in is safe.
 * KP_LATE_GRAD (backward): the saved tensor is loaded first and the gradient only where the math
 * needs it, so the compiler issues it after the derivative: torch's float16 gelu backward does this
 * (docs/benchmarks.md, session 26). Each gradient vector is still read before its output is
 * written, and a thread writes only the elements it reads, so out == in stays safe. */
typedef unsigned long long kp_u64;

#if KP_VEC_BYTES == 16
typedef uint4 kp_raw;
#elif KP_VEC_BYTES == 8
typedef uint2 kp_raw;
#elif KP_VEC_BYTES == 4
typedef unsigned int kp_raw;
#else
typedef unsigned short kp_raw;
#endif

union kp_pack {
  kp_raw raw;
  KP_T e[KP_VEC];
};

#if KP_STREAMING
#define KP_LD(p) __ldcs(p)
#define KP_ST(p, v) __stcs((p), (v))
#else
#define KP_LD(p) (*(p))
#define KP_ST(p, v) (*(p) = (v))
#endif

/* One element: forward reads x; backward reads the incoming gradient and the saved tensor. */
KP_FN KP_T kp_apply(KP_T a, KP_T b) {
#if KP_BACKWARD
#if KP_SAVED_OUTPUT
  return kp_to_storage(kp_act_backward_from_output(kp_to_compute(a), kp_to_compute(b)));
#else
  return kp_to_storage(kp_act_backward_from_input(kp_to_compute(a), kp_to_compute(b)));
#endif
#else
  (void)b;
  return kp_to_storage(kp_act_forward(kp_to_compute(a)));
#endif
}

KP_FN void kp_scalar(KP_T* o, const KP_T* a, const KP_T* b, kp_u64 i) {
#if KP_BACKWARD
  KP_T bv = KP_LD(b + i);
#else
  KP_T bv = 0;
#endif
  KP_ST(o + i, kp_apply(KP_LD(a + i), bv));
}

/* Loads vector v of an input that starts at p: one wide load when p is vector-aligned, else
 * KP_VEC scalar loads (neighbouring threads read neighbouring words, so L1 merges them). */
template <typename I>
KP_FN void kp_load(kp_pack* dst, const KP_T* p, bool aligned, I v) {
  if (aligned) {
    dst->raw = KP_LD((const kp_raw*)p + v);
  } else {
#pragma unroll
    for (int k = 0; k < KP_VEC; ++k) dst->e[k] = KP_LD(p + v * KP_VEC + k);
  }
}

/* One chunk step of one thread: vectors base, base + KP_BLOCK, ... below nvec, all read before
 * any is written. I is the index type: 32-bit in the flat kernel, 64-bit in the general one. */
template <typename I>
KP_FN void kp_step(kp_raw* ov, const KP_T* a, bool a_vec, const KP_T* b, bool b_vec, I base, I nvec) {
  kp_pack x[KP_VPT];
#if KP_BACKWARD
  kp_pack s[KP_VPT];
#else
  (void)b;
  (void)b_vec;
#endif
#pragma unroll
  for (int j = 0; j < KP_VPT; ++j) {
    const I v = base + (I)j * KP_BLOCK;
    if (v < nvec) {
#if !(KP_BACKWARD && KP_LATE_GRAD) /* else the gradient is loaded below, next to its one use */
      kp_load(&x[j], a, a_vec, v);
#endif
#if KP_BACKWARD
      kp_load(&s[j], b, b_vec, v);
#endif
    }
  }
#pragma unroll
  for (int j = 0; j < KP_VPT; ++j) {
    const I v = base + (I)j * KP_BLOCK;
    if (v < nvec) {
      kp_pack y;
#if KP_BACKWARD && KP_LATE_GRAD
      kp_load(&x[j], a, a_vec, v);
#endif
#pragma unroll
      for (int k = 0; k < KP_VEC; ++k) {
#if KP_BACKWARD
        y.e[k] = kp_apply(x[j].e[k], s[j].e[k]);
#else
        y.e[k] = kp_apply(x[j].e[k], 0);
#endif
      }
      KP_ST(ov + v, y.raw);
    }
  }
}

#if KP_FLAT
/* About 20 instructions before the first load where the general kernel has about 75, and one
 * copy of the activation's body instead of an aligned and an unaligned one: long float64 and
 * 16-bit bodies gained most (docs/benchmarks.md, session 25). The pitches are unused. */
extern "C" __global__ void __launch_bounds__(KP_BLOCK)
KP_ENTRY(KP_T* out, const KP_T* in0, const KP_T* in1, kp_u64 rows, kp_u64 cols,
         kp_u64 ld_out, kp_u64 ld_in0, kp_u64 ld_in1) {
  (void)rows;
  (void)ld_out;
  (void)ld_in0;
  (void)ld_in1;
  const unsigned n = (unsigned)cols;
  const unsigned nvec = n / KP_VEC;
  const unsigned chunk = KP_BLOCK * KP_VPT; /* vectors per block step */
  for (unsigned c = blockIdx.x; c * chunk < nvec; c += gridDim.x)
    kp_step<unsigned>((kp_raw*)out, in0, true, in1, true, c * chunk + threadIdx.x, nvec);
  /* The tail: fewer than KP_VEC elements, done by the first block. */
  if (blockIdx.x == 0 && threadIdx.x < n - nvec * KP_VEC) kp_scalar(out, in0, in1, nvec * KP_VEC + threadIdx.x);
}
#else
extern "C" __global__ void __launch_bounds__(KP_BLOCK)
KP_ENTRY(KP_T* out, const KP_T* in0, const KP_T* in1, kp_u64 rows, kp_u64 cols,
         kp_u64 ld_out, kp_u64 ld_in0, kp_u64 ld_in1) {
  const kp_u64 chunk = (kp_u64)KP_BLOCK * KP_VPT; /* vectors per block step */
  for (kp_u64 r = blockIdx.y; r < rows; r += gridDim.y) {
    KP_T* o = out + r * ld_out;
    const KP_T* a = in0 + r * ld_in0;
    const KP_T* b = in1 + r * ld_in1;
    /* Peel a scalar head so that the output is vector-aligned: stores are always wide. */
    const unsigned mis = (unsigned)((kp_u64)o % KP_VEC_BYTES);
    kp_u64 head = mis ? (KP_VEC_BYTES - mis) / sizeof(KP_T) : 0;
    if (head > cols) head = cols;
    const bool a_vec = ((kp_u64)(a + head) % KP_VEC_BYTES) == 0;
    const bool b_vec = ((kp_u64)(b + head) % KP_VEC_BYTES) == 0;
    const kp_u64 nvec = (cols - head) / KP_VEC;
    const kp_u64 body_end = head + nvec * KP_VEC;
    kp_raw* ov = (kp_raw*)(o + head);
    for (kp_u64 c = blockIdx.x; c * chunk < nvec; c += gridDim.x)
      kp_step<kp_u64>(ov, a + head, a_vec, b + head, b_vec, c * chunk + threadIdx.x, nvec);
    /* Head and tail: fewer than KP_VEC elements each, done by the first block of the row. */
    if (blockIdx.x == 0) {
      if (threadIdx.x < head) kp_scalar(o, a, b, threadIdx.x);
      if (threadIdx.x < cols - body_end) kp_scalar(o, a, b, body_end + threadIdx.x);
    }
  }
}
#endif
