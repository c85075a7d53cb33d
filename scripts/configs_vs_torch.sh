#!/usr/bin/env bash
# Launch shapes against torch in one process, without a new build: each config is pinned as a
# tuning record for the given kernels (pinned_configs.py), and perf_table.py runs once per config
# with KPLAY_DB pointing at it, the untuned default first, ROUNDS times alternated. Rows go to
# OUT_DIR/TAG.txt. Needs a GPU, torch and the kplay package; KPLAY is the CLI (default build/kplay).
# PERF_ARGS: more perf_table.py options, e.g. "--timing queued --order alternate".
# Usage: scripts/configs_vs_torch.sh OUT_DIR TAG 'act1;act2' DTYPES DIRECTION 'b|p[|vec[|waves]] ...' REPEAT ROUNDS
# e.g.   scripts/configs_vs_torch.sh out hard 'hardswish;hardsigmoid' f16,bf16 forward '128|1 128|2|4' 100 2
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
OUT=$1 TAG=$2 ACTS=$3 DTYPES=$4 DIR=$5 CFGS=$6 REPEAT=$7 ROUNDS=$8
K=${KPLAY:-$here/../build/kplay}
N=$((4096 * 393216))  # perf_table.py's default shape
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$OUT"
"$K" autotune --db "$work/base.db" --act relu --dtype f16 --n 2^16 --strategy fast > "$work/base.log" 2>&1 ||
  { cat "$work/base.log" >&2; exit 1; }
"$K" db --db "$work/base.db" export > "$work/base.json"
for c in $CFGS; do
  rows=()
  for a in ${ACTS//;/ }; do for d in ${DTYPES//,/ }; do rows+=("$a|$d|$DIR|$c"); done; done
  python3 "$here/pinned_configs.py" "$work/base.json" "$work/${c//|/_}.json" $N "${rows[@]}"
  "$K" db --db "$work/${c//|/_}.db" import "$work/${c//|/_}.json" > /dev/null
done
for a in ${ACTS//;/ }; do for d in ${DTYPES//,/ }; do
  "$K" run --no-db --act "$a" --dtype "$d" --direction "$DIR" --shape 4096x393216 --repeat 1 2>&1 | { grep '^config' || true; } | sed "s/^/$a $d $DIR default /"
done; done >> "$OUT/$TAG.txt"
for round in $(seq "$ROUNDS"); do
  for c in default $CFGS; do
    db="$work/${c//|/_}.db"
    [ "$c" = default ] && db="$work/none.db"
    echo "== round $round config $c" >> "$OUT/$TAG.txt"
    KPLAY_DB=$db python3 "$here/perf_table.py" --acts "$ACTS" --dtypes "$DTYPES" --directions "$DIR" --repeat "$REPEAT" ${PERF_ARGS:-} \
      | { grep -v '^device\|^ACT' || true; } >> "$OUT/$TAG.txt"
  done
done
