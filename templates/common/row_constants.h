/* A row's constants (templates/common/rowwise.h), from its max and its finished sum: the sum made
 * NaN where the max is not finite, its reciprocal, and its log (below float64 by a table, to 2^-37
 * relative, where the device's log costs some 80 instructions a thread a row and the results need
 * 2^-30: docs/accuracy.md, "Row activations"). Every thread of a row computes them once a row,
 * after the sum's reduction (row_reduce.h), before its results (row_vectors.h). */
/* What a row's results need: its max m (and in the compute type), its sum (float64: divided by),
 * the sum's reciprocal, log and (16-bit) log2 in float, and whether the row is NaN throughout. */
typedef struct {
  kp_acc m, sum, inv, log_sum;
  KP_C mf, inv_f, log_sum_f, log2_sum_f;
  int nan_row;
} kp_row_k;

/* The finished forward sum: NaN where the row's max is not finite (+inf or NaN: an inf - inf or
 * NaN term; -inf: every element -inf, -inf - -inf), whatever the terms gave. */
KP_FN kp_acc kp_row_sum_of(kp_sum2 s, kp_acc m) { return m - m == 0.0 ? kp_sum_value(s) : KP_ACC_NAN; }
/* log of the finished sum: near 1 (one element dominates) as log1p of sum - 1, which the sum's
 * low part keeps exact, so that log_softmax's results near 0 keep their precision. Float64 takes
 * the device's log1p and log. Below it a result needs the log to 2^-30 relative (log_softmax's
 * results x - max - log are at least the log in magnitude; softmax's exp(x - max - log) takes its
 * absolute error, up to log 2^31 = 21.5), and every thread of a row computes it once a row: the
 * device's log takes some 80 instructions and its log1p some 140 (a division among them), 10 to
 * 17 an element where a thread holds 8 (the float32 defaults at 65536x128 to 16384x4096); the
 * table's takes 30 (sm_90 SASS, nvdisasm). */
#if KP_DTYPE_F64
KP_FN kp_acc kp_log_sum(kp_sum2 s, kp_acc sum) {
  return sum < 2.0 && sum >= 1.0 ? log1p((s.hi - 1.0) + s.lo) : log(sum);
}
#else
/* 1 / c_j rounded to double, c_j = 1 + j / 128, and -log of that, rounded. */
KP_D_TABLE kp_log_inv[128] = {
    0x1.0000000000000p+0, 0x1.fc07f01fc07f0p-1, 0x1.f81f81f81f820p-1, 0x1.f44659e4a4271p-1,
    0x1.f07c1f07c1f08p-1, 0x1.ecc07b301ecc0p-1, 0x1.e9131abf0b767p-1, 0x1.e573ac901e574p-1,
    0x1.e1e1e1e1e1e1ep-1, 0x1.de5d6e3f8868ap-1, 0x1.dae6076b981dbp-1, 0x1.d77b654b82c34p-1,
    0x1.d41d41d41d41dp-1, 0x1.d0cb58f6ec074p-1, 0x1.cd85689039b0bp-1, 0x1.ca4b3055ee191p-1,
    0x1.c71c71c71c71cp-1, 0x1.c3f8f01c3f8f0p-1, 0x1.c0e070381c0e0p-1, 0x1.bdd2b899406f7p-1,
    0x1.bacf914c1bad0p-1, 0x1.b7d6c3dda338bp-1, 0x1.b4e81b4e81b4fp-1, 0x1.b2036406c80d9p-1,
    0x1.af286bca1af28p-1, 0x1.ac5701ac5701bp-1, 0x1.a98ef606a63bep-1, 0x1.a6d01a6d01a6dp-1,
    0x1.a41a41a41a41ap-1, 0x1.a16d3f97a4b02p-1, 0x1.9ec8e951033d9p-1, 0x1.9c2d14ee4a102p-1,
    0x1.999999999999ap-1, 0x1.970e4f80cb872p-1, 0x1.948b0fcd6e9e0p-1, 0x1.920fb49d0e229p-1,
    0x1.8f9c18f9c18fap-1, 0x1.8d3018d3018d3p-1, 0x1.8acb90f6bf3aap-1, 0x1.886e5f0abb04ap-1,
    0x1.8618618618618p-1, 0x1.83c977ab2beddp-1, 0x1.8181818181818p-1, 0x1.7f405fd017f40p-1,
    0x1.7d05f417d05f4p-1, 0x1.7ad2208e0ecc3p-1, 0x1.78a4c8178a4c8p-1, 0x1.767dce434a9b1p-1,
    0x1.745d1745d1746p-1, 0x1.724287f46debcp-1, 0x1.702e05c0b8170p-1, 0x1.6e1f76b4337c7p-1,
    0x1.6c16c16c16c17p-1, 0x1.6a13cd1537290p-1, 0x1.6816816816817p-1, 0x1.661ec6a5122f9p-1,
    0x1.642c8590b2164p-1, 0x1.623fa77016240p-1, 0x1.6058160581606p-1, 0x1.5e75bb8d015e7p-1,
    0x1.5c9882b931057p-1, 0x1.5ac056b015ac0p-1, 0x1.58ed2308158edp-1, 0x1.571ed3c506b3ap-1,
    0x1.5555555555555p-1, 0x1.5390948f40febp-1, 0x1.51d07eae2f815p-1, 0x1.5015015015015p-1,
    0x1.4e5e0a72f0539p-1, 0x1.4cab88725af6ep-1, 0x1.4afd6a052bf5bp-1, 0x1.49539e3b2d067p-1,
    0x1.47ae147ae147bp-1, 0x1.460cbc7f5cf9ap-1, 0x1.446f86562d9fbp-1, 0x1.42d6625d51f87p-1,
    0x1.4141414141414p-1, 0x1.3fb013fb013fbp-1, 0x1.3e22cbce4a902p-1, 0x1.3c995a47babe7p-1,
    0x1.3b13b13b13b14p-1, 0x1.3991c2c187f63p-1, 0x1.3813813813814p-1, 0x1.3698df3de0748p-1,
    0x1.3521cfb2b78c1p-1, 0x1.33ae45b57bcb2p-1, 0x1.323e34a2b10bfp-1, 0x1.30d190130d190p-1,
    0x1.2f684bda12f68p-1, 0x1.2e025c04b8097p-1, 0x1.2c9fb4d812ca0p-1, 0x1.2b404ad012b40p-1,
    0x1.29e4129e4129ep-1, 0x1.288b01288b013p-1, 0x1.27350b8812735p-1, 0x1.25e22708092f1p-1,
    0x1.2492492492492p-1, 0x1.23456789abcdfp-1, 0x1.21fb78121fb78p-1, 0x1.20b470c67c0d9p-1,
    0x1.1f7047dc11f70p-1, 0x1.1e2ef3b3fb874p-1, 0x1.1cf06ada2811dp-1, 0x1.1bb4a4046ed29p-1,
    0x1.1a7b9611a7b96p-1, 0x1.19453808ca29cp-1, 0x1.1811811811812p-1, 0x1.16e0689427379p-1,
    0x1.15b1e5f75270dp-1, 0x1.1485f0e0acd3bp-1, 0x1.135c81135c811p-1, 0x1.12358e75d3033p-1,
    0x1.1111111111111p-1, 0x1.0fef010fef011p-1, 0x1.0ecf56be69c90p-1, 0x1.0db20a88f4696p-1,
    0x1.0c9714fbcda3bp-1, 0x1.0b7e6ec259dc8p-1, 0x1.0a6810a6810a7p-1, 0x1.0953f39010954p-1,
    0x1.0842108421084p-1, 0x1.073260a47f7c6p-1, 0x1.0624dd2f1a9fcp-1, 0x1.05197f7d73404p-1,
    0x1.0410410410410p-1, 0x1.03091b51f5e1ap-1, 0x1.0204081020408p-1, 0x1.0101010101010p-1};
KP_D_TABLE kp_log_tab[128] = {
    0.0, 0x1.fe02a6b106799p-8, 0x1.fc0a8b0fc03c4p-7, 0x1.7b91b07d5b126p-6,
    0x1.f829b0e7832f8p-6, 0x1.39e87b9febd68p-5, 0x1.77458f632dcffp-5, 0x1.b42dd711971b9p-5,
    0x1.f0a30c01162a8p-5, 0x1.16536eea37ae3p-4, 0x1.341d7961bd1d0p-4, 0x1.51b073f06183cp-4,
    0x1.6f0d28ae56b4ep-4, 0x1.8c345d6319b23p-4, 0x1.a926d3a4ad562p-4, 0x1.c5e548f5bc743p-4,
    0x1.e27076e2af2eap-4, 0x1.fec9131dbeabcp-4, 0x1.0d77e7cd08e5bp-3, 0x1.1b72ad52f67a2p-3,
    0x1.29552f81ff521p-3, 0x1.371fc201e8f75p-3, 0x1.44d2b6ccb7d1cp-3, 0x1.526e5e3a1b438p-3,
    0x1.5ff3070a793d6p-3, 0x1.6d60fe719d21bp-3, 0x1.7ab890210d907p-3, 0x1.87fa06520c911p-3,
    0x1.9525a9cf456b6p-3, 0x1.a23bc1fe2b561p-3, 0x1.af3c94e80bff3p-3, 0x1.bc286742d8cd4p-3,
    0x1.c8ff7c79a9a20p-3, 0x1.d5c216b4fbb94p-3, 0x1.e27076e2af2e8p-3, 0x1.ef0adcbdc5935p-3,
    0x1.fb9186d5e3e29p-3, 0x1.0402594b4d041p-2, 0x1.0a324e27390e2p-2, 0x1.1058bf9ae4ad4p-2,
    0x1.1675cababa60fp-2, 0x1.1c898c16999fbp-2, 0x1.22941fbcf7966p-2, 0x1.2895a13de86a4p-2,
    0x1.2e8e2bae11d31p-2, 0x1.347dd9a987d56p-2, 0x1.3a64c556945eap-2, 0x1.404308686a7e4p-2,
    0x1.4618bc21c5ec2p-2, 0x1.4be5f957778a1p-2, 0x1.51aad872df82ep-2, 0x1.5767717455a6cp-2,
    0x1.5d1bdbf5809cap-2, 0x1.62c82f2b9c796p-2, 0x1.686c81e9b14adp-2, 0x1.6e08eaa2ba1e4p-2,
    0x1.739d7f6bbd007p-2, 0x1.792a55fdd47a1p-2, 0x1.7eaf83b82afc2p-2, 0x1.842d1da1e8b18p-2,
    0x1.89a3386c1425bp-2, 0x1.8f11e873662c8p-2, 0x1.947941c2116fbp-2, 0x1.99d958117e08ap-2,
    0x1.9f323ecbf984dp-2, 0x1.a484090e5bb09p-2, 0x1.a9cec9a9a084ap-2, 0x1.af1293247786bp-2,
    0x1.b44f77bcc8f64p-2, 0x1.b9858969310fdp-2, 0x1.beb4d9da71b7ap-2, 0x1.c3dd7a7cdad4dp-2,
    0x1.c8ff7c79a9a21p-2, 0x1.ce1af0b85f3ecp-2, 0x1.d32fe7e00ebd5p-2, 0x1.d83e7258a2f3ep-2,
    0x1.dd46a04c1c4a1p-2, 0x1.e24881a7c6c26p-2, 0x1.e744261d68789p-2, 0x1.ec399d2468cc1p-2,
    0x1.f128f5faf06ecp-2, 0x1.f6123fa7028adp-2, 0x1.faf588f78f31dp-2, 0x1.ffd2e0857f497p-2,
    0x1.02552a5a5d0ffp-1, 0x1.04bdf9da926d2p-1, 0x1.0723e5c1cdf41p-1, 0x1.0986f4f573521p-1,
    0x1.0be72e4252a83p-1, 0x1.0e44985d1cc8cp-1, 0x1.109f39e2d4c96p-1, 0x1.12f719593efbdp-1,
    0x1.154c3d2f4d5eap-1, 0x1.179eabbd899a0p-1, 0x1.19ee6b467c96fp-1, 0x1.1c3b81f713c25p-1,
    0x1.1e85f5e7040d1p-1, 0x1.20cdcd192ab6ep-1, 0x1.23130d7bebf43p-1, 0x1.2555bce98f7cap-1,
    0x1.2795e1289b11bp-1, 0x1.29d37fec2b08bp-1, 0x1.2c0e9ed448e8cp-1, 0x1.2e47436e40268p-1,
    0x1.307d7334f10bep-1, 0x1.32b1339121d71p-1, 0x1.34e289d9ce1d2p-1, 0x1.37117b54747b6p-1,
    0x1.393e0d3562a1ap-1, 0x1.3b68449fffc23p-1, 0x1.3d9026a7156fbp-1, 0x1.3fb5b84d16f43p-1,
    0x1.41d8fe84672afp-1, 0x1.43f9fe2f9ce67p-1, 0x1.4618bc21c5ec2p-1, 0x1.48353d1ea88dfp-1,
    0x1.4a4f85db03ebbp-1, 0x1.4c679afccee39p-1, 0x1.4e7d811b75bb0p-1, 0x1.50913cc01686bp-1,
    0x1.52a2d265bc5abp-1, 0x1.54b2467999498p-1, 0x1.56bf9d5b3f399p-1, 0x1.58cadb5cd7989p-1,
    0x1.5ad404c359f2dp-1, 0x1.5cdb1dc6c1765p-1, 0x1.5ee02a9241676p-1, 0x1.60e32f44788d9p-1};
/* log of sum = 2^e M (M in [1, 2), in [c_j, c_j+1)) as e log 2 + (-log(1/c_j rounded)) + log1p(r),
 * r = M (1/c_j rounded) - 1 in [-2^-53, 2^-7) by one fma (exact before its rounding, 2^-61), and
 * log1p(r) by its degree-5 Taylor polynomial (the next term, r^6/6 < 2^-44.6, is the error); for
 * sum in [1, 1 + 2^-7), r = (hi - 1) + lo, so that the log of a sum next to 1 is relative to
 * itself (r^5/6 < 2^-37.6). Elsewhere the log is at least log(1 + 2^-7) > 2^-7: within 2^-37
 * relative. A sum is at least 1 (the max's term) or NaN; anything else takes the device's log. */
KP_FN kp_acc kp_log_sum(kp_sum2 s, kp_acc sum) {
  if (!(sum >= 1.0 && sum < 0x1p1023)) return log(sum);
  const int hw = KP_D_HI(sum);
  const int e = (hw >> 20) - 1023, j = (hw >> 13) & 127;
  const kp_acc mant = KP_D_FROM_HILO((hw & 0x000fffff) | 0x3ff00000, KP_D_LO(sum));
  const kp_acc r = e == 0 && j == 0 ? (s.hi - 1.0) + s.lo : fma(mant, kp_log_inv[j], -1.0);
  const kp_acc q = fma(fma(fma(fma(r, 0.2, -0.25), r, 0x1.5555555555555p-2), r, -0.5), r, 1.0);
  return fma((kp_acc)e, 0x1.62e42fefa39efp-1, kp_log_tab[j] + r * q);
}
#endif
/* The row's constants from its max and sum. */
KP_FN kp_row_k kp_row_constants(kp_acc m, kp_sum2 s) {
  kp_row_k k;
  k.m = m;
  k.sum = kp_row_sum_of(s, m);
  k.inv = 1.0 / k.sum;
  k.log_sum = kp_log_sum(s, k.sum);
  k.nan_row = !(k.sum - k.sum == 0.0);
  k.mf = (KP_C)m;
  k.inv_f = (KP_C)k.inv;
  k.log_sum_f = (KP_C)k.log_sum;
  k.log2_sum_f = (KP_C)(k.log_sum * 1.4426950408889634);
  return k;
}
