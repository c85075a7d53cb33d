/* Row kernel: the softmax family (softmax, log_softmax, softmin), forward and backward, one body for
 * CUDA and OpenCL C 1.2 through the same prelude as templates/common/elementwise.h (which lists the
 * dialect's macros). Codegen defines the knobs (KP_VEC, KP_VEC_BYTES, KP_VPT, KP_BLOCK, KP_TPR,
 * KP_BACKWARD, KP_STREAMING, KP_ROW, KP_CLUSTER, KP_STRIDED, KP_STAGE_KEEP, KP_XCHG1, KP_ROW_TIER, KP_ENTRY),
 * puts the prelude and the member's snippet (KP_ROW_LOG, KP_ROW_NEGATE) in front of this file, and
 * after it the kernel's parts, in this order: row_math.h (the accumulator, the exp, the terms and
 * their sums), row_reduce.h (a row's max and sum across its threads and its cluster),
 * row_constants.h (the finished sum, its reciprocal and its log), row_vectors.h (loads, stores and
 * each step over a vector's lanes), row_stages.h (where a row is held between passes: slots,
 * chunks, the pipelined kernel's stages) and row_kernel.h (the entry).
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
 *                (KP_STAGE_KEEP), to 28 bits, in the stage and a byte an element more; a forward below float64
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
 * device's double exp and log (docs/accuracy.md). KP_ROW_TIER (the family's float32 forward with
 * accuracy=torch, and log_softmax's backward) takes the 16-bit rows' float math instead: torch's
 * formula, within the tier's bound (row_math.h's kp_tier_exp_c). Edges as torch's
 * max-subtracting formula gives them: a row holding +inf or NaN, or all -inf, is NaN throughout; -inf elements of other rows give
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
#ifndef KP_ROW_TIER
#define KP_ROW_TIER 0
#endif
#ifdef __OPENCL_VERSION__
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
/* TwoSum and the exact product error must be rounded as written. */
#pragma OPENCL FP_CONTRACT OFF
#define KP_LOCAL_PTR __local
#else
#define KP_LOCAL_PTR
#endif

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
