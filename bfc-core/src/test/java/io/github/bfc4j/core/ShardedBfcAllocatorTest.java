/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.as;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.io.ByteArrayOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Level;
import java.util.logging.Logger;
import net.razorvine.pickle.Unpickler;
import org.assertj.core.api.InstanceOfAssertFactories;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ShardedBfcAllocatorTest {

    private static final long BASE = 0x7f0000000000L;
    private static final long MIB = 1 << 20;

    private static ShardedBfcAllocator sharded(long limit, int shards) {
        return ShardedBfcAllocator.builder()
                .name("sharded")
                .memoryLimit(limit)
                .subAllocator(new SimSubAllocator(BASE, 1L << 34, 0, true))
                .shards(shards)
                .build();
    }

    /**
     * allocate() refuses bad arguments as BfcAllocator.allocate() does, naming the sharded
     * allocator, and changes nothing.
     */
    @Test
    void allocateRefusesBadArgumentsNamingTheShardedAllocator() {
        try (ShardedBfcAllocator a = sharded(64 * MIB, 2)) {
            assertThatThrownBy(() -> a.allocate(0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("bytes=0 (expected: > 0) for allocator 'sharded'");
            assertThatThrownBy(() -> a.allocate(-256)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("bytes=-256 (expected: > 0) for allocator 'sharded'");
            assertThatThrownBy(() -> a.allocate(256, 3)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("alignment=3 (expected: a power of two").hasMessageContaining("'sharded'");
            assertThatThrownBy(() -> a.allocate(BfcAllocator.MAX_ALLOCATION_BYTES, 512))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("for allocator 'sharded'");
            // A shard called directly names the allocator built and the shard, not "sharded/1".
            BfcAllocator shard = a.shards().get(1);
            assertThatThrownBy(() -> shard.allocate(0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("bytes=0 (expected: > 0) for allocator 'sharded' (shard 1 of 2)");
            assertThatThrownBy(() -> shard.allocate(256, 3)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("alignment=3 (expected: a power of two) for allocator 'sharded' (shard 1 of 2)");
            assertThatThrownBy(() -> shard.allocateRaw(256, -1)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("numBytes=-1 (expected: >= 0) for allocator 'sharded' (shard 1 of 2)");
            assertThat(a.reservedBytes()).isZero();
            assertThat(a.getStats().numAllocs()).isZero();
        }
    }

    /**
     * A sub-allocator whose {@code alloc} (run under a shard's lock) first asks {@code self} for
     * the statistics of every shard, keeping the first exception that asking throws.
     */
    private static SubAllocator askingForStats(AtomicReference<ShardedBfcAllocator> self,
            AtomicReference<Throwable> fromCallback) {
        return new ForwardingSubAllocator(new SimSubAllocator(BASE, 1L << 34, 0, true)) {
            @Override
            public Block alloc(long alignment, long numBytes) {
                try {
                    self.get().getStats();
                } catch (RuntimeException e) {
                    fromCallback.compareAndSet(null, e);
                }
                return super.alloc(alignment, numBytes);
            }
        };
    }

    /** Runs {@code task} on a new thread (so it gets the next home shard) and returns its result. */
    private static <T> T onNewThread(Callable<T> task) throws Exception {
        AtomicReference<T> result = new AtomicReference<>();
        AtomicReference<Exception> failure = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                result.set(task.call());
            } catch (Exception e) {
                failure.set(e);
            }
        }, "new-thread");
        t.setDaemon(true);
        t.start();
        TestThreads.joinOrFail(TestThreads.RUN_LIMIT, t);
        if (failure.get() != null) {
            throw failure.get();
        }
        return result.get();
    }

    @Test
    void aCallThatLocksEveryShardFromUnderOneShardsLockIsRefusedNotDeadlocked() throws Exception {
        // A sub-allocator runs under its shard's lock. One that asks the sharded allocator for its
        // statistics (which read every shard at one instant) would wait for the other shards'
        // locks while holding its own, and deadlock with a thread taking them all in order.
        AtomicReference<ShardedBfcAllocator> self = new AtomicReference<>();
        AtomicReference<Throwable> fromCallback = new AtomicReference<>();
        SubAllocator logging = askingForStats(self, fromCallback);
        ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("sharded").memoryLimit(1L << 30)
                .subAllocator(logging).shards(2).build();
        self.set(a);
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> threads = new ArrayList<>();
        threads.add(new Thread(() -> {
            while (!stop.get()) {
                a.getStats();
            }
        }));
        for (BfcAllocator shard : a.shards()) {
            threads.add(new Thread(() -> {
                for (int i = 0; i < 2000; i++) {
                    long p = shard.allocateRaw(256, MIB);
                    shard.deallocateRaw(p);
                    shard.emptyCache(); // the next allocation asks the sub-allocator again
                }
            }));
        }
        for (Thread t : threads) {
            t.setDaemon(true); // a deadlocked one must not keep the test JVM alive
            t.start();
        }
        for (Thread t : threads.subList(1, threads.size())) {
            t.join(20_000);
        }
        stop.set(true);
        threads.get(0).join(20_000);
        assertThat(threads).as("threads deadlocked (the reader first)").noneMatch(Thread::isAlive);
        a.close();
        assertThat(fromCallback.get()).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("getStats()")
                .hasMessageContaining("holds the lock of shard");
    }

    @Test
    void getStatsNeverCountsARegionTwiceWhileRegionsMoveBetweenShards() throws Exception {
        // The limit holds one region: the shards take turns holding it, one frees it
        // (emptyCache) and the other obtains it, while getStats() reads the shards.
        long limit = 2 * MIB;
        try (ShardedBfcAllocator a = sharded(limit, 2)) {
            AtomicBoolean stop = new AtomicBoolean();
            AtomicReference<AllocatorStats> torn = new AtomicReference<>();
            List<Thread> movers = new ArrayList<>();
            for (BfcAllocator shard : a.shards()) {
                Thread mover = new Thread(() -> {
                    while (!stop.get()) {
                        long p = shard.allocateRaw(256, limit);
                        if (p != 0) {
                            shard.deallocateRaw(p);
                        }
                        shard.emptyCache();
                    }
                }, "mover-" + movers.size());
                mover.setDaemon(true);
                movers.add(mover);
            }
            movers.forEach(Thread::start);
            try {
                long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
                while (torn.get() == null && System.nanoTime() < end) {
                    AllocatorStats s = a.getStats();
                    if (s.poolBytes() > limit || s.poolBytes() > s.peakPoolBytes() || s.bytesInUse() > s.poolBytes()
                            || s.peakBytesInUse() < s.bytesInUse()) {
                        torn.set(s);
                    }
                }
            } finally {
                stop.set(true);
                TestThreads.joinOrFail(TestThreads.RUN_LIMIT, movers.toArray(new Thread[0]));
            }
            assertThat(torn.get()).as("statistics that no moment had (limit %d)", limit).isNull();
        }
    }

    @Test
    void threadsGetShardsInTurnAndAnyThreadFreesIntoTheHoldingShard() throws Exception {
        try (ShardedBfcAllocator a = sharded(64 * MIB, 2)) {
            long mine = a.allocateRaw(64, 100_000);
            long theirs = onNewThread(() -> a.allocateRaw(64, 200_000));
            BfcAllocator shard0 = a.shards().get(0);
            BfcAllocator shard1 = a.shards().get(1);

            assertThat(a.homeShard()).isSameAs(shard0);
            assertThat(onNewThread(a::homeShard)).as("the third thread wraps around").isSameAs(shard0);
            assertThat(a.shardOf(mine)).isSameAs(shard0);
            assertThat(a.shardOf(theirs)).isSameAs(shard1);
            assertThat(shard0.bytesInUse()).isEqualTo(BfcAllocator.roundedBytes(100_000));
            assertThat(shard1.bytesInUse()).isEqualTo(BfcAllocator.roundedBytes(200_000));
            assertThat(shard1.name()).isEqualTo("sharded/1");

            assertThat(a.memorySummary())
                    .startsWith("Sharded allocator 'sharded': 2 shards, limit 64.00MiB, reserved 4.00MiB in 2 regions,"
                            + " in use 293.3KiB, largest free chunk 1.90MiB\n") // 100,096 + 200,192; 2 MiB - 100,096
                    .contains("bfc4j memory summary: sharded (shard 0 of 2) (UNKNOWN)",
                            "bfc4j memory summary: sharded (shard 1 of 2) (UNKNOWN)")
                    .doesNotContain("sharded/");

            a.deallocateRaw(theirs); // freed by this thread, in the other thread's shard
            assertThat(shard1.bytesInUse()).isZero();
            shard1.emptyCache();
            assertThat(a.memorySummary()).startsWith("Sharded allocator 'sharded': 2 shards, limit 64.00MiB,"
                    + " reserved 2.00MiB in 1 region, in use ");
            assertThat(a.bytesInUse()).isEqualTo(shard0.bytesInUse());
            a.deallocateRaw(mine);
            assertThat(a.getStats().numAllocs()).isEqualTo(2);
        }
    }

    /**
     * A new thread whose id is {@code id} modulo {@code modulus} and above {@code after}: thread
     * ids are handed out in turn as threads are made, so this makes (and drops, unstarted)
     * threads until the next one has such an id.
     */
    private static Thread threadWithId(long after, long id, long modulus, Runnable task) {
        while (true) {
            Thread t = new Thread(task);
            if (t.getId() > after && Math.floorMod(t.getId() - id, modulus) == 0) {
                return t;
            }
        }
    }

    /** Runs {@code t}, which writes its result to {@code result}, and returns that. */
    private static <T> T run(Thread t, AtomicReference<T> result) throws InterruptedException {
        t.setDaemon(true);
        t.start();
        TestThreads.joinOrFail(TestThreads.RUN_LIMIT, t);
        return result.get();
    }

    /**
     * A thread with a large id (a long-running program's threads have ids in the thousands) has a
     * home shard like any other and allocates and frees there, each call after the first too.
     */
    @Test
    void aThreadWithALargeIdAllocatesFromItsHomeShard() throws Exception {
        try (ShardedBfcAllocator a = sharded(64 * MIB, 2)) {
            assertThat(a.homeShard()).isSameAs(a.shards().get(0));
            AtomicReference<BfcAllocator> served = new AtomicReference<>();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            // The lowest 11 bits all ones, past 2048: such ids exist in any program running long.
            Thread t = threadWithId(2048, 2047, 2048, () -> {
                try {
                    for (int i = 0; i < 3; i++) {
                        long p = a.allocateRaw(64, 4096);
                        served.set(a.shardOf(p));
                        a.deallocateRaw(p);
                    }
                } catch (Throwable e) {
                    failure.set(e);
                }
            });
            long id = t.getId();
            run(t, served);
            assertThat(failure.get()).as("thread id %d", id).isNull();
            assertThat(served.get()).as("thread id %d: the second thread's home", id).isSameAs(a.shards().get(1));
            assertThat(a.bytesInUse()).isZero();
        }
    }

    /**
     * Two threads whose ids are 1024 apart each have the home shard handed to them in turn,
     * however the allocator looks a thread's home up: the second does not take the first's.
     */
    @Test
    void threadsWhoseIdsAre1024ApartHaveHomesOfTheirOwn() throws Exception {
        try (ShardedBfcAllocator a = sharded(64 * MIB, 2)) {
            long mine = Thread.currentThread().getId();
            assertThat(a.homeShard()).as("the first thread's home").isSameAs(a.shards().get(0));
            AtomicReference<BfcAllocator> theirs = new AtomicReference<>();
            Thread t = threadWithId(mine, mine, 1024, () -> theirs.set(a.homeShard()));
            long id = t.getId();
            assertThat(run(t, theirs)).as("thread id %d after thread id %d: the second thread's home", id, mine)
                    .isSameAs(a.shards().get(1));
            assertThat(a.homeShard()).as("the first thread's home, still").isSameAs(a.shards().get(0));
            long ptr = a.allocateRaw(64, 4096);
            assertThat(a.shardOf(ptr)).isSameAs(a.shards().get(0));
            a.deallocateRaw(ptr);
        }
    }

    @Test
    void handlesBelongToTheShardThatServedThem() throws Exception {
        try (ShardedBfcAllocator a = sharded(64 * MIB, 2)) {
            Allocation mine = a.allocate(4096, 4096);
            Allocation theirs = onNewThread(() -> a.allocate(8192));
            assertThat(mine.allocator()).isSameAs(a.shards().get(0));
            assertThat(theirs.allocator()).isSameAs(a.shards().get(1));
            assertThat(mine.address() % 4096).isZero();
            assertThatThrownBy(() -> a.deallocateRaw(theirs.address()))
                    .isInstanceOf(IllegalArgumentException.class);
            theirs.close();
            mine.close();
            assertThat(a.bytesInUse()).isZero();
        }
    }

    @Test
    void anotherShardServesWhatTheHomeShardCannot() throws Exception {
        try (ShardedBfcAllocator a = sharded(8 * MIB, 2)) {
            // Shard 0 grows to the whole limit (a 6 MiB request makes an 8 MiB region), then frees.
            a.deallocateRaw(a.allocateRaw(64, 6 * MIB));
            assertThat(a.reservedBytes()).isEqualTo(8 * MIB);

            long ptr = onNewThread(() -> a.allocateRaw(64, 6 * MIB));

            assertThat(ptr).isNotZero();
            assertThat(a.shardOf(ptr)).isSameAs(a.shards().get(0));
            assertThat(a.shards().get(1).memoryStats().oomsTotal()).as("a failure of the home shard alone").isZero();
            assertThat(a.shards().get(0).memoryStats().oomsTotal()).isZero();
            a.deallocateRaw(ptr);
        }
    }

    /**
     * allocate() and allocateRawOrThrow() fall back as allocateRaw() does: served by another
     * shard that has the room, or by the home shard once the other shards gave their free
     * regions back, each returning what served it.
     */
    @Test
    void allocateAndAllocateRawOrThrowFallBackAsAllocateRawDoes() throws Exception {
        try (ShardedBfcAllocator a = sharded(8 * MIB, 2)) {
            // Shard 0 grows to the whole limit (a 6 MiB request makes an 8 MiB region), then frees.
            a.deallocateRaw(a.allocateRaw(64, 6 * MIB));
            long[] got = onNewThread(() -> {
                long raw = a.allocateRawOrThrow(64, 3 * MIB);
                try (Allocation handle = a.allocate(3 * MIB)) {
                    return new long[] {raw, handle.address(), a.shards().get(0).allocatedSize(handle.address())};
                }
            });
            assertThat(a.shardOf(got[0])).as("allocateRawOrThrow, served by shard 0").isSameAs(a.shards().get(0));
            assertThat(a.shards().get(0).allocatedSize(got[0])).isEqualTo(3 * MIB);
            assertThat(got[1]).as("allocate, served by shard 0").isNotZero();
            assertThat(got[2]).isGreaterThanOrEqualTo(3 * MIB);
            a.deallocateRaw(got[0]);
        }
        try (ShardedBfcAllocator a = sharded(8 * MIB, 2)) {
            a.deallocateRaw(a.allocateRaw(64, MIB)); // shard 0 keeps a free 2 MiB region
            long ptr = onNewThread(() -> a.allocateRawOrThrow(64, 7 * MIB));
            assertThat(ptr).as("shard 1, once shard 0 gave its region back").isNotZero();
            assertThat(a.shardOf(ptr)).isSameAs(a.shards().get(1));
            assertThat(a.shards().get(1).allocatedSize(ptr)).isGreaterThanOrEqualTo(7 * MIB);
            a.deallocateRaw(ptr);
        }
        try (ShardedBfcAllocator a = sharded(8 * MIB, 2)) {
            a.deallocateRaw(a.allocateRaw(64, MIB)); // shard 0 keeps a free 2 MiB region
            long[] got = onNewThread(() -> {
                try (Allocation handle = a.allocate(7 * MIB)) {
                    return new long[] {handle.address(), a.shards().get(1).allocatedSize(handle.address())};
                }
            });
            assertThat(got[0]).as("allocate, served by shard 1 once shard 0 gave its region back").isNotZero();
            assertThat(got[1]).isGreaterThanOrEqualTo(7 * MIB);
        }
    }

    @Test
    void freeRegionsOfEveryShardAreGivenBackBeforeAFailure() throws Exception {
        try (ShardedBfcAllocator a = sharded(8 * MIB, 2)) {
            a.deallocateRaw(a.allocateRaw(64, MIB)); // shard 0 keeps a free 2 MiB region
            assertThat(a.reservedBytes()).isEqualTo(2 * MIB);

            // 7 MiB fits in no shard's room: shard 1 can get 6 MiB, shard 0's region is 2 MiB.
            long ptr = onNewThread(() -> a.allocateRaw(64, 7 * MIB));

            assertThat(ptr).isNotZero();
            assertThat(a.shardOf(ptr)).isSameAs(a.shards().get(1));
            assertThat(a.shards().get(0).reservedBytes()).as("shard 0's free region, given back").isZero();
            assertThat(a.reservedBytes()).isEqualTo(8 * MIB);
            a.deallocateRaw(ptr);
        }
    }

    /**
     * The exceptions of a sharded allocator name the allocator the user built: its own by that
     * name and no shard; its cause, and a shard's own exception when the shard is called
     * directly, by the shard's own name (allocatorName()) and by the sharded allocator's name and
     * the shard (as the message and OutOfMemoryReport name it). Only allocatorName() said which
     * allocator threw, as "sharded/0", a name the user never gave.
     */
    @Test
    void anOutOfMemoryExceptionNamesTheShardedAllocatorAndTheShard() throws Exception {
        try (ShardedBfcAllocator a = sharded(8 * MIB, 2)) {
            long held = a.allocateRaw(64, 3 * MIB); // shard 0: a 4 MiB region
            assertThat(onNewThread(() -> a.allocateRaw(64, 5 * MIB))).isZero(); // shard 1's turn
            BfcOutOfMemoryException all = null;
            try {
                onNewThread(() -> a.allocate(6 * MIB)); // the third thread's home: shard 0
            } catch (BfcOutOfMemoryException e) {
                all = e;
            }
            assertThat(all).as("the sharded allocator's own exception").isNotNull();
            assertThat(all.allocatorName()).isEqualTo("sharded");
            assertThat(all.shardedAllocatorName()).isNull();
            assertThat(all.shardIndex()).isEqualTo(-1);
            assertThat(all.shardCount()).isZero();
            assertThat(all.describedAllocator()).isEqualTo("'sharded'");

            BfcOutOfMemoryException home = (BfcOutOfMemoryException) all.getCause();
            assertThat(home.allocatorName()).isEqualTo("sharded/0");
            assertThat(home.shardedAllocatorName()).isEqualTo("sharded");
            assertThat(home.shardIndex()).isZero();
            assertThat(home.shardCount()).isEqualTo(2);
            assertThat(home.describedAllocator()).isEqualTo("'sharded' (shard 0 of 2)");
            assertThat(home.getMessage()).startsWith("Allocator " + home.describedAllocator() + " is out of memory");

            BfcAllocator shard1 = a.shards().get(1);
            assertThatThrownBy(() -> shard1.allocate(5 * MIB)).isInstanceOfSatisfying(BfcOutOfMemoryException.class,
                    e -> {
                        assertThat(e.allocatorName()).isEqualTo("sharded/1");
                        assertThat(e.shardedAllocatorName()).isEqualTo("sharded");
                        assertThat(e.shardIndex()).isEqualTo(1);
                        assertThat(e.shardCount()).isEqualTo(2);
                        assertThat(e.describedAllocator()).isEqualTo("'sharded' (shard 1 of 2)");
                        assertThat(e).hasMessageStartingWith("Allocator 'sharded' (shard 1 of 2) is out of memory");
                    });
            a.deallocateRaw(held);
        }
        try (BfcAllocator plain = new BfcAllocator(new SimSubAllocator(BASE, 1L << 34, 0, true), MIB, "plain",
                BfcOptions.defaults())) {
            assertThatThrownBy(() -> plain.allocate(2 * MIB)).isInstanceOfSatisfying(BfcOutOfMemoryException.class,
                    e -> {
                        assertThat(e.allocatorName()).isEqualTo("plain");
                        assertThat(e.shardedAllocatorName()).isNull();
                        assertThat(e.shardIndex()).isEqualTo(-1);
                        assertThat(e.shardCount()).isZero();
                        assertThat(e.describedAllocator()).isEqualTo("'plain'");
                    });
        }
    }

    @Test
    void aFailureIsReportedOnceByTheHomeShard() throws Exception {
        try (ShardedBfcAllocator a = sharded(8 * MIB, 2)) {
            List<String> reports = new ArrayList<>();
            a.addOutOfMemoryListener(r -> reports.add(r.allocatorName()));
            long held = a.allocateRaw(64, 3 * MIB); // shard 0: a 4 MiB region, all of it one chunk

            assertThat(onNewThread(() -> a.allocateRaw(64, 5 * MIB))).isZero();
            assertThatThrownBy(() -> onNewThread(() -> a.allocate(6 * MIB)))
                    .isInstanceOf(BfcOutOfMemoryException.class)
                    .hasMessageStartingWith("Allocator 'sharded' is out of memory: tried to allocate 6.00MiB. 4.00MiB"
                            + " is in use by live allocations, 4.00MiB is reserved from the sub-allocator in 1 region,"
                            + " the memory limit is 8.00MiB")
                    .hasMessageContaining("all 2 shards together, read just after shard 0 failed it")
                    .hasMessageNotContaining("sharded/")
                    .hasCauseInstanceOf(BfcOutOfMemoryException.class) // the third thread's home: shard 0
                    .cause().hasMessageStartingWith("Allocator 'sharded' (shard 0 of 2) is out of memory: tried to"
                            + " allocate 6.00MiB. 4.00MiB is in use by live allocations, 4.00MiB is reserved")
                    .hasMessageNotContaining("sharded/");

            assertThat(reports).containsExactly("sharded/1", "sharded/0");
            assertThat(a.shards().get(1).memoryStats().oomsTotal()).isEqualTo(1);
            assertThat(a.shards().get(0).memoryStats().oomsTotal()).isEqualTo(1);
            assertThat(a.reservedBytes()).isLessThanOrEqualTo(8 * MIB);
            a.deallocateRaw(held);
        }
    }

    /**
     * The figures of all shards are read after the home shard's last attempt failed; another
     * thread may free memory before that. Here it frees 40 MiB in shard 1 while the failing call
     * empties shard 2 (after shard 1 was tried): the message must not call the pool fragmented
     * (nor the host out of memory) when the free chunk it reports is large enough, and the same
     * request, tried again, is served.
     */
    @Test
    void memoryFreedWhileTheShardsAreTriedIsNotCalledFragmentation() throws Exception {
        AtomicBoolean hostFull = new AtomicBoolean();
        AtomicReference<Runnable> onRegionFree = new AtomicReference<>();
        SubAllocator host = new ForwardingSubAllocator(new SimSubAllocator(BASE, 1L << 34, 0, true)) {
            @Override
            public Block alloc(long alignment, long numBytes) {
                return hostFull.get() ? null : upstream.alloc(alignment, numBytes);
            }

            @Override
            public void free(long ptr, long numBytes) {
                upstream.free(ptr, numBytes);
                Runnable r = onRegionFree.getAndSet(null);
                if (r != null) {
                    r.run();
                }
            }
        };
        try (ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("sharded").memoryLimit(256 * MIB)
                .subAllocator(host).shards(3).build()) {
            long mine = a.allocateRaw(64, 1024); // this thread's home: shard 0, a 2 MiB region
            long[] x = onNewThread(() -> {
                // Shard 1: one 128 MiB region, X (40 MiB) and F (the other 88 MiB) side by side.
                a.deallocateRaw(a.allocateRaw(64, 96 * MIB));
                return new long[] {a.allocateRaw(64, 40 * MIB), a.allocateRaw(64, 88 * MIB)};
            });
            onNewThread(() -> { // shard 2: a free 2 MiB region, which emptying it gives back
                a.deallocateRaw(a.allocateRaw(64, 1024));
                return null;
            });
            assertThat(a.shardOf(x[0]).name()).isEqualTo("sharded/1");
            assertThat(a.shards().get(1).reservedBytes()).isEqualTo(128 * MIB);
            assertThat(a.shards().get(1).bytesInUse()).as("shard 1: no free chunk").isEqualTo(128 * MIB);
            hostFull.set(true); // no shard can grow: the request fails in every shard
            onRegionFree.set(() -> {
                try {
                    onNewThread(() -> {
                        a.deallocateRaw(x[0]); // another thread frees X in shard 1, tried already
                        return null;
                    });
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            });

            assertThatThrownBy(() -> a.allocateRawOrThrow(64, 40 * MIB))
                    .isInstanceOf(BfcOutOfMemoryException.class)
                    .hasMessageContaining("and the largest free chunk is 40.00MiB. A free chunk is large enough for"
                            + " it now: other threads freed memory while the shards were tried or since")
                    .hasMessageNotContaining("fragmented")
                    .hasMessageNotContaining("the host or device itself is out of memory")
                    .hasMessageContaining("read just after shard 0 failed it");
            assertThat(onRegionFree.get()).as("the free ran inside the failing call").isNull();

            long again = a.allocateRawOrThrow(64, 40 * MIB);
            assertThat(a.shardOf(again).name()).as("the request tried again").isEqualTo("sharded/1");
            a.deallocateRaw(again);
            a.deallocateRaw(x[1]);
            a.deallocateRaw(mine);
            a.shards().forEach(BfcAllocator::checkInvariants);
        }
    }

    @Test
    void aRequestAboveTheLimitFailsWithoutEmptyingAnyShard() throws Exception {
        try (ShardedBfcAllocator a = sharded(8 * MIB, 2)) {
            a.deallocateRaw(a.allocateRaw(64, MIB)); // shard 0 keeps a free 2 MiB region
            assertThat(onNewThread(() -> a.allocateRaw(64, 9 * MIB))).isZero();
            assertThatThrownBy(() -> a.allocate(9 * MIB)).isInstanceOf(BfcOutOfMemoryException.class);
            assertThat(a.reservedBytes()).as("shard 0's free region, kept").isEqualTo(2 * MIB);
            assertThat(a.shards().get(1).memoryStats().oomsTotal()).isEqualTo(1);
            assertThat(a.shards().get(0).memoryStats().oomsTotal()).isEqualTo(1);
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void onePyTorchSnapshotShowsEveryShardAndOneTimeline() throws Exception {
        try (ShardedBfcAllocator a = sharded(64 * MIB, 2)) {
            a.recordHistory(HistoryOptions.builder().stackDepth(4).build());
            long mine;
            try (MemoryAnnotation step = MemoryAnnotation.push("main-thread", 1)) {
                mine = a.allocateRaw(64, MIB);
            }
            long theirs = onNewThread(() -> {
                try (MemoryAnnotation step = MemoryAnnotation.push("other-thread", 2)) {
                    a.deallocateRaw(a.allocateRaw(64, 256 << 10));
                    return a.allocateRaw(64, 2 * MIB);
                }
            });
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            a.writePyTorchPickle(out);
            byte[] bytes = out.toByteArray();
            MemoryVizOpcodes.check(bytes);
            Map<String, Object> d = (Map<String, Object>) new Unpickler().loads(bytes);

            List<Map<String, Object>> segments = (List<Map<String, Object>>) d.get("segments");
            assertThat(segments).extracting(seg -> PyTorchSnapshotTest.num(seg.get("address")))
                    .containsExactlyInAnyOrder(a.shards().get(0).memoryMap().regions().get(0).ptr(),
                            a.shards().get(1).memoryMap().regions().get(0).ptr());
            assertThat(segments).flatExtracting(seg -> (List<Map<String, Object>>) seg.get("blocks"))
                    .filteredOn(b -> b.get("state").equals("active_allocated"))
                    .extracting(b -> PyTorchSnapshotTest.num(b.get("address")))
                    .containsExactlyInAnyOrder(mine, theirs);

            List<Map<String, Object>> trace = ((List<List<Map<String, Object>>>) d.get("device_traces")).get(0);
            assertThat(trace).extracting(t -> (String) t.get("action"))
                    .containsExactlyInAnyOrder("segment_map", "alloc", "segment_map", "alloc", "free_requested",
                            "free_completed", "alloc");
            assertThat(trace).extracting(t -> PyTorchSnapshotTest.num(t.get("time_us"))).isSorted();
            assertThat(segments).allMatch(seg -> PyTorchSnapshotTest.num(seg.get("stream"))
                    == a.shards().indexOf(a.shardOf(PyTorchSnapshotTest.num(seg.get("address")))));
            assertThat(trace).filteredOn(t -> "alloc".equals(t.get("action")))
                    .allMatch(t -> PyTorchSnapshotTest.num(t.get("stream"))
                            == a.shards().indexOf(a.shardOf(PyTorchSnapshotTest.num(t.get("addr")))));
            assertThat(trace).filteredOn(t -> "alloc".equals(t.get("action")))
                    .extracting(t -> (String) t.get("user_metadata"))
                    .containsOnly("main-thread (step 1)", "other-thread (step 2)");
            a.deallocateRaw(mine);
            a.deallocateRaw(theirs);
        }
    }

    @Test
    void eventsOfSeveralHistoriesAreMergedByTimeKeepingEachOnesOrder() {
        Provenance at1 = new Provenance(1, "t", null, -1, List.of());
        Provenance at2 = new Provenance(2, "t", null, -1, List.of());
        MemoryEvent a1 = new MemoryEvent(MemoryEvent.Kind.ALLOC, 0x100, 256, 1, 64, 1, -1, at1);
        MemoryEvent a2 = new MemoryEvent(MemoryEvent.Kind.FREE, 0x100, 256, 1, 0, 1, -1, at1);
        MemoryEvent b1 = new MemoryEvent(MemoryEvent.Kind.ALLOC, 0x900, 256, 1, 64, 1, -1, at1);
        MemoryEvent b2 = new MemoryEvent(MemoryEvent.Kind.ALLOC, 0xa00, 256, 1, 64, 2, -1, at2);
        MemoryEvent c1 = new MemoryEvent(MemoryEvent.Kind.ALLOC, 0x500, 256, 1, 64, 1, -1, at2);

        assertThat(MemoryHistory.mergeByTime(List.of(List.of(a1, a2), List.of(b1, b2), List.of(c1))))
                .containsExactly(Map.entry(0, a1), Map.entry(0, a2), Map.entry(1, b1), Map.entry(1, b2),
                        Map.entry(2, c1));
        assertThat(MemoryHistory.mergeByTime(List.of(List.of(c1), List.of(b1, b2))))
                .containsExactly(Map.entry(1, b1), Map.entry(0, c1), Map.entry(1, b2));
        assertThat(MemoryHistory.mergeByTime(List.of())).isEmpty();
    }

    /**
     * One shard decides as one {@code BfcAllocator}: seeded random workloads (handles and raw
     * calls, frees, out-of-memory failures), with garbage collection off and on, on adjacent
     * and on separated regions, give the same address (or failure) on every call, the same
     * statistics and the same regions.
     */
    @Test
    void oneShardDecidesAsOneBfcAllocator() {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("ShardedBfcAllocatorTest one-shard seed: " + seed);
        for (int variant = 0; variant < 4; variant++) {
            boolean gc = (variant & 1) != 0;
            long gap = (variant & 2) != 0 ? 4096 : 0;
            BfcOptions opts = BfcOptions.builder().allowRetryOnFailure(false).garbageCollection(gc).build();
            BfcAllocator plain = BfcAllocator.builder().name("one").memoryLimit(48 * MIB).options(opts)
                    .subAllocator(new SimSubAllocator(BASE, 1L << 34, gap, gap == 0)).build();
            ShardedBfcAllocator sharded = ShardedBfcAllocator.builder().name("one").memoryLimit(48 * MIB).options(opts)
                    .subAllocator(new SimSubAllocator(BASE, 1L << 34, gap, gap == 0)).shards(1).build();
            Random rnd = new Random(seed + variant);
            List<long[]> live = new ArrayList<>(); // {plain address, sharded address}
            List<Allocation[]> handles = new ArrayList<>();
            int failures = 0;
            for (int i = 0; i < 20_000; i++) {
                String at = "seed " + seed + " variant " + variant + " call " + i;
                int op = rnd.nextInt(10);
                if (op < 4) {
                    long bytes = (long) Math.pow(2, 4 + rnd.nextDouble() * 20); // 16 B to 16 MiB
                    long alignment = 1L << (6 + rnd.nextInt(7));
                    long p = plain.allocateRaw(alignment, bytes);
                    long q = sharded.allocateRaw(alignment, bytes);
                    assertThat(q).as(at).isEqualTo(p);
                    if (p != 0) {
                        live.add(new long[] {p, q});
                    } else {
                        failures++;
                    }
                } else if (op < 5) {
                    long bytes = 1 + rnd.nextInt(1 << 20);
                    long alignment = 1L << (6 + rnd.nextInt(8));
                    Allocation p = allocateOrNull(plain::allocate, bytes, alignment);
                    Allocation q = allocateOrNull(sharded::allocate, bytes, alignment);
                    assertThat(q == null ? 0 : q.address()).as(at).isEqualTo(p == null ? 0 : p.address());
                    if (p != null) {
                        handles.add(new Allocation[] {p, q});
                    }
                } else if (op < 9 && !live.isEmpty()) {
                    long[] pq = live.remove(rnd.nextInt(live.size()));
                    plain.deallocateRaw(pq[0]);
                    sharded.deallocateRaw(pq[1]);
                } else if (!handles.isEmpty()) {
                    Allocation[] pq = handles.remove(rnd.nextInt(handles.size()));
                    pq[0].close();
                    pq[1].close();
                }
            }
            BfcAllocator shard = sharded.shards().get(0);
            assertThat(shard.getStats()).as("seed %d variant %d", seed, variant).isEqualTo(plain.getStats());
            assertThat(shard.memoryMap().regions()).as("seed %d variant %d", seed, variant)
                    .isEqualTo(plain.memoryMap().regions());
            assertThat(failures).as("seed %d variant %d: some calls ran out of memory", seed, variant).isPositive();
            live.forEach(pq -> {
                plain.deallocateRaw(pq[0]);
                sharded.deallocateRaw(pq[1]);
            });
            handles.forEach(pq -> {
                pq[0].close();
                pq[1].close();
            });
            plain.close();
            sharded.close();
        }
    }

    private interface Allocate {
        Allocation allocate(long bytes, long alignment);
    }

    private static Allocation allocateOrNull(Allocate a, long bytes, long alignment) {
        try {
            return a.allocate(bytes, alignment);
        } catch (BfcOutOfMemoryException e) {
            return null;
        }
    }

    @Test
    void badArgumentsAreRefusedAndChangeNothing() {
        assertThatThrownBy(() -> ShardedBfcAllocator.builder().shards(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("shards=0");
        assertThatThrownBy(() -> ShardedBfcAllocator.builder().options(BfcOptions.builder()
                .allowGrowth(false).allowRetryOnFailure(false).build()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("allowGrowth");
        assertThatThrownBy(() -> ShardedBfcAllocator.builder().options(BfcOptions.defaults()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("allowRetryOnFailure");
        assertThatThrownBy(() -> ShardedBfcAllocator.builder().memoryLimit(1).build())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("subAllocator");

        try (ShardedBfcAllocator a = sharded(64 * MIB, 2)) {
            long ptr = a.allocateRaw(64, 1000);
            assertThatThrownBy(() -> a.allocateRaw(3, 10)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("alignment=3").hasMessageContaining("'sharded'");
            assertThatThrownBy(() -> a.allocateRaw(64, -1)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> a.allocateRaw(64, 10, null)).isInstanceOf(NullPointerException.class)
                    .hasMessageStartingWith("attr=null");
            assertThatThrownBy(() -> a.allocate(0)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> a.deallocateRaw(12345)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("0x3039 was not allocated by allocator 'sharded'");
            assertThatThrownBy(() -> a.shardOf(12345)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> a.deallocateRaw(ptr + 256)).isInstanceOf(IllegalArgumentException.class);
            assertThat(a.allocateRaw(64, 0)).isZero();
            assertThat(a.bytesInUse()).isEqualTo(1024);

            a.deallocateRaw(ptr);
            assertThatThrownBy(() -> a.deallocateRaw(ptr)).as("a double free")
                    .isInstanceOf(IllegalArgumentException.class);
            assertThat(a.bytesInUse()).isZero();
            a.shards().forEach(BfcAllocator::checkInvariants);
        }
    }

    /**
     * A refused free and a handle used after its close name the allocator the user built, and
     * the shard where the address lies ("allocator 'sharded' (shard 1 of 2)"), not a shard's own
     * name ('sharded/1'), which the user never gave. Before, each named the shard only.
     */
    @Test
    void refusedFreesAndClosedHandlesNameTheShardedAllocator() throws Exception {
        try (ShardedBfcAllocator a = sharded(64 * MIB, 2)) {
            long p = a.allocateRaw(64, 1000); // this thread's home: shard 0
            a.deallocateRaw(p);
            assertThatThrownBy(() -> a.deallocateRaw(p)).as("a double free").isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("0x" + Long.toHexString(p) + " was not allocated by allocator 'sharded' (shard 0 of 2)"
                            + " (or was already freed). Free each address returned by allocateRaw exactly once.");
            long q = a.allocateRaw(64, 1000);
            assertThatThrownBy(() -> a.deallocateRaw(q + 256)).as("inside a chunk")
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("0x" + Long.toHexString(q + 256) + " was not allocated by allocator"
                            + " 'sharded' (shard 0 of 2) (or was already freed)");
            Allocation h = onNewThread(() -> a.allocate(4096)); // a new thread's home: shard 1
            assertThat(a.shardOf(h.address())).isSameAs(a.shards().get(1));
            assertThatThrownBy(() -> a.deallocateRaw(h.address())).as("a handle's address, freed raw")
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("0x" + Long.toHexString(h.address()) + " is allocation #" + h.allocationId()
                            + " of allocator 'sharded' (shard 1 of 2), owned by an Allocation handle: close the"
                            + " Allocation instead of freeing its address with deallocateRaw. Nothing was freed.");
            assertThat(h.toString()).endsWith(", allocator 'sharded' (shard 1 of 2)]");
            long id = h.allocationId();
            long address = h.address();
            h.close();
            assertThatThrownBy(h::asByteBuffer).as("a handle used after its close")
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("allocation #" + id + " (4096 bytes at 0x" + Long.toHexString(address)
                            + ") of allocator 'sharded' (shard 1 of 2) is closed: it must not be used after close()");
            assertThat(a.bytesInUse()).as("nothing lost or freed by the refused calls").isEqualTo(1024);
            a.deallocateRaw(q);
            a.shards().forEach(BfcAllocator::checkInvariants);
        }
    }

    /**
     * "What was live at the peak" across the shards: MemoryHistory.liveAtPeakOfAll replays the
     * shards' histories as one timeline. Here shard 0 holds 4 MiB (a), then frees it and holds
     * 1 MiB (c); shard 1 holds 256 KiB (y, freed at once), then 3.5 MiB (b). The peak of the sum
     * is c and b together (at least 4.5 MiB, b's chunk may hold the rest of its region); each
     * shard's own liveAtPeak() answers a and b, which were never live together. The two shards
     * number their allocations alike (a and y are both #1; c and b both #2), which must not
     * mix them up.
     */
    @Test
    void liveAtPeakOfAllShardsIsThatOfTheirSum() throws Exception {
        try (ShardedBfcAllocator s = sharded(64 * MIB, 2)) {
            s.recordHistory(HistoryOptions.builder().build());
            Allocation b;
            Allocation c;
            ExecutorService second = Executors.newSingleThreadExecutor(); // its home: shard 1
            try {
                Allocation a = s.allocate(4 * MIB);                                // shard 0, #1
                Allocation y = TestThreads.getOrFail(TestThreads.RUN_LIMIT, "y allocated on the second thread",
                        second.submit(() -> s.allocate(256 << 10)));                // shard 1, #1
                y.close();
                a.close();
                c = s.allocate(MIB);                                              // shard 0, #2
                b = TestThreads.getOrFail(TestThreads.RUN_LIMIT, "b allocated on the second thread",
                        second.submit(() -> s.allocate(7 * MIB / 2)));              // shard 1, #2
            } finally {
                second.shutdown();
            }
            assertThat(s.shardOf(b.address())).isSameAs(s.shards().get(1));
            List<MemorySnapshot> snapshots = s.snapshots();
            List<MemoryHistory> histories = new ArrayList<>();
            for (MemorySnapshot snap : snapshots) {
                histories.add(snap.history());
            }
            List<Map.Entry<Integer, MemoryEvent>> peak = MemoryHistory.liveAtPeakOfAll(histories);
            assertThat(peak).extracting(Map.Entry::getKey).containsExactly(0, 1);
            assertThat(peak).extracting(e -> e.getValue().requestedBytes()).containsExactly(MIB, 7 * MIB / 2);
            assertThat(peak).extracting(e -> e.getValue().address()).containsExactly(c.address(), b.address());
            assertThat(histories.get(0).liveAtPeak()).as("shard 0 alone").extracting(MemoryEvent::requestedBytes)
                    .containsExactly(4 * MIB);
            assertThat(MemoryHistory.liveAtPeakOfAll(List.of())).isEmpty();
            assertThatThrownBy(() -> MemoryHistory.liveAtPeakOfAll(java.util.Arrays.asList(histories.get(0), null)))
                    .isInstanceOf(NullPointerException.class).hasMessageStartingWith("histories[1]=null");
            b.close();
            c.close();
        }
    }

    @Test
    void closePolicyAndMemoryTypeAreThoseItWasBuiltWith() {
        SubAllocator pinned = new ForwardingSubAllocator(new SimSubAllocator(BASE, 1L << 34, 0, true)) {
            @Override
            public MemoryType memoryType() {
                return MemoryType.HOST_PINNED;
            }
        };
        try (ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("pinned").memoryLimit(64 * MIB)
                .subAllocator(pinned).closePolicy(ClosePolicy.FORCE).shards(2).build()) {
            assertThat(a.getMemoryType()).isEqualTo(MemoryType.HOST_PINNED);
            assertThat(a.closePolicy()).isEqualTo(ClosePolicy.FORCE);
        }
        try (ShardedBfcAllocator a = sharded(64 * MIB, 2)) {
            assertThat(a.getMemoryType()).isEqualTo(MemoryType.UNKNOWN);
            assertThat(a.closePolicy()).isEqualTo(ClosePolicy.REFUSE);
        }
    }

    /**
     * Who holds the memory, across the shards: the out-of-memory message and the summary name
     * the largest holders of all shards together, not only those of the shard that failed.
     */
    @Test
    void theLargestHoldersAreThoseOfAllShards() throws Exception {
        ShardedBfcAllocator a = twoShardsOf16MiB("held");
        Allocation[] held = weightsAndActivations(a);
        Allocation weights = held[0];
        Allocation activations = held[1];
        assertThat(a.shardOf(activations.address())).isSameAs(a.shards().get(1));
        // Its chunk is the rest of shard 1's region (too small a rest to split off).
        String acts = BfcAllocator.humanReadableNumBytes(a.shards().get(1).allocatedSize(activations.address()));
        assertThat(acts).isEqualTo("11.66MiB");

        BfcOutOfMemoryException oom = org.junit.jupiter.api.Assertions.assertThrows(BfcOutOfMemoryException.class,
                () -> a.allocate(8 * MIB)); // fails in shard 0, whose only holder is weights
        assertThat(oom.getMessage()).contains("Largest holders: " + acts + " by activations (1 chunk); 4.00MiB by"
                + " weights (1 chunk).");
        assertThat(a.memorySummary()).contains("Largest holders of all shards (in use, by annotation, else innermost"
                + " frame outside org.bytedeco., else thread, else step, else runtime lent to):\n    " + acts + " in      1 chunk   activations\n     4.00MiB in      1 chunk   weights\n");
        activations.close();
        weights.close();
        a.close();
    }

    /**
     * largestHolders(n) answers "who holds the most memory now" for all shards together, as the
     * summary's section does: a holder that allocated on two threads (two shards) is one holder
     * with both chunks' bytes.
     */
    @Test
    void largestHoldersSumsAHolderOverTheShards() throws Exception {
        ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("holders").memoryLimit(64 * MIB)
                .subAllocator(new SimSubAllocator(BASE, 1L << 34, 0, true)).shards(2).build();
        a.recordAnnotations(true);
        assertThat(a.largestHolders(5)).as("nothing in use").isEmpty();
        Allocation weights;
        try (MemoryAnnotation w = MemoryAnnotation.push("weights")) {
            weights = a.allocate(4 * MIB);               // this thread's home shard
        }
        Allocation[] other = onNewThread(() -> {        // a new thread's home: the other shard
            try (MemoryAnnotation w = MemoryAnnotation.push("weights")) {
                Allocation moreWeights = a.allocate(MIB);
                try (MemoryAnnotation x = MemoryAnnotation.push("activations")) {
                    return new Allocation[] {moreWeights, a.allocate(9 * MIB)};
                }
            }
        });
        assertThat(a.shardOf(other[0].address())).isNotSameAs(a.shardOf(weights.address()));
        Allocation unannotated = a.allocate(256);
        long acts = a.shardOf(other[1].address()).allocatedSize(other[1].address());
        assertThat(a.largestHolders(5)).containsExactly(
                new MemoryMap.Holder("activations", acts, 9 * MIB, 1),
                new MemoryMap.Holder("weights", 5 * MIB, 5 * MIB, 2),
                new MemoryMap.Holder("(unknown)", 256, 256, 1));   // annotations alone record no thread
        assertThat(a.largestHolders(1)).extracting(MemoryMap.Holder::holder).containsExactly("activations");
        assertThat(a.largestHolders(0)).isEmpty();
        assertThatThrownBy(() -> a.largestHolders(-1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("limit=-1 (expected: >= 0)");
        unannotated.close();
        other[1].close();
        other[0].close();
        weights.close();
        assertThat(a.largestHolders(5)).isEmpty();
        a.close();
        assertThat(a.largestHolders(5)).as("closed").isEmpty();
    }

    /**
     * With no provenance recorded in any shard, the summary has no "Largest holders of all
     * shards" section and the out-of-memory message names no holders; with annotations on but
     * no chunk annotated, neither.
     */
    @Test
    void withNoProvenanceRecordedNoHoldersOfAllShardsAreNamed() {
        ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("unrecorded").memoryLimit(16 * MIB)
                .subAllocator(new SimSubAllocator(BASE, 1L << 34, 0, true)).shards(2).build();
        Allocation x = a.allocate(4 * MIB);
        assertThat(a.memorySummary()).doesNotContain("Largest holders");
        assertThat(org.junit.jupiter.api.Assertions.assertThrows(BfcOutOfMemoryException.class,
                () -> a.allocate(32 * MIB)).getMessage()).doesNotContain("Largest holders");
        a.recordAnnotations(true); // on, but nothing annotated: still nothing recorded
        Allocation y = a.allocate(MIB);
        assertThat(a.memorySummary()).doesNotContain("Largest holders");
        assertThat(org.junit.jupiter.api.Assertions.assertThrows(BfcOutOfMemoryException.class,
                () -> a.allocate(32 * MIB)).getMessage()).doesNotContain("Largest holders");
        y.close();
        x.close();
        a.close();
    }

    /**
     * memorySummary()'s "Largest holders of all shards" is read at the same instant as its first
     * line: with every allocation annotated alike, the one holder holds exactly the bytes the
     * first line says are in use, while two threads allocate and free in two shards. Before, the
     * holders were read one shard after another, after the first line, and named other totals.
     * Seeded ({@code -Dbfc4j.test.seed}).
     */
    @Test
    void theSummarysHoldersAreOfTheInstantOfItsFigures() throws Exception {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("ShardedBfcAllocatorTest.theSummarysHoldersAreOfTheInstantOfItsFigures seed: " + seed);
        ShardedBfcAllocator a = sharded(256 * MIB, 2);
        a.recordAnnotations(true);
        java.util.regex.Pattern inUse = java.util.regex.Pattern.compile(", in use (\\S+), largest free chunk");
        java.util.regex.Pattern holder = java.util.regex.Pattern.compile("(?m)^ +(\\S+) in +\\d+ chunks? +work$");
        AtomicBoolean stop = new AtomicBoolean();
        List<String> disagreements = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
        TestThreads.runTogether(3, seed, id -> {
            if (id == 2) {
                try {
                    for (int i = 0; i < 20_000 && disagreements.isEmpty() && System.nanoTime() < deadline; i++) {
                        String summary = a.memorySummary();
                        java.util.regex.Matcher f = inUse.matcher(summary);
                        assertThat(f.find()).as(summary).isTrue();
                        // the shards' own summaries follow, each read later
                        java.util.regex.Matcher h = holder.matcher(summary.substring(0, summary.indexOf("|===")));
                        String held = h.find() ? h.group(1) : "0B";
                        if (!held.equals(f.group(1))) {
                            disagreements.add("in use " + f.group(1) + ", held by 'work' " + held + ":\n" + summary);
                        }
                    }
                } finally {
                    stop.set(true);
                }
                return;
            }
            Random rnd = new Random(seed * 31 + id);
            List<Allocation> mine = new ArrayList<>();
            try (MemoryAnnotation w = MemoryAnnotation.push("work")) {
                while (!stop.get()) {
                    if (mine.size() < 4 && (mine.isEmpty() || rnd.nextBoolean())) {
                        mine.add(a.allocate(MIB));
                    } else {
                        mine.remove(rnd.nextInt(mine.size())).close();
                    }
                }
            }
            for (Allocation x : mine) {
                x.close();
            }
        });
        assertThat(disagreements).as("summaries whose holders disagree with their figures").isEmpty();
        a.close();
    }

    /**
     * A shard's out-of-memory report, as its listeners (the sharded allocator's and its own) and
     * its dump see it, ends with the figures and holders of all shards.
     */
    @Test
    void anOutOfMemoryReportAndDumpSayWhatAllShardsHold(@TempDir Path dumps) throws Exception {
        ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("held").memoryLimit(16 * MIB)
                .subAllocator(new SimSubAllocator(BASE, 1L << 34, 0, true)).shards(2)
                .options(BfcOptions.builder().allowRetryOnFailure(false).dumpOnOomDirectory(dumps).build())
                .build();
        a.recordAnnotations(true);
        List<OutOfMemoryReport> heard = new ArrayList<>();
        List<OutOfMemoryReport> heardByTheShard = new ArrayList<>();
        OutOfMemoryListener listener = heard::add;
        a.addOutOfMemoryListener(listener);
        a.shards().get(0).addOutOfMemoryListener(heardByTheShard::add);
        Allocation[] held = weightsAndActivations(a);

        assertThatThrownBy(() -> a.allocate(8 * MIB)).isInstanceOf(BfcOutOfMemoryException.class); // in shard 0
        assertThat(heard).hasSize(1);
        OutOfMemoryReport r = heard.get(0);
        assertThat(r.allocatorName()).isEqualTo("held/0");
        // Which allocator ran out, by the name its user gave, and which shard of it.
        assertThat(r.shardedAllocatorName()).isEqualTo("held");
        assertThat(r.shardIndex()).isZero();
        assertThat(r.shardCount()).isEqualTo(2);
        assertThat(r.describedAllocator()).isEqualTo("'held' (shard 0 of 2)");
        assertThat(r.snapshot().memoryMap().allocatorName()).isEqualTo("held/0");
        assertThat(r.snapshot().describedAllocator()).as("the report's snapshot names the shard too")
                .isEqualTo("'held' (shard 0 of 2)");
        assertThat(r.requestedBytes()).isEqualTo(8 * MIB);
        String allShards = "\nAll 2 shards of allocator 'held', read just after shard 0 failed: 15.66MiB in"
                + " use, 15.66MiB reserved in 2 regions, the memory limit is 16.00MiB, the largest free chunk is 0B."
                + " Largest holders: 11.66MiB by activations (1 chunk); 4.00MiB by weights (1 chunk).\n";
        assertThat(r.summary()).contains("bfc4j memory summary: held (shard 0 of 2)").endsWith(allShards)
                .doesNotContain("held/");
        assertThat(r.summary().substring(0, r.summary().length() - allShards.length()))
                .as("the shard's own summary").doesNotContain("activations");
        assertThat(heardByTheShard).containsExactly(r);
        try (var files = Files.list(dumps)) {
            // Named by the allocator's name and the shard, not by the shard's own name (held/0).
            Path dump = files.filter(f -> f.getFileName().toString().startsWith("bfc-oom-held-shard0-")
                    && f.toString().endsWith(".json")).findFirst().orElseThrow();
            Map<?, ?> doc = (Map<?, ?>) TinyJson.parse(Files.readString(dump));
            assertThat(doc.get("allocatorName")).isEqualTo("held/0");
            assertThat(doc.get("shardOf")).isEqualTo("held");
            assertThat(((Number) doc.get("shardIndex")).intValue()).isZero();
            assertThat(((Number) doc.get("shardCount")).intValue()).isEqualTo(2);
            assertThat((String) doc.get("summary")).contains("All 2 shards of allocator 'held'")
                    .contains("11.66MiB by activations");
            assertThat(((Map<?, ?>) doc.get("memoryMap")).get("allocatorName")).isEqualTo("held/0");
            // Every shard's memory map, each with the bytes its shard holds: the activations are
            // in shard 1, which did not fail.
            List<?> shardMaps = (List<?>) doc.get("shards");
            assertThat(shardMaps).hasSize(2);
            for (int i = 0; i < 2; i++) {
                Map<?, ?> map = (Map<?, ?>) shardMaps.get(i);
                assertThat(map.get("allocatorName")).isEqualTo("held/" + i);
                assertThat(((Number) ((Map<?, ?>) map.get("stats")).get("bytesInUse")).longValue())
                        .isEqualTo(a.shards().get(i).bytesInUse());
            }
            assertThat(((Number) ((Map<?, ?>) ((Map<?, ?>) shardMaps.get(1)).get("stats")).get("bytesInUse"))
                    .longValue()).isEqualTo(a.shards().get(1).allocatedSize(held[1].address()));
            // PyTorch's snapshot of the failure holds both shards, each as its own stream.
            String json = dump.toString();
            byte[] pickle = Files.readAllBytes(Path.of(json.substring(0, json.length() - ".json".length()) + ".pickle"));
            MemoryVizOpcodes.check(pickle);
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> segments = (List<Map<String, Object>>) ((Map<?, ?>) new Unpickler()
                    .loads(pickle)).get("segments");
            assertThat(segments).extracting(seg -> PyTorchSnapshotTest.num(seg.get("stream"))).containsExactly(0L, 1L);
            assertThat(segments).flatExtracting(seg -> (List<?>) seg.get("blocks"))
                    .filteredOn(blk -> ((Map<?, ?>) blk).get("state").equals("active_allocated"))
                    .extracting(blk -> PyTorchSnapshotTest.num(((Map<?, ?>) blk).get("address")))
                    .containsExactlyInAnyOrder(held[0].address(), held[1].address());
        }

        assertThat(a.removeOutOfMemoryListener(listener)).isTrue();
        assertThat(a.removeOutOfMemoryListener(listener)).isFalse();
        assertThat(a.allocateRaw(256, 8 * MIB)).isZero();
        assertThat(heard).hasSize(1);
        assertThat(heardByTheShard).hasSize(2);
        held[1].close();
        held[0].close();
        a.close();
    }

    /** A refused close names the holders of every shard's live memory, summed, when recorded. */
    @Test
    void aRefusedCloseNamesTheHoldersOfAllShards() throws Exception {
        ShardedBfcAllocator a = twoShardsOf16MiB("sharded");
        Allocation[] held = weightsAndActivations(a);
        assertThatThrownBy(a::close).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("No shard was closed")
                .hasMessageEndingWith("anyway. Largest holders: 11.66MiB by activations (1 chunk); 4.00MiB by"
                        + " weights (1 chunk).");
        held[1].close();
        held[0].close();
        a.close();
    }

    /** Two shards under a 16 MiB cap, on simulated memory, recording annotations. */
    private static ShardedBfcAllocator twoShardsOf16MiB(String name) {
        ShardedBfcAllocator a = ShardedBfcAllocator.builder().name(name).memoryLimit(16 * MIB)
                .subAllocator(new SimSubAllocator(BASE, 1L << 34, 0, true)).shards(2).build();
        a.recordAnnotations(true);
        return a;
    }

    /**
     * 4 MiB of "weights" in shard 0 (this thread's home) and 9 MiB of "activations" in shard 1
     * (a new thread's), whose chunk is the rest of its 11.66 MiB region.
     *
     * @return {weights, activations}
     */
    private static Allocation[] weightsAndActivations(ShardedBfcAllocator a) throws Exception {
        Allocation weights;
        try (MemoryAnnotation w = MemoryAnnotation.push("weights")) {
            weights = a.allocate(4 * MIB);
        }
        Allocation activations = onNewThread(() -> {
            try (MemoryAnnotation w = MemoryAnnotation.push("activations")) {
                return a.allocate(9 * MIB);
            }
        });
        return new Allocation[] {weights, activations};
    }

    /**
     * REFUSE is all or nothing, as for one BfcAllocator: a refused close names every shard with
     * live allocations and closes none, so the allocator keeps working (every shard serves its
     * threads and can still grow) until a close finds nothing live.
     */
    @Test
    void aRefusedCloseClosesNoShardAndCanBeRepeated() throws Exception {
        ShardedBfcAllocator a = sharded(64 * MIB, 2);
        long mine = a.allocateRaw(64, 1000); // shard 0
        long theirs = onNewThread(() -> a.allocateRaw(64, 1000)); // shard 1

        assertThatThrownBy(a::close).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("close() of allocator 'sharded' refused: shard 0 of 2 has 1 live"
                        + " allocation (1.0KiB in use); shard 1 of 2 has 1 live allocation")
                .hasMessageNotContaining("sharded/")
                .hasMessageContaining("No shard was closed");
        a.deallocateRaw(theirs);
        assertThatThrownBy(a::close).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("shard 0 of 2 has 1 live allocation")
                .hasMessageNotContaining("shard 1 of 2");
        assertThat(a.shards()).noneMatch(BfcAllocator::isClosed);
        assertThat(a.isClosed()).isFalse();

        long third = onNewThread(() -> a.allocateRaw(64, 10)); // the third thread's home: shard 0
        long fourth = onNewThread(() -> a.allocateRaw(64, 10)); // the fourth's: shard 1, still open
        assertThat(a.shardOf(fourth)).isSameAs(a.shards().get(1));
        long grown = a.allocateRaw(64, 16 * MIB); // shard 0 still obtains a new region
        assertThat(grown).isNotZero();
        assertThat(a.shardOf(grown)).isSameAs(a.shards().get(0));

        for (long ptr : new long[] {third, fourth, grown, mine}) {
            a.deallocateRaw(ptr);
        }
        a.close();
        assertThat(a.isClosed()).isTrue();
        assertThat(a.shards()).allMatch(BfcAllocator::isClosed);
        a.close(); // idempotent
        assertThatThrownBy(() -> a.deallocateRaw(mine)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("allocator 'sharded' is closed");
        assertThatThrownBy(() -> a.allocateRaw(64, 10)).isInstanceOf(IllegalStateException.class);
    }

    /**
     * Closes refused while threads allocate and free never close a shard under them: one
     * allocation of this thread stays live in shard 0, so every close is refused, and the
     * threads' calls in both shards all work (a close that shut the shards with nothing live at
     * that moment would make them throw IllegalStateException).
     */
    @Test
    void closesRefusedWhileThreadsAllocateLeaveEveryShardOpen() throws Exception {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("ShardedBfcAllocatorTest refused close seed: " + seed);
        ShardedBfcAllocator a = sharded(64 * MIB, 2);
        long anchor = a.allocateRaw(64, 1000);
        AtomicBoolean stop = new AtomicBoolean();
        AtomicInteger refusals = new AtomicInteger();
        AtomicReference<Throwable> closed = new AtomicReference<>();
        Thread closer = new Thread(() -> {
            while (!stop.get()) {
                try {
                    a.close();
                    closed.set(new AssertionError("a close went through with an allocation live"));
                    return;
                } catch (IllegalStateException e) {
                    refusals.incrementAndGet();
                }
            }
        });
        // Each refusal logs a warning: not hundreds of them in the build's output.
        Logger log = Logger.getLogger(BfcPort.LOGGER_NAME);
        Level level = log.getLevel();
        log.setLevel(Level.SEVERE);
        closer.start();
        try {
            TestThreads.runTogether(3, seed, t -> {
                Random rnd = new Random(seed + t);
                for (int i = 0; i < 20_000; i++) {
                    if (i == 10_000) {
                        // Not left to the scheduler (a loaded machine may run the closer only
                        // after the threads): half way through, a close is refused.
                        int seen = refusals.get();
                        while (refusals.get() == seen && closer.isAlive()) {
                            Thread.yield();
                        }
                    }
                    long ptr = a.allocateRaw(256, 1 + rnd.nextInt(1 << 20));
                    if (ptr == 0) {
                        throw new AssertionError("seed " + seed + ": out of memory at 1 MiB per thread");
                    }
                    a.deallocateRaw(ptr);
                }
            });
        } finally {
            stop.set(true);
            closer.join(30_000);
            log.setLevel(level);
        }
        assertThat(closer.isAlive()).as("seed %d: the closer still running 30 s after it was stopped", seed).isFalse();
        assertThat(closed.get()).as("seed %d", seed).isNull();
        assertThat(refusals.get()).as("seed %d: closes refused while the threads ran", seed).isPositive();
        assertThat(a.shards()).as("seed %d", seed).noneMatch(BfcAllocator::isClosed);
        a.deallocateRaw(anchor);
        a.close();
        assertThat(a.shards()).allMatch(BfcAllocator::isClosed);
    }

    @Test
    void aClosedShardIsSkippedWhenTheHomeShardFallsBack() throws Exception {
        ShardedBfcAllocator a = sharded(8 * MIB, 2);
        long mine = a.allocateRaw(64, 1024); // shard 0: a 2 MiB region
        onNewThread(() -> a.homeShard()); // the next thread's home is shard 1, left empty
        a.shards().get(1).close(); // a shard closed on its own
        assertThat(a.shards().get(1).isClosed()).isTrue();

        // Shard 0 cannot grow to it (no shard obtains new regions once one is closed), and
        // shard 1 is closed: refused as closed, not tried on shard 1, not reported as OOM.
        assertThatThrownBy(() -> a.allocateRaw(64, 7 * MIB)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("allocator 'sharded' is closed, or a shard of it");
        assertThatThrownBy(() -> a.allocate(7 * MIB)).isInstanceOf(IllegalStateException.class);
        assertThat(a.shards().get(0).memoryStats().oomsTotal()).isZero();
        long roomShard0Has = a.allocateRaw(64, 1024);
        assertThat(roomShard0Has).isNotZero();
        a.deallocateRaw(roomShard0Has);

        a.deallocateRaw(mine);
        a.close();
    }

    /**
     * The exception of a failed allocate() gives the figures read just after the failure, as its
     * message says, and not those read after the listeners ran: here a listener waits while
     * another thread frees the 10 MiB in use and empties the cache, and the message said "0B is
     * in use ... in 0 regions" with the hint that the host itself was out of memory.
     */
    @Test
    void theOutOfMemoryMessageGivesTheFiguresOfTheFailure() throws Exception {
        ShardedBfcAllocator a = sharded(16 * MIB, 2);
        Allocation keep = a.allocate(10 * MIB);
        java.util.concurrent.CountDownLatch failed = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch freed = new java.util.concurrent.CountDownLatch(1);
        // Whether each listener call saw the free happen while it waited: a wait that ran out
        // (the other thread late on a loaded machine) would leave nothing to read after it.
        List<Boolean> freedWhileTold = new java.util.concurrent.CopyOnWriteArrayList<>();
        for (BfcAllocator s : a.shards()) {
            s.addOutOfMemoryListener(r -> {
                failed.countDown();
                try {
                    freedWhileTold.add(freed.await(30, TimeUnit.SECONDS));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
        }
        Thread freer = new Thread(() -> {
            try {
                failed.await();
            } catch (InterruptedException e) {
                return;
            }
            keep.close();
            a.emptyCache();
            freed.countDown();
        }, "freer");
        freer.setDaemon(true);
        freer.start();
        assertThatThrownBy(() -> a.allocate(10 * MIB)).isInstanceOf(BfcOutOfMemoryException.class)
                .hasMessageContaining(". 16.00MiB is in use by live allocations, 16.00MiB is reserved")
                .hasMessageNotContaining("the host or device itself is out of memory");
        TestThreads.joinOrFail(TestThreads.RUN_LIMIT, freer);
        assertThat(freedWhileTold).as("the other thread freed while the listeners were told, within 30 s").isNotEmpty()
                .containsOnly(true);
        assertThat(a.bytesInUse()).isZero();
        a.close();
    }

    /**
     * The same when the listener itself frees and then allocates from the sharded allocator, on
     * the failing thread (a listener may allocate): its own call must not take the figures that
     * the outer call's message gives. The message said "0B is in use ... in 0 regions", the
     * figures read after the listener, instead of the failure's 16 MiB.
     */
    @Test
    void aListenerThatAllocatesLeavesTheOuterMessageItsFigures() throws Exception {
        List<java.util.function.Consumer<ShardedBfcAllocator>> calls = List.of(
                a -> a.allocate(10 * MIB), a -> a.allocateRawOrThrow(64, 10 * MIB));
        for (java.util.function.Consumer<ShardedBfcAllocator> call : calls) {
            ShardedBfcAllocator a = sharded(16 * MIB, 2);
            Allocation keep = a.allocate(10 * MIB);
            List<Throwable> inner = new ArrayList<>();
            a.addOutOfMemoryListener(r -> {
                keep.close();
                a.emptyCache();
                try {
                    a.allocate(32 * MIB); // above the limit: fails, unreported
                } catch (BfcOutOfMemoryException e) {
                    inner.add(e);
                }
            });
            assertThatThrownBy(() -> call.accept(a)).isInstanceOf(BfcOutOfMemoryException.class)
                    .hasMessageContaining(". 16.00MiB is in use by live allocations, 16.00MiB is reserved")
                    .hasMessageNotContaining("the host or device itself is out of memory");
            assertThat(inner).singleElement()
                    .asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.THROWABLE)
                    .hasMessageContaining("tried to allocate 32.00MiB").hasMessageContaining(". 0B is in use");
            assertThat(a.bytesInUse()).isZero();
            a.close();
        }
    }

    /** shards(n) takes 1 to 1024, as its javadoc says, and refuses 0 and 1025. */
    @Test
    void theShardCountIsOneTo1024() {
        for (int n : new int[] {1, 1024}) {
            try (ShardedBfcAllocator a = ShardedBfcAllocator.builder().memoryLimit(MIB)
                    .subAllocator(new SimSubAllocator(BASE, 1L << 34, 0, true)).shards(n).build()) {
                assertThat(a.shards()).hasSize(n);
            }
        }
        for (int n : new int[] {0, 1025}) {
            assertThatThrownBy(() -> ShardedBfcAllocator.builder().shards(n)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("shards=" + n + " (expected: 1 to 1024");
        }
    }

    /**
     * A request of exactly the memory limit is not one that can never fit: when no other shard
     * serves it, the other shards give their free regions back and the home shard then obtains
     * the whole limit.
     */
    @Test
    void aRequestOfExactlyTheLimitGetsTheRoomOtherShardsHeldFree() throws Exception {
        try (ShardedBfcAllocator a = sharded(8 * MIB, 2)) {
            assertThat(a.homeShard()).isSameAs(a.shards().get(0));
            onNewThread(() -> {
                a.deallocateRaw(a.allocateRaw(64, MIB)); // shard 1 keeps a free region
                return null;
            });
            assertThat(a.shards().get(1).reservedBytes()).isPositive();
            long p = a.allocateRaw(64, 8 * MIB);
            assertThat(p).as("served once shard 1 gave its free region back").isNotZero();
            assertThat(a.shardOf(p)).isSameAs(a.shards().get(0));
            assertThat(a.shards().get(1).reservedBytes()).isZero();
            a.deallocateRaw(p);
        }
    }

    /**
     * What the sub-allocator throws while the home shard is open is the caller's, as for one
     * BfcAllocator: it is not taken for a full shard and passed over to another shard that then
     * serves the call.
     */
    @Test
    void aSubAllocatorsExceptionReachesTheCaller() {
        AtomicBoolean fail = new AtomicBoolean();
        SubAllocator failingOnce = new ForwardingSubAllocator(new SimSubAllocator(BASE, 1L << 34, 0, true)) {
            @Override
            public Block alloc(long alignment, long numBytes) {
                if (fail.getAndSet(false)) {
                    throw new IllegalStateException("device lost");
                }
                return super.alloc(alignment, numBytes);
            }
        };
        try (ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("sharded").memoryLimit(64 * MIB)
                .subAllocator(failingOnce).shards(2).build()) {
            fail.set(true);
            assertThatThrownBy(() -> a.allocate(MIB)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("device lost");
            fail.set(true);
            assertThatThrownBy(() -> a.allocateRaw(64, MIB)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("device lost");
            assertThat(a.reservedBytes()).isZero();
            assertThat(a.getStats().numAllocs()).isZero();
        }
    }

    /**
     * A call that reads every shard, made from under one shard's lock (its sub-allocator), is
     * refused naming that shard, the one whose lock the thread holds.
     */
    @Test
    void aCallFromUnderAShardsLockNamesThatShard() {
        AtomicReference<ShardedBfcAllocator> self = new AtomicReference<>();
        AtomicReference<Throwable> fromCallback = new AtomicReference<>();
        SubAllocator asking = askingForStats(self, fromCallback);
        try (ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("sharded").memoryLimit(64 * MIB)
                .subAllocator(asking).shards(2).build()) {
            self.set(a);
            assertThat(a.homeShard()).isSameAs(a.shards().get(0));
            a.deallocateRaw(a.allocateRaw(64, MIB));
            assertThat(fromCallback.get()).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("this thread holds the lock of shard 0 of 2: it is running inside that shard")
                    .hasMessageContaining("ask the shard itself (shards().get(0))")
                    .hasMessageNotContaining("sharded/");
        }
    }

    /**
     * A visitor of one shard's chunks (forEachChunk, which holds that shard's lock) that calls
     * another shard, while a thread reads every shard (getStats(): every shard's lock, in shard
     * order). The reader holds shard 0's lock and waits for shard 1's, which the visitor holds;
     * the visitor's call of shard 0 waited for shard 0's for ever: the two threads deadlocked.
     * The call is refused instead, naming both shards, and the reader goes on once the walk ends.
     */
    @Test
    void aVisitorOfOneShardThatCallsAnotherIsRefusedNotDeadlocked() throws Exception {
        aVisitorOfShard1ThatCallsShard0IsRefused("a read", (a, p0, h0) -> a.shards().get(0).bytesInUse());
    }

    @Test
    void aVisitorOfOneShardThatAllocatesOrFreesInAnotherIsRefusedNotDeadlocked() throws Exception {
        aVisitorOfShard1ThatCallsShard0IsRefused("an allocation", (a, p0, h0) -> a.shards().get(0).allocateRaw(64, 1024));
        aVisitorOfShard1ThatCallsShard0IsRefused("a free", (a, p0, h0) -> a.deallocateRaw(p0));
        aVisitorOfShard1ThatCallsShard0IsRefused("a handle's allocation", (a, p0, h0) -> a.shards().get(0).allocate(1024));
    }

    /**
     * A visitor of shard 1's chunks that closes an Allocation of shard 0: the free is refused,
     * and the handle, whose chunk the refused free left its own, stays open without waiting for
     * shard 0's lock to ask (which hung with the reader, as the free itself did before it was
     * refused); a close after the walk frees it.
     */
    @Test
    void aVisitorOfOneShardThatClosesAHandleOfAnotherIsRefusedNotDeadlocked() throws Exception {
        aVisitorOfShard1ThatCallsShard0IsRefused("a handle's free", (a, p0, h0) -> h0.close());
    }

    /**
     * A visitor of shard 1's chunks that moves shard 0's safe frontier (setSafeFrontier, which
     * takes no lock upstream), while shard 0 records a history with a stamped free waiting for
     * the frontier and a thread reads every shard (shard 0's lock held, waiting for shard 1's):
     * the frontier moved, but the history was told of it under shard 0's lock, and that wait
     * deadlocked both threads. The frontier now moves at once and the history hears of it at
     * shard 0's next stamped free, as from a sub-allocator's call.
     */
    @Test
    void aVisitorOfOneShardThatMovesAnothersSafeFrontierDoesNotDeadlock() throws Exception {
        // Not closed on failure: a close would wait for the deadlocked threads' locks.
        ShardedBfcAllocator a = sharded(64 * MIB, 2);
        BfcAllocator shard0 = a.shards().get(0);
        BfcAllocator shard1 = a.shards().get(1);
        SharedCounter counter = new SharedCounter();
        shard0.setTimingCounter(counter);
        shard0.recordHistory(HistoryOptions.builder().stacks(false).build());
        long p1 = shard1.allocateRaw(64, MIB);
        long waiting = shard0.allocateRaw(64, MIB);
        long other = shard0.allocateRaw(64, MIB);
        shard0.deallocateRaw(waiting); // stamped: its free waits for the frontier
        long frontier = counter.next() + 1;
        Throwable thrown = inAVisitorOfShard1WhileAReaderWaits(a, "setSafeFrontier", () -> shard0.setSafeFrontier(frontier));
        assertThat(thrown).as("what setSafeFrontier threw").isNull();
        assertThat(shard0.safeFrontier()).isEqualTo(frontier);
        shard0.deallocateRaw(other); // the next stamped free: the waiting one completes
        assertThat(shard0.snapshot().history().events()).filteredOn(e -> e.kind() == MemoryEvent.Kind.FREE_COMPLETED)
                .extracting(MemoryEvent::address).contains(waiting);
        a.deallocateRaw(p1);
        for (BfcAllocator s : a.shards()) {
            s.checkInvariants();
        }
        a.close();
    }

    /**
     * What a visitor calls on shard 0, given the allocator, an address that shard holds and an
     * open handle of that shard.
     */
    @FunctionalInterface
    private interface ShardCall {
        void call(ShardedBfcAllocator a, long p0, Allocation h0);
    }

    /**
     * A thread reading every shard (getStats: shard 0's lock, then shard 1's) while a visitor of
     * shard 1's chunks (holding shard 1's lock) makes {@code call} on shard 0: refused, not hung.
     */
    private static void aVisitorOfShard1ThatCallsShard0IsRefused(String what, ShardCall call) throws Exception {
        // Not closed on failure: a close would wait for the deadlocked threads' locks.
        ShardedBfcAllocator a = sharded(64 * MIB, 2);
        {
            BfcAllocator shard0 = a.shards().get(0);
            BfcAllocator shard1 = a.shards().get(1);
            long p0 = shard0.allocateRaw(64, MIB);
            long p1 = shard1.allocateRaw(64, MIB);
            Allocation h0 = shard0.allocate(1024);
            long inUse0 = shard0.bytesInUse();
            Throwable thrown = inAVisitorOfShard1WhileAReaderWaits(a, what, () -> call.call(a, p0, h0));
            assertThat(thrown).as(what).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("allocator 'sharded' (shard 0 of 2)")
                    .hasMessageContaining("visitor of the chunks of allocator 'sharded' (shard 1 of 2)")
                    .hasMessageContaining("could deadlock");
            assertThat(shard0.bytesInUse()).as("outside the walk it answers; nothing was done").isEqualTo(inUse0);
            assertThat(h0.isClosed()).as("the handle stays open").isFalse();
            h0.close();
            assertThat(shard0.bytesInUse()).as("a close after the walk frees the handle").isEqualTo(MIB);
            a.deallocateRaw(p0);
            a.deallocateRaw(p1);
            for (BfcAllocator s : a.shards()) {
                s.checkInvariants();
            }
        }
        a.close();
    }

    /**
     * Makes {@code call} from inside a visitor of shard 1's chunks (which holds shard 1's lock)
     * once a thread reading every shard (getStats: shard 0's lock, then shard 1's) waits for
     * shard 1's lock; fails if the two threads deadlock.
     *
     * @return what {@code call} threw, or null
     */
    private static Throwable inAVisitorOfShard1WhileAReaderWaits(ShardedBfcAllocator a, String what, Runnable call)
            throws InterruptedException {
        AtomicReference<Throwable> inVisitor = new AtomicReference<>();
        Thread reader = new Thread(a::getStats, "reader");
        reader.setDaemon(true);
        Thread visiting = new Thread(() -> {
            AtomicBoolean first = new AtomicBoolean(true);
            a.shards().get(1).forEachChunk((region, regionPtr, regionBytes, ptr, bytes, requested, id) -> {
                if (!first.getAndSet(false)) {
                    return;
                }
                reader.start();
                // The reader takes shard 0's lock, then waits for shard 1's (held here).
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (reader.getState() != Thread.State.WAITING && reader.getState() != Thread.State.TIMED_WAITING
                        && System.nanoTime() < deadline) {
                    Thread.onSpinWait();
                }
                try {
                    call.run();
                } catch (Throwable t) {
                    inVisitor.set(t);
                }
            });
        }, "visitor");
        visiting.setDaemon(true); // a deadlocked one must not keep the test JVM alive
        visiting.start();
        visiting.join(20_000);
        reader.join(20_000);
        assertThat(List.of(visiting, reader)).as("threads deadlocked on " + what).noneMatch(Thread::isAlive);
        return inVisitor.get();
    }

    /** close() gives every shard's lock back: another thread's later call is refused, not blocked. */
    @Test
    void aCallAfterCloseFromAnotherThreadIsRefusedNotBlocked() throws Exception {
        ShardedBfcAllocator a = sharded(8 * MIB, 2);
        a.deallocateRaw(a.allocateRaw(64, MIB));
        a.close();
        ExecutorService other = Executors.newSingleThreadExecutor();
        try {
            java.util.concurrent.Future<Long> call = other.submit(() -> a.allocateRaw(64, MIB));
            assertThatThrownBy(() -> call.get(10, TimeUnit.SECONDS))
                    .isInstanceOf(java.util.concurrent.ExecutionException.class)
                    .hasCauseInstanceOf(IllegalStateException.class);
            java.util.concurrent.Future<AllocatorStats> stats = other.submit(a::getStats);
            assertThat(stats.get(10, TimeUnit.SECONDS).bytesInUse()).isZero();
        } finally {
            other.shutdownNow();
        }
    }

    /**
     * The figures read for an earlier failure's report on this thread (an allocateRaw, which
     * throws nothing and so leaves them unused) are not those of a later failed allocate()
     * whose failure made no report (no listener by then): its message gives what all shards
     * hold at its own failure.
     */
    @Test
    void aFailureWithoutAReportDoesNotGiveAnEarlierFailuresFigures() throws Exception {
        for (boolean orThrow : new boolean[] {false, true}) {
            ShardedBfcAllocator a = sharded(16 * MIB, 2);
            Allocation first = a.allocate(4 * MIB);
            OutOfMemoryListener listener = r -> { };
            a.addOutOfMemoryListener(listener);
            assertThat(a.allocateRaw(64, 32 * MIB)).as("above the limit").isZero(); // reported
            long inUseThen = a.bytesInUse();
            a.removeOutOfMemoryListener(listener);
            first.close();
            Allocation second = a.allocate(8 * MIB);
            long inUseNow = a.bytesInUse();
            assertThat(inUseNow).isNotEqualTo(inUseThen);
            assertThatThrownBy(() -> {
                if (orThrow) {
                    a.allocateRawOrThrow(64, 32 * MIB);
                } else {
                    a.allocate(32 * MIB);
                }
            }).isInstanceOf(BfcOutOfMemoryException.class)
                    .hasMessageContaining(". " + BfcAllocator.humanReadableNumBytes(inUseNow)
                            + " is in use by live allocations");
            second.close();
            a.close();
        }
    }

    /**
     * The figures of all shards are read after the home shard's last attempt failed: regions
     * that other threads give back in between (another thread's emptyCache(), say) leave room
     * under the limit that there was not at the failure. The message then said flatly that the
     * sub-allocator could not provide the region ("the host or device itself is out of memory")
     * where the limit had refused it; it now names both causes. Here shard 0 failed 8 MiB with
     * the limit's 16 MiB reserved, and 10 MiB of regions went back before the figures were read.
     */
    @Test
    void roomUnderTheLimitFoundAfterTheFailureIsNotCalledTheHostsFault() {
        try (ShardedBfcAllocator a = sharded(16 * MIB, 2)) {
            AllocatorStats stats = a.getStats();
            BfcOutOfMemoryException home = new BfcOutOfMemoryException("sharded/0", 8 * MIB, 8 * MIB, 6 * MIB,
                    6 * MIB, 3, 16 * MIB, 0, stats, "", "", null);
            BfcOutOfMemoryException all = home.ofAllShards("sharded", 2, 0, 6 * MIB, 6 * MIB, 3, 0, stats, "");
            assertThat(all).hasMessageContaining("The limit leaves room for it now: either the sub-allocator could"
                    + " not provide the region (the host or device itself is out of memory), or other threads gave"
                    + " regions back since the failure (these figures were read after it) and the same request may"
                    + " succeed if tried again.")
                    .hasMessageNotContaining("so the sub-allocator could not provide the region");
            assertThat(home).as("one allocator's figures are of the moment of failure")
                    .hasMessageContaining("The limit leaves room for it, so the sub-allocator could not provide the"
                            + " region: the host or device itself is out of memory.");
        }
    }

    /**
     * A failed allocateRaw() with a listener leaves no figures on the thread: its report's
     * figures of all shards stayed there (held until the thread's next allocate()) though no
     * exception was to carry them. Inside a listener of a failed allocate(), a failing
     * allocateRaw() leaves the outer call's figures to its exception.
     */
    @Test
    void aFailedAllocateRawLeavesNoFiguresOnTheThread() throws Exception {
        ShardedBfcAllocator a = sharded(16 * MIB, 2);
        Allocation keep = a.allocate(10 * MIB);
        List<Long> inner = new ArrayList<>();
        boolean[] innerCall = {false};
        a.addOutOfMemoryListener(r -> {
            if (innerCall[0]) {
                keep.close();
                a.emptyCache();
                inner.add(a.allocateRaw(64, 32 * MIB)); // above the limit: fails, unreported
            }
        });
        assertThat(a.allocateRaw(64, 32 * MIB)).as("above the limit").isZero(); // reported
        assertThat(a.holdsFailureFigures()).as("figures left on the thread").isFalse();
        assertThat(a.allocateRaw(64, 10 * MIB)).as("the limit has no room").isZero();
        assertThat(a.holdsFailureFigures()).as("figures left on the thread").isFalse();

        innerCall[0] = true;
        assertThatThrownBy(() -> a.allocate(10 * MIB)).isInstanceOf(BfcOutOfMemoryException.class)
                .hasMessageContaining(". 16.00MiB is in use by live allocations, 16.00MiB is reserved");
        assertThat(inner).containsExactly(0L);
        assertThat(a.holdsFailureFigures()).isFalse();
        assertThat(a.bytesInUse()).isZero();
        a.close();
    }

    /**
     * A thread whose home shard is closed allocates from the other shards, as when its home
     * shard is full. It got that shard's "allocator 's/1' is closed" on every call, though the
     * other shard had room.
     */
    @Test
    void aThreadWhoseHomeShardIsClosedIsServedByTheOthers() throws Exception {
        ShardedBfcAllocator a = sharded(8 * MIB, 2);
        long mine = a.allocateRaw(64, 1024); // shard 0: a 2 MiB region with room
        java.util.concurrent.ExecutorService other = java.util.concurrent.Executors.newSingleThreadExecutor();
        try {
            assertThat(TestThreads.getOrFail(TestThreads.RUN_LIMIT, "the other thread's home shard",
                    other.submit(a::homeShard)))
                    .isSameAs(a.shards().get(1));
            a.shards().get(1).close();
            long[] got = TestThreads.getOrFail(TestThreads.RUN_LIMIT, "the other thread's allocations",
                    other.submit(() -> {
                        long raw = a.allocateRaw(64, 4096);
                        try (Allocation handle = a.allocate(4096)) {
                            return new long[] {raw, handle.address()};
                        }
                    }));
            assertThat(got[0]).isNotZero();
            assertThat(a.shards().get(0).allocatedSize(got[0])).isEqualTo(4096);
            assertThat(got[1]).isNotZero();
            a.deallocateRaw(got[0]);
            // Beyond the room there is, refused as closed (no shard obtains new regions now).
            assertThatThrownBy(() -> TestThreads.getOrFail(TestThreads.RUN_LIMIT,
                    "the other thread's allocation beyond the room", other.submit(() -> a.allocateRaw(64, 4 * MIB))))
                    .hasMessageContaining("allocator 'sharded' is closed, or a shard of it");
        } finally {
            other.shutdown();
        }
        a.deallocateRaw(mine);
        a.close();
    }

    /**
     * A forced close while three threads allocate and free (each freeing its own and the
     * others' allocations): every call either works or throws IllegalStateException (closed),
     * a free whose region went away with its shard's close too; nothing else, no hang, and
     * every shard ends closed.
     */
    @Test
    void aForcedCloseWhileThreadsAllocateOnlyRefusesCalls() throws Exception {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("ShardedBfcAllocatorTest close seed: " + seed);
        AtomicInteger refused = new AtomicInteger();
        for (int round = 0; round < 20; round++) {
            ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("closing").memoryLimit(16 * MIB)
                    .subAllocator(new SimSubAllocator(BASE, 1L << 34, 0, true)).shards(2)
                    .closePolicy(ClosePolicy.FORCE).build();
            ConcurrentLinkedQueue<Long> shared = new ConcurrentLinkedQueue<>();
            AtomicReference<Throwable> unexpected = new AtomicReference<>();
            CyclicBarrier start = new CyclicBarrier(4);
            List<Thread> workers = new ArrayList<>();
            for (int t = 0; t < 3; t++) {
                Random rnd = new Random(seed + 31L * round + t);
                Thread w = new Thread(() -> {
                    try {
                        start.await();
                        for (int i = 0; i < 50_000; i++) {
                            try {
                                if (rnd.nextBoolean()) {
                                    long ptr = a.allocateRaw(256, 1 + rnd.nextInt(256 << 10));
                                    if (ptr != 0) {
                                        shared.add(ptr);
                                    }
                                } else {
                                    Long ptr = shared.poll();
                                    if (ptr != null) {
                                        a.deallocateRaw(ptr);
                                    }
                                }
                            } catch (IllegalStateException e) {
                                if (!a.shards().get(0).isClosed() && !a.shards().get(1).isClosed()) {
                                    throw new AssertionError("refused before any shard closed: " + e, e);
                                }
                                refused.incrementAndGet();
                            }
                        }
                    } catch (Throwable e) {
                        unexpected.compareAndSet(null, e);
                    }
                });
                workers.add(w);
                w.start();
            }
            start.await();
            Thread.sleep(rnd(seed, round));
            a.close();
            for (Thread w : workers) {
                w.join(30_000);
                assertThat(w.isAlive()).as("seed %d round %d: a worker hangs", seed, round).isFalse();
            }
            if (unexpected.get() != null) {
                throw new AssertionError("seed " + seed + " round " + round + ": " + unexpected.get(), unexpected.get());
            }
            assertThat(a.isClosed()).isTrue();
            assertThat(a.reservedBytes()).as("seed %d round %d", seed, round).isZero();
        }
        assertThat(refused.get()).as("seed %d: calls refused after the close (it raced with them)", seed).isPositive();
    }

    private static long rnd(long seed, int round) {
        return new Random(seed ^ round).nextInt(3);
    }

    /**
     * A shard closed by force while one of its allocations is live: no other shard ever gets
     * the range it gave back, so a late free of that allocation is refused as closed and cannot
     * free another shard's allocation.
     */
    @Test
    void theRangesOfAShardClosedByForceNeverBecomeAnotherShards() throws Exception {
        ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("forced").memoryLimit(64 * MIB)
                .subAllocator(new SimSubAllocator(BASE, 1L << 34, 0, true)).shards(2)
                .closePolicy(ClosePolicy.FORCE).build();
        ExecutorService other = Executors.newSingleThreadExecutor(); // one thread: home shard 1
        try {
            long mine = a.allocateRaw(64, MIB); // shard 0, at the start of the address space
            long theirs = TestThreads.getOrFail(TestThreads.RUN_LIMIT, "the other thread's allocation",
                    other.submit(() -> a.allocateRaw(64, MIB)));
            assertThat(a.shardOf(theirs)).isSameAs(a.shards().get(1));
            a.shards().get(0).close(); // by force: mine's memory goes back to the sub-allocator

            long reserved = a.reservedBytes();
            assertThatThrownBy(() -> TestThreads.getOrFail(TestThreads.RUN_LIMIT,
                    "the other thread's allocation needing a region", other.submit(() -> a.allocateRaw(64, 8 * MIB))))
                    .as("shard 1 would need a new region").hasCauseInstanceOf(IllegalStateException.class);
            assertThat(a.reservedBytes()).as("no new region").isEqualTo(reserved);
            assertThatThrownBy(() -> a.deallocateRaw(mine)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("is closed");
            a.deallocateRaw(theirs);
        } finally {
            other.shutdownNow();
        }
        a.close();
        assertThat(a.reservedBytes()).isZero();
    }

    /**
     * Threads allocate and free (half of the frees of another thread's allocations) at random:
     * no two live allocations overlap, the shards hold at most the limit, and everything
     * freed leaves every shard empty and consistent.
     */
    @Test
    void threadsAllocatingAndFreeingAtRandomNeverOverlap() throws Exception {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("ShardedBfcAllocatorTest seed: " + seed);
        int threads = 4;
        long limit = 12 * MIB;
        ShardedBfcAllocator a = sharded(limit, 3);
        ConcurrentSkipListMap<Long, Long> live = new ConcurrentSkipListMap<>();
        ConcurrentLinkedQueue<Long> handOver = new ConcurrentLinkedQueue<>();
        AtomicInteger failures = new AtomicInteger();
        TestThreads.runTogether(threads, seed, t -> {
            Random rnd = new Random(seed + t);
            List<Long> mine = new ArrayList<>();
            for (int i = 0; i < 20_000; i++) {
                int op = rnd.nextInt(10);
                if (op < 4 || mine.isEmpty() && handOver.isEmpty()) {
                    long bytes = rnd.nextInt(8) == 0 ? 1 + rnd.nextInt(4 << 20) : 1 + rnd.nextInt(64 << 10);
                    long ptr = a.allocateRaw(256, bytes);
                    if (ptr == 0) {
                        failures.incrementAndGet();
                        continue;
                    }
                    long end = ptr + BfcAllocator.roundedBytes(bytes);
                    Map.Entry<Long, Long> below = live.lowerEntry(end);
                    if (below != null && below.getValue() > ptr) {
                        throw new AssertionError("[0x" + Long.toHexString(ptr) + ", 0x" + Long.toHexString(end)
                                + ") overlaps the live [0x" + Long.toHexString(below.getKey()) + ", 0x"
                                + Long.toHexString(below.getValue()) + ")");
                    }
                    live.put(ptr, end);
                    (rnd.nextBoolean() ? mine : handOver).add(ptr);
                } else {
                    Long ptr = op < 7 && !mine.isEmpty() ? mine.remove(rnd.nextInt(mine.size())) : handOver.poll();
                    if (ptr == null) {
                        continue;
                    }
                    live.remove(ptr); // before the free: the range may be handed out again at once
                    a.deallocateRaw(ptr);
                }
                if (a.reservedBytes() > limit) {
                    throw new AssertionError("reserved " + a.reservedBytes() + " > limit " + limit);
                }
            }
            for (long ptr : mine) {
                live.remove(ptr);
                a.deallocateRaw(ptr);
            }
        });
        for (Long ptr; (ptr = handOver.poll()) != null; ) {
            a.deallocateRaw(ptr);
        }
        assertThat(a.bytesInUse()).as("seed %d", seed).isZero();
        assertThat(a.getStats().numAllocs()).as("seed %d", seed).isPositive();
        assertThat(a.getStats().peakPoolBytes()).as("seed %d", seed).isLessThanOrEqualTo(limit);
        // Under this much pressure a shard can find the limit taken by the others and serve
        // nothing itself (its threads are then served by the others): no check on who served.
        a.shards().forEach(BfcAllocator::checkInvariants);
        System.out.println("ShardedBfcAllocatorTest: " + failures.get() + " allocations found no memory");
        a.close();
        assertThat(a.isClosed()).isTrue();
    }

    /**
     * The log lines about a shard's out-of-memory report (a listener that threw, a completion
     * that failed) name the allocator the user built and the shard, not the shard's own name.
     */
    @Test
    void aListenerThatThrowsIsLoggedUnderTheNameGiven() throws Exception {
        try (ShardedBfcAllocator a = sharded(4 * MIB, 2)) {
            OutOfMemoryListener thrower = r -> {
                throw new IllegalStateException("listener failed");
            };
            a.addOutOfMemoryListener(thrower);
            List<String> lines = LogCapture.during(() -> assertThat(a.allocateRaw(64, 8 * MIB)).isZero());
            assertThat(lines).filteredOn(l -> l.contains("threw; ignored")).singleElement(as(InstanceOfAssertFactories.STRING))
                    .isEqualTo("Out-of-memory listener " + thrower + " of allocator 'sharded' (shard 0 of 2) threw; ignored");
        }
    }

    /**
     * The log lines ported from upstream name a shard as the allocator the user built and the
     * shard ({@code NAME (shard I of N)} where upstream writes its {@code Name()}), not by the
     * shard's own name, which the user never gave.
     */
    @Test
    void upstreamsLogLinesNameTheAllocatorGivenAndTheShard(@TempDir Path dumps) throws Exception {
        try (ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("logged").memoryLimit(8 * MIB)
                .subAllocator(new SimSubAllocator(BASE, 1L << 34, 0, true)).shards(2)
                .options(BfcOptions.builder().allowRetryOnFailure(false).dumpOnOomDirectory(dumps).build())
                .build()) {
            long[] p = new long[1];
            String[] dump = new String[1];
            List<String> lines = LogCapture.during(() -> {
                p[0] = a.allocateRaw(64, MIB); // this thread's home: shard 0
                assertThat(a.allocateRaw(64, BfcAllocator.MAX_ALLOCATION_BYTES + 1)).isZero();
                dump[0] = a.shards().get(0).dumpMemoryLog(MIB);
            });
            assertThat(lines).anySatisfy(l -> assertThat(l).startsWith("Extending allocation by 2097152 bytes for"
                    + " logged (shard 0 of 2). Total allocated bytes: 2097152."));
            assertThat(lines).anySatisfy(l -> assertThat(l).startsWith("Allocator (logged (shard 0 of 2)) cannot"
                    + " allocate "));
            assertThat(lines).anySatisfy(l -> assertThat(l).startsWith("Allocator (logged (shard 0 of 2)) ran out of"
                    + " memory trying to allocate ").contains("bfc-oom-logged-shard0-"));
            assertThat(lines).noneSatisfy(l -> assertThat(l).contains("logged/"));
            assertThat(dump[0]).startsWith("BFCAllocator dump for logged (shard 0 of 2)\n");
            a.deallocateRaw(p[0]);
        }
    }

    /**
     * memoryStats() of the whole allocator: sums of the shards' figures, the largest free chunk
     * of any shard, the limit and the exact peak of what all shards held, and both fragmentation
     * ratios of all shards' free memory together (checked against the shards' memory maps).
     */
    @Test
    void memoryStatsAreThoseOfAllShardsTogether() throws Exception {
        try (ShardedBfcAllocator a = sharded(64 * MIB, 2)) {
            long[] mine = {a.allocateRaw(64, 300_000), a.allocateRaw(64, 500_000), a.allocateRaw(64, 3 * MIB)};
            long[] theirs = new long[2];
            onNewThread(() -> {
                theirs[0] = a.allocateRaw(64, 700_000);
                theirs[1] = a.allocateRaw(64, 100_000);
                return 0L;
            });
            a.deallocateRaw(mine[0]); // free room in shard 0, apart from its other free chunks
            a.deallocateRaw(theirs[1]);

            MemoryStats all = a.memoryStats();
            MemoryStats s0 = a.shards().get(0).memoryStats();
            MemoryStats s1 = a.shards().get(1).memoryStats();
            assertThat(all.bytesInUse()).isEqualTo(s0.bytesInUse() + s1.bytesInUse()).isEqualTo(a.bytesInUse());
            assertThat(all.reservedBytes()).isEqualTo(a.reservedBytes()).isEqualTo(s0.reservedBytes() + s1.reservedBytes());
            assertThat(all.peakReservedBytes()).isEqualTo(a.getStats().peakPoolBytes());
            assertThat(all.peakBytesInUse()).isEqualTo(s0.peakBytesInUse() + s1.peakBytesInUse());
            assertThat(all.allocationsTotal()).isEqualTo(5);
            assertThat(all.freesTotal()).isEqualTo(2);
            assertThat(all.activeAllocations()).isEqualTo(3);
            assertThat(all.peakActiveAllocations()).isEqualTo(s0.peakActiveAllocations() + s1.peakActiveAllocations());
            assertThat(all.allocatedBytesTotal()).isEqualTo(s0.allocatedBytesTotal() + s1.allocatedBytesTotal());
            assertThat(all.freedBytesTotal()).isEqualTo(s0.freedBytesTotal() + s1.freedBytesTotal());
            assertThat(all.regionCount()).isEqualTo(a.regionCount());
            assertThat(all.regionExtendsTotal()).isEqualTo(s0.regionExtendsTotal() + s1.regionExtendsTotal());
            assertThat(all.largestFreeChunkBytes()).isEqualTo(a.largestFreeChunkBytes());
            assertThat(all.bytesLimit()).isEqualTo(64 * MIB);
            assertThat(all.bytesHeldForViews()).isZero();
            long free = all.reservedBytes() - all.bytesInUse();
            long largestOfEachRegion = 0;
            for (BfcAllocator s : a.shards()) {
                for (MemoryMap.Region r : s.memoryMap().regions()) {
                    largestOfEachRegion += r.chunks().stream().filter(c -> !c.inUse()).mapToLong(MemoryMap.Chunk::size)
                            .max().orElse(0);
                }
            }
            assertThat(all.fragmentation()).isEqualTo((double) (free - all.largestFreeChunkBytes()) / free).isPositive();
            assertThat(all.fragmentationWithinRegions()).isEqualTo((double) (free - largestOfEachRegion) / free);
            assertThat(all.fragmentationWithinRegions()).isLessThan(all.fragmentation());
            a.deallocateRaw(mine[1]);
            a.deallocateRaw(mine[2]);
            a.deallocateRaw(theirs[0]);
        }
    }
}
