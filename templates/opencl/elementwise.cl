/* Generic element-wise kernel for OpenCL C 1.2, the same algorithm as cuda/elementwise.cu.
 * Codegen defines the knobs (KP_VEC, KP_VEC_BYTES, KP_VPT, KP_BLOCK, KP_BACKWARD,
 * KP_SAVED_OUTPUT, KP_FLAT, KP_LATE_GRAD, KP_ENTRY) and puts the prelude and one activation
 * snippet in front of this file. KP_STREAMING has no OpenCL meaning (the backend refuses
 * --cache streaming).
 *
 * Layout: `rows` rows of `cols` elements with row pitches (in elements); a flat buffer is one
 * row. A cl_mem cannot carry an offset, so every buffer comes with its start in elements.
 * Buffers are aligned to CL_DEVICE_MEM_BASE_ADDR_ALIGN (at least 128 bytes), so alignment
 * follows from element indices alone. Each row is split into a scalar head (so that the output
 * becomes KP_VEC_BYTES-aligned), a body of whole vectors moved through raw 16/8/4/2-byte words
 * (uint4/uint2/uint/ushort, so NVIDIA emits 16-byte accesses) and a scalar tail. An input that
 * does not share the output's alignment is read with scalar loads (vloadn) in the same layout;
 * stores stay wide. Indices are 64-bit. KP_FLAT 1 (as in cuda/elementwise.cu): one row of fewer
 * than 2^31 elements whose starts are all KP_VEC_BYTES-aligned, so no head, no row loop and no
 * unaligned path. Every work-item reads all its vectors before it writes any, so out == in is
 * safe.
 *
 * Unlike the CUDA kernel, a vector's elements are reached through OpenCL vector types (as_type
 * reinterpretation and .sN lanes), not a union with an array: NVIDIA's OpenCL compiler keeps a
 * union of uint4 and 16-bit elements in local memory, which halved float16/bfloat16 bandwidth. */
typedef ulong kp_u64;

#define KP_CAT(a, b) a##b
#define KP_XCAT(a, b) KP_CAT(a, b)

#if KP_VEC_BYTES == 16
#define KP_RAW uint4
#elif KP_VEC_BYTES == 8
#define KP_RAW uint2
#elif KP_VEC_BYTES == 4
#define KP_RAW uint
#else
#define KP_RAW ushort
#endif

/* KP_TV: KP_VEC elements of KP_T as one OpenCL value (ushort8, float4, double2, ... or KP_T). */
#if KP_VEC == 1
#define KP_TV KP_TN
#define KP_LANE(v, c) (v)
#define KP_VLOAD(v, p) ((p)[v])
#else
#define KP_TV KP_XCAT(KP_TN, KP_VEC)
#define KP_LANE(v, c) ((v).c)
#define KP_VLOAD(v, p) KP_XCAT(vload, KP_VEC)(v, p)
#endif
#define KP_AS_TV(raw) KP_XCAT(as_, KP_TV)(raw)
#define KP_AS_RAW(vec) KP_XCAT(as_, KP_RAW)(vec)

/* M(lane, index) for every lane of a vector. */
#define KP_LANES_1(M) M(s0, 0)
#define KP_LANES_2(M) KP_LANES_1(M) M(s1, 1)
#define KP_LANES_4(M) KP_LANES_2(M) M(s2, 2) M(s3, 3)
#define KP_LANES_8(M) KP_LANES_4(M) M(s4, 4) M(s5, 5) M(s6, 6) M(s7, 7)
#define KP_LANES(M) KP_XCAT(KP_LANES_, KP_VEC)(M)

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

KP_FN void kp_scalar(__global KP_T* o, __global const KP_T* a, __global const KP_T* b, kp_u64 i) {
#if KP_BACKWARD
  KP_T bv = b[i];
#else
  KP_T bv = 0;
  (void)b;
#endif
  o[i] = kp_apply(a[i], bv);
}

/* Vector v of an input that starts at p: one wide load when p is vector-aligned, else KP_VEC
 * scalar loads (neighbouring work-items read neighbouring words, so caches merge them). */
KP_FN KP_TV kp_load(__global const KP_T* p, bool aligned, kp_u64 v) {
  if (aligned) return KP_AS_TV(((__global const KP_RAW*)p)[v]);
  return KP_VLOAD(v, p);
}

#if KP_BACKWARD
#define KP_APPLY_LANE(c, k) KP_LANE(y, c) = kp_apply(KP_LANE(x[j], c), KP_LANE(s[j], c));
#else
#define KP_APPLY_LANE(c, k) KP_LANE(y, c) = kp_apply(KP_LANE(x[j], c), 0);
#endif

/* One chunk step of one work-item: vectors base, base + KP_BLOCK, ... below nvec, all read
 * before any is written. */
KP_FN void kp_step(__global KP_RAW* ov, __global const KP_T* a, bool a_vec, __global const KP_T* b, bool b_vec,
                   kp_u64 base, kp_u64 nvec) {
  KP_TV x[KP_VPT];
#if KP_BACKWARD
  KP_TV s[KP_VPT];
#else
  (void)b;
  (void)b_vec;
#endif
#pragma unroll
  for (int j = 0; j < KP_VPT; ++j) {
    const kp_u64 v = base + (kp_u64)j * KP_BLOCK;
    if (v < nvec) {
#if !(KP_BACKWARD && KP_LATE_GRAD) /* else the gradient is loaded below, next to its one use */
      x[j] = kp_load(a, a_vec, v);
#endif
#if KP_BACKWARD
      s[j] = kp_load(b, b_vec, v);
#endif
    }
  }
#pragma unroll
  for (int j = 0; j < KP_VPT; ++j) {
    const kp_u64 v = base + (kp_u64)j * KP_BLOCK;
    if (v < nvec) {
      KP_TV y;
#if KP_BACKWARD && KP_LATE_GRAD
      x[j] = kp_load(a, a_vec, v);
#endif
      KP_LANES(KP_APPLY_LANE)
      ov[v] = KP_AS_RAW(y);
    }
  }
}

#if KP_FLAT
__kernel __attribute__((reqd_work_group_size(KP_BLOCK, 1, 1)))
void KP_ENTRY(__global KP_T* out, kp_u64 out_off, __global const KP_T* in0, kp_u64 in0_off,
              __global const KP_T* in1, kp_u64 in1_off, kp_u64 rows, kp_u64 cols,
              kp_u64 ld_out, kp_u64 ld_in0, kp_u64 ld_in1) {
  (void)rows;
  (void)ld_out;
  (void)ld_in0;
  (void)ld_in1;
  const uint n = (uint)cols;
  const uint nvec = n / KP_VEC;
  const uint chunk = KP_BLOCK * KP_VPT; /* vectors per group step */
  const uint tid = get_local_id(0);
  __global KP_T* o = out + out_off;
  __global const KP_T* a = in0 + in0_off;
  __global const KP_T* b = in1 + in1_off;
  for (uint c = get_group_id(0); c * chunk < nvec; c += get_num_groups(0))
    kp_step((__global KP_RAW*)o, a, true, b, true, c * chunk + tid, nvec);
  /* The tail: fewer than KP_VEC elements, done by the first group. */
  if (get_group_id(0) == 0 && tid < n - nvec * KP_VEC) kp_scalar(o, a, b, nvec * KP_VEC + tid);
}
#else
__kernel __attribute__((reqd_work_group_size(KP_BLOCK, 1, 1)))
void KP_ENTRY(__global KP_T* out, kp_u64 out_off, __global const KP_T* in0, kp_u64 in0_off,
              __global const KP_T* in1, kp_u64 in1_off, kp_u64 rows, kp_u64 cols,
              kp_u64 ld_out, kp_u64 ld_in0, kp_u64 ld_in1) {
  const kp_u64 chunk = (kp_u64)KP_BLOCK * KP_VPT; /* vectors per group step */
  const kp_u64 tid = get_local_id(0);
  for (kp_u64 r = get_group_id(1); r < rows; r += get_num_groups(1)) {
    const kp_u64 o_at = out_off + r * ld_out, a_at = in0_off + r * ld_in0, b_at = in1_off + r * ld_in1;
    __global KP_T* o = out + o_at;
    __global const KP_T* a = in0 + a_at;
    __global const KP_T* b = in1 + b_at;
    /* Peel a scalar head so that the output is vector-aligned: stores are always wide. */
    const uint mis = (uint)((o_at * sizeof(KP_T)) % KP_VEC_BYTES);
    kp_u64 head = mis ? (KP_VEC_BYTES - mis) / sizeof(KP_T) : 0;
    if (head > cols) head = cols;
    const bool a_vec = (((a_at + head) * sizeof(KP_T)) % KP_VEC_BYTES) == 0;
    const bool b_vec = (((b_at + head) * sizeof(KP_T)) % KP_VEC_BYTES) == 0;
    const kp_u64 nvec = (cols - head) / KP_VEC;
    const kp_u64 body_end = head + nvec * KP_VEC;
    for (kp_u64 c = get_group_id(0); c * chunk < nvec; c += get_num_groups(0))
      kp_step((__global KP_RAW*)(o + head), a + head, a_vec, b + head, b_vec, c * chunk + tid, nvec);
    /* Head and tail: fewer than KP_VEC elements each, done by the first group of the row. */
    if (get_group_id(0) == 0) {
      if (tid < head) kp_scalar(o, a, b, tid);
      if (tid < cols - body_end) kp_scalar(o, a, b, body_end + tid);
    }
  }
}
#endif
