#!/usr/bin/env bash
# The row kernel's configs against each other on a GPU: for each shape and dtype, `kplay bench`
# (no check: timing only, against a same-run copy of the bytes moved) of the default config and of
# each strategy's variants: registers one-shot and persistent (--grid grid-stride:1, the next row
# loaded while this one is reduced), online, and on sm_90 clusters, one-shot and pipelined
# (--grid grid-stride:1: the bulk copy engine loads the next row while this one is reduced;
# $PIPE_BLOCKS threads a block, default 256 512; $PIPE_VECTORS vectors a thread at a time, default
# 4 8, where a block's slice has that many; float32 softmax and softmin forward both keeping their
# terms and with --recompute-terms). Prints one line per config:
# shape, dtype, direction, % of copy, config. What docs/benchmarks.md ("Softmax") quotes per config.
# Usage: tools/row_sweep.sh [--kplay PATH] [--act softmax] [--direction forward] [SHAPE ...]
#   default shapes: the softmax table's (65536x128 ... 1024x1048576); dtypes: $DTYPES (f32 bf16)
set -uo pipefail
kplay=${KPLAY_CLI:-kplay} act=softmax dir=forward
while [ $# -gt 0 ]; do
  case $1 in
    --kplay) kplay=$2; shift 2 ;;
    --act) act=$2; shift 2 ;;
    --direction) dir=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
shapes=${*:-65536x128 32768x1024 16384x4096 8192x32768 4096x131072 4096x393216 1024x1048576}
bench() {  # SHAPE DTYPE FLAGS...: one line
  local sh=$1 dt=$2; shift 2
  local pct
  pct=$("$kplay" bench --act "$act" --direction "$dir" --dtype "$dt" --shape "$sh" --no-db "$@" 2>&1 |
    awk -v a="$act" '$1 == a' | tail -1 | grep -oE '[0-9.]+%' | head -1)
  local note=""; [ -n "$pct" ] || note=" (refused or failed)"
  echo "$sh $dt $dir ${pct:--}  ${*:-default}$note"
}
for sh in $shapes; do
  cols=${sh#*x}
  for dt in ${DTYPES:-f32 bf16}; do
    bench "$sh" "$dt"
    vec=$([ "$dt" = f32 ] && echo 4 || echo 8)
    vecs=$(( (cols + vec - 1) / vec ))
    if [ "$vecs" -le 4096 ]; then  # registers hold it: one vector a thread up to a block, then more
      t=1; while [ $t -lt 1024 ] && [ $t -lt "$vecs" ]; do t=$((t * 2)); done
      pt=$(( (vecs + t - 1) / t )); block=$(( t < 256 ? 256 : t ))
      for g in one-shot grid-stride:1; do
        bench "$sh" "$dt" --row registers --block $block --row-threads $t --per-thread $pt --grid $g
      done
    fi
    bench "$sh" "$dt" --row online --block 1024 --per-thread 4
    bench "$sh" "$dt" --row cluster --cluster 16 --block 512 --per-thread 4
    # the pipelined cluster kernel: a cluster of 1..16 blocks, each slice in two stages where they
    # fit, else one (the clusters whose one stage exceeds shared memory are refused, and print "-")
    terms=("")
    [ "$dt" = f32 ] && [ "$dir" = forward ] && [ "$act" != log_softmax ] && terms+=(--recompute-terms)
    for cl in 1 2 4 8 16; do
      [ $(( vecs / cl )) -ge 256 ] || continue
      for b in ${PIPE_BLOCKS:-256 512}; do
        for pt in ${PIPE_VECTORS:-4 8}; do  # vectors a thread reads from the stage at once
          [ $(( vecs / cl )) -ge $(( b * pt )) ] || continue
          for tm in "${terms[@]}"; do
            bench "$sh" "$dt" --row cluster --cluster $cl --block $b --per-thread $pt --grid grid-stride:1 $tm
          done
        done
      done
    done
  done
done
