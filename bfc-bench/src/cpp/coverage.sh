#!/bin/sh
# Which lines and branches of TensorFlow's bfc_allocator.cc a set of traces executes: builds the
# oracle with gcov instrumentation (g++ --coverage -O0; for coverage only, never for timing or
# answers), answers every trace with it, and writes gcov's annotated copy of the file and a
# summary. See README.md ("Coverage of upstream").
# Usage (from anywhere; TF_SRC as for the Makefile):
#   TF_SRC=/path/to/tensorflow bfc-bench/src/cpp/coverage.sh OUT_DIR TRACE...
# TRACE may be .bfctrace or .bfctrace.gz; answers are discarded. Counts add up across runs
# into the same OUT_DIR (remove it to start again). Writes OUT_DIR/bfc_allocator.cc.gcov
# (gcov -b -c: '#####' marks a line never executed, 'taken 0' or 'never executed' a branch never
# taken; bfc_allocator.h.gcov beside it), OUT_DIR/uncovered.txt (the lines never executed, then
# the branches never taken) and prints gcov's summary. Both quote upstream's source: keep
# OUT_DIR out of the repository. Exit status: 0 done, 2 bad usage or no TF_SRC.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { echo "usage: TF_SRC=/path/to/tensorflow $0 OUT_DIR TRACE..." >&2; exit 2; }
[ -n "${TF_SRC:-}" ] || { echo "coverage.sh: needs TF_SRC (see $HERE/README.md)" >&2; exit 2; }
OUT=$1
shift
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
B=$HERE/build/cov
mkdir -p "$B"
"$HERE/prepare.sh" "$TF_SRC" "$B/src" 2> "$B/prepare.log" || { cat "$B/prepare.log" >&2; exit 2; }
mkdir -p "$B/obj"
# -O0 runs several times slower than the oracle's -O2: the watchdog that takes a call using
# that much CPU time for upstream's endless loop (README.md) waits 60 s instead of 10.
CXXFLAGS="-std=c++17 -O0 --coverage -DORACLE_WATCHDOG_S=60 -I$B/src/include -I$HERE/include"
if [ ! -x "$B/oracle-cov" ] || [ "$B/src/tf/bfc_allocator.cc" -nt "$B/oracle-cov" ] \
    || [ "$HERE/oracle.cc" -nt "$B/oracle-cov" ] || [ "$HERE/include/shim.h" -nt "$B/oracle-cov" ] \
    || [ "$0" -nt "$B/oracle-cov" ]; then
  rm -f "$B"/obj/*.gcno "$B"/obj/*.gcda
  ${CXX:-g++} $CXXFLAGS -c "$HERE/oracle.cc" -o "$B/obj/oracle.o"
  ${CXX:-g++} $CXXFLAGS -c "$B/src/tf/bfc_allocator.cc" -o "$B/obj/bfc_allocator.o"
  ${CXX:-g++} -std=c++17 -O0 -c "$HERE/coverage_exit.cc" -o "$B/obj/coverage_exit.o"
  ${CXX:-g++} --coverage -Wl,--wrap=_Exit -Wl,--wrap=_exit "$B"/obj/*.o -o "$B/oracle-cov"
fi
# The counts go under OUT (GCOV_PREFIX), beside a copy of the notes files.
OBJ_IN_OUT=$OUT$B/obj
mkdir -p "$OBJ_IN_OUT"
cp "$B"/obj/*.gcno "$OBJ_IN_OUT/"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
for t in "$@"; do
  case $t in
    *.gz) zcat "$t" > "$tmp/in" ;;
    *) cp "$t" "$tmp/in" ;;
  esac
  set +e
  GCOV_PREFIX=$OUT "$B/oracle-cov" "$tmp/in" "$tmp/out" 2> "$tmp/err"
  rc=$?
  set -e
  n=$((n + 1))
  [ "$rc" -eq 0 ] || echo "$t: oracle exit $rc: $(tail -1 "$tmp/err")" >&2
done
cd "$OUT"
gcov -b -c -o "$OBJ_IN_OUT" "$B/src/tf/bfc_allocator.cc" > gcov.out 2>&1 || { cat gcov.out >&2; exit 2; }
rm -f oracle.cc.gcov  # the driver's own; the headers' (bfc_allocator.h.gcov among them) stay
# gcov repeats a function's lines once per instance (constructors, destructors, lambdas) between
# '------------------' lines; only the summed lines outside those blocks are read. Branches to
# exception handlers ('(throw)') are the compiler's, not upstream's.
awk '
  /^-+$/ { sep = 1; next }
  sep && /^[^ ].*:$/ { inst = 1; sep = 0; next }
  sep { inst = 0; sep = 0 }
  inst { next }
  /^ *[-0-9#=]+\*?: *[0-9]+:/ {
    split($0, f, ":"); ln = f[2] + 0; src = substr($0, index($0, f[3]))
    if (f[1] ~ /#####/) lines = lines ln ": " src "\n"
    next
  }
  /^branch/ && !/\(throw\)/ && ($3 == "never" || ($3 == "taken" && ($4 == "0" || $4 == "0%"))) {
    br = br ln ": branch " $2 " " ($3 == "never" ? "never executed" : "never taken") ": " src "\n"
  }
  END {
    printf "# lines of bfc_allocator.cc never executed\n%s", lines
    printf "# branches never taken (gcov -b numbering; \"never executed\": its line never ran)\n%s", br
  }' bfc_allocator.cc.gcov > uncovered.txt
echo "$n traces answered; $OUT/bfc_allocator.cc.gcov, $OUT/uncovered.txt:" \
  "$(grep -c '^[0-9]*: ' uncovered.txt | head -1) entries"
sed -n '/bfc_allocator.cc/,/^$/p' gcov.out
