/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.Allocation;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.BfcOutOfMemoryException;
import io.github.bfc4j.core.ClosePolicy;
import io.github.bfc4j.core.ForwardingSubAllocator;
import io.github.bfc4j.core.LeakDetection;
import io.github.bfc4j.core.MemoryAllocator;
import io.github.bfc4j.core.MemoryStats;
import io.github.bfc4j.core.MemoryType;
import io.github.bfc4j.core.ShardedBfcAllocator;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.bytedeco.javacpp.BytePointer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Threads misusing one object at once, on real host memory: two threads closing the same
 * {@link Allocation}, a view read while another thread closes its allocation, the allocator's
 * {@code close()} racing allocations and handle closes (plain and sharded, refusing and
 * forced), {@code emptyCache()} racing frees. Each round is bounded in time; the seed is
 * printed and {@code -Dbfc4j.test.seed=N} repeats it. Every call must work or get an exception
 * the API documents; afterwards the statistics count each allocation freed exactly once, the
 * invariants hold, and every byte goes back to the sub-allocator.
 */
class ConcurrentMisuseTest {

    private static final long MIB = 1L << 20;
    /** How long each test hammers, in total. */
    private static final long BUDGET_NANOS = TimeUnit.MILLISECONDS.toNanos(
            Long.getLong("bfc4j.misuse.millis", 2_000));

    private static long seed(String test) {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println(test + " seed=" + seed);
        return seed;
    }

    /** Runs {@code body} on {@code n} threads released together; the first failure fails the test. */
    private static void together(int n, long seed, ThreadBody body) throws InterruptedException {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CyclicBarrier start = new CyclicBarrier(n);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < n; t++) {
            int id = t;
            Thread thread = new Thread(() -> {
                try {
                    start.await();
                    body.run(id);
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, "misuse-" + t);
            threads.add(thread);
            thread.start();
        }
        for (Thread thread : threads) {
            thread.join(TimeUnit.SECONDS.toMillis(60));
            assertThat(thread.isAlive()).as("seed %d: %s still running after 60 s (deadlock?)", seed,
                    thread.getName()).isFalse();
        }
        if (failure.get() != null) {
            throw new AssertionError("seed " + seed + ": " + failure.get(), failure.get());
        }
    }

    private interface ThreadBody {
        void run(int id) throws Exception;
    }

    private static MemoryStats stats(MemoryAllocator a) {
        if (a instanceof BfcAllocator b) {
            return b.memoryStats();
        }
        long allocs = 0;
        long frees = 0;
        long inUse = 0;
        for (BfcAllocator s : ((ShardedBfcAllocator) a).shards()) {
            MemoryStats m = s.memoryStats();
            allocs += m.allocationsTotal();
            frees += m.freesTotal();
            inUse += m.bytesInUse();
        }
        return new MemoryStats(inUse, 0, 0, 0, 0, 0, 0, 0, allocs - frees, 0, allocs, frees, 0, 0, 0, 0, 0, 0,
                0, 0, 0);
    }

    private static void checkInvariants(MemoryAllocator a) {
        if (a instanceof BfcAllocator b) {
            b.checkInvariants();
        } else {
            ((ShardedBfcAllocator) a).shards().forEach(BfcAllocator::checkInvariants);
        }
    }

    private static MemoryAllocator build(boolean sharded, AlignedHostSubAllocator sub, ClosePolicy policy,
            LeakDetection leaks, boolean garbageCollection) {
        if (sharded) {
            return ShardedBfcAllocator.builder().name("misuse").memoryLimit(256 * MIB).subAllocator(sub).shards(3)
                    .options(BfcOptions.builder().allowRetryOnFailure(false)
                            .garbageCollection(garbageCollection).build())
                    .closePolicy(policy).leakDetection(leaks).build();
        }
        return BfcAllocator.builder().name("misuse").memoryLimit(256 * MIB).subAllocator(sub)
                .garbageCollection(garbageCollection).closePolicy(policy).leakDetection(leaks).build();
    }

    private static long bytesHeldForViews(MemoryAllocator a) {
        return a instanceof BfcAllocator b ? b.bytesHeldForViews() : ((ShardedBfcAllocator) a).bytesHeldForViews();
    }

    /**
     * Two threads close the same handles at once, in the same order, while a third allocates
     * and frees around them: each handle's chunk is freed exactly once (a second free into the
     * bins would throw, or hand one chunk out twice), neither close throws, and the statistics
     * count one free per allocation.
     */
    @ParameterizedTest(name = "sharded={0}, leaks={1}")
    @CsvSource({"false, DISABLED", "false, SIMPLE", "true, DISABLED", "true, SIMPLE"})
    void twoThreadsClosingOneAllocationFreeItExactlyOnce(boolean sharded, LeakDetection leaks) throws Exception {
        long seed = seed("twoThreadsClosingOneAllocationFreeItExactlyOnce");
        SplittableRandom random = new SplittableRandom(seed);
        AlignedHostSubAllocator sub = new AlignedHostSubAllocator();
        MemoryAllocator a = build(sharded, sub, ClosePolicy.REFUSE, leaks, false);
        long deadline = System.nanoTime() + BUDGET_NANOS / 4;
        long allocated = 0;
        int rounds = 0;
        while (System.nanoTime() < deadline || rounds < 3) {
            List<Allocation> live = new ArrayList<>();
            for (int i = 0; i < 500; i++) {
                live.add(a.allocate(1 + random.nextInt(20_000)));
            }
            allocated += live.size();
            long roundSeed = random.nextLong();
            together(3, seed, id -> {
                if (id < 2) {
                    for (Allocation x : live) {
                        x.close();
                        assertThat(x.isClosed()).isTrue();
                    }
                } else {
                    // Allocates meanwhile: a chunk freed twice would be handed out twice.
                    SplittableRandom r = new SplittableRandom(roundSeed);
                    ConcurrentHashMap<Long, Allocation> mine = new ConcurrentHashMap<>();
                    for (int i = 0; i < 300; i++) {
                        Allocation y = a.allocate(1 + r.nextInt(20_000));
                        ByteBuffer b = y.asByteBuffer();
                        b.put(0, (byte) 7).put(b.capacity() - 1, (byte) 7);
                        mine.put(y.address(), y);
                    }
                    for (Allocation y : mine.values()) {
                        ByteBuffer b = y.asByteBuffer();
                        assertThat(b.get(0)).isEqualTo((byte) 7);
                        assertThat(b.get(b.capacity() - 1)).isEqualTo((byte) 7);
                        y.close();
                    }
                }
            });
            allocated += 300;
            rounds++;
            MemoryStats m = stats(a);
            assertThat(m.bytesInUse()).as("seed %d", seed).isZero();
            assertThat(m.activeAllocations()).as("seed %d", seed).isZero();
            assertThat(m.allocationsTotal()).as("seed %d", seed).isEqualTo(allocated);
            assertThat(m.freesTotal()).as("seed %d: one free per allocation", seed).isEqualTo(allocated);
            checkInvariants(a);
        }
        a.close();
        Returned.assertAllReturned(sub, () -> bytesHeldForViews(a));
    }

    /**
     * A thread writes through a handle's {@code BytePointer} and {@code ByteBuffer} views while
     * another thread closes the handle and empties the cache, and a third allocates and frees:
     * the pointer's accesses work or get {@link IllegalStateException} (closed); the buffer's
     * writes after the close land in memory that stays mapped (the allocation is 64 MiB and
     * more, so its region is a mapping of its own that the sub-allocator's free unmaps: a write
     * there would crash the JVM) until the views are collected.
     */
    @Test
    void viewsUsedWhileAnotherThreadClosesAndEmptiesTheCacheNeverReachUnmappedMemory() throws Exception {
        long seed = seed("viewsUsedWhileAnotherThreadClosesAndEmptiesTheCacheNeverReachUnmappedMemory");
        SplittableRandom random = new SplittableRandom(seed);
        AlignedHostSubAllocator sub = new AlignedHostSubAllocator();
        BfcAllocator a = BfcAllocator.builder().name("misuse").memoryLimit(256 * MIB).subAllocator(sub)
                .garbageCollection(true).build();
        long deadline = System.nanoTime() + BUDGET_NANOS / 4;
        AtomicLong refused = new AtomicLong();
        AtomicLong heldForViews = new AtomicLong();
        int rounds = 0;
        while (System.nanoTime() < deadline || rounds < 3) {
            int bytes = (int) (64 * MIB) + random.nextInt((int) MIB);
            Allocation x = a.allocate(bytes);
            BytePointer p = x.asPointer();
            ByteBuffer b = x.asByteBuffer();
            AtomicBoolean done = new AtomicBoolean();
            AtomicLong writes = new AtomicLong();
            long roundSeed = random.nextLong();
            together(3, seed, id -> {
                if (id == 0) {
                    SplittableRandom r = new SplittableRandom(roundSeed);
                    boolean pointerRefused = false;
                    while (!done.get()) {
                        int i = r.nextInt(bytes);
                        b.put(i, (byte) 1); // never refused: after the close it is not caught
                        writes.incrementAndGet();
                        if (!pointerRefused) {
                            try {
                                p.put(i, (byte) 2);
                                p.get(i);
                            } catch (IllegalStateException e) {
                                assertThat(e).hasMessageContaining("is closed");
                                refused.incrementAndGet();
                                pointerRefused = true;
                            }
                        }
                    }
                } else if (id == 1) {
                    x.close();
                    a.emptyCache();
                    heldForViews.addAndGet(a.bytesHeldForViews());
                    // The writer goes on after the region left the pool: wait for its writes.
                    long atEmpty = writes.get();
                    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                    while (writes.get() < atEmpty + 1000) {
                        assertThat(System.nanoTime() - until).as("seed %d: the writer wrote after the close and"
                                + " emptyCache(), within 30 s", seed).isNegative();
                        Thread.sleep(1);
                    }
                    done.set(true);
                } else {
                    List<Allocation> others = new ArrayList<>();
                    for (int i = 0; i < 20; i++) {
                        others.add(a.allocate(256 + i * 1000));
                    }
                    others.forEach(Allocation::close);
                    a.emptyCache();
                }
            });
            rounds++;
            assertThat(a.bytesInUse()).as("seed %d", seed).isZero();
            a.checkInvariants();
        }
        System.out.println(rounds + " rounds, " + refused + " pointer accesses refused after the close, "
                + heldForViews + " bytes held for views after emptyCache()");
        assertThat(heldForViews.get()).as("the views held their regions").isPositive();
        a.close();
        Returned.assertAllReturned(sub, a::bytesHeldForViews);
    }

    /**
     * The allocator's {@code close()} races threads that allocate, write their views and close
     * their handles. Forced: the racing calls work or get {@link IllegalStateException}; every
     * allocation is freed exactly once (by its handle or by the close). Refusing: the close is
     * retried until the threads have closed everything; until then no handle is closed under
     * them and their writes stay theirs.
     */
    @ParameterizedTest(name = "sharded={0}, policy={1}")
    @CsvSource({"false, FORCE", "false, REFUSE", "true, FORCE", "true, REFUSE"})
    void closeRacingAllocationsAndHandleClosesFreesEachAllocationOnce(boolean sharded, ClosePolicy policy)
            throws Exception {
        long seed = seed("closeRacingAllocationsAndHandleClosesFreesEachAllocationOnce");
        SplittableRandom random = new SplittableRandom(seed);
        long deadline = System.nanoTime() + BUDGET_NANOS / 4;
        int rounds = 0;
        while (System.nanoTime() < deadline || rounds < 3) {
            AlignedHostSubAllocator sub = new AlignedHostSubAllocator();
            MemoryAllocator a = build(sharded, sub, policy, LeakDetection.DISABLED, random.nextBoolean());
            AtomicLong allocations = new AtomicLong();
            AtomicLong refusedAllocations = new AtomicLong();
            AtomicLong refusedCloses = new AtomicLong();
            long roundSeed = random.nextLong();
            List<List<Allocation>> kept = new ArrayList<>();
            for (int t = 0; t < 3; t++) {
                kept.add(new ArrayList<>());
            }
            together(4, seed, id -> {
                if (id == 3) {
                    SplittableRandom r = new SplittableRandom(roundSeed);
                    for (int spin = r.nextInt(20_000); spin > 0; spin--) {
                        Thread.onSpinWait();
                    }
                    while (true) {
                        try {
                            a.close();
                            return;
                        } catch (IllegalStateException e) {
                            assertThat(policy).isEqualTo(ClosePolicy.REFUSE);
                            assertThat(e).hasMessageContaining("refused");
                            refusedCloses.incrementAndGet();
                            Thread.yield();
                        }
                    }
                }
                SplittableRandom r = new SplittableRandom(roundSeed + id);
                List<Allocation> mine = kept.get(id);
                byte mark = (byte) (id + 1);
                for (int step = 0; step < 2_000; step++) {
                    boolean alloc = mine.isEmpty() || (step < 1_500 && r.nextInt(3) != 0);
                    if (alloc) {
                        Allocation x;
                        try {
                            x = a.allocate(1 + r.nextInt(200_000));
                        } catch (IllegalStateException e) {
                            assertThat(e).hasMessageContaining("closed");
                            refusedAllocations.incrementAndGet();
                            break;
                        } catch (BfcOutOfMemoryException e) {
                            continue;
                        }
                        allocations.incrementAndGet();
                        try {
                            ByteBuffer b = x.asByteBuffer();
                            b.put(0, mark).put(b.capacity() - 1, mark);
                        } catch (IllegalStateException e) {
                            assertThat(policy).isEqualTo(ClosePolicy.FORCE);
                            assertThat(e).hasMessageContaining("closed");
                        }
                        mine.add(x);
                    } else {
                        Allocation x = mine.remove(r.nextInt(mine.size()));
                        if (policy == ClosePolicy.REFUSE) {
                            // No close can have freed it under this thread.
                            assertThat(x.isClosed()).isFalse();
                            ByteBuffer b = x.asByteBuffer();
                            assertThat(b.get(0)).isEqualTo(mark);
                            assertThat(b.get(b.capacity() - 1)).isEqualTo(mark);
                        }
                        x.close();
                        x.close();
                    }
                }
                for (Allocation x : mine) {
                    x.close();
                }
            });
            rounds++;
            for (List<Allocation> mine : kept) {
                assertThat(mine).allMatch(Allocation::isClosed);
            }
            assertThat(a.isClosed()).isTrue();
            MemoryStats m = stats(a);
            assertThat(m.bytesInUse()).as("seed %d", seed).isZero();
            // A chunk the close freed before its handle was made counts as an allocation the
            // caller never got (an allocate() refused as closed makes at most two such chunks).
            assertThat(m.allocationsTotal()).as("seed %d", seed)
                    .isBetween(allocations.get(), allocations.get() + 2 * refusedAllocations.get());
            assertThat(m.freesTotal()).as("seed %d: one free per allocation", seed).isEqualTo(m.allocationsTotal());
            assertThat(m.activeAllocations()).isZero();
            Returned.assertAllReturned(sub, () -> bytesHeldForViews(a));
        }
    }

    /**
     * {@code emptyCache()} races threads that allocate and free (handles and raw), with and
     * without garbage collection: no region still holding an allocation goes back (each thread
     * checks the marks it wrote at both ends), the statistics add up, and the invariants hold.
     */
    @ParameterizedTest(name = "sharded={0}")
    @CsvSource({"false", "true"})
    void emptyCacheRacingFreesGivesBackOnlyEmptyRegions(boolean sharded) throws Exception {
        long seed = seed("emptyCacheRacingFreesGivesBackOnlyEmptyRegions");
        SplittableRandom random = new SplittableRandom(seed);
        AlignedHostSubAllocator sub = new AlignedHostSubAllocator();
        MemoryAllocator a = build(sharded, sub, ClosePolicy.REFUSE, LeakDetection.DISABLED, true);
        long deadline = System.nanoTime() + BUDGET_NANOS / 4;
        AtomicLong allocations = new AtomicLong();
        int rounds = 0;
        while (System.nanoTime() < deadline || rounds < 3) {
            long roundSeed = random.nextLong();
            AtomicBoolean done = new AtomicBoolean();
            AtomicLong emptied = new AtomicLong();
            together(4, seed, id -> {
                if (id == 3) {
                    while (!done.get()) {
                        emptied.addAndGet(a.emptyCache());
                    }
                    return;
                }
                try {
                    SplittableRandom r = new SplittableRandom(roundSeed + id);
                    List<Allocation> mine = new ArrayList<>();
                    List<long[]> raw = new ArrayList<>(); // {address, size, mark}
                    byte mark = (byte) (id + 1);
                    for (int step = 0; step < 3_000; step++) {
                        int what = r.nextInt(4);
                        if (what == 0 || (what == 1 && mine.isEmpty())) {
                            Allocation x;
                            try {
                                x = a.allocate(1 + r.nextInt((int) MIB));
                            } catch (BfcOutOfMemoryException e) {
                                continue;
                            }
                            allocations.incrementAndGet();
                            ByteBuffer b = x.asByteBuffer();
                            b.put(0, mark).put(b.capacity() - 1, mark);
                            mine.add(x);
                        } else if (what == 1) {
                            Allocation x = mine.remove(r.nextInt(mine.size()));
                            ByteBuffer b = x.asByteBuffer();
                            assertThat(b.get(0)).isEqualTo(mark);
                            assertThat(b.get(b.capacity() - 1)).isEqualTo(mark);
                            x.close();
                        } else if (what == 2 || raw.isEmpty()) {
                            long size = 1 + r.nextInt((int) MIB);
                            long p = a.allocateRaw(256, size);
                            if (p != 0) {
                                allocations.incrementAndGet();
                                raw.add(new long[] {p, size});
                            }
                        } else {
                            long[] x = raw.remove(r.nextInt(raw.size()));
                            a.deallocateRaw(x[0]);
                        }
                    }
                    mine.forEach(Allocation::close);
                    raw.forEach(x -> a.deallocateRaw(x[0]));
                } finally {
                    done.set(true);
                }
            });
            rounds++;
            MemoryStats m = stats(a);
            assertThat(m.bytesInUse()).as("seed %d", seed).isZero();
            assertThat(m.allocationsTotal()).as("seed %d", seed).isEqualTo(allocations.get());
            assertThat(m.freesTotal()).as("seed %d", seed).isEqualTo(allocations.get());
            checkInvariants(a);
        }
        a.emptyCache();
        Returned.assertAllReturned(sub, () -> bytesHeldForViews(a));
        a.close();
    }

    /**
     * A sub-allocator that stops a chosen thread in {@code memoryType()}, which a view asks
     * after its first check that the handle is open: the window in which another thread's close
     * can overtake the view.
     */
    private static final class PausingSubAllocator extends ForwardingSubAllocator {
        volatile Thread pausing;
        final CountDownLatch paused = new CountDownLatch(1);
        final CountDownLatch resume = new CountDownLatch(1);

        PausingSubAllocator(AlignedHostSubAllocator upstream) {
            super(upstream);
        }

        @Override
        public MemoryType memoryType() {
            if (Thread.currentThread() == pausing) {
                paused.countDown();
                try {
                    resume.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return super.memoryType();
        }
    }

    /**
     * A view asked for while the allocator's forced close (or the handle's close and an
     * {@code emptyCache()}) gives its region back is refused saying that the allocation is
     * closed, as a view asked for after the close is; not with the view pins' "lies in no
     * region" (which names no allocation and no cause).
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"buffer after a forced close", "pointer after a forced close",
            "buffer after close and emptyCache", "pointer after close and emptyCache"})
    void aViewOvertakenByACloseIsRefusedAsClosed(String what) throws Exception {
        AlignedHostSubAllocator host = new AlignedHostSubAllocator();
        PausingSubAllocator sub = new PausingSubAllocator(host);
        BfcAllocator a = BfcAllocator.builder().name("overtaken").memoryLimit(64 * MIB).subAllocator(sub)
                .closePolicy(ClosePolicy.FORCE).build();
        Allocation x = a.allocate(1000);
        Function<Allocation, Object> view = what.startsWith("buffer") ? Allocation::asByteBuffer : Allocation::asPointer;
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread viewer = new Thread(() -> {
            try {
                view.apply(x);
            } catch (Throwable e) {
                thrown.set(e);
            }
        });
        sub.pausing = viewer;
        viewer.start();
        assertThat(sub.paused.await(10, TimeUnit.SECONDS)).isTrue();
        if (what.endsWith("forced close")) {
            a.close();
        } else {
            x.close();
            assertThat(a.emptyCache()).isPositive();
        }
        assertThat(host.liveBytes()).isZero();
        sub.resume.countDown();
        viewer.join(10_000);
        assertThat(thrown.get()).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("allocation #1 (1000 bytes at 0x")
                .hasMessageContaining(what.endsWith("forced close")
                        ? "was closed (ClosePolicy.FORCE) while it was live"
                        : "is closed: it must not be used after close()");
        a.close();
        assertThat(host.liveBytes()).isZero();
    }
}
