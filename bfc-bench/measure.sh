#!/bin/sh
# Takes every figure of docs/performance.md, in one go, into one directory:
#   bfc-bench/measure.sh [OUT_DIR]            (from anywhere; default OUT_DIR: bfc-bench-results)
# With TF_SRC set (a TensorFlow source tree, see bfc-bench/src/cpp/README.md) it also times
# TensorFlow's release build against bfc4j (compare.sh); without it that part is skipped.
# Run it on a quiet machine: about 25 minutes on 2 cores (ROUNDS=15 rounds of compare.sh by default).
# Exit status 2, before anything runs: bad usage (-h or --help prints the usage).
set -eu
usage() {
  echo "usage: $0 [OUT_DIR]   (OUT_DIR: default bfc-bench-results; environment: ROUNDS, a whole number from 1," \
    "the rounds of compare.sh, default 15; TF_SRC, a TensorFlow source tree, to time its release build too)"
}
case ${1:-} in
  -h | --help) usage; exit 0 ;;
  -*) echo "measure.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
esac
if [ $# -gt 1 ]; then
  echo "measure.sh: one OUT_DIR at most, not $# arguments" >&2; usage >&2; exit 2
fi
case ${ROUNDS:-15} in
  *[!0-9]*) echo "measure.sh: ROUNDS=${ROUNDS:-} is no whole number" >&2; usage >&2; exit 2 ;;
esac
if [ "${ROUNDS:-15}" -lt 1 ]; then
  echo "measure.sh: ROUNDS=${ROUNDS:-} is below 1" >&2; usage >&2; exit 2
fi
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
OUT=${1:-bfc-bench-results}
ROUNDS=${ROUNDS:-15}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
JAR=$ROOT/bfc-bench/target/benchmarks.jar
TRACES=big-random-1m-s71,tf-resnet-train,infer-qwen1.5b-bf16-dynamic-16gib
NETTY_OPTS="-Dio.netty.leakDetection.level=disabled -Dio.netty.tryReflectionSetAccessible=true
  --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/jdk.internal.misc=ALL-UNNAMED"

say() { printf '%s: %s\n' "$(date -u +%H:%M:%S)" "$*" | tee -a "$OUT/log.txt"; }
say "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs;" \
  "$(java -version 2>&1 | head -1); load $(cut -d' ' -f1-3 /proc/loadavg)"

say "building bfc-bench/target/benchmarks.jar"
(cd "$ROOT" && mvn -B -q -pl bfc-bench -am package -DskipTests)

say "single thread, CPU time: bfc4j, Netty, malloc -> replay.txt"
# shellcheck disable=SC2086
java -Xmx2g -XX:MaxDirectMemorySize=64g $NETTY_OPTS -cp "$JAR" io.github.bfc4j.bench.CpuTimeReplay \
  bfc4j,netty,malloc "$TRACES" 15 | tee "$OUT/replay.txt"

say "single thread with a timing counter: TimestampedReplay -> timestamped.txt"
java -Xmx2g -cp "$JAR" io.github.bfc4j.bench.TimestampedReplay "$TRACES" 15 | tee "$OUT/timestamped.txt"
say "threads: ThreadsBenchmark, 1/2/4/8 threads, bfc4j, bfc4j-sharded, bfc4j-shard-per-thread and Netty, 3 forks -> threads.txt, threads.json"
java -jar "$JAR" -f 3 -wi 3 -i 5 -w 1s -r 1s -rf json -rff "$OUT/threads.json" ThreadsBenchmark \
  | tee "$OUT/threads.txt"

say "latency of one pair: ThreadsBenchmark on 1, 2 and 8 threads, sample mode, 2 forks -> latency.txt, latency.json"
java -jar "$JAR" 'ThreadsBenchmark.threads[128]$' -p impl=bfc4j,bfc4j-sharded,netty -bm sample -tu us -f 2 \
  -wi 3 -i 5 -w 1s -r 1s -rf json -rff "$OUT/latency.json" | tee "$OUT/latency.txt"

say "garbage: ReplayBenchmark and PairBenchmark with -prof gc -> gc.txt, gc.json"
java -jar "$JAR" -f 1 -wi 3 -i 5 -w 1s -r 1s -prof gc -rf json -rff "$OUT/gc.json" \
  'ReplayBenchmark|PairBenchmark' | tee "$OUT/gc.txt"

say "provenance: HistoryBenchmark with -prof gc -> history.txt, history.json"
java -jar "$JAR" -f 1 -wi 3 -i 5 -w 1s -r 1s -prof gc -rf json -rff "$OUT/history.json" \
  HistoryBenchmark | tee "$OUT/history.txt"

say "heap held by the metadata: MetadataFootprint -> metadata.txt"
java -Xmx6g -cp "$JAR" io.github.bfc4j.bench.MetadataFootprint | tee "$OUT/metadata.txt"

if [ -n "${TF_SRC:-}" ]; then
  say "single thread against TensorFlow's release build: compare.sh $ROUNDS 9 -> compare.txt"
  make -s -C "$ROOT/bfc-bench/src/cpp" TF_SRC="$TF_SRC" bench
  (cd "$ROOT" && bfc-bench/src/cpp/compare.sh "$ROUNDS" 9) | tee "$OUT/compare.txt"
else
  say "TF_SRC not set: the comparison with TensorFlow's release build is skipped" \
    "(bfc-bench/src/cpp/README.md says what to fetch)"
fi
say "done; load $(cut -d' ' -f1-3 /proc/loadavg)"
