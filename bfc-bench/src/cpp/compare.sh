#!/bin/sh
# Alternates upstream's C++ (./bench) and bfc4j (CpuTimeReplay, a fresh JVM each time) on the
# same traces, ROUNDS times, and prints every run, then the median per trace and the ratio.
# Usage (from the repository root, after `mvn -B -q -pl bfc-bench -am package -DskipTests`
# and `make -C bfc-bench/src/cpp TF_SRC=/path/to/tensorflow bench`, see README.md):
#   bfc-bench/src/cpp/compare.sh [ROUNDS] [PASSES] [trace ...]
# Exit status 2, before anything runs: bad usage, a trace not bundled, or bench or the jar not built.
set -eu
usage() {
  echo "usage: $0 [ROUNDS [PASSES [TRACE...]]]   (ROUNDS, PASSES: whole numbers from 1; TRACE: a bundled" \
    "trace's name, e.g. tf-resnet-train)" >&2
  exit 2
}
ROUNDS=${1:-5}
PASSES=${2:-9}
for n in "$ROUNDS" "$PASSES"; do
  case $n in '' | *[!0-9]*) usage ;; esac
  [ "$n" -ge 1 ] 2>/dev/null || usage
done
[ $# -gt 2 ] && shift 2 || set --
TRACES=${*:-big-random-1m-s71 tf-resnet-train infer-qwen1.5b-bf16-dynamic-16gib}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
JAR=$ROOT/bfc-bench/target/benchmarks.jar
# Both sides must be there before the first round: a missing one would print a round of empty
# figures per trace and a ratio of nothing.
if [ ! -x "$HERE/bench" ]; then
  echo "compare.sh: needs $HERE/bench, TensorFlow's allocator built as a benchmark: build it with" \
    "'make -C bfc-bench/src/cpp TF_SRC=/path/to/tensorflow bench' ($HERE/README.md says what TF_SRC is)" >&2
  exit 2
fi
if [ ! -f "$JAR" ]; then
  echo "compare.sh: needs $JAR: build it with 'mvn -B -q -pl bfc-bench -am package -DskipTests'" \
    "in $ROOT" >&2
  exit 2
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
for t in $TRACES; do
  for dir in traces recorded; do
    f=$ROOT/conformance-tests/src/test/resources/$dir/$t.bfctrace
    if [ -f "$f" ]; then cp "$f" "$WORK/$t.bfctrace"; fi
    if [ -f "$f.gz" ]; then gzip -dc "$f.gz" > "$WORK/$t.bfctrace"; fi
  done
  [ -f "$WORK/$t.bfctrace" ] || { echo "no trace $t" >&2; exit 2; }
done
LOG=$WORK/runs.txt
for r in $(seq 1 "$ROUNDS"); do
  for t in $TRACES; do
    # Alternate which side goes first, so that a load change favours neither.
    if [ $((r % 2)) -eq 1 ]; then order="c java"; else order="java c"; fi
    for side in $order; do
      load=$(cut -d' ' -f1 /proc/loadavg)
      if [ "$side" = c ]; then
        ns=$("$HERE/bench" "$WORK/$t.bfctrace" "$PASSES" | awk -F' [|] ' '{print $3}')
      else
        ns=$(java -Xmx2g -cp "$JAR" io.github.bfc4j.bench.CpuTimeReplay bfc4j "$t" "$PASSES" \
          | awk -F' [|] ' '/ bfc4j /{print $3}')
      fi
      echo "$r $t $side $ns load=$load" | tee -a "$LOG"
    done
  done
done
echo "trace | C++ median of medians | bfc4j median of medians | bfc4j / C++ | rounds"
for t in $TRACES; do
  c=$(awk -v t="$t" '$2==t && $3=="c"{print $4}' "$LOG" | sort -g | awk '{a[NR]=$1}END{print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}')
  j=$(awk -v t="$t" '$2==t && $3=="java"{print $4}' "$LOG" | sort -g | awk '{a[NR]=$1}END{print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}')
  echo "$t | $c | $j | $(awk -v c="$c" -v j="$j" 'BEGIN{printf "%.2f", j/c}') | $ROUNDS"
done
