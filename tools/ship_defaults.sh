#!/usr/bin/env bash
# Regenerates the shipped tunings of this machine's GPU class (tunings/<class>.json; docs/design.md,
# "Shipped tunings"): `kplay autotune --strategy fast` over every kernel body (`kplay list
# --formulas`), every dtype and both directions at the lookup's size buckets, then `kplay db export
# --ship`, which writes the class's file with the provenance of every record (GPU, driver, NVRTC,
# kplay version, date, and this script's command). Three passes, each a whole table: forward with the
# flat and the general kernel, backward with the gradient loaded first and late (the knobs the
# default search space leaves out), and backward again from the saved output for the activations
# that have that form (kplay.torch's autograd saves the output of relu, sigmoid, tanh and four more);
# all one-shot with default caching, which the tie rule prefers anyway unless another grid or cache
# hint is 1 % faster (docs/design.md says why that holds here).
# With --rows SHAPES the passes are the row kernel's instead: `kplay autotune --act softmax --shape
# RxC --strategy halving` for each shape and direction (--act softmax,log_softmax,softmin for the
# others: each member has tunings of its own, and without them the row default).
# Usage: tools/ship_defaults.sh [--kplay CLI] [--out DIR] [--minutes M] [--work DIR] [--device all|N,N]
#                               [--sizes N,N,...] [--dtype LIST] [--act TEXTS] [--backend cuda|opencl]
#                               [--resume-from FILE [--retune]] [--rows RxC,RxC,...]
#   --kplay   the kplay command (default $KPLAY_CLI, else build/kplay)
#   --out     where the class's file goes (default: tunings/ of this checkout); prints its path
#   --minutes wall-clock budget (default 7): autotune is stopped when it is spent, what finished is
#             exported all the same, and a second run with the same --work resumes the rest
#   --work    the tuning database and logs (default: a new folder under /tmp); the same again resumes
#   --resume-from FILE  a shipped file (tunings/<class>.json) whose records count as done: only
#             the jobs it lacks run (a new pass, a size it misses), and the new file holds both, each
#             record with its own provenance
#   --retune  with --resume-from: the file's records of --sizes (and of --act and --dtype where
#             given) are tuned again, the others kept (`--sizes 1048576 --resume-from
#             tunings/<class>.json --retune` redoes 2^20; add `--act elu --dtype f32` for those alone)
#   --device  the GPUs to tune on (default all: identical GPUs split each table, and every winner is
#             run and checked on the others)
#   --sizes   default 1048576,16777216,1610612736 (2^20, 2^24 and 4096x393216)
#   --dtype, --act, --backend: as kplay autotune takes them (defaults all, every formula, cuda)
#   --rows    the softmax family's tunings at these shapes instead of the element-wise table, with
#             --dtype (default here f32,bf16) and --act (default here softmax); e.g.
#             tools/softmax_table.py's shapes, with --resume-from tunings/<class>.json so that the
#             file keeps its element-wise records. A row job (one op, dtype, direction and shape,
#             halving over the row space) took 76-86 s on an H100 at 65536x128: that table, 7
#             shapes x 2 ops x 2 dtypes x 2 directions, is 56 jobs, over an hour (resume it with --work)
# Progress: a line per finished job from autotune (done/total, the best ratio so far, its estimate of
# the time left), a line per pass, and a summary with the file to copy back.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
kplay="${KPLAY_CLI:-$root/build/kplay}" out="$root/tunings" minutes=7 work="" device=all
sizes=1048576,16777216,1610612736 dtype="" acts="" backend=cuda resume_from="" retune=0 rows=""
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --kplay) kplay=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --minutes) minutes=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --resume-from) resume_from=$2; shift 2 ;;
    --retune) retune=1; shift ;;
    --device) device=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --dtype) dtype=$2; shift 2 ;;
    --act) acts=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "ship_defaults.sh: unknown argument $1" >&2; usage ;;
  esac
done
[ -x "$kplay" ] || { echo "ship_defaults.sh: no kplay command at $kplay; pass --kplay or set KPLAY_CLI" >&2; exit 2; }
[[ "$minutes" =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "ship_defaults.sh: --minutes $minutes: a number" >&2; exit 2; }
[ -n "$work" ] || work="$(mktemp -d /tmp/kplay-ship-XXXXXX)"
mkdir -p "$work" "$out"
db="$work/ship.db"
start=$SECONDS
deadline=$((start + $(awk -v m="$minutes" 'BEGIN { printf "%d", m * 60 }')))
if [ -n "$rows" ]; then
  [[ "$rows" =~ ^[0-9]+x[0-9]+(,[0-9]+x[0-9]+)*$ ]] || { echo "ship_defaults.sh: --rows $rows: shapes RxC,RxC" >&2; exit 2; }
  [ -n "$dtype" ] || dtype=f32,bf16
  [ -n "$acts" ] || acts=softmax
  sizes=$(tr ',' '\n' <<<"$rows" | awk -Fx '{ printf "%s%.0f", (NR > 1 ? "," : ""), $1 * $2 }')
fi
[ -n "$dtype" ] || dtype=all
# Every kernel body: --act all and, after it, the texts whose parameter selects another formula.
acts_given=$acts
if [ -z "$acts" ]; then
  acts=all
  while IFS= read -r t; do
    grep -qxF -- "$t" <("$kplay" list --texts) || acts+=",$t"
  done < <("$kplay" list --formulas)
fi
# The untuned baseline each table competes with is the device model's config, not an older
# shipped file; the user's own database is never read.
export KPLAY_SHIPPED_TUNINGS=off KPLAY_DB="$db"
# A shipped file's records, imported into the work database, are jobs autotune's resume skips;
# with --retune, those of this run's sizes, activations and dtypes are left out, so that they are
# tuned again.
if [ "$retune" = 1 ] && [ -z "$resume_from" ]; then echo "ship_defaults.sh: --retune needs --resume-from" >&2; exit 2; fi
if [ -n "$resume_from" ]; then
  import=$resume_from
  if [ "$retune" = 1 ]; then
    import=$work/resume_kept.json
    python3 "$root/tools/shipped_file.py" drop-sizes "$resume_from" "$import" "$sizes" "$acts" "$dtype" || exit 1
  fi
  "$kplay" db import "$import" --db "$db" || exit 1
fi
common="--act '$acts' --dtype $dtype --n $sizes --strategy fast --backend $backend --device $device"
space_bwd="--space 'grid=one-shot cache=default gradient=early,late'"
pass_fwd="kplay autotune $common --direction forward --space 'grid=one-shot cache=default kernel=flat,general'"
pass_bwd="kplay autotune $common --direction backward $space_bwd"
pass_out="kplay autotune $common --direction backward --saved output $space_bwd"
passes=("$pass_fwd" "$pass_bwd" "$pass_out")
if [ -n "$rows" ]; then
  passes=()
  for shape in ${rows//,/ }; do
    for dir in forward backward; do
      passes+=("kplay autotune --act $acts --dtype $dtype --direction $dir --shape $shape --strategy halving --backend $backend --device $device")
    done
  done
fi
echo "ship_defaults.sh: on $("$kplay" devices 2>/dev/null | grep -m1 "^  \\[" | sed "s/^ *//")"
echo "ship_defaults.sh: work folder $work (give --work $work to resume), budget $minutes min"
status=0
for pass in "${passes[@]}"; do
  left=$((deadline - SECONDS))
  if [ "$left" -le 5 ]; then
    echo "ship_defaults.sh: budget spent before: ${pass#kplay autotune }"
    status=3
    continue
  fi
  echo "ship_defaults.sh: [$((SECONDS - start)) s] ${pass}"
  # autotune prints a line per finished job on stderr (not a terminal here); stdout is its table.
  set +e
  eval "timeout --signal=TERM --kill-after=30 $left \"$kplay\" ${pass#kplay } --db \"$db\"" \
    > >(tee -a "$work/tables.txt" >/dev/null) 2> >(tee -a "$work/progress.log" | sed -u 's/^/  /' >&2)
  rc=$?
  set -e
  wait
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "ship_defaults.sh: [$((SECONDS - start)) s] the budget ran out in this pass; what finished is kept"
    status=3
  elif [ $rc -ne 0 ]; then
    echo "ship_defaults.sh: [$((SECONDS - start)) s] this pass exited $rc (failed jobs: see $work/progress.log)"
    status=1
  fi
done
echo "ship_defaults.sh: [$((SECONDS - start)) s] exporting"
# Each record's provenance names this script with the arguments that decide what it tunes; its
# passes are the autotune commands above (spelled out in every record, they made half the file).
# --act as given: without it the script takes every kernel body, and the list it expands to would
# be a third of each record.
command="tools/ship_defaults.sh --sizes $sizes --dtype $dtype${acts_given:+ --act '$acts_given'} --backend $backend --device $device"
[ -z "$rows" ] || command="tools/ship_defaults.sh --rows $rows --dtype $dtype --act $acts --backend $backend --device $device"
"$kplay" db export --ship "$out" --command "$command" --db "$db" | tee "$work/export.txt"
file=$(sed -n 's/^wrote \(.*\): [0-9]* tuning records$/\1/p' "$work/export.txt" | head -1)
[ -n "$file" ] || { echo "ship_defaults.sh: nothing was exported" >&2; exit 1; }
# The export names this run's command in every record; those of --resume-from were not made by it
# (the database keeps no provenance), so they get their own back: same spec, size and time made.
if [ -n "$resume_from" ]; then
  python3 "$root/tools/shipped_file.py" keep-provenance "$resume_from" "$file" || exit 1
fi
# Read back as kplay will read it, with no warning.
check=$(KPLAY_SHIPPED_TUNINGS="$out" "$kplay" db list --layer shipped --db "$work/none.db" 2>&1)
if grep -q "warning" <<<"$check"; then echo "$check" >&2; echo "ship_defaults.sh: $file does not read back" >&2; exit 1; fi
# The records of this run's sizes, dtypes and texts (a --resume-from file may hold others): from the
# file, which has n.
only=$acts; [ "$acts" = "${acts#all}" ] || only=""
read -r records outputs < <(python3 "$root/tools/shipped_file.py" count "$file" "$sizes" "$dtype" ${only:+"$only"})
# A row backward is always from the saved output: those records are the table's backward half.
[ -z "$rows" ] || { records=$((records + outputs)); outputs=0; }
# Each text a record per dtype and direction, but the accuracy=torch tier: float32 alone, forward,
# and backward where the tier has a backward kernel (its generated source says so); elsewhere its
# backward is the exact kernel, tuned under the exact text.
texts=$(python3 "$root/tools/shipped_file.py" texts "$acts")
[ "$acts" = "${acts#all}" ] || texts=$(grep -vx all <<<"$texts"; "$kplay" list --texts)
tier_records=0
while read -r t; do
  [ -n "$t" ] || continue
  tier_records=$((tier_records + 1))
  src=$("$kplay" emit --backend "$backend" --act "$t" --dtype f32 --direction backward 2>/dev/null || true)
  grep -q "^#define KP_TORCH_TIER 1" <<<"$src" && tier_records=$((tier_records + 1))
done < <(grep 'accuracy=torch' <<<"$texts" || true)
[ "$dtype" = all ] && dtypes=4 || dtypes=$(tr ',' '\n' <<<"$dtype" | grep -c .)
f32=0; [ "$dtype" = all ] || grep -qx f32 < <(tr ',' '\n' <<<"$dtype") && f32=1
plain=$(( $(grep -c . <<<"$texts") - $(grep -c 'accuracy=torch' <<<"$texts" || true) ))
expected=$(( (plain * dtypes * 2 + tier_records * f32) * $(tr ',' '\n' <<<"$sizes" | grep -c .) ))
of_output=", and $outputs of backward from the saved output"
[ -z "$rows" ] || of_output=""
echo "ship_defaults.sh: [$((SECONDS - start)) s] $records of $expected records$of_output; $(du -k "$file" | cut -f1) KB"
echo "ship_defaults.sh: copy back into the repository: $file -> tunings/$(basename "$file")"
[ "$records" -ge "$expected" ] || { echo "ship_defaults.sh: incomplete; run again with --work $work to resume"; status=${status/0/3}; }
exit "$status"
