/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.Allocation;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.ForwardingSubAllocator;
import io.github.bfc4j.core.LeakDetection;
import io.github.bfc4j.core.ShardedBfcAllocator;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * A sub-allocator that reads its allocator from the free of a region that waited for a view:
 * that free comes from the cleaner's thread, holding what an allocating thread (holding the
 * allocator's lock) waits for, so a read that waited for the allocator's lock there deadlocked
 * both. It is refused with {@link IllegalStateException}; the free and the allocation go on.
 */
class HeldBackFreeCallBackTest {

    private static final long MIB = 1L << 20;

    /** Host memory whose frees on the cleaner's thread first run {@link #onCleanerFree}. */
    private static final class Reading extends ForwardingSubAllocator {
        volatile Runnable onCleanerFree;
        final List<RuntimeException> thrown = new CopyOnWriteArrayList<>();
        final AlignedHostSubAllocator host;

        Reading() {
            this(new AlignedHostSubAllocator());
        }

        private Reading(AlignedHostSubAllocator host) {
            super(host);
            this.host = host;
        }

        @Override
        public void free(long ptr, long numBytes) {
            Runnable r = onCleanerFree;
            if (r != null && Thread.currentThread().getName().equals("bfc4j-cleaner")) {
                onCleanerFree = null;
                try {
                    r.run();
                } catch (RuntimeException e) {
                    thrown.add(e);
                }
            }
            super.free(ptr, numBytes);
        }
    }

    @Test
    void aReadFromTheCleanersFreeIsRefusedWhileAnotherThreadExtends() throws Exception {
        Reading sub = new Reading();
        // Closed only if no deadlock: a close would wait for the deadlocked lock.
        BfcAllocator a = BfcAllocator.builder().name("host").memoryLimit(256 * MIB).subAllocator(sub)
                .leakDetection(LeakDetection.DISABLED).build();
        assertRefusedWhileAnotherThreadExtends(sub, a::emptyCache, () -> a.allocateRaw(256, 8 * MIB),
                () -> a.getStats(), p -> a.deallocateRaw(p), () -> a.allocate(4 * MIB));
        assertThat(a.bytesHeldForViews()).isZero();
        a.checkInvariants();
        a.close();
        assertThat(sub.host.liveRegions()).isZero();
    }

    @Test
    void aReadOfAShardFromTheCleanersFreeIsRefusedToo() throws Exception {
        Reading sub = new Reading();
        ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("host").memoryLimit(256 * MIB)
                .subAllocator(sub).shards(2).leakDetection(LeakDetection.DISABLED).build();
        BfcAllocator shard = a.shards().get(0);
        assertRefusedWhileAnotherThreadExtends(sub, a::emptyCache, () -> shard.allocateRaw(256, 8 * MIB),
                () -> shard.getStats(), p -> a.deallocateRaw(p), () -> shard.allocate(4 * MIB));
        assertThat(a.bytesHeldForViews()).isZero();
        a.close();
        assertThat(sub.host.liveRegions()).isZero();
    }

    /**
     * A view keeps its region after {@code emptyCache}; once the view is collected, the
     * cleaner's free of the region waits (in the sub-allocator) until another thread is blocked
     * in an allocation that needs a new region, then makes {@code read}.
     */
    private static void assertRefusedWhileAnotherThreadExtends(Reading sub, Runnable emptyCache,
            LongSupplier extend, Runnable read, Consumer<Long> free,
            Supplier<Allocation> allocate) throws Exception {
        viewAndClose(allocate.get());
        emptyCache.run(); // the region waits for the view
        AtomicReference<Thread> extender = new AtomicReference<>();
        AtomicBoolean seenBlocked = new AtomicBoolean();
        CountDownLatch inFree = new CountDownLatch(1);
        sub.onCleanerFree = () -> {
            inFree.countDown();
            // Up to a minute (the extender may be slow to start on a loaded machine), and the test
            // fails if it was not seen blocked: a read made after that would test no deadlock.
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (System.nanoTime() - end < 0) {
                Thread t = extender.get();
                if (t != null && t.getState() == Thread.State.BLOCKED) {
                    seenBlocked.set(true);
                    break;
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
            }
            read.run();
        };
        // Up to a minute, left as soon as the free begins: the cleaner's thread may be slow to
        // run on a loaded machine.
        long collected = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (inFree.getCount() != 0 && System.nanoTime() - collected < 0) {
            System.gc();
            Thread.sleep(20);
        }
        assertThat(inFree.getCount()).as("the view was collected, and its region's free began").isZero();
        long[] ptr = new long[1];
        Thread t = new Thread(() -> ptr[0] = extend.getAsLong(), "extender");
        t.setDaemon(true); // without the refusal it would stay deadlocked
        extender.set(t);
        t.start();
        t.join(TimeUnit.SECONDS.toMillis(90));
        assertThat(seenBlocked).as("the extender was seen blocked in its allocation while the free waited").isTrue();
        assertThat(t.isAlive()).as("the allocation that needed a region finished (no deadlock)").isFalse();
        assertThat(ptr[0]).isNotZero();
        assertThat(sub.thrown).singleElement().isInstanceOf(IllegalStateException.class)
                .extracting(Throwable::getMessage).asString()
                .contains("was called from inside a call of its sub-allocator made without its lock")
                .contains("could deadlock");
        free.accept(ptr[0]);
        sub.thrown.clear();
    }

    /** Takes a view, writes it, and closes the allocation: the view is garbage once this returns. */
    private static void viewAndClose(Allocation allocation) {
        ByteBuffer view = allocation.asByteBuffer();
        view.put(0, (byte) 1);
        allocation.close();
    }
}
