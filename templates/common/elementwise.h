/* Generic element-wise kernel, one body for CUDA and OpenCL C 1.2. Codegen defines the knobs
 * (KP_VEC, KP_VEC_BYTES, KP_VPT, KP_BLOCK, KP_BACKWARD, KP_SAVED_OUTPUT, KP_STREAMING, KP_FLAT,
 * KP_LATE_GRAD, KP_GATED, KP_OUT_F8, KP_OUT_VEC_BYTES, KP_SLOPE, KP_ENTRY) and puts the backend's
 * prelude and one activation snippet (and for KP_SLOPE templates/common/slope.h) in front of this
 * file. The prelude maps every difference between the
 * backends:
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
 *   KP_VSTORE(v, p, i);     the same for a store (a gated backward's second output)
 *   KP_TO, kp_oraw, kp_ovec, KP_OLANE, KP_OVEC_TO_RAW, KP_OUT_MISALIGNMENT, kp_to_out,
 *   kp_scale, kp_make_scale
 *                           the output's element, raw word and vector, and the conversion of a
 *                           result to it, where the output is not KP_T (FP8: CUDA's prelude),
 *                           with what kp_make_scale makes of the scale once per thread;
 *                           defined below from the input's where the prelude leaves them
 *   KP_OUT_PAIRS, kp_to_out2, KP_OPAIR(v, p), KP_FOR_PAIRS(M)
 *                           optional (FP8): two results converted at once into the 16-bit word
 *                           p of an output vector, and M(p) for every such pair
 *
 * What the kernels read and write, element by element (a, b, c: in0, in1, in2):
 *   forward                        out = f(a)
 *   backward                       out = g f'(saved), a = g, b = saved (input or output)
 *   gated forward (KP_GATED)       out = f(a) b; with KP_OUT_F8, fp8(f(a) b / scale)
 *   gated backward                 out = g f'(a) b, out1 = g f(a); a = g, b = a, c = b
 *   per-element slope (KP_SLOPE)   out = a > 0 ? a : s(i) a; backward out = g (1 or s(i)), a = g,
 *                                  b = x: s(i) from the element's index (slope.h), the index
 *                                  counted as in a dense [rows, cols] tensor
 * A gated kernel's a and b are any two row-pitched operands: the halves of one [rows, 2d] tensor
 * (b starts d elements after a, both with pitch 2d) or two tensors, each with its own pitch; so
 * are a gated backward's two outputs.
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
 * A gated backward's second output may not share the first one's alignment (d elements apart in
 * one [rows, 2d] gradient): it is stored with scalar stores where it does not.
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

#if KP_GATED && KP_BACKWARD
#define KP_INPUTS 3
#elif KP_GATED || KP_BACKWARD
#define KP_INPUTS 2
#else
#define KP_INPUTS 1
#endif
#define KP_TWO_OUTPUTS (KP_GATED && KP_BACKWARD)

/* A per-element slope (slope.h) needs each element's index: kp_step and kp_scalar take the slope's
 * context, which every other kernel goes without. */
#if KP_SLOPE
#define KP_SC_PARAM , kp_slope_ctx sc
#define KP_SC_ARG , sc
#define KP_SC_ARG_AT(first_) , kp_sc_at(sc, first_)
KP_FN kp_slope_ctx kp_sc_at(kp_slope_ctx sc, kp_u64 first) {
  sc.first = first;
  return sc;
}
#else
#define KP_SC_PARAM
#define KP_SC_ARG
#define KP_SC_ARG_AT(first_)
#endif

#ifndef KP_OUT_PAIRS
#define KP_OUT_PAIRS 0
#endif
/* The output is of the inputs' type unless the prelude says otherwise (FP8). */
#if !KP_OUT_F8
typedef KP_T KP_TO;
typedef kp_raw kp_oraw;
typedef kp_vec kp_ovec;
#define KP_OLANE(v, k) KP_LANE(v, k)
#define KP_OVEC_TO_RAW(v) KP_VEC_TO_RAW(v)
#define KP_OUT_MISALIGNMENT(p, at) KP_MISALIGNMENT(p, at)
typedef float kp_scale;
KP_FN kp_scale kp_make_scale(float scale) { return scale; }
KP_FN KP_TO kp_to_out(KP_C v, kp_scale scale) {
  (void)scale;
  return kp_to_storage(v);
}
#endif

/* One element of the (first) output: forward reads x; backward reads the incoming gradient and
 * the saved tensor; gated forward reads a and b. */
KP_FN KP_TO kp_apply(KP_T a, KP_T b, kp_scale scale) {
#if KP_GATED
  return kp_to_out(kp_act_forward(kp_to_compute(a)) * kp_to_compute(b), scale);
#elif KP_BACKWARD
  (void)scale;
#if KP_SAVED_OUTPUT
  return kp_to_storage(kp_act_backward_from_output(kp_to_compute(a), kp_to_compute(b)));
#else
  return kp_to_storage(kp_act_backward_from_input(kp_to_compute(a), kp_to_compute(b)));
#endif
#else
  (void)b;
  (void)scale;
  return kp_to_storage(kp_act_forward(kp_to_compute(a)));
#endif
}

#if KP_SLOPE
KP_FN KP_T kp_apply_slope(KP_T a, KP_T b, kp_slope_ctx sc, kp_u64 i) {
  const KP_C s = kp_slope_at(sc, sc.first + i);
#if KP_BACKWARD
  return kp_to_storage(kp_slope_backward(kp_to_compute(a), kp_to_compute(b), s));
#else
  (void)b;
  return kp_to_storage(kp_slope_forward(kp_to_compute(a), s));
#endif
}
#endif

#if KP_OUT_PAIRS
/* Two lanes of a gated forward whose output converts two results at once (FP8). */
KP_FN unsigned short kp_apply2(KP_T a0, KP_T a1, KP_T b0, KP_T b1, kp_scale scale) {
  return kp_to_out2(kp_act_forward(kp_to_compute(a0)) * kp_to_compute(b0),
                    kp_act_forward(kp_to_compute(a1)) * kp_to_compute(b1), scale);
}
#endif

#if KP_TWO_OUTPUTS
/* A gated backward: grad_a = g f'(a) b (the derivative times g first, so that a zero derivative
 * keeps a zero where g b overflows) and grad_b = g f(a). */
KP_FN KP_T kp_apply_ga(KP_T g, KP_T a, KP_T b) {
  return kp_to_storage(kp_act_backward_from_input(kp_to_compute(g), kp_to_compute(a)) * kp_to_compute(b));
}
KP_FN KP_T kp_apply_gb(KP_T g, KP_T a) { return kp_to_storage(kp_to_compute(g) * kp_act_forward(kp_to_compute(a))); }
#endif

KP_FN void kp_scalar(KP_GLOBAL KP_TO* o, KP_GLOBAL KP_T* o1, KP_GLOBAL const KP_T* a, KP_GLOBAL const KP_T* b,
                     KP_GLOBAL const KP_T* c, kp_u64 i, kp_scale scale KP_SC_PARAM) {
#if KP_TWO_OUTPUTS
  (void)scale;
  const KP_T g = KP_LD(a + i), av = KP_LD(b + i), bv = KP_LD(c + i);
  KP_ST(o + i, kp_apply_ga(g, av, bv));
  KP_ST(o1 + i, kp_apply_gb(g, av));
#else
  (void)o1;
  (void)c;
#if KP_INPUTS >= 2
  KP_T bv = KP_LD(b + i);
#else
  KP_T bv = 0;
  (void)b;
#endif
#if KP_SLOPE
  (void)scale;
  KP_ST(o + i, kp_apply_slope(KP_LD(a + i), bv, sc, i));
#else
  KP_ST(o + i, kp_apply(KP_LD(a + i), bv, scale));
#endif
#endif
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

#if KP_TWO_OUTPUTS
#define KP_APPLY_LANE(k)                                                \
  KP_LANE(y, k) = kp_apply_ga(KP_LANE(x[j], k), KP_LANE(s[j], k), KP_LANE(t[j], k)); \
  KP_LANE(y1, k) = kp_apply_gb(KP_LANE(x[j], k), KP_LANE(s[j], k));
#elif KP_SLOPE && KP_INPUTS >= 2
#define KP_APPLY_LANE(k) \
  KP_OLANE(y, k) = kp_apply_slope(KP_LANE(x[j], k), KP_LANE(s[j], k), sc, (kp_u64)v * KP_VEC + (k));
#elif KP_SLOPE
#define KP_APPLY_LANE(k) KP_OLANE(y, k) = kp_apply_slope(KP_LANE(x[j], k), 0, sc, (kp_u64)v * KP_VEC + (k));
#elif KP_INPUTS >= 2
#define KP_APPLY_LANE(k) KP_OLANE(y, k) = kp_apply(KP_LANE(x[j], k), KP_LANE(s[j], k), scale);
#else
#define KP_APPLY_LANE(k) KP_OLANE(y, k) = kp_apply(KP_LANE(x[j], k), 0, scale);
#endif
#if KP_OUT_PAIRS
#define KP_APPLY_PAIR(p)                                                                                   \
  KP_OPAIR(y, p) = kp_apply2(KP_LANE(x[j], 2 * (p)), KP_LANE(x[j], 2 * (p) + 1), KP_LANE(s[j], 2 * (p)), \
                             KP_LANE(s[j], 2 * (p) + 1), scale);
#endif

/* One chunk step of one thread: vectors base, base + KP_BLOCK, ... below nvec, all read before
 * any is written. o1 (a gated backward's second output) is written with wide stores where
 * o1_vec, else element by element. */
KP_FN void kp_step(KP_GLOBAL kp_oraw* ov, KP_GLOBAL KP_T* o1, bool o1_vec, KP_GLOBAL const KP_T* a, bool a_vec,
                   KP_GLOBAL const KP_T* b, bool b_vec, KP_GLOBAL const KP_T* c, bool c_vec, kp_idx base,
                   kp_idx nvec, kp_scale scale KP_SC_PARAM) {
  kp_vec x[KP_VPT];
#if KP_INPUTS >= 2
  kp_vec s[KP_VPT];
#else
  (void)b;
  (void)b_vec;
#endif
#if KP_INPUTS >= 3
  kp_vec t[KP_VPT];
#else
  (void)c;
  (void)c_vec;
#endif
#if !KP_TWO_OUTPUTS
  (void)o1;
  (void)o1_vec;
#endif
#pragma unroll
  for (int j = 0; j < KP_VPT; ++j) {
    const kp_idx v = base + (kp_idx)j * KP_BLOCK;
    if (v < nvec) {
#if !(KP_BACKWARD && KP_LATE_GRAD) /* else the gradient is loaded below, next to its one use */
      kp_load(&x[j], a, a_vec, v);
#endif
#if KP_INPUTS >= 2
      kp_load(&s[j], b, b_vec, v);
#endif
#if KP_INPUTS >= 3
      kp_load(&t[j], c, c_vec, v);
#endif
    }
  }
#pragma unroll
  for (int j = 0; j < KP_VPT; ++j) {
    const kp_idx v = base + (kp_idx)j * KP_BLOCK;
    if (v < nvec) {
#if KP_TWO_OUTPUTS
      kp_vec y, y1;
#else
      kp_ovec y;
#endif
#if KP_BACKWARD && KP_LATE_GRAD
      kp_load(&x[j], a, a_vec, v);
#endif
#if KP_OUT_PAIRS
      KP_FOR_PAIRS(KP_APPLY_PAIR)
#else
      KP_FOR_LANES(KP_APPLY_LANE)
#endif
      KP_ST(ov + v, KP_OVEC_TO_RAW(y));
#if KP_TWO_OUTPUTS
      if (o1_vec) {
        KP_ST((KP_GLOBAL kp_raw*)o1 + v, KP_VEC_TO_RAW(y1));
      } else {
        KP_VSTORE(y1, o1, v);
      }
#endif
    }
  }
}

/* The kernel's parameters: out, in0, in1, then a gated backward's out1 and in2; rows, cols and
 * the pitches in the same order; FP8's scale last (runtime/backend.hpp, KernelArgs). */
#if KP_TWO_OUTPUTS
#define KP_MORE_BUFFERS , KP_BUFFER(KP_T, out1), KP_BUFFER(const KP_T, in2)
#define KP_MORE_PITCHES , kp_u64 ld_out1, kp_u64 ld_in2
#else
#define KP_MORE_BUFFERS
#define KP_MORE_PITCHES
#endif
#if KP_OUT_F8
#define KP_SCALE_PARAMS , KP_GLOBAL const float *scale_ptr, float scale_value
#define KP_SCALE kp_make_scale(scale_ptr ? *scale_ptr : scale_value)
#else
#define KP_SCALE_PARAMS
#define KP_SCALE 1.0f
#endif
#if KP_SLOPE
#define KP_MORE_PARAMS KP_SLOPE_KERNEL_PARAMS
#define KP_SLOPE_CTX                                                                                \
  kp_slope_ctx sc;                                                                                  \
  sc.w = weight + KP_OFFSET(weight);                                                                \
  sc.inner = inner;                                                                                 \
  sc.channels = channels;                                                                           \
  sc.seed = seed;                                                                                   \
  sc.counter = counter;                                                                             \
  sc.first = 0;                                                                                     \
  (void)parts;
#else
#define KP_MORE_PARAMS
#define KP_SLOPE_CTX
#endif
#define KP_PARAMS                                                                                              \
  KP_BUFFER(KP_TO, out), KP_BUFFER(const KP_T, in0), KP_BUFFER(const KP_T, in1) KP_MORE_BUFFERS, kp_u64 rows, \
      kp_u64 cols, kp_u64 ld_out, kp_u64 ld_in0, kp_u64 ld_in1 KP_MORE_PITCHES KP_SCALE_PARAMS KP_MORE_PARAMS

#if KP_FLAT
/* The flat kernel holds one copy of the activation's body where the general kernel holds an
 * aligned and an unaligned one, and reaches its first load sooner: float64 gelu forward is 556 PTX
 * instructions against 708, float16 hardswish 122 against 291 (`kplay emit --act gelu --dtype f64
 * --ptx --arch sm_90`, and again with `--layout general`). On an H200, float64 gelu backward read
 * 101.7 % of a same-run copy with it and 88.4 % with the general kernel (`tools/perf_table.py --acts
 * gelu --dtypes f64 --directions backward --timing queued`, and the general kernel through its
 * --pin with the knob `general`). The pitches are unused. */
KP_KERNEL KP_ENTRY(KP_PARAMS) {
  (void)rows;
  (void)ld_out;
  (void)ld_in0;
  (void)ld_in1;
  const kp_scale scale = KP_SCALE; /* FP8: its reciprocal, once per thread */
  KP_SLOPE_CTX
  const unsigned n = (unsigned)cols;
  const unsigned nvec = n / KP_VEC;
  const unsigned chunk = KP_BLOCK * KP_VPT; /* vectors per block step */
  KP_GLOBAL KP_TO* o = out + KP_OFFSET(out);
  KP_GLOBAL const KP_T* a = in0 + KP_OFFSET(in0);
  KP_GLOBAL const KP_T* b = in1 + KP_OFFSET(in1);
#if KP_TWO_OUTPUTS
  (void)ld_out1;
  (void)ld_in2;
  KP_GLOBAL KP_T* o1 = out1 + KP_OFFSET(out1);
  KP_GLOBAL const KP_T* c = in2 + KP_OFFSET(in2);
#else
  KP_GLOBAL KP_T* o1 = 0;
  KP_GLOBAL const KP_T* c = a;
#endif
  for (unsigned c_ = KP_GROUP_X; c_ * chunk < nvec; c_ += KP_NUM_GROUPS_X)
    kp_step((KP_GLOBAL kp_oraw*)o, o1, true, a, true, b, true, c, true, c_ * chunk + KP_LOCAL_ID, nvec,
            scale KP_SC_ARG);
  /* The tail: fewer than KP_VEC elements, done by the first block. */
  if (KP_GROUP_X == 0 && KP_LOCAL_ID < n - nvec * KP_VEC)
    kp_scalar(o, o1, a, b, c, nvec * KP_VEC + KP_LOCAL_ID, scale KP_SC_ARG);
}
#else
KP_KERNEL KP_ENTRY(KP_PARAMS) {
  const kp_scale scale = KP_SCALE; /* FP8: its reciprocal, once per thread */
  KP_SLOPE_CTX
  const kp_u64 chunk = (kp_u64)KP_BLOCK * KP_VPT; /* vectors per block step */
  for (kp_u64 r = KP_GROUP_Y; r < rows; r += KP_NUM_GROUPS_Y) {
    const kp_u64 o_at = KP_OFFSET(out) + r * ld_out, a_at = KP_OFFSET(in0) + r * ld_in0,
                 b_at = KP_OFFSET(in1) + r * ld_in1;
    KP_GLOBAL KP_TO* o = out + o_at;
    KP_GLOBAL const KP_T* a = in0 + a_at;
    KP_GLOBAL const KP_T* b = in1 + b_at;
#if KP_TWO_OUTPUTS
    const kp_u64 o1_at = KP_OFFSET(out1) + r * ld_out1, c_at = KP_OFFSET(in2) + r * ld_in2;
    KP_GLOBAL KP_T* o1 = out1 + o1_at;
    KP_GLOBAL const KP_T* c = in2 + c_at;
#endif
    /* Peel a scalar head so that the output is vector-aligned: its stores are always wide. */
    const unsigned mis = (unsigned)KP_OUT_MISALIGNMENT(o, o_at);
    kp_u64 head = mis ? (KP_OUT_VEC_BYTES - mis) / sizeof(KP_TO) : 0;
    if (head > cols) head = cols;
    const bool a_vec = KP_MISALIGNMENT(a + head, a_at + head) == 0;
    const bool b_vec = KP_MISALIGNMENT(b + head, b_at + head) == 0;
#if KP_TWO_OUTPUTS
    const bool c_vec = KP_MISALIGNMENT(c + head, c_at + head) == 0;
    const bool o1_vec = KP_MISALIGNMENT(o1 + head, o1_at + head) == 0;
#else
    KP_GLOBAL KP_T* o1 = (KP_GLOBAL KP_T*)o; /* unused */
    KP_GLOBAL const KP_T* c = a;
    const bool c_vec = a_vec, o1_vec = false;
#endif
    const kp_u64 nvec = (cols - head) / KP_VEC;
    const kp_u64 body_end = head + nvec * KP_VEC;
    KP_GLOBAL kp_oraw* ov = (KP_GLOBAL kp_oraw*)(o + head);
    for (kp_u64 c_ = KP_GROUP_X; c_ * chunk < nvec; c_ += KP_NUM_GROUPS_X)
      kp_step(ov, o1 + head, o1_vec, a + head, a_vec, b + head, b_vec, c + head, c_vec, c_ * chunk + KP_LOCAL_ID,
              nvec, scale KP_SC_ARG_AT(r * cols + head));
    /* Head and tail: fewer than KP_VEC elements each, done by the first block of the row. */
    if (KP_GROUP_X == 0) {
      if (KP_LOCAL_ID < head) kp_scalar(o, o1, a, b, c, KP_LOCAL_ID, scale KP_SC_ARG_AT(r * cols));
      if (KP_LOCAL_ID < cols - body_end) kp_scalar(o, o1, a, b, c, body_end + KP_LOCAL_ID, scale KP_SC_ARG_AT(r * cols));
    }
  }
}
#endif
