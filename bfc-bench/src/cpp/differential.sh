#!/bin/sh
# The differential check of docs/conformance.md: generates N random workload traces
# (bin/bfc generate, seeds FIRST..FIRST+N-1), answers each with TensorFlow's own allocator
# (oracle, built from TF_SRC), and verifies the answers with bin/bfc verify.
# Usage (from anywhere; TF_SRC as for the Makefile, see README.md):
#   TF_SRC=/path/to/tensorflow bfc-bench/src/cpp/differential.sh N [FIRST]
# Extra arguments for bfc generate: GENERATE_OPTS="--calls 20000" (default: none, all drawn).
# Keeps the traces of failed seeds in KEEP_DIR (default: a new directory, printed).
# A trace the oracle cut short (upstream cannot go on, or a call ran past the watchdog) is
# verified up to the cut and counted as cut, never as passed; each is listed with the call it
# was cut at and why. ORACLE_WATCHDOG_S (default 10) is the CPU time in seconds one call may take
# before the oracle takes it for upstream's endless loop (README.md).
# The last line is '<n> passed, <m> failed, <k> cut'. Exit status: 0 all passed, 1 a trace
# failed, 2 bad usage or no TF_SRC, 3 none failed but some were cut.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
usage() {
  echo "usage: TF_SRC=/path/to/tensorflow $0 N [FIRST_SEED]" >&2
  exit 2
}
[ $# -ge 1 ] && [ $# -le 2 ] || usage
N=$1
FIRST=${2:-1}
case $N in '' | *[!0-9]*) usage ;; esac
case $FIRST in '' | *[!0-9]*) usage ;; esac
if [ -z "${TF_SRC:-}" ]; then
  echo "differential.sh: needs TF_SRC, a TensorFlow source tree at commit" >&2
  echo "5263072435bff96f5d4bcea137cfb3755dca8f7f, to build the oracle from TensorFlow's own" >&2
  echo "bfc_allocator.{h,cc}; $HERE/README.md says what to fetch and how." >&2
  exit 2
fi
if [ -n "${ORACLE_WATCHDOG_S+set}" ]; then
  case $ORACLE_WATCHDOG_S in
    *[!0-9.]* | *.*.* | .) bad=1 ;;
    *[1-9]*) bad= ;;
    *) bad=1 ;;
  esac
  if [ -n "$bad" ]; then
    echo "differential.sh: ORACLE_WATCHDOG_S=$ORACLE_WATCHDOG_S (expected: the CPU seconds one call" \
      "may take before the oracle takes it for upstream's endless loop, more than 0, e.g. 10 or 60)" >&2
    exit 2
  fi
  export ORACLE_WATCHDOG_S
fi
make -s -C "$HERE" TF_SRC="$TF_SRC" oracle oracle-d12 >&2
BFC=$ROOT/bin/bfc
WORK=$(mktemp -d)
KEEP_DIR=${KEEP_DIR:-$(mktemp -d)}
mkdir -p "$KEEP_DIR"
trap 'rm -rf "$WORK"' EXIT
LOG=$WORK/log
: > "$LOG"
last=$((FIRST + N - 1))
# One JVM writes every trace.
# shellcheck disable=SC2086
"$BFC" generate --seed "$FIRST" --count "$N" -o "$WORK/g{seed}.bfctrace" ${GENERATE_OPTS:-} > /dev/null
for seed in $(seq "$FIRST" "$last"); do
  note=answered
  by=oracle
  set +e
  "$HERE/oracle" "$WORK/g$seed.bfctrace" "$WORK/a$seed.bfctrace" 2> "$WORK/e$seed"
  rc=$?
  if [ "$rc" -eq 4 ]; then
    # Upstream would abort or read outside a region: answer with deviation #12 modelled.
    "$HERE/oracle-d12" "$WORK/g$seed.bfctrace" "$WORK/a$seed.bfctrace" 2> "$WORK/e$seed"
    rc=$?
    note=deviation-12
    by=oracle-d12
  fi
  set -e
  case $rc in
    0) ;;
    3) note="cut:hang" ;;
    4) note="cut:abort" ;;
    *) note="oracle-crashed:$rc" ;;
  esac
  echo "$seed $note $by" >> "$LOG"
done
# One JVM verifies every answered trace.
files=$(awk '$2 !~ /^oracle-crashed/ {printf "%s/a%s.bfctrace ", w, $1}' w="$WORK" "$LOG")
set +e
# shellcheck disable=SC2086
BFC_JAVA_OPTS=${BFC_JAVA_OPTS:--Xmx2g} "$BFC" verify $files > "$WORK/verify.out" 2> "$WORK/verify.err"
set -e
passed=0
failed=0
cut=0
hung=0
aborted=0
d12=0
calls=0
while read -r seed note by; do
  a=$WORK/a$seed.bfctrace
  line=$(grep -F " $a " "$WORK/verify.out" || true)
  case $line in
    PASS*)
      n=$(echo "$line" | awk '{print $3}')
      calls=$((calls + n))
      case $note in
        cut:*)
          cut=$((cut + 1))
          case $note in
            cut:hang) hung=$((hung + 1)) ;;
            cut:abort) aborted=$((aborted + 1)) ;;
          esac
          # The oracle's last line says why: an abort, the back-off stuck, or the watchdog.
          echo "seed $seed: cut at call $((n + 1)) ($n calls verified) by $by: $(tail -1 "$WORK/e$seed")" >&2
          ;;
        deviation-12) passed=$((passed + 1)); d12=$((d12 + 1)) ;;
        *) passed=$((passed + 1)) ;;
      esac
      ;;
    *)
      failed=$((failed + 1))
      cp "$WORK/g$seed.bfctrace" "$KEEP_DIR/" 2>/dev/null || true
      cp "$a" "$KEEP_DIR/" 2>/dev/null || true
      reason=$line
      [ -n "$reason" ] || reason=$(grep -F "$a" "$WORK/verify.err" || echo "$note: $(tail -1 "$WORK/e$seed")")
      echo "seed $seed: $reason" >&2
      echo "  again: bin/bfc generate --seed $seed -o g.bfctrace ${GENERATE_OPTS:-}&& oracle g.bfctrace a.bfctrace && bin/bfc verify a.bfctrace" >&2
      ;;
  esac
done < "$LOG"
echo "seeds $FIRST..$last: $calls calls verified; $d12 answered with deviation #12 modelled;" \
  "$cut cut short by the oracle (verified up to there): $hung where a call never returned or ran" \
  "past the watchdog (ORACLE_WATCHDOG_S=${ORACLE_WATCHDOG_S:-10} CPU seconds), $aborted where it aborted"
[ "$failed" -eq 0 ] || echo "traces of the failed seeds: $KEEP_DIR"
[ "$failed" -ne 0 ] || rmdir "$KEEP_DIR" 2>/dev/null || true
echo "$passed passed, $failed failed, $cut cut"
[ "$failed" -eq 0 ] || exit 1
[ "$cut" -eq 0 ] || exit 3
