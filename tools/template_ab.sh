#!/usr/bin/env bash
# A change to the kernel templates against the templates built into the kplay command, timed on
# the same GPU in one call: for each problem (one quoted string of `kplay bench` arguments), the
# built-in templates ("built-in") and KPLAY_TEMPLATE_DIR=DIR ("changed") run one after the other,
# and the pair again each round, so that a drift in the GPU's clock or temperature falls on both.
# Timing only (`kplay bench --no-db`: the database's configs stay out); `kplay run` and the test
# suites, which read KPLAY_TEMPLATE_DIR too, check the changed kernels' results.
# Prints one line per run: round, side, then bench's row (its % of a same-run copy and config).
# Usage: tools/template_ab.sh DIR "BENCH ARGS" ["BENCH ARGS" ...]
#   e.g. tools/template_ab.sh /tmp/new/templates "--act log_softmax --dtype f32 --shape 65536x128"
#   DIR is a copy of templates/ with the change (kplay refuses one that others may write: chmod go-w)
# Environment: KPLAY_CLI (default: kplay on PATH), ROUNDS (default 2), REPEAT (default 9).
set -uo pipefail
dir=${1:?usage: template_ab.sh DIR "BENCH ARGS" ["BENCH ARGS" ...]}
shift
[ $# -gt 0 ] || { echo "template_ab.sh: no problem given (one quoted string of kplay bench arguments each)" >&2; exit 2; }
[ -d "$dir/common" ] || { echo "template_ab.sh: $dir is not a templates folder (no common/)" >&2; exit 2; }
kplay=${KPLAY_CLI:-kplay}
rounds=${ROUNDS:-2}
repeat=${REPEAT:-9}
for ((round = 1; round <= rounds; ++round)); do
  for problem in "$@"; do
    read -r -a args <<<"$problem"
    for side in built-in changed; do
      if [ "$side" = changed ]; then
        out=$(KPLAY_TEMPLATE_DIR="$dir" "$kplay" bench --no-db --repeat "$repeat" "${args[@]}" 2>&1)
      else
        out=$(env -u KPLAY_TEMPLATE_DIR "$kplay" bench --no-db --repeat "$repeat" "${args[@]}" 2>&1)
      fi
      rc=$?
      # bench's row: the line after its header; else the error it gave
      row=$(awk 'seen { print; exit } /^activation +dir/ { seen = 1 }' <<<"$out")
      [ $rc -eq 0 ] && [ -n "$row" ] || row="FAILED (exit $rc): $(tail -1 <<<"$out")"
      printf '%s\t%s\t%s\n' "$round" "$side" "$row"
    done
  done
done
