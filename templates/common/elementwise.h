/* Generic element-wise kernel, one body for CUDA and OpenCL C 1.2. Codegen defines the knobs
 * (KP_VEC, KP_VEC_BYTES, KP_VPT, KP_BLOCK, KP_BACKWARD, KP_SAVED_OUTPUT, KP_STREAMING, KP_FLAT,
 * KP_LATE_GRAD, KP_ENTRY) and puts the backend's prelude and one activation snippet in front of
 * this file. The prelude maps every difference between the backends:
 *   kp_u64                  64-bit unsigned index
 *   KP_KERNEL               the kernel qualifiers up to the entry's name (return type included)
 *   KP_GLOBAL               the address space of the buffers (empty on CUDA)
 *   KP_BUFFER(T, name)      a buffer parameter (OpenCL adds name##_off, its start in elements)
 *   KP_OFFSET(name)         that start in elements (0 on CUDA)
 *   KP_MISALIGNMENT(p, at)  bytes by which p, `at` elements into its buffer, is past a
 *                           KP_VEC_BYTES boundary (CUDA reads the address, OpenCL the index)
 *   KP_LOCAL_ID, KP_GROUP_X, KP_GROUP_Y, KP_NUM_GROUPS_X, KP_NUM_GROUPS_Y
 *                           thread in block, block in grid and grid size (x: along a row, y:
 *                           rows), 32-bit unsigned
 *   KP_LD(p), KP_ST(p, v)   one global load / store, with the KP_STREAMING cache hint on CUDA
 *   kp_raw                  the KP_VEC_BYTES-byte word a vector moves through (uint4, uint2, a
 *                           32- or 16-bit word), so that both backends emit 16-byte accesses
 *   kp_vec                  KP_VEC elements: CUDA a union of kp_raw and KP_T[KP_VEC], OpenCL a
 *                           vector type (float4, ushort8, double2, ...)
 *   KP_LANE(v, k), KP_FOR_LANES(M)
 *                           element k of a kp_vec; M(k) for every lane k (a literal on OpenCL)
 *   KP_SET_RAW(v, r), KP_VEC_TO_RAW(v)
 *                           kp_vec v from its raw word r, and v's raw word
 *   KP_VLOAD(v, p, i);      a statement: kp_vec v = vector i of the elements at p, which need only
 *                           element alignment (KP_VEC scalar loads on CUDA, vloadn on OpenCL)
 *
 * Layout (KP_FLAT 0, the general kernel): `rows` rows of `cols` elements with row pitches (in
 * elements); a flat buffer is one row. Each row is split into a scalar head (so that the output
 * becomes KP_VEC_BYTES-aligned), a body of whole vectors and a scalar tail. An input that does
 * not share the output's alignment is read with scalar loads in the same layout; stores stay
 * wide. Indices are 64-bit.
 * KP_FLAT 1, the flat kernel: one row of fewer than 2^31 elements whose starts are all
 * KP_VEC_BYTES-aligned (the engine checks this on the host, src/engine/launch_layout.cpp): no
 * head, no row loop, no unaligned path, 32-bit indices.
 * Every thread reads all its vectors before it writes any, so out == in is safe (and no pointer is
 * restrict).
 * KP_LATE_GRAD (backward): the saved tensor is loaded first and the gradient only where the math
 * needs it, so the compiler issues it after the derivative, as torch's float16 gelu backward does
 * (its kernel's SASS in ncu). On an H100, float16 gelu backward in blocks of 512, one vector, read
 * 102.7 % of a same-run copy with it and 100.9-101.5 % without it in every launch shape tried
 * (`tools/perf_table.py --acts gelu --dtypes f16 --directions backward --timing queued --order
 * alternate --pin '512|1' --pin '512|1||||late'`). Each gradient vector is still read before its
 * output is written, and a thread writes only the elements it reads, so out == in stays safe. */

/* The vector index of kp_step: 32-bit in the flat kernel, 64-bit in the general one. */
#if KP_FLAT
typedef unsigned kp_idx;
#else
typedef kp_u64 kp_idx;
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

KP_FN void kp_scalar(KP_GLOBAL KP_T* o, KP_GLOBAL const KP_T* a, KP_GLOBAL const KP_T* b, kp_u64 i) {
#if KP_BACKWARD
  KP_T bv = KP_LD(b + i);
#else
  KP_T bv = 0;
  (void)b;
#endif
  KP_ST(o + i, kp_apply(KP_LD(a + i), bv));
}

/* Vector v of an input that starts at p: one wide load when p is vector-aligned, else KP_VEC
 * scalar loads (neighbouring threads read neighbouring words, so the caches merge them). */
KP_FN void kp_load(kp_vec* dst, KP_GLOBAL const KP_T* p, bool aligned, kp_idx v) {
  if (aligned) {
    KP_SET_RAW(*dst, KP_LD((KP_GLOBAL const kp_raw*)p + v));
  } else {
    KP_VLOAD(*dst, p, v);
  }
}

#if KP_BACKWARD
#define KP_APPLY_LANE(k) KP_LANE(y, k) = kp_apply(KP_LANE(x[j], k), KP_LANE(s[j], k));
#else
#define KP_APPLY_LANE(k) KP_LANE(y, k) = kp_apply(KP_LANE(x[j], k), 0);
#endif

/* One chunk step of one thread: vectors base, base + KP_BLOCK, ... below nvec, all read before
 * any is written. */
KP_FN void kp_step(KP_GLOBAL kp_raw* ov, KP_GLOBAL const KP_T* a, bool a_vec, KP_GLOBAL const KP_T* b, bool b_vec,
                   kp_idx base, kp_idx nvec) {
  kp_vec x[KP_VPT];
#if KP_BACKWARD
  kp_vec s[KP_VPT];
#else
  (void)b;
  (void)b_vec;
#endif
#pragma unroll
  for (int j = 0; j < KP_VPT; ++j) {
    const kp_idx v = base + (kp_idx)j * KP_BLOCK;
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
    const kp_idx v = base + (kp_idx)j * KP_BLOCK;
    if (v < nvec) {
      kp_vec y;
#if KP_BACKWARD && KP_LATE_GRAD
      kp_load(&x[j], a, a_vec, v);
#endif
      KP_FOR_LANES(KP_APPLY_LANE)
      KP_ST(ov + v, KP_VEC_TO_RAW(y));
    }
  }
}

#if KP_FLAT
/* The flat kernel holds one copy of the activation's body where the general kernel holds an
 * aligned and an unaligned one, and reaches its first load sooner: float64 gelu forward is 556 PTX
 * instructions against 708, float16 hardswish 122 against 291 (`kplay emit --act gelu --dtype f64
 * --ptx --arch sm_90`, and again with `--layout general`). On an H200, float64 gelu backward read
 * 101.7 % of a same-run copy with it and 88.4 % with the general kernel (`tools/perf_table.py --acts
 * gelu --dtypes f64 --directions backward --timing queued`, and the general kernel through its
 * --pin with the knob `general`). The pitches are unused. */
KP_KERNEL KP_ENTRY(KP_BUFFER(KP_T, out), KP_BUFFER(const KP_T, in0), KP_BUFFER(const KP_T, in1), kp_u64 rows,
                   kp_u64 cols, kp_u64 ld_out, kp_u64 ld_in0, kp_u64 ld_in1) {
  (void)rows;
  (void)ld_out;
  (void)ld_in0;
  (void)ld_in1;
  const unsigned n = (unsigned)cols;
  const unsigned nvec = n / KP_VEC;
  const unsigned chunk = KP_BLOCK * KP_VPT; /* vectors per block step */
  KP_GLOBAL KP_T* o = out + KP_OFFSET(out);
  KP_GLOBAL const KP_T* a = in0 + KP_OFFSET(in0);
  KP_GLOBAL const KP_T* b = in1 + KP_OFFSET(in1);
  for (unsigned c = KP_GROUP_X; c * chunk < nvec; c += KP_NUM_GROUPS_X)
    kp_step((KP_GLOBAL kp_raw*)o, a, true, b, true, c * chunk + KP_LOCAL_ID, nvec);
  /* The tail: fewer than KP_VEC elements, done by the first block. */
  if (KP_GROUP_X == 0 && KP_LOCAL_ID < n - nvec * KP_VEC) kp_scalar(o, a, b, nvec * KP_VEC + KP_LOCAL_ID);
}
#else
KP_KERNEL KP_ENTRY(KP_BUFFER(KP_T, out), KP_BUFFER(const KP_T, in0), KP_BUFFER(const KP_T, in1), kp_u64 rows,
                   kp_u64 cols, kp_u64 ld_out, kp_u64 ld_in0, kp_u64 ld_in1) {
  const kp_u64 chunk = (kp_u64)KP_BLOCK * KP_VPT; /* vectors per block step */
  for (kp_u64 r = KP_GROUP_Y; r < rows; r += KP_NUM_GROUPS_Y) {
    const kp_u64 o_at = KP_OFFSET(out) + r * ld_out, a_at = KP_OFFSET(in0) + r * ld_in0,
                 b_at = KP_OFFSET(in1) + r * ld_in1;
    KP_GLOBAL KP_T* o = out + o_at;
    KP_GLOBAL const KP_T* a = in0 + a_at;
    KP_GLOBAL const KP_T* b = in1 + b_at;
    /* Peel a scalar head so that the output is vector-aligned: stores are always wide. */
    const unsigned mis = (unsigned)KP_MISALIGNMENT(o, o_at);
    kp_u64 head = mis ? (KP_VEC_BYTES - mis) / sizeof(KP_T) : 0;
    if (head > cols) head = cols;
    const bool a_vec = KP_MISALIGNMENT(a + head, a_at + head) == 0;
    const bool b_vec = KP_MISALIGNMENT(b + head, b_at + head) == 0;
    const kp_u64 nvec = (cols - head) / KP_VEC;
    const kp_u64 body_end = head + nvec * KP_VEC;
    KP_GLOBAL kp_raw* ov = (KP_GLOBAL kp_raw*)(o + head);
    for (kp_u64 c = KP_GROUP_X; c * chunk < nvec; c += KP_NUM_GROUPS_X)
      kp_step(ov, a + head, a_vec, b + head, b_vec, c * chunk + KP_LOCAL_ID, nvec);
    /* Head and tail: fewer than KP_VEC elements each, done by the first block of the row. */
    if (KP_GROUP_X == 0) {
      if (KP_LOCAL_ID < head) kp_scalar(o, a, b, KP_LOCAL_ID);
      if (KP_LOCAL_ID < cols - body_end) kp_scalar(o, a, b, body_end + KP_LOCAL_ID);
    }
  }
}
#endif
