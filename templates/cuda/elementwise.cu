/* Generic element-wise kernel for CUDA. Codegen defines the knobs (KP_VEC, KP_VEC_BYTES,
 * KP_VPT, KP_BLOCK, KP_BACKWARD, KP_SAVED_OUTPUT, KP_STREAMING, KP_ENTRY) and puts the prelude
 * and one activation snippet in front of this file.
 *
 * Layout: `rows` rows of `cols` elements with row pitches (in elements); a flat buffer is one
 * row. Each row is split into a scalar head (so that the output becomes KP_VEC_BYTES-aligned),
 * a body of whole vectors and a scalar tail. An input that does not share the output's
 * alignment is read with scalar loads in the same layout; stores stay wide. Indices are 64-bit.
 * Every thread reads all its vectors before it writes any, so out == in is safe. */
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
KP_FN void kp_load(kp_pack* dst, const KP_T* p, bool aligned, kp_u64 v) {
  if (aligned) {
    dst->raw = KP_LD((const kp_raw*)p + v);
  } else {
#pragma unroll
    for (int k = 0; k < KP_VEC; ++k) dst->e[k] = KP_LD(p + v * KP_VEC + k);
  }
}

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
#if KP_BACKWARD
    const bool b_vec = ((kp_u64)(b + head) % KP_VEC_BYTES) == 0;
#endif
    const kp_u64 nvec = (cols - head) / KP_VEC;
    const kp_u64 body_end = head + nvec * KP_VEC;
    kp_raw* ov = (kp_raw*)(o + head);
    for (kp_u64 c = blockIdx.x; c * chunk < nvec; c += gridDim.x) {
      const kp_u64 base = c * chunk + threadIdx.x;
      kp_pack x[KP_VPT];
#if KP_BACKWARD
      kp_pack s[KP_VPT];
#endif
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) {
        const kp_u64 v = base + (kp_u64)j * KP_BLOCK;
        if (v < nvec) {
          kp_load(&x[j], a + head, a_vec, v);
#if KP_BACKWARD
          kp_load(&s[j], b + head, b_vec, v);
#endif
        }
      }
#pragma unroll
      for (int j = 0; j < KP_VPT; ++j) {
        const kp_u64 v = base + (kp_u64)j * KP_BLOCK;
        if (v < nvec) {
          kp_pack y;
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
    /* Head and tail: fewer than KP_VEC elements each, done by the first block of the row. */
    if (blockIdx.x == 0) {
      if (threadIdx.x < head) kp_scalar(o, a, b, threadIdx.x);
      if (threadIdx.x < cols - body_end) kp_scalar(o, a, b, body_end + threadIdx.x);
    }
  }
}
