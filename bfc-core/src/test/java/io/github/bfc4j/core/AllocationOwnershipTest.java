/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The rule for memory behind an {@link Allocation} handle: only the handle frees it, and it frees
 * only its own allocation. A raw free of it is refused; after a forced close every handle is
 * closed and the figures agree.
 */
class AllocationOwnershipTest {

    private static final long BASE = 0x7f0000000000L;
    private static final long MIB = 1L << 20;

    private static BfcAllocator allocator(ClosePolicy policy) {
        return BfcAllocator.builder().name("owned").memoryLimit(64 * MIB)
                .subAllocator(new SimSubAllocator(BASE, 256 * MIB, 0, true))
                .closePolicy(policy).leakDetection(LeakDetection.DISABLED).build();
    }

    @Test
    void aRawFreeOfHandleOwnedMemoryIsRefusedAndChangesNothing() {
        BfcAllocator allocator = allocator(ClosePolicy.REFUSE);
        Allocation a = allocator.allocate(1000);
        AllocatorStats before = allocator.getStats();
        assertThatThrownBy(() -> allocator.deallocateRaw(a.address()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("0x" + Long.toHexString(a.address()) + " is allocation #1 of allocator 'owned',"
                        + " owned by an Allocation handle: close the Allocation instead of freeing its address"
                        + " with deallocateRaw. Nothing was freed.");
        assertThat(allocator.getStats()).isEqualTo(before);
        allocator.checkInvariants();
        // The sequence: b must not get a's memory, and a's close must not free b.
        Allocation b = allocator.allocate(1000);
        assertThat(b.address()).isNotEqualTo(a.address());
        a.close();
        assertThat(allocator.bytesInUse()).isEqualTo(1024);
        assertThat(allocator.allocationId(b.address())).isEqualTo(b.allocationId());
        Allocation c = allocator.allocate(1000);
        assertThat(c.address()).isNotEqualTo(b.address());
        c.close();
        b.close();
        assertThat(allocator.bytesInUse()).isZero();
        allocator.checkInvariants();
        allocator.close();
    }

    @Test
    void rawAllocationsAreStillFreedRawAndAHandleChunkIsRawAgainOnceFreed() {
        BfcAllocator allocator = allocator(ClosePolicy.REFUSE);
        Allocation a = allocator.allocate(1000);
        long address = a.address();
        a.close();
        // The same chunk, now handed out raw: a raw free works, and the stale handle frees nothing.
        long p = allocator.allocateRaw(64, 1000);
        assertThat(p).isEqualTo(address);
        a.close();
        assertThat(allocator.bytesInUse()).isEqualTo(1024);
        allocator.deallocateRaw(p);
        assertThat(allocator.bytesInUse()).isZero();
        allocator.checkInvariants();
        allocator.close();
    }

    @Test
    void afterAForcedCloseEveryHandleIsClosedAndTheFiguresAgree() {
        BfcAllocator allocator = allocator(ClosePolicy.FORCE);
        Allocation a = allocator.allocate(1000);
        Allocation b = allocator.allocate(5000);
        long rawPtr = allocator.allocateRaw(64, 300);
        allocator.close();
        assertThat(allocator.isClosed()).isTrue();
        for (Allocation x : new Allocation[] {a, b}) {
            assertThat(x.isClosed()).isTrue();
            assertThatThrownBy(x::address).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("was closed (ClosePolicy.FORCE) while it was live");
            assertThat(x.toString()).contains(", closed");
            x.close(); // nothing to do, nothing thrown
        }
        assertThat(rawPtr).isNotZero();
        AllocatorStats s = allocator.getStats();
        assertThat(s.bytesInUse()).isZero();
        assertThat(s.poolBytes()).isZero();
        assertThat(allocator.bytesInUse()).isZero();
        assertThat(allocator.reservedBytes()).isZero();
        MemoryStats m = allocator.memoryStats();
        assertThat(m.activeAllocations()).isZero();
        assertThat(m.freesTotal()).isEqualTo(3);
        assertThat(m.freedBytesTotal()).isEqualTo(m.allocatedBytesTotal());
        allocator.checkInvariants();
    }

    @Test
    void aRefusedCloseClosesNoHandle() {
        BfcAllocator allocator = allocator(ClosePolicy.REFUSE);
        Allocation a = allocator.allocate(1000);
        assertThatThrownBy(allocator::close).isInstanceOf(IllegalStateException.class);
        assertThat(allocator.isClosed()).isFalse();
        assertThat(a.isClosed()).isFalse();
        a.close();
        allocator.close();
        assertThat(a.isClosed()).isTrue();
    }

    /**
     * The chunk that {@code allocate()} finds is the handle's from that lock hold on: a stale
     * raw free of its address by another thread, between the hold that finds the chunk and the
     * one that makes the handle, is refused, so a third thread's {@code allocateRaw} cannot be
     * handed the same memory. Staged through the {@code beforeHandle} seam, which gives the lock
     * up while two other threads do the misuse, then takes it back.
     */
    @Test
    void aStaleRawFreeCannotTakeTheChunkOfAnAllocateUnderWay() throws Exception {
        BfcAllocator allocator = allocator(ClosePolicy.REFUSE);
        staleRawFreeDuringAllocate(allocator, allocator);
        allocator.close();
        // A shard's handle likewise (ShardedBfcAllocator's quiet attempt, tryAllocate).
        SimSubAllocator sim = new SimSubAllocator(BASE, 256 * MIB, 0, true);
        ShardedBfcAllocator sharded = ShardedBfcAllocator.builder().name("owned").memoryLimit(64 * MIB)
                .subAllocator(sim).shards(1).build();
        staleRawFreeDuringAllocate(sharded, sharded.shards().get(0));
        sharded.close();
        assertThat(sim.reservedBytes()).isZero();
    }

    private static void staleRawFreeDuringAllocate(MemoryAllocator allocator, BfcAllocator shard)
            throws Exception {
        // Thread B's address, freed once rightly: allocate() below is given the same chunk.
        long stale = onOtherThread(() -> {
            long p = allocator.allocateRaw(64, 1000);
            allocator.deallocateRaw(p);
            return p;
        });
        Object[] staleFree = new Object[1];
        long[] raw = new long[1];
        shard.beforeHandle = () -> {
            shard.beforeHandle = null;
            shard.port.unlock();
            try {
                staleFree[0] = onOtherThread(() -> {
                    try {
                        allocator.deallocateRaw(stale); // B frees its old address again
                        return "freed";
                    } catch (IllegalArgumentException e) {
                        return e;
                    }
                });
                raw[0] = onOtherThread(() -> allocator.allocateRaw(64, 1000)); // thread C
            } catch (Exception e) {
                throw new AssertionError(e);
            } finally {
                shard.port.lock();
            }
        };
        Allocation a = allocator.allocate(1000);
        assertThat(a.address()).isEqualTo(stale);
        assertThat(raw[0]).as("thread C's allocateRaw must not be given the memory of a's handle")
                .isNotZero().isNotEqualTo(a.address());
        assertThat(staleFree[0]).isInstanceOf(IllegalArgumentException.class);
        assertThat(((IllegalArgumentException) staleFree[0]).getMessage())
                .contains("owned by an Allocation handle").contains("Nothing was freed");
        assertThat(allocator.bytesInUse()).isEqualTo(2048);
        shard.checkInvariants();
        // Each owner frees its own memory, once.
        allocator.deallocateRaw(raw[0]);
        assertThat(allocator.bytesInUse()).isEqualTo(1024);
        assertThat(shard.allocationId(a.address())).isEqualTo(a.allocationId());
        a.close();
        assertThat(allocator.bytesInUse()).isZero();
        shard.checkInvariants();
    }

    /** Runs {@code task} on a new thread and waits for it; its exception is rethrown here. */
    private static <T> T onOtherThread(Callable<T> task) throws Exception {
        FutureTask<T> f = new FutureTask<>(task);
        Thread t = new Thread(f, "misuse");
        t.setDaemon(true);
        t.start();
        TestThreads.joinOrFail(TestThreads.RUN_LIMIT, t);
        try {
            return f.get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof Exception x) {
                throw x;
            }
            throw new AssertionError(e.getCause());
        }
    }

    /**
     * An {@link Error} while the handle is made (out of heap or of stack, injected through the
     * package-private {@code beforeHandle} seam) reaches the caller, and the chunk goes back:
     * no handle could ever free it, and a refusing close would refuse for good.
     */
    @Test
    void anErrorMakingTheHandleGivesTheChunkBack() {
        for (LeakDetection leaks : LeakDetection.values()) {
            SimSubAllocator sim = new SimSubAllocator(BASE, 256 * MIB, 0, true);
            BfcAllocator allocator = BfcAllocator.builder().name("owned").memoryLimit(64 * MIB).subAllocator(sim)
                    .leakDetection(leaks).build();
            Allocation kept = allocator.allocate(5000);
            allocator.beforeHandle = () -> {
                throw new OutOfMemoryError("injected");
            };
            for (long alignment : new long[] {64, 4096}) {
                assertThatThrownBy(() -> allocator.allocate(1000, alignment)).as("%s", leaks)
                        .isInstanceOf(OutOfMemoryError.class).hasMessage("injected");
                assertThat(allocator.bytesInUse()).as("%s", leaks).isEqualTo(kept.size());
                MemoryStats m = allocator.memoryStats();
                assertThat(m.activeAllocations()).as("%s", leaks).isEqualTo(1);
                allocator.checkInvariants();
            }
            allocator.beforeHandle = null;
            Allocation next = allocator.allocate(1000);
            assertThat(next.address()).isEqualTo(kept.address() + kept.size());
            next.close();
            kept.close();
            allocator.close(); // REFUSE: nothing is live
            assertThat(sim.reservedBytes()).isZero();
        }
        // A shard's handle likewise.
        SimSubAllocator sim = new SimSubAllocator(BASE, 256 * MIB, 0, true);
        ShardedBfcAllocator sharded = ShardedBfcAllocator.builder().name("owned").memoryLimit(64 * MIB)
                .subAllocator(sim).shards(2).build();
        sharded.shards().forEach(s -> s.beforeHandle = () -> {
            throw new StackOverflowError("injected");
        });
        assertThatThrownBy(() -> sharded.allocate(1000)).isInstanceOf(StackOverflowError.class);
        assertThat(sharded.bytesInUse()).isZero();
        sharded.shards().forEach(BfcAllocator::checkInvariants);
        sharded.close();
        assertThat(sim.reservedBytes()).isZero();
    }

    /**
     * While a forced close gives the regions back, a live handle already refuses to be used
     * ({@code address()} says the allocator was closed): {@code isClosed()} must say so too.
     */
    @Test
    void aHandleIsClosedFromTheMomentAForcedCloseBegins() throws Exception {
        CountDownLatch inFree = new CountDownLatch(1);
        CountDownLatch letFreeGo = new CountDownLatch(1);
        SubAllocator blocking = new ForwardingSubAllocator(new SimSubAllocator(BASE, 256 * MIB, 0, true)) {
            @Override
            public void free(long ptr, long numBytes) {
                inFree.countDown();
                try {
                    letFreeGo.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                super.free(ptr, numBytes);
            }
        };
        BfcAllocator allocator = BfcAllocator.builder().name("owned").memoryLimit(64 * MIB).subAllocator(blocking)
                .closePolicy(ClosePolicy.FORCE).leakDetection(LeakDetection.DISABLED).build();
        Allocation h = allocator.allocate(1000);
        assertThat(h.isClosed()).isFalse();
        Thread closer = new Thread(allocator::close, "closer");
        closer.start();
        try {
            assertThat(inFree.await(10, TimeUnit.SECONDS)).as("the close reached the sub-allocator's free").isTrue();
            assertThatThrownBy(h::address).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("was closed (ClosePolicy.FORCE)");
            assertThat(h.isClosed()).as("isClosed() while address() refuses").isTrue();
        } finally {
            letFreeGo.countDown();
            closer.join(10_000);
        }
        assertThat(closer.isAlive()).isFalse();
        assertThat(h.isClosed()).isTrue();
        assertThat(allocator.isClosed()).isTrue();
    }
}

