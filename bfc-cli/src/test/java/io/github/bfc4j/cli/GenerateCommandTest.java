/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.github.bfc4j.trace.TraceEvent;
import io.github.bfc4j.trace.TraceHeader;
import io.github.bfc4j.trace.TraceReader;
import io.github.bfc4j.trace.WorkloadResult;
import io.github.bfc4j.trace.WorkloadRunner;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class GenerateCommandTest {
    private static final long FIRST_SEED = Long.getLong("bfc4j.test.seed", 1L);

    private final Cli cli = new Cli();

    @TempDir
    Path dir;

    @Test
    void theSameSeedGivesTheSameBytesAndAnotherSeedOthers() throws IOException {
        Path a = generate("a.bfctrace", 7, "--calls", 3000);
        Path b = generate("b.bfctrace", 7, "--calls", 3000);
        Path c = generate("c.bfctrace", 8, "--calls", 3000);
        Path gz = generate("d.bfctrace.gz", 7, "--calls", 3000);
        assertThat(Files.readAllBytes(b)).isEqualTo(Files.readAllBytes(a));
        assertThat(Files.readAllBytes(c)).isNotEqualTo(Files.readAllBytes(a));
        try (InputStream in = new GZIPInputStream(Files.newInputStream(gz))) {
            assertThat(in.readAllBytes()).isEqualTo(Files.readAllBytes(a));
        }
        assertThat(Files.readAllLines(a).get(2)).isEqualTo("source workload: bfc generate --seed 7 --calls 3000");
        assertThat(cli.out).startsWith("wrote " + gz + ": seed 7, 3000 calls, memory_limit=");
    }

    @Test
    void countWritesTheTracesOfConsecutiveSeedsEachAsItsOwnSeedWould() throws IOException {
        assertThat(cli.run("generate", "--seed", 20, "--count", 3, "--calls", 500, "--gap", 0, "-o",
                dir.resolve("g{seed}.bfctrace"))).isEqualTo(0);
        assertThat(cli.out.lines()).hasSize(3);
        for (long seed = 20; seed < 23; seed++) {
            Path alone = generate("alone" + seed + ".bfctrace", seed, "--calls", 500, "--gap", 0);
            assertThat(Files.readAllBytes(dir.resolve("g" + seed + ".bfctrace"))).isEqualTo(Files.readAllBytes(alone));
            assertThat(Files.readAllLines(alone).get(2))
                    .isEqualTo("source workload: bfc generate --seed " + seed + " --calls 500 --gap 0");
        }
        assertThat(dir.resolve("g23.bfctrace")).doesNotExist();
        assertThat(cli.run("generate", "--seed", 1, "--count", 2, "-o", dir.resolve("same.bfctrace"))).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc generate: -o=" + dir.resolve("same.bfctrace")
                + " (expected with --count: a name holding {seed}, e.g. traces/g{seed}.bfctrace)");
        assertThat(cli.run("generate", "--seed", 1, "--count", 0, "-o", dir.resolve("x{seed}.bfctrace")))
                .isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc generate: --count=0 (expected: 1 to 2147483647)");
        // The seeds would wrap around past Long.MAX_VALUE.
        assertThat(cli.run("generate", "--seed", Long.MAX_VALUE - 1, "--count", 3, "-o",
                dir.resolve("w{seed}.bfctrace"))).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc generate: --seed=9223372036854775806 --count=3 (expected:"
                + " seeds up to 9223372036854775807; the last would be past it)");
        assertThat(dir.resolve("w9223372036854775806.bfctrace")).doesNotExist();
    }

    @Test
    void withCountEveryNameIsCheckedBeforeAnyTraceIsWritten() throws IOException {
        // The second seed's name is a directory: nothing is written, not the first seed's trace.
        Files.createDirectory(dir.resolve("r2.bfctrace"));
        assertThat(cli.run("generate", "--seed", 1, "--count", 3, "--calls", 100, "-o", dir.resolve("r{seed}.bfctrace")))
                .isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc generate: -o=" + dir.resolve("r2.bfctrace") + " is a directory"
                + " (expected: the file to write, e.g. " + dir.resolve("r2.bfctrace/trace.bfctrace") + ")");
        assertThat(cli.out).isEmpty();
        assertThat(dir.resolve("r1.bfctrace")).doesNotExist();
        assertThat(dir.resolve("r3.bfctrace")).doesNotExist();
    }

    /** What one seed's trace held, counted while checking that it is a consistent workload. */
    private static final class Seen {
        long calls;
        long allocs;
        long zeroByteAllocs;
        long overLimitAllocs;
        long smallAllocs;
        long aligned;
        long freedBefore;
        long frontiers;
        long clearStats;
    }

    private static Seen read(Path trace) throws IOException {
        Seen s = new Seen();
        Set<Long> live = new HashSet<>();
        Set<Long> ids = new HashSet<>();
        try (TraceReader r = TraceReader.open(trace)) {
            long limit = r.header().memoryLimit();
            for (TraceEvent e = r.next(); e != null; e = r.next()) {
                assertThat(e.kind().isCall()).as("line %d", e.lineNumber()).isTrue();
                s.calls++;
                switch (e.kind()) {
                    case ALLOC -> {
                        assertThat(e.answered()).isFalse();
                        assertThat(ids.add(e.id())).as("id %d used once", e.id()).isTrue();
                        live.add(e.id());
                        s.allocs++;
                        s.zeroByteAllocs += e.bytes() == 0 ? 1 : 0;
                        s.overLimitAllocs += e.bytes() > limit ? 1 : 0;
                        s.smallAllocs += e.bytes() > 0 && e.bytes() <= 2304 ? 1 : 0;
                        s.aligned += e.alignment() != TraceEvent.DEFAULT_ALIGNMENT ? 1 : 0;
                        s.freedBefore += e.freedBefore() != 0 ? 1 : 0;
                    }
                    case FREE -> assertThat(live.remove(e.id())).as("free %d of a live id", e.id()).isTrue();
                    case FRONTIER -> s.frontiers++;
                    case CLEAR_STATS -> s.clearStats++;
                    default -> throw new AssertionError("line " + e.lineNumber() + ": " + e.kind());
                }
            }
        }
        return s;
    }

    @Test
    void everyGeneratedTraceParsesAndReplaysAndTogetherTheyCoverTheMix() throws IOException {
        int seeds = 30;
        System.out.println("GenerateCommandTest seeds " + FIRST_SEED + ".." + (FIRST_SEED + seeds - 1)
                + " (-Dbfc4j.test.seed)");
        Seen all = new Seen();
        Set<String> headers = new HashSet<>();
        int withOom = 0;
        int withSeveralRegions = 0;
        // The runner closes allocators with live allocations: quiet their warnings, as bfc replay does.
        Logger bfcLogger = Logger.getLogger("io.github.bfc4j");
        Level level = bfcLogger.getLevel();
        bfcLogger.setLevel(Level.SEVERE);
        try {
            for (long seed = FIRST_SEED; seed < FIRST_SEED + seeds; seed++) {
                Path t = generate("s" + seed + ".bfctrace", seed, "--calls", 1500);
                Seen s = read(t);
                assertThat(s.calls).as("seed %d", seed).isGreaterThanOrEqualTo(1500);
                all.zeroByteAllocs += s.zeroByteAllocs;
                all.overLimitAllocs += s.overLimitAllocs;
                all.aligned += s.aligned;
                all.freedBefore += s.freedBefore;
                all.frontiers += s.frontiers;
                all.clearStats += s.clearStats;
                try (TraceReader r = TraceReader.open(t)) {
                    TraceHeader h = r.header();
                    headers.add("growth=" + h.allowGrowth());
                    headers.add("gc=" + h.garbageCollection());
                    headers.add("timing=" + h.timingCounter());
                    headers.add("coalescing=" + h.simCoalescing());
                    headers.add("gap=" + (h.simGap() > 0));
                    headers.add("fraction=" + (h.fragmentationFraction() > 0));
                    headers.add("limit%256=" + (h.memoryLimit() % 256 == 0));
                    headers.add("tight=" + (h.simCapacity() < h.memoryLimit()));
                    WorkloadResult w = WorkloadRunner.forHeader(h).run(r);
                    withOom += w.oomCount() > 0 ? 1 : 0;
                    withSeveralRegions += w.extendCount() > 1 ? 1 : 0;
                }
            }
        } finally {
            bfcLogger.setLevel(level);
        }
        assertThat(headers).contains("growth=true", "growth=false", "gc=true", "gc=false", "timing=true",
                "timing=false", "coalescing=true", "coalescing=false", "gap=true", "gap=false", "fraction=true",
                "fraction=false", "limit%256=true", "limit%256=false", "tight=true", "tight=false");
        assertThat(all.zeroByteAllocs).isPositive();
        assertThat(all.overLimitAllocs).isPositive();
        assertThat(all.aligned).isPositive();
        assertThat(all.freedBefore).isPositive();
        assertThat(all.frontiers).isPositive();
        assertThat(all.clearStats).isPositive();
        assertThat(withOom).isPositive();
        assertThat(withSeveralRegions).isPositive();
    }

    @Test
    void settingsGivenReplaceTheDrawnOnesAndLeaveTheOthers() throws IOException {
        TraceHeader drawn = header(generate("drawn.bfctrace", 11, "--calls", 100));
        TraceHeader limit = header(generate("limit.bfctrace", 11, "--calls", 100, "--memory-limit", "64MiB"));
        assertThat(limit.memoryLimit()).isEqualTo(64L << 20);
        assertThat(limit.allowGrowth()).isEqualTo(drawn.allowGrowth());
        assertThat(limit.garbageCollection()).isEqualTo(drawn.garbageCollection());
        assertThat(limit.timingCounter()).isEqualTo(drawn.timingCounter());
        assertThat(limit.simGap()).isEqualTo(drawn.simGap());
        assertThat(limit.simCoalescing()).isEqualTo(drawn.simCoalescing());
        assertThat(limit.simBase()).isEqualTo(drawn.simBase());

        TraceHeader given = header(generate("given.bfctrace", 11, "--calls", 100, "--allow-growth",
                !drawn.allowGrowth(), "--garbage-collection", !drawn.garbageCollection(), "--timing-counter",
                !drawn.timingCounter(), "--coalescing", !drawn.simCoalescing(), "--gap", "4KiB", "--capacity",
                "3GiB", "--fragmentation-fraction", "0.25", "--memory-limit", "1GiB"));
        assertThat(given.allowGrowth()).isEqualTo(!drawn.allowGrowth());
        assertThat(given.garbageCollection()).isEqualTo(!drawn.garbageCollection());
        assertThat(given.timingCounter()).isEqualTo(!drawn.timingCounter());
        assertThat(given.simCoalescing()).isEqualTo(!drawn.simCoalescing());
        assertThat(given.simGap()).isEqualTo(4096);
        assertThat(given.simCapacity()).isEqualTo(3L << 30);
        assertThat(given.fragmentationFraction()).isEqualTo(0.25);
        assertThat(given.memoryLimit()).isEqualTo(1L << 30);
    }

    @Test
    void callsCountsTheCallsBeforeTheClosingFrees() throws IOException {
        for (long seed = 1; seed <= 6; seed++) {
            Path t = generate("c" + seed + ".bfctrace", seed, "--calls", 1234);
            Set<Long> live = new HashSet<>();
            long calls = 0;
            try (TraceReader r = TraceReader.open(t)) {
                for (TraceEvent e = r.next(); e != null; e = r.next()) {
                    calls++;
                    if (calls <= 1234) {
                        if (e.kind() == TraceEvent.Kind.ALLOC) {
                            live.add(e.id());
                        } else if (e.kind() == TraceEvent.Kind.FREE) {
                            live.remove(e.id());
                        }
                    } else {
                        assertThat(e.kind()).isEqualTo(TraceEvent.Kind.FREE);
                        assertThat(live.remove(e.id())).isTrue();
                    }
                }
            }
            assertThat(calls).isGreaterThanOrEqualTo(1234);
            // Either the trace ends after the 1234 calls, or it frees everything still live.
            assertThat(calls == 1234 || live.isEmpty()).as("seed %d: %d calls, %d live at the end", seed, calls,
                    live.size()).isTrue();
        }
    }

    @Test
    void timingCounterDecidesFreedBeforeAndFrontiers() throws IOException {
        Seen on = read(generate("on.bfctrace", 5, "--calls", 4000, "--timing-counter", "true"));
        Seen off = read(generate("off.bfctrace", 5, "--calls", 4000, "--timing-counter", "false"));
        assertThat(on.freedBefore).isPositive();
        assertThat(on.frontiers).isGreaterThan(off.frontiers);
        assertThat(off.freedBefore).isZero();
    }

    @Test
    void aSimThatMayRunOutGetsNoRequestThatWouldHangTheReference() throws IOException {
        // Upstream's back-off never ends for requests of 2304 bytes or less (deviations.md #1).
        for (long seed = 1; seed <= 5; seed++) {
            Seen tight = read(generate("t" + seed + ".bfctrace", seed, "--calls", 3000, "--memory-limit", "64MiB",
                    "--capacity", "16MiB"));
            assertThat(tight.smallAllocs).as("seed %d", seed).isZero();
        }
        long small = 0;
        for (long seed = 1; seed <= 5; seed++) {
            small += read(generate("r" + seed + ".bfctrace", seed, "--calls", 3000, "--memory-limit", "64MiB",
                    "--capacity", "256MiB")).smallAllocs;
        }
        assertThat(small).isPositive();
    }

    @Test
    void aGapThatLeavesNoRoomForARegionGetsNoRequestThatWouldHangTheReference() throws IOException {
        // A gap of 2^63 - 1 bytes after each region: no capacity (at most 2^63 - 1 - base) holds a
        // region, so every request fails. Without the gaps counted, a drawn roomy
        // capacity (twice the limit plus 64 MiB and 64 gaps, cut to the address space) was taken
        // for one where the sim never runs out, and small requests were written.
        for (long seed = 1; seed <= 5; seed++) {
            Path t = generate("g" + seed + ".bfctrace", seed, "--calls", 3000, "--memory-limit", "64MiB", "--gap",
                    Long.MAX_VALUE);
            assertThat(read(t).smallAllocs).as("seed %d", seed).isZero();
            assertThat(cli.run("replay", t)).isEqualTo(1);
            assertThat(cli.out).as("seed %d", seed).contains("regions        0 at end, 0 at most, 0 obtained");
        }
    }

    @Test
    void limitsOf4EiBAndMoreGiveTracesWhoseSizesStopAtTheLargestLong() throws IOException {
        // Twice such a limit is more than a long holds: the oversized requests, the drawn
        // capacity and the test for a sim that may run out must not overflow.
        long overLimit = 0;
        for (long seed = 1; seed <= 6; seed++) {
            for (String limit : new String[] {"6EiB", "9223372036854775807"}) {
                Path t = generate("h" + seed + "-" + limit + ".bfctrace", seed, "--calls", 4000, "--memory-limit",
                        limit);
                Seen s = read(t);
                assertThat(s.calls).as("seed %d, limit %s", seed, limit).isGreaterThanOrEqualTo(4000);
                // The sim cannot hold twice such a limit, so it may run out: no request that would
                // hang the reference's back-off (deviations.md #1).
                assertThat(s.smallAllocs).as("seed %d, limit %s", seed, limit).isZero();
                overLimit += s.overLimitAllocs;
            }
        }
        assertThat(overLimit).isPositive();
    }

    @Test
    void releasesMakeGarbageCollectionGiveRegionsBackAndExtendAgain() throws IOException {
        // Generated traces seldom reach upstream's garbage collection that succeeds
        // (AllocateRawInternal: DeallocateFreeRegions, then Extend, then FindChunkPtr): none in
        // 40 seeds of drawn settings measured with a gcov build of the reference. Releases are
        // what reach it.
        int seeds = 20;
        System.out.println("GenerateCommandTest releases: seeds " + FIRST_SEED + ".." + (FIRST_SEED + seeds - 1)
                + " (-Dbfc4j.test.seed)");
        long without = 0;
        long with = 0;
        Logger bfcLogger = Logger.getLogger("io.github.bfc4j");
        Level level = bfcLogger.getLevel();
        bfcLogger.setLevel(Level.SEVERE);
        try {
            for (long seed = FIRST_SEED; seed < FIRST_SEED + seeds; seed++) {
                without += servedAfterCollection(seed, "0");
                with += servedAfterCollection(seed, "1");
            }
        } finally {
            bfcLogger.setLevel(level);
        }
        System.out.println("GenerateCommandTest releases: allocations served after garbage collection gave regions"
                + " back: " + without + " without releases, " + with + " with --release-rate 1");
        assertThat(with).isPositive();
    }

    @Test
    void aReleaseFreesAllButAFewThenAllocatesAndFreesMoreThanHalfTheLimitThenAsksForMore() throws IOException {
        for (long seed = 1; seed <= 8; seed++) {
            Path t = generate("p" + seed + ".bfctrace", seed, "--calls", 3000, "--release-rate", "1");
            // kind, id, bytes and the live allocations before, per call (the reader reuses its event)
            List<long[]> calls = new ArrayList<>();
            Set<Long> live = new HashSet<>();
            long limit;
            try (TraceReader r = TraceReader.open(t)) {
                limit = r.header().memoryLimit();
                for (TraceEvent e = r.next(); e != null; e = r.next()) {
                    calls.add(new long[] {e.kind().ordinal(), e.id(), e.bytes(), live.size()});
                    if (e.kind() == TraceEvent.Kind.ALLOC) {
                        live.add(e.id());
                    } else if (e.kind() == TraceEvent.Kind.FREE) {
                        live.remove(e.id());
                    }
                }
            }
            long releases = 0;
            final int alloc = TraceEvent.Kind.ALLOC.ordinal();
            for (int i = 0; i + 2 < calls.size(); i++) {
                long[] a = calls.get(i);
                long[] free = calls.get(i + 1);
                long[] b = calls.get(i + 2);
                if (a[0] == alloc && a[2] > limit / 2 && a[2] <= limit - limit / 4 && a[3] <= 3
                        && free[0] == TraceEvent.Kind.FREE.ordinal() && free[1] == a[1]
                        && b[0] == alloc && b[2] >= a[2] && b[2] <= limit) {
                    releases++;
                }
            }
            // The first phase begins with a release, and a phase lasts 50 to 2000 calls.
            assertThat(releases).as("seed %d", seed).isGreaterThanOrEqualTo(2);
        }
    }

    /** Allocation calls of a generated trace that garbage collection gave regions back for and that then succeeded. */
    private long servedAfterCollection(long seed, String releaseRate) throws IOException {
        Path t = generate("rel" + seed + "-" + releaseRate + ".bfctrace", seed, "--calls", 3000,
                "--garbage-collection", "true", "--allow-growth", "true", "--release-rate", releaseRate);
        assertThat(read(t).calls).as("seed %d", seed).isGreaterThanOrEqualTo(3000);
        long[] regionFrees = {0};
        long[] served = {0};
        try (TraceReader r = TraceReader.open(t)) {
            WorkloadRunner.forHeader(r.header()).listener(step -> {
                long frees = step.allocator().memoryStats().regionFreesTotal();
                if (step.kind() == TraceEvent.Kind.ALLOC && frees > regionFrees[0] && step.result() != 0) {
                    served[0]++;
                }
                regionFrees[0] = frees;
            }).run(r);
        }
        return served[0];
    }

    @Test
    void releaseRateZeroWritesTheTraceWrittenWithoutIt() throws IOException {
        // Releases draw from the stream only when asked for, so that the traces of every other
        // seed and option stay as they were.
        for (long seed = 1; seed <= 3; seed++) {
            List<String> without = Files.readAllLines(generate("n" + seed + ".bfctrace", seed, "--calls", 2000));
            List<String> zero = Files.readAllLines(generate("z" + seed + ".bfctrace", seed, "--calls", 2000,
                    "--release-rate", "0"));
            List<String> some = Files.readAllLines(generate("s" + seed + ".bfctrace", seed, "--calls", 2000,
                    "--release-rate", "0.5"));
            assertThat(zero.get(2)).isEqualTo("source workload: bfc generate --seed " + seed
                    + " --calls 2000 --release-rate 0");
            zero.set(2, without.get(2));
            assertThat(zero).isEqualTo(without);
            assertThat(some.get(5)).endsWith(" release_rate=0.5");
            assertThat(some).isNotEqualTo(without);
        }
    }

    @Test
    void badOptionsSayWhatWasExpected() {
        Path out = dir.resolve("x.bfctrace");
        assertThat(cli.run("generate", "--seed", 1, "-o", out, "--calls", 0)).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc generate: --calls=0 (expected: 1 to 100000000)");
        // Any count a long holds was taken, and written until the disk was full: refused at once.
        for (long many : new long[] {100_000_001, Long.MAX_VALUE}) {
            assertThat(assertTimeoutPreemptively(Duration.ofSeconds(20),
                    () -> cli.run("generate", "--seed", 1, "-o", out, "--calls", many))).isEqualTo(2);
            assertThat(cli.err.lines()).containsExactly("bfc generate: --calls=" + many
                    + " (expected: 1 to 100000000)");
            assertThat(out).doesNotExist();
        }
        assertThat(cli.run("generate", "--seed", 1, "-o", out, "--memory-limit", "12XB")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly(
                "bfc generate: --memory-limit=12XB (expected: a size like 16GiB, 512MiB or 1048576)");
        assertThat(cli.run("generate", "--seed", 1, "-o", out, "--memory-limit", "1MiB",
                "--fragmentation-fraction", "0.0000001")).isEqualTo(2);
        assertThat(cli.err).startsWith("bfc generate: --fragmentation-fraction=0.0000001 (expected: 0, or at least"
                + " 1 / memory limit");
        // No limit makes a fraction this small usable: it is not written out in 300 digits.
        assertThat(cli.run("generate", "--seed", 1, "-o", out, "--fragmentation-fraction",
                "0." + "0".repeat(299) + "1")).isEqualTo(2);
        assertThat(cli.err).startsWith("bfc generate: --fragmentation-fraction=1.0E-300 (expected: 0, or at least"
                + " 1 / memory limit");
        assertThat(cli.run("generate", "--seed", 1, "-o", out, "--release-rate", "1.5")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly(
                "bfc generate: --release-rate=1.5 (expected: a chance from 0 to 1, a decimal like 0.3)");
        assertThat(cli.run("generate", "--seed", 1, "-o", out, "--timing-counter", "yes")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc generate: --timing-counter=yes (expected: true or false)");
        assertThat(cli.run("generate", "--seed", 1, "-o", dir.resolve("no/such/dir/x.bfctrace"))).isEqualTo(2);
        assertThat(cli.err).startsWith("bfc generate: -o=");
        assertThat(cli.run("generate", "-o", out)).isEqualTo(2);
        assertThat(cli.err).contains("--seed");
        assertThat(out).doesNotExist();
    }

    private Path generate(String name, long seed, Object... options) {
        Path out = dir.resolve(name);
        Object[] args = new Object[options.length + 5];
        args[0] = "generate";
        args[1] = "--seed";
        args[2] = seed;
        args[3] = "-o";
        args[4] = out;
        System.arraycopy(options, 0, args, 5, options.length);
        assertThat(cli.run(args)).as("%s", cli.err).isEqualTo(0);
        return out;
    }

    private static TraceHeader header(Path trace) throws IOException {
        try (TraceReader r = TraceReader.open(trace)) {
            return r.header();
        }
    }
}
