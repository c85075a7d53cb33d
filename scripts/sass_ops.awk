# Counts the SASS instructions of one kernel in nvdisasm output: prints "all fp64 conv mufu", with
# fp64 the FP64-pipe ops (DFMA, DADD, DMUL, DSETP, DMNMX), conv the conversions and MUFU ops
# (F2F, F2I, I2F, MUFU: 16/clk/SM) and mufu the MUFU ops alone. NOPs are not counted.
# Usage: awk -v k=KERNEL -f scripts/sass_ops.awk FILE.sass   (shared by the count_*_sass.sh scripts)
/^[[:space:]]*\.text\./ { on = ($0 ~ ("\\.text\\." k ":")); next }
on && /^[[:space:]]+\/\*[0-9a-f][0-9a-f][0-9a-f][0-9a-f]\*\// {
  sub(/^[[:space:]]+\/\*[0-9a-f]+\*\/[[:space:]]+/, ""); sub(/^@!?U?P[T0-9]+[[:space:]]+/, "")
  split($0, w, /[ ;]/); op = w[1]
  if (op ~ /^NOP/) next
  all++
  if (op ~ /^D(FMA|ADD|MUL|SETP|MNMX)/) fp64++
  if (op ~ /^(F2F|F2I|I2F|MUFU)/) conv++
  if (op ~ /^MUFU/) mufu++
}
END { printf "%d %d %d %d\n", all, fp64, conv, mufu }
