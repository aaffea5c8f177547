/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.trace.TraceHeader;
import io.github.bfc4j.trace.TraceWriter;
import java.io.IOException;
import java.util.Arrays;
import java.util.Locale;

/**
 * A seeded random workload for the differential check against TensorFlow's C++ allocator
 * (docs/conformance.md): the header's options and sim sub-allocator, then a mix of
 * allocations and frees in phases of rising and falling pressure, with sizes log-uniform up to
 * a drawn maximum, bin boundaries, zero and oversized requests, alignments, timestamp
 * constraints and safe frontiers (when the timing counter is on), and {@code clear_stats}.
 * On request ({@code --release-rate}), phases may begin with a release: every live allocation
 * but a few is freed, then a block of more than half the limit is allocated and freed and a
 * larger one requested, the pattern that makes garbage collection give free regions back and
 * extend again.
 *
 * <p>The settings are drawn from a SplitMix64 stream seeded with the seed, always all of them
 * and in a fixed order, the calls from a second stream (seeded with the first value of the
 * stream seeded with the seed's complement), so a seed gives the same trace, byte for byte, on
 * any JVM. A setting given on the command line replaces its drawn value after all draws, so
 * giving one does not change the other settings.
 */
final class WorkloadGenerator {
    static final long MIB = 1L << 20;
    static final long GIB = 1L << 30;
    /** The memory limits drawn: log-uniform between these. */
    static final long MIN_LIMIT = MIB;
    static final long MAX_LIMIT = 80 * GIB;
    /** The call counts drawn: log-uniform between these. */
    static final long MIN_CALLS = 1_000;
    static final long MAX_CALLS = 100_000;
    private static final double[] FRACTIONS = {0, 0, 0, 0.000001, 0.01, 0.1, 0.5};
    private static final long[] GAPS = {0, 0, 0, 256, 4096, 2 * MIB};
    private static final long DEFAULT_BASE = 0x7f0000000000L;
    /** The smallest request drawn when the sim may run out before the limit. */
    static final long MIN_BYTES_SIM_MAY_RUN_OUT = 2305;

    /**
     * What a trace is generated with: the header's settings and the workload's. A null field of
     * {@link Overrides} is drawn from the seed.
     */
    record Settings(
            long seed,
            long calls,
            long memoryLimit,
            boolean allowGrowth,
            boolean garbageCollection,
            double fragmentationFraction,
            boolean timingCounter,
            long simBase,
            long simCapacity,
            long simGap,
            boolean simCoalescing,
            long minBytes,
            long maxBytes,
            double alignRate,
            double freedBeforeRate,
            long frontierLag,
            double releaseRate) {
    }

    /** Settings given on the command line; null means drawn from the seed. */
    record Overrides(
            Long calls,
            Long memoryLimit,
            Boolean allowGrowth,
            Boolean garbageCollection,
            Double fragmentationFraction,
            Boolean timingCounter,
            Long simCapacity,
            Long simGap,
            Boolean simCoalescing,
            Double releaseRate) {
        static final Overrides NONE = new Overrides(null, null, null, null, null, null, null, null, null, null);
    }

    private WorkloadGenerator() {
    }

    /**
     * Draws the settings of a seed and applies the overrides.
     *
     * @param seed the seed
     * @param o the settings given
     * @return the settings
     * @throws UsageException if the overrides make a trace the reference cannot answer (a
     *     fragmentation fraction whose split threshold is 0 bytes)
     */
    static Settings settings(long seed, Overrides o) {
        SplitMix64 r = new SplitMix64(seed);
        // Header draws, always all of them, always in this order.
        long limit = logUniform(r, MIN_LIMIT, MAX_LIMIT) & ~255L;
        long oddBytes = 1 + r.nextInt(255);
        if (r.nextDouble() < 0.25) {
            limit += oddBytes;  // not a multiple of 256
        }
        boolean growth = r.nextDouble() < 0.5;
        boolean gc = r.nextDouble() < 0.5;
        double fraction = FRACTIONS[r.nextInt(FRACTIONS.length)];
        boolean timing = r.nextDouble() < 0.3;
        long gap = GAPS[r.nextInt(GAPS.length)];
        boolean coalescing = r.nextDouble() < 0.5;
        double capacityDraw = r.nextDouble();
        double tightFactor = 0.3 + 0.7 * r.nextDouble();
        long otherBase = 0x100000000L + 256L * r.nextInt(1 << 20);
        long base = r.nextDouble() < 0.8 ? DEFAULT_BASE : otherBase;
        // Workload draws.
        long calls = logUniform(r, MIN_CALLS, MAX_CALLS);
        double maxFactor = Math.pow(2, -8 * r.nextDouble());
        double alignRate = new double[] {0, 0.05, 0.3}[r.nextInt(3)];
        double freedBeforeRate = new double[] {0.1, 0.3, 0.5}[r.nextInt(3)];
        long lag = new long[] {0, 20, 200}[r.nextInt(3)];

        boolean fractionGiven = o.fragmentationFraction() != null;
        calls = o.calls() != null ? o.calls() : calls;
        limit = o.memoryLimit() != null ? o.memoryLimit() : limit;
        growth = o.allowGrowth() != null ? o.allowGrowth() : growth;
        gc = o.garbageCollection() != null ? o.garbageCollection() : gc;
        fraction = fractionGiven ? o.fragmentationFraction() : fraction;
        timing = o.timingCounter() != null ? o.timingCounter() : timing;
        gap = o.simGap() != null ? o.simGap() : gap;
        coalescing = o.simCoalescing() != null ? o.simCoalescing() : coalescing;
        if (fraction > 0 && (long) (fraction * limit) == 0) {
            // The reference would split exact fits into zero-size chunks (docs/trace-format.md).
            if (fractionGiven) {
                throw new UsageException("--fragmentation-fraction=" + RunConfig.fraction(fraction)
                        + " (expected: 0, or at least 1 / memory limit = " + 1.0 / limit
                        + ": a split threshold of 0 bytes is a trace the reference cannot answer)");
            }
            fraction = 0;
        }
        long capacity;
        if (o.simCapacity() != null) {
            capacity = o.simCapacity();
        } else {
            if (capacityDraw < 0.6) {
                capacity = plus(plus(times(limit, 2), 64 * MIB), times(gap, 64));  // roomy: regions never fail
            } else if (capacityDraw < 0.9) {
                capacity = plus(Math.max(256, (long) (tightFactor * limit)), times(gap, 2));  // tight: Extend backs off
            } else {
                capacity = plus(limit, times(gap, 16));  // about the limit
            }
            // Limits of 4 EiB and more: no more than the address space above the base holds.
            capacity = Math.min(capacity, Long.MAX_VALUE - base);
        }
        if (base + capacity < 0) {
            throw new UsageException("--capacity=" + capacity + " (expected: at most "
                    + (Long.MAX_VALUE - base) + " bytes from the base 0x" + Long.toHexString(base) + ")");
        }
        // Where the sim may run out before the limit, requests of 1 to 2304 bytes would hang the
        // reference: its back-off never ends below 2304 bytes (docs/deviations.md #1). The sim
        // never runs out with the roomy capacity above, its gaps counted: a given --gap of more
        // than the capacity leaves room for no region at all.
        long minBytes = capacity < plus(plus(times(limit, 2), 64 * MIB), times(gap, 64))
                ? MIN_BYTES_SIM_MAY_RUN_OUT : 1;
        long maxBytes = Math.max(2 * MIN_BYTES_SIM_MAY_RUN_OUT, (long) (maxFactor * limit));
        return new Settings(seed, calls, limit, growth, gc, fraction, timing, base, capacity, gap, coalescing,
                minBytes, maxBytes, alignRate, timing ? freedBeforeRate : 0, lag,
                o.releaseRate() != null ? o.releaseRate() : 0);
    }

    /**
     * Writes the trace: the header, a comment with the drawn workload settings, the calls.
     *
     * @param s the settings
     * @param source the header's {@code source} text after {@code workload:}
     * @param w a writer with nothing written yet
     * @throws IOException if writing fails
     */
    static void write(Settings s, String source, TraceWriter w) throws IOException {
        w.header(new TraceHeader(
                String.format(Locale.ROOT, "generated seed=%d: %d calls, sizes up to %s, limit %s", s.seed(),
                        s.calls(), Sizes.format(s.maxBytes()), Sizes.format(s.memoryLimit())),
                TraceHeader.WORKLOAD_SOURCE_PREFIX + " " + source,
                s.memoryLimit(), s.allowGrowth(), s.garbageCollection(), s.fragmentationFraction(),
                s.timingCounter(), s.simBase(), s.simCapacity(), s.simGap(), s.simCoalescing()));
        w.comment(String.format(Locale.ROOT,
                "min_bytes=%d max_bytes=%d align_rate=%s freed_before_rate=%s frontier_lag=%d",
                s.minBytes(), s.maxBytes(), s.alignRate(), s.freedBeforeRate(), s.frontierLag())
                + (s.releaseRate() > 0 ? " release_rate=" + RunConfig.fraction(s.releaseRate()) : ""));
        SplitMix64 r = new SplitMix64(new SplitMix64(~s.seed()).nextLong());
        long[] live = new long[1024];
        int liveCount = 0;
        long nextId = 1;
        long frees = 0;
        long calls = 0;
        long phaseLeft = 0;
        double allocProbability = 0.5;
        boolean drainAtEnd = r.nextDouble() < 0.5;
        long bodyCalls = s.calls();
        while (calls < bodyCalls) {
            if (phaseLeft == 0) {
                phaseLeft = 50 + r.nextInt(1950);
                allocProbability = 0.35 + 0.4 * r.nextDouble();
                // Drawn only when releases are asked for, so that traces without them stay as they were.
                if (s.releaseRate() > 0 && r.nextDouble() < s.releaseRate()) {
                    // A release: free every live allocation but 0 to 3 (as at the end of a step),
                    // then request a block A of more than half the limit, free it, and request a
                    // larger block B of up to the whole limit. A's region, now free, keeps B from
                    // fitting under the limit beside it: garbage collection gives the free regions
                    // back and extends again.
                    final int keep = Math.min(liveCount, r.nextInt(4));
                    while (liveCount > keep && calls < bodyCalls) {
                        w.free(live[--liveCount]);
                        frees++;
                        calls++;
                    }
                    final long limit = s.memoryLimit();
                    final long a = logUniform(r, Math.max(s.minBytes(), limit / 2 + 1),
                            Math.max(s.minBytes(), limit - limit / 4));
                    final long b = logUniform(r, a, Math.max(a, limit));
                    if (calls + 3 <= bodyCalls) {
                        w.workloadAlloc(nextId, a, 64, 0);
                        w.free(nextId++);
                        frees++;
                        w.workloadAlloc(nextId, b, 64, 0);
                        if (liveCount == live.length) {
                            live = Arrays.copyOf(live, 2 * liveCount);
                        }
                        live[liveCount++] = nextId++;
                        calls += 3;
                    }
                    continue;
                }
            }
            phaseLeft--;
            double what = r.nextDouble();
            if (what < 0.002) {
                w.clearStats();
            } else if (what < 0.004 || (s.timingCounter() && what < 0.03)) {
                // The safe frontier trails the frees; now and then it is set back (a no-op upstream).
                long f = Math.max(0, frees - s.frontierLag() - (r.nextDouble() < 0.1 ? r.nextInt(100) : 0));
                w.frontier(f);
            } else if (liveCount == 0 || r.nextDouble() < allocProbability) {
                long bytes = drawBytes(r, s);
                long align = r.nextDouble() < s.alignRate() ? 1L << r.nextInt(13) : 64;
                long freedBefore = frees > 0 && r.nextDouble() < s.freedBeforeRate() ? 1 + r.nextLong(frees) : 0;
                w.workloadAlloc(nextId, bytes, align, freedBefore);
                if (liveCount == live.length) {
                    live = Arrays.copyOf(live, 2 * liveCount);
                }
                live[liveCount++] = nextId++;
            } else {
                int i = r.nextInt(liveCount);
                w.free(live[i]);
                live[i] = live[--liveCount];
                frees++;
            }
            calls++;
        }
        if (drainAtEnd) {
            for (int i = 0; i < liveCount; i++) {
                w.free(live[i]);
            }
        }
    }

    private static long drawBytes(SplitMix64 r, Settings s) {
        double kind = r.nextDouble();
        long b;
        if (kind < 0.005) {
            b = 0;
        } else if (kind < 0.01) {
            b = tooLarge(r, s.memoryLimit());
        } else if (kind < 0.06) {
            long boundary = 256L << r.nextInt(22);
            b = Math.max(s.minBytes(), boundary + new long[] {-256, -1, 0, 1, 256}[r.nextInt(5)]);
        } else {
            b = logUniform(r, s.minBytes(), s.maxBytes());
        }
        return b;
    }

    /**
     * A request larger than half the limit: up to twice it, or up to {@code Long.MAX_VALUE}
     * where twice the limit is more (limits of 4 EiB and more).
     */
    static long tooLarge(SplitMix64 r, long limit) {
        final long lo = limit / 2 + 1;
        // The most values from lo that a long holds; limit + limit / 2 when that is fewer.
        long span = Long.MAX_VALUE - lo + 1;
        if (limit / 2 < span - limit) {
            span = limit + limit / 2;
        }
        return lo + r.nextLong(span);
    }

    /** {@code a + b} for non-negative values, or {@code Long.MAX_VALUE} where that overflows. */
    private static long plus(long a, long b) {
        final long sum = a + b;
        return sum < 0 ? Long.MAX_VALUE : sum;
    }

    /** {@code a * k} for non-negative values, {@code k > 0}, or {@code Long.MAX_VALUE} where that overflows. */
    private static long times(long a, long k) {
        return a > Long.MAX_VALUE / k ? Long.MAX_VALUE : a * k;
    }

    private static long logUniform(SplitMix64 r, long lo, long hi) {
        double x = Math.exp(Math.log(lo) + r.nextDouble() * (Math.log(hi) - Math.log(lo)));
        return Math.max(lo, Math.min(hi, (long) x));
    }

    /**
     * SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
     * 2014): a 64-bit state advanced by the golden gamma and mixed; specified here, so a seed
     * gives the same values on every JVM.
     */
    static final class SplitMix64 {
        private long state;

        SplitMix64(long seed) {
            this.state = seed;
        }

        long nextLong() {
            long z = (state += 0x9e3779b97f4a7c15L);
            z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
            z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
            return z ^ (z >>> 31);
        }

        /** A double in [0, 1) from the top 53 bits. */
        double nextDouble() {
            return (nextLong() >>> 11) * 0x1.0p-53;
        }

        /** A value in [0, bound), bound > 0: the remainder of 63 random bits. */
        long nextLong(long bound) {
            return (nextLong() >>> 1) % bound;
        }

        /** A value in [0, bound), bound > 0. */
        int nextInt(int bound) {
            return (int) nextLong(bound);
        }
    }
}
