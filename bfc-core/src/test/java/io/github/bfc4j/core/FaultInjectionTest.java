/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Sub-allocator failures at every call position of a scenario: the first {@code Extend}, the
 * Nth, a call during the 0.9 back-off, the re-extend after garbage collection. For each
 * position a fresh allocator runs the scenario twice over: with that one call failed, and with
 * every call from it on failed (an outage). Every call is checked by {@link ShadowModel} (an
 * allocation returns an address or 0, never throws; nothing overlaps; stats match) and
 * {@link BfcAllocator#checkInvariants()}; afterwards, with faults off, everything is freed, a
 * new allocation must succeed, and after {@code close()} the simulated space must be entirely
 * free again (nothing leaked).
 */
class FaultInjectionTest {

    private static final long KIB = 1L << 10;
    private static final long MIB = 1L << 20;
    private static long faultsInjected;
    private static long callsChecked;
    private static long runs;

    /**
     * A named setup and script of calls; {@code minFrees} and {@code minRefusals}: what the
     * clean run must show (sub-allocator frees during the script, i.e. garbage collection; and
     * refused calls, i.e. back-off), so that the scenario is known to reach those paths.
     */
    record Scenario(String name, ShadowModel.Config config, int minFrees, int minRefusals,
            Consumer<ShadowModel> script) {
        @Override
        public String toString() {
            return name;
        }
    }

    static Stream<Scenario> scenarios() {
        return Stream.of(
                // Growing regions: 2 MiB, then doubling targets; some requests exceed the limit.
                new Scenario("growth", new ShadowModel.Config(64 * MIB, true, false, 0, false,
                        128 * MIB, 0, true), 0, 0, m -> {
                            m.alloc(MIB, 64, 0);
                            m.alloc(3 * MIB, 64, 0);
                            m.alloc(100 * KIB, 256, 0);
                            m.alloc(10 * MIB, 4096, 0);
                            m.freeNth(0);
                            m.alloc(20 * MIB, 64, 0);
                            m.alloc(30 * MIB, 64, 0);
                            m.freeNth(1);
                            m.alloc(MIB, 64, 0);
                        }),
                // The sub-allocator has 40 MiB for a 64 MiB limit without growth: the first
                // Extend asks for 64 MiB and backs off by 0.9 until 40 MiB fit.
                new Scenario("backoff", new ShadowModel.Config(64 * MIB, false, false, 0, false,
                        40 * MIB, 0, false), 0, 3, m -> {
                            m.alloc(MIB, 64, 0);
                            m.alloc(30 * MIB, 64, 0);
                            m.alloc(20 * MIB, 64, 0);
                            m.freeNth(0);
                            m.alloc(5 * MIB, 64, 0);
                        }),
                // Garbage collection: free regions are given back so that one larger region can
                // be had; the re-extend after it can fail too.
                new Scenario("gc", new ShadowModel.Config(16 * MIB, true, true, 0, false,
                        16 * MIB + 16 * KIB, 4 * KIB, false), 2, 0, m -> {
                            m.alloc(MIB, 64, 0);
                            m.alloc(3 * MIB, 64, 0);
                            m.freeNth(0);
                            m.freeNth(0);
                            m.alloc(12 * MIB, 64, 0);
                            m.alloc(2 * MIB, 64, 0);
                            m.freeNth(0);
                            m.alloc(14 * MIB, 64, 0);
                        }),
                // Timestamped frees: stamped chunks are merged by force before giving up.
                new Scenario("timing-gc", new ShadowModel.Config(8 * MIB, true, true, 0, true,
                        16 * MIB, 0, true), 1, 0, m -> {
                            for (int i = 0; i < 6; i++) {
                                m.alloc(700 * KIB, 64, 0);
                            }
                            m.freeNth(1);
                            m.freeNth(2);
                            m.alloc(600 * KIB, 64, 1);
                            m.frontier(1);
                            m.alloc(5 * MIB, 64, 0);
                            m.freeAll();
                            m.alloc(7 * MIB, 64, 0);
                        }));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("scenarios")
    void aFailedSubAllocatorCallAtAnyPositionLeavesTheAllocatorConsistent(Scenario s) {
        // A clean run counts the sub-allocator calls of the scenario.
        long calls = run(s, 0, false);
        assertThat(calls).as("sub-allocator calls of " + s).isPositive();
        for (long k = 1; k <= calls + 1; k++) {
            run(s, k, false);
            run(s, k, true);
        }
    }

    /**
     * Runs the scenario with call {@code k} failed (or every call from {@code k} on, if
     * {@code outage}), then recovers; {@code k == 0} fails nothing.
     *
     * @return the sub-allocator calls the scenario made
     */
    private static long run(Scenario s, long k, boolean outage) {
        FaultInjectingSubAllocator[] fault = new FaultInjectingSubAllocator[1];
        Counting[] counting = new Counting[1];
        ShadowModel m = new ShadowModel(s.config(), s.name(), "FaultInjectionTest",
                sub -> fault[0] = new FaultInjectingSubAllocator(counting[0] = new Counting(sub)));
        if (k > 0) {
            if (outage) {
                fault[0].failCallsFrom(k);
            } else {
                fault[0].failCalls(k);
            }
        }
        try {
            s.script().accept(m);
            long scenarioCalls = fault[0].allocCalls();
            if (k == 0) {
                assertThat(counting[0].frees).as("garbage-collection frees in " + s)
                        .isGreaterThanOrEqualTo(s.minFrees());
                assertThat(counting[0].refusals).as("refused calls (back-off) in " + s)
                        .isGreaterThanOrEqualTo(s.minRefusals());
            }
            // Recovery: faults off, everything freed, a new allocation works, nothing leaks.
            fault[0].failNothing();
            m.freeAll();
            assertThat(m.alloc(256 * KIB, 64, 0)).as("an allocation after recovery").isNotZero();
            m.close();
            faultsInjected += fault[0].injectedFailures();
            callsChecked += m.calls();
            runs++;
            return scenarioCalls;
        } catch (AssertionError | RuntimeException e) {
            throw m.failure("FaultInjectionTest-" + s.name(), new AssertionError(s + " with "
                    + (outage ? "every sub-allocator call from call " : "sub-allocator call ") + k
                    + " failed: " + e, e));
        }
    }

    /** Counts what the real sub-allocator refused and freed. */
    private static final class Counting implements SubAllocator {
        final SubAllocator upstream;
        int frees;
        int refusals;

        Counting(SubAllocator upstream) {
            this.upstream = upstream;
        }

        @Override
        public Block alloc(long alignment, long numBytes) {
            Block b = upstream.alloc(alignment, numBytes);
            if (b == null) {
                refusals++;
            }
            return b;
        }

        @Override
        public void free(long ptr, long numBytes) {
            frees++;
            upstream.free(ptr, numBytes);
        }

        @Override
        public boolean supportsCoalescing() {
            return upstream.supportsCoalescing();
        }
    }

    @AfterAll
    static void report() {
        System.out.println("FaultInjectionTest: " + runs + " runs, " + faultsInjected
                + " sub-allocator failures injected, " + callsChecked
                + " allocator calls checked (invariants + model after each)");
    }

    @org.junit.jupiter.api.Test
    void randomFaultsDuringARandomWorkload() {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("FaultInjectionTest.randomFaultsDuringARandomWorkload seed: " + seed
                + " (rerun with -Dbfc4j.test.seed=" + seed + ")");
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(seed);
        List<Long> injected = new ArrayList<>();
        for (int round = 0; round < 40; round++) {
            ShadowModel.Config c = new ShadowModel.Config(32 * MIB, rnd.nextBoolean(),
                    rnd.nextBoolean(), 0, rnd.nextBoolean(), 48 * MIB, rnd.nextBoolean() ? 0 : 4096,
                    rnd.nextBoolean());
            FaultInjectingSubAllocator[] fault = new FaultInjectingSubAllocator[1];
            long roundSeed = rnd.nextLong();
            ShadowModel m = new ShadowModel(c, "random-faults", "FaultInjectionTest seed " + seed,
                    sub -> fault[0] = new FaultInjectingSubAllocator(sub).failFraction(0.3, roundSeed));
            try {
                for (int i = 0; i < 300; i++) {
                    int op = rnd.nextInt(10);
                    if (op < 5) {
                        long bytes = rnd.nextInt(4) == 0 ? rnd.nextLong(8 * MIB) : rnd.nextLong(64 * KIB);
                        m.alloc(bytes, 1L << rnd.nextInt(13), 0);
                    } else if (op < 9) {
                        m.freeNth(rnd.nextInt(1000));
                    } else {
                        m.frontier(rnd.nextInt(3));
                    }
                }
                fault[0].failNothing();
                m.freeAll();
                assertThat(m.alloc(256 * KIB, 64, 0)).isNotZero();
                m.close();
            } catch (AssertionError | RuntimeException e) {
                throw m.failure("FaultInjectionTest-random", new AssertionError("seed " + seed
                        + ", round " + round + ": " + e, e));
            }
            injected.add(fault[0].injectedFailures());
            faultsInjected += fault[0].injectedFailures();
            callsChecked += m.calls();
            runs++;
        }
        assertThat(injected.stream().mapToLong(Long::longValue).sum()).isPositive();
    }
}
