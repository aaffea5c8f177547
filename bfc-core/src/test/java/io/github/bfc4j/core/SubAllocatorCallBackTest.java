/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * A sub-allocator that calls back into the allocator it serves from inside its own
 * {@code alloc} or {@code free}: the calls that would change the allocator there (it is between
 * two states, and its lock is reentrant) are refused with {@link IllegalStateException}, and
 * the allocator's books stay whole; reading its figures works, and so does allocating from
 * another allocator.
 */
class SubAllocatorCallBackTest {

    private static final long MIB = 1L << 20;
    private static final long BASE = 0x7f0000000000L;

    /** A simulated space whose next {@code alloc} or {@code free} first runs a callback. */
    private static final class CallingBack extends ForwardingSubAllocator {
        final SimSubAllocator sim;
        Runnable onAlloc;
        Runnable onFree;
        final List<RuntimeException> thrown = new ArrayList<>();

        CallingBack() {
            this(new SimSubAllocator(BASE, 1L << 32, 0, false));
        }

        private CallingBack(SimSubAllocator sim) {
            super(sim);
            this.sim = sim;
        }

        @Override
        public Block alloc(long alignment, long numBytes) {
            run(onAlloc);
            onAlloc = null;
            return super.alloc(alignment, numBytes);
        }

        @Override
        public void free(long ptr, long numBytes) {
            run(onFree);
            onFree = null;
            super.free(ptr, numBytes);
        }

        private void run(Runnable r) {
            if (r != null) {
                try {
                    r.run();
                } catch (RuntimeException e) {
                    thrown.add(e);
                }
            }
        }
    }

    /** An allocator of 64 MiB on {@code sub}, closed by force (so that a close always goes through). */
    private static BfcAllocator allocator(CallingBack sub) {
        return BfcAllocator.builder().name("gpu_0").memoryLimit(64 * MIB).subAllocator(sub)
                .closePolicy(ClosePolicy.FORCE).build();
    }

    /** The calls that change the allocator, each as the callback makes it. */
    private static Map<String, Consumer<BfcAllocator>> changingCalls(long live, Allocation handle) {
        Map<String, Consumer<BfcAllocator>> calls = new LinkedHashMap<>();
        calls.put("allocateRaw", a -> a.allocateRaw(256, 5 * MIB));
        calls.put("allocate", a -> a.allocate(5 * MIB));
        calls.put("deallocateRaw", a -> a.deallocateRaw(live));
        calls.put("Allocation.close()", a -> handle.close());
        calls.put("emptyCache()", BfcAllocator::emptyCache);
        calls.put("checkInvariants()", BfcAllocator::checkInvariants);
        calls.put("close()", BfcAllocator::close);
        return calls;
    }

    @Test
    void callsThatChangeTheAllocatorAreRefusedFromInsideAlloc() {
        for (String call : changingCalls(0, null).keySet()) {
            CallingBack sub = new CallingBack();
            BfcAllocator a = allocator(sub);
            long live = a.allocateRaw(256, 1000); // the first region, 2 MiB
            Allocation handle = a.allocate(1000);
            sub.onAlloc = () -> changingCalls(live, handle).get(call).accept(a);

            long p = a.allocateRaw(256, 3 * MIB); // a second region: the callback runs

            assertRefused(sub, call);
            assertThat(a.isClosed()).as(call).isFalse();
            assertThat(p).as(call).isNotZero().isNotIn(live, handle.address());
            assertThat(a.allocationId(live)).as(call + ": still allocated").isPositive();
            assertThat(handle.isClosed()).as(call).isFalse();
            assertWhole(a, sub, 1024 + 1024 + 4 * MIB); // the 4 MiB region whole: the rest is too small to split
            handle.close();
            a.close();
            assertThat(sub.sim.reservedBytes()).as(call + ": everything given back").isZero();
        }
    }

    @Test
    void callsThatChangeTheAllocatorAreRefusedFromInsideFree() {
        for (String call : changingCalls(0, null).keySet()) {
            CallingBack sub = new CallingBack();
            BfcAllocator a = allocator(sub);
            long live = a.allocateRaw(256, 1000);
            Allocation handle = a.allocate(1000);
            a.deallocateRaw(a.allocateRaw(256, 3 * MIB)); // a second region, free
            sub.onFree = () -> changingCalls(live, handle).get(call).accept(a);

            assertThat(a.emptyCache()).as(call).isEqualTo(4 * MIB); // the second region: the callback runs

            assertRefused(sub, call);
            assertThat(a.isClosed()).as(call).isFalse();
            assertThat(a.allocationId(live)).as(call + ": still allocated").isPositive();
            assertThat(handle.isClosed()).as(call).isFalse();
            assertWhole(a, sub, 2048);
            handle.close();
            a.close();
            assertThat(sub.sim.reservedBytes()).as(call + ": everything given back").isZero();
        }
    }

    @Test
    void readingTheAllocatorsFiguresFromInsideWorks() {
        CallingBack sub = new CallingBack();
        try (BfcAllocator a = allocator(sub)) {
            a.allocateRaw(256, 1000);
            List<Object> seen = new ArrayList<>();
            sub.onAlloc = () -> {
                seen.add(a.getStats().bytesInUse());
                seen.add(a.memorySummary().contains("gpu_0"));
            };
            assertThat(a.allocateRaw(256, 3 * MIB)).isNotZero();
            assertThat(sub.thrown).isEmpty();
            assertThat(seen).containsExactly(1024L, true);
        }
    }

    @Test
    void aSubAllocatorMayAllocateFromAnotherAllocator() {
        CallingBack outerSub = new CallingBack();
        try (BfcAllocator outer = allocator(outerSub)) {
            SubAllocator fromOuter = new SubAllocator() {
                @Override
                public Block alloc(long alignment, long numBytes) {
                    long p = outer.allocateRaw(alignment, numBytes);
                    return p == 0 ? null : new Block(p, numBytes);
                }

                @Override
                public void free(long ptr, long numBytes) {
                    outer.deallocateRaw(ptr);
                }

                @Override
                public boolean supportsCoalescing() {
                    return false;
                }
            };
            try (BfcAllocator inner = BfcAllocator.builder().name("inner").memoryLimit(8 * MIB)
                    .subAllocator(fromOuter).build()) {
                long p = inner.allocateRaw(256, 1000);
                assertThat(p).isNotZero();
                assertThat(outer.getStats().bytesInUse()).isEqualTo(2 * MIB);
                inner.deallocateRaw(p);
                assertThat(inner.emptyCache()).isEqualTo(2 * MIB);
                assertThat(outer.getStats().bytesInUse()).isZero();
            }
        }
    }

    @Test
    void aShardsRegionCallMayNotChangeAnotherShard() {
        CallingBack sub = new CallingBack();
        try (ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("host").memoryLimit(64 * MIB)
                .subAllocator(sub).shards(2).closePolicy(ClosePolicy.FORCE).build()) {
            long onShard1 = a.shards().get(1).allocateRaw(256, 1000);
            Map<String, Runnable> calls = new LinkedHashMap<>();
            calls.put("deallocateRaw", () -> a.deallocateRaw(onShard1));
            calls.put("allocateRaw", () -> a.allocateRaw(256, 1000));
            calls.put("allocateRawOrThrow", () -> a.allocateRawOrThrow(256, 1000));
            calls.put("allocate", () -> a.allocate(1000));
            calls.put("emptyCache()", a::emptyCache);
            calls.put("close()", a::close);
            // A shard called directly is named as the allocator built and the shard.
            calls.put("allocateRaw (shard 1 of 2)", () -> a.shards().get(1).allocateRaw(256, 1000));
            calls.put("emptyCache() (shard 1 of 2)", () -> a.shards().get(1).emptyCache());
            for (Map.Entry<String, Runnable> call : calls.entrySet()) {
                sub.thrown.clear();
                sub.onAlloc = call.getValue();
                long p = a.shards().get(0).allocateRaw(256, 1000); // shard 0's region: the callback runs
                assertThat(p).isNotZero();
                String[] what = call.getKey().split(" \\(", 2);
                assertThat(sub.thrown).as(call.getKey()).singleElement().isInstanceOf(IllegalStateException.class)
                        .extracting(Throwable::getMessage).asString()
                        .startsWith(what[0] + " on allocator 'host'" + (what.length == 2 ? " (" + what[1] : "")
                                + " was called from inside its sub-allocator's alloc or free");
                assertThat(a.shards().get(1).allocationId(onShard1)).isPositive();
                a.deallocateRaw(p);
                assertThat(a.emptyCache()).as("shard 0's region").isPositive();
            }
            // A read of another shard, whose lock this thread does not hold, is refused too:
            // that shard's thread may hold its lock and wait for this region call to end.
            sub.thrown.clear();
            sub.onAlloc = () -> a.shards().get(1).getStats();
            long p = a.shards().get(0).allocateRaw(256, 1000);
            assertThat(sub.thrown).singleElement().isInstanceOf(IllegalStateException.class)
                    .extracting(Throwable::getMessage).asString()
                    .startsWith("allocator 'host' (shard 1 of 2) was called from inside a call of its sub-allocator made without"
                            + " its lock");
            a.deallocateRaw(p);
            a.emptyCache();
            for (BfcAllocator s : a.shards()) {
                s.checkInvariants();
            }
            assertThat(a.getStats().bytesInUse()).isEqualTo(1024);
            assertThat(a.reservedBytes()).isEqualTo(sub.sim.reservedBytes()).isEqualTo(2 * MIB);
        }
        assertThat(sub.sim.reservedBytes()).isZero();
    }

    private static void assertRefused(CallingBack sub, String call) {
        assertThat(sub.thrown).as(call).singleElement().isInstanceOf(IllegalStateException.class)
                .extracting(Throwable::getMessage).asString()
                .isEqualTo(call + " on allocator 'gpu_0' was called from inside its sub-allocator's alloc or"
                        + " free, which the allocator is making on this thread: a SubAllocator must not"
                        + " allocate, free, empty, check or close the allocator it serves (or another shard of"
                        + " it); it may read its figures (getStats()), except from the free of a region that"
                        + " waited for views (on the cleaner's thread). Nothing was done.");
    }

    /** The allocator's books agree with its chunks and with the simulated space. */
    private static void assertWhole(BfcAllocator a, CallingBack sub, long bytesInUse) {
        a.checkInvariants();
        AllocatorStats st = a.getStats();
        assertThat(st.bytesInUse()).isEqualTo(bytesInUse);
        assertThat(st.poolBytes()).isEqualTo(sub.sim.reservedBytes()).isLessThanOrEqualTo(a.memoryLimit());
    }
}
