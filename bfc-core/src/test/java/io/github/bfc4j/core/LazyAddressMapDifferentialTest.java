/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * The lazy address map (docs/deviations.md #28) changes no answer: two allocators make the same
 * random calls, one as built and one whose map records every chunk start from the first call,
 * as upstream's does (the mode every conformance trace checks against TensorFlow), and every
 * result and exception message must agree, call for call. The calls: raw allocations and frees
 * (also double, interior and never-allocated addresses), {@link Allocation} handles, the three
 * queries on chunk starts and on addresses where no chunk starts, {@code emptyCache}, the whole
 * memory map; on sub-allocators with and without coalescing and gaps, garbage collection on and
 * off, regions 64 bytes off a 256-byte boundary, and a timing counter set part way. Both
 * allocators' invariants are checked after every call.
 */
class LazyAddressMapDifferentialTest {

    private static final long BASE = 0x7f0000000000L;
    private static final long MIB = 1L << 20;
    private static final int RUNS = Integer.getInteger("bfc4j.lazymap.runs", 150);
    private static final int CALLS = 1500;

    /** The simulated space; from its third block on (if asked) each block is 64 bytes in. */
    private static final class OffBoundarySub implements SubAllocator {
        private final SimSubAllocator sim;
        private final boolean offBoundary;
        private final Map<Long, long[]> shifted = new HashMap<>();
        private int calls;

        OffBoundarySub(long gap, boolean coalescing, boolean offBoundary) {
            this.sim = new SimSubAllocator(BASE, 512 * MIB, gap, coalescing);
            this.offBoundary = offBoundary;
        }

        @Override
        public Block alloc(long alignment, long numBytes) {
            if (offBoundary && ++calls >= 3) {
                Block b = sim.alloc(256, numBytes + 256);
                if (b == null) {
                    return null;
                }
                shifted.put(b.ptr() + 64, new long[] {b.ptr(), b.bytes()});
                return new Block(b.ptr() + 64, numBytes);
            }
            return sim.alloc(alignment, numBytes);
        }

        @Override
        public void free(long ptr, long numBytes) {
            long[] block = shifted.remove(ptr);
            if (block != null) {
                sim.free(block[0], block[1]);
            } else {
                sim.free(ptr, numBytes);
            }
        }

        @Override
        public boolean supportsCoalescing() {
            return sim.supportsCoalescing();
        }
    }

    private static BfcAllocator allocator(SubAllocator sub, long limit, boolean gc, double fraction,
            boolean everyStart) throws ReflectiveOperationException {
        BfcAllocator a = new BfcAllocator(sub, limit, "d", BfcOptions.builder().allowRetryOnFailure(false)
                .garbageCollection(gc).fragmentationFraction(fraction).build());
        if (everyStart) {
            Field f = BfcPort.class.getDeclaredField("lazyAddressMap");
            f.setAccessible(true);
            f.setBoolean(a.port, false);
        }
        return a;
    }

    /** The call's result, or its exception's class and message. */
    private static String answer(Supplier<Object> call) {
        try {
            return String.valueOf(call.get());
        } catch (RuntimeException e) {
            return e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    /** Whether the lazy map lacks {@code ptr} while a chunk starts there (a query then walks). */
    private static boolean answeredByAWalk(BfcAllocator a, long ptr) {
        a.port.lock();
        try {
            return a.port.view().lazyAddressMap() && a.port.view().handleAt(ptr) == -1;
        } finally {
            a.port.unlock();
        }
    }

    @Test
    void bothMapsGiveTheSameAnswerToEveryCall() throws Exception {
        final long baseSeed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("LazyAddressMapDifferentialTest seed: " + baseSeed
                + " (rerun with -Dbfc4j.test.seed=" + baseSeed + ")");
        int walked = 0;
        int stillLazy = 0;
        for (int run = 0; run < RUNS; run++) {
            final long seed = baseSeed + run;
            Random config = new Random(seed * 0x9E3779B97F4A7C15L);
            boolean coalescing = config.nextBoolean();
            long gap = config.nextBoolean() ? 0 : 4096;
            boolean offBoundary = !coalescing && config.nextInt(3) == 0;
            boolean gc = config.nextBoolean();
            double fraction = config.nextBoolean() ? 0 : 0.001;
            long limit = (4 + config.nextInt(60)) * MIB;
            int timingAt = config.nextInt(3) == 0 ? config.nextInt(CALLS) : -1;
            BfcAllocator a = allocator(new OffBoundarySub(gap, coalescing, offBoundary), limit, gc, fraction, false);
            BfcAllocator b = allocator(new OffBoundarySub(gap, coalescing, offBoundary), limit, gc, fraction, true);
            Random random = new Random(seed * 0xC2B2AE3D27D4EB4FL);
            List<Long> live = new ArrayList<>();
            List<Allocation[]> handles = new ArrayList<>();
            List<Long> seen = new ArrayList<>();
            SharedCounter counterA = new SharedCounter();
            SharedCounter counterB = new SharedCounter();
            try {
                for (int i = 0; i < CALLS; i++) {
                    if (i == timingAt) {
                        a.setTimingCounter(counterA);
                        b.setTimingCounter(counterB);
                    }
                    if (timingAt >= 0 && i > timingAt && random.nextInt(20) == 0) {
                        long frontier = counterA.get() - random.nextInt(10);
                        a.setSafeFrontier(frontier);
                        b.setSafeFrontier(frontier);
                    }
                    int op = random.nextInt(100);
                    String fromA;
                    String fromB;
                    if (op < 35) {
                        long n = 1 + (random.nextInt(4) == 0 ? random.nextInt(3_000_000) : random.nextInt(5000));
                        long pa = a.allocateRaw(64, n);
                        fromA = Long.toHexString(pa);
                        fromB = Long.toHexString(b.allocateRaw(64, n));
                        if (pa != 0) {
                            live.add(pa);
                            seen.add(pa);
                        }
                    } else if (op < 60 && !live.isEmpty()) {
                        long p = live.remove(random.nextInt(live.size()));
                        fromA = answer(() -> { a.deallocateRaw(p); return "freed"; });
                        fromB = answer(() -> { b.deallocateRaw(p); return "freed"; });
                    } else if (op < 65) {
                        long n = 1 + random.nextInt(100_000);
                        Allocation[] pair = new Allocation[2];
                        fromA = answer(() -> pair[0] = a.allocate(n));
                        fromB = answer(() -> pair[1] = b.allocate(n));
                        if (pair[0] != null && pair[1] != null) {
                            handles.add(pair);
                        }
                    } else if (op < 70 && !handles.isEmpty()) {
                        Allocation[] pair = handles.remove(random.nextInt(handles.size()));
                        fromA = answer(() -> { pair[0].close(); return "closed"; });
                        fromB = answer(() -> { pair[1].close(); return "closed"; });
                    } else if (op < 92 && !seen.isEmpty()) {
                        // A chunk start seen before, sometimes 256-byte steps further, sometimes
                        // off 256 bytes: a chunk start now, a free chunk's, or none.
                        long p = seen.get(random.nextInt(seen.size()))
                                + 256L * (random.nextInt(3) == 0 ? random.nextInt(40) : 0)
                                + (random.nextInt(20) == 0 ? 64 : 0);
                        boolean walks = answeredByAWalk(a, p);
                        int query = random.nextInt(4);
                        if (query == 0) {
                            fromA = answer(() -> a.requestedSize(p));
                            fromB = answer(() -> b.requestedSize(p));
                        } else if (query == 1) {
                            fromA = answer(() -> a.allocatedSize(p));
                            fromB = answer(() -> b.allocatedSize(p));
                        } else if (query == 2) {
                            fromA = answer(() -> a.allocationId(p));
                            fromB = answer(() -> b.allocationId(p));
                        } else {
                            fromA = answer(() -> { a.deallocateRaw(p); return "freed"; });
                            fromB = answer(() -> { b.deallocateRaw(p); return "freed"; });
                            if (fromA.equals("freed")) {
                                live.remove(p);
                            }
                        }
                        if (walks && query != 3 && !fromA.startsWith("IllegalArgumentException")) {
                            walked++;
                        }
                        seen.add(p);
                    } else if (op < 94) {
                        fromA = answer(a::emptyCache);
                        fromB = answer(b::emptyCache);
                    } else {
                        fromA = a.memoryMap().chunks().toString();
                        fromB = b.memoryMap().chunks().toString();
                        for (MemoryMap.Chunk c : a.memoryMap().chunks()) {
                            seen.add(c.ptr());
                        }
                    }
                    assertThat(fromA).as("seed %d, call %d (op %d)", seed, i, op).isEqualTo(fromB);
                    a.checkInvariants();
                    b.checkInvariants();
                }
                assertThat(a.memoryMap().chunks()).as("seed %d", seed).isEqualTo(b.memoryMap().chunks());
                if (a.port.view().lazyAddressMap()) {
                    stillLazy++;
                }
            } finally {
                for (Allocation[] pair : handles) {
                    pair[0].close();
                    pair[1].close();
                }
                a.close();
                b.close();
            }
        }
        // The runs reached what the lazy map changes: queries of free chunks the map leaves
        // out, answered by a walk, and runs that stayed lazy to the end.
        assertThat(walked).as("queries answered by a region walk").isPositive();
        assertThat(stillLazy).as("runs still lazy at their end").isPositive();
    }
}
