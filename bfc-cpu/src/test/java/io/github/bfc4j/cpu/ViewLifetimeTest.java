/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cpu;

import static io.github.bfc4j.core.GarbageCollection.gcUntil;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.Allocation;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcAllocatorView;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.ClosePolicy;
import io.github.bfc4j.core.ForwardingSubAllocator;
import io.github.bfc4j.core.LeakDetection;
import io.github.bfc4j.core.MemoryMap;
import io.github.bfc4j.core.ShardedBfcAllocator;
import io.github.bfc4j.core.SubAllocator;
import io.github.bfc4j.core.TestThreads;
import java.nio.ByteBuffer;
import java.nio.LongBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import org.bytedeco.javacpp.BytePointer;
import org.junit.jupiter.api.Test;

/**
 * A view (a {@code ByteBuffer} or {@code BytePointer} from an {@link Allocation}) that is still
 * reachable keeps its region from going back to the sub-allocator: after a forced close, after
 * the garbage collection of a closed allocation's region, while another thread closes. The
 * regions here are 64 MiB, which the host sub-allocator maps with {@code mmap} and unmaps on
 * free, so a write through a view of a region given back would crash the JVM.
 */
class ViewLifetimeTest {

    private static final long MIB = 1L << 20;

    /** Counts the regions the allocator gives back, and their bytes. */
    private static final class Counting extends ForwardingSubAllocator {
        final AtomicLong obtainedBytes = new AtomicLong();
        final AtomicInteger frees = new AtomicInteger();
        final AtomicLong freedBytes = new AtomicLong();

        Counting() {
            super(new AlignedHostSubAllocator());
        }

        @Override
        public Block alloc(long alignment, long numBytes) {
            Block b = super.alloc(alignment, numBytes);
            if (b != null) {
                obtainedBytes.addAndGet(b.bytes());
            }
            return b;
        }

        @Override
        public void free(long ptr, long numBytes) {
            super.free(ptr, numBytes);
            frees.incrementAndGet();
            freedBytes.addAndGet(numBytes);
        }
    }

    /** Runs a few collections, for a test that something stays reachable through them. */
    private static void collectAFewTimes() throws InterruptedException {
        for (int i = 0; i < 5; i++) {
            System.gc();
            Thread.sleep(50);
        }
    }

    private static BfcAllocator forcing(SubAllocator sub) {
        return BfcAllocator.builder().name("views").memoryLimit(1024 * MIB).subAllocator(sub)
                .closePolicy(ClosePolicy.FORCE).leakDetection(LeakDetection.DISABLED).build();
    }

    /**
     * The free of a region that waited for its views runs on the cleaner's thread, whose
     * {@code Cleaner} drops whatever its action throws: an {@link Error} from the sub-allocator's
     * free there (an {@code OutOfMemoryError}, an assertion of the user's own sub-allocator)
     * vanished without a word, where a {@code RuntimeException} is logged.
     */
    @Test
    void anErrorFreeingARegionOnceItsViewIsCollectedIsLoggedNotLost() throws InterruptedException {
        AlignedHostSubAllocator host = new AlignedHostSubAllocator();
        AtomicLong failedFree = new AtomicLong();
        SubAllocator failing = new ForwardingSubAllocator(host) {
            @Override
            public void free(long ptr, long numBytes) {
                super.free(ptr, numBytes);   // then fails in its own books, say
                if (Thread.currentThread().getName().equals("bfc4j-cleaner") && failedFree.compareAndSet(0, ptr)) {
                    throw new AssertionError("this sub-allocator's free failed");
                }
            }
        };
        BfcAllocator a = forcing(failing);
        ByteBuffer view = a.allocate(64 * MIB).asByteBuffer();
        view.putLong(0, 42);
        a.close();
        assertThat(a.bytesHeldForViews()).isEqualTo(64 * MIB);
        try (LogCapture log = new LogCapture("io.github.bfc4j.core.ViewPins")) {
            view = null;
            gcUntil("the failure was logged", () -> !log.messages().isEmpty());
            assertThat(log.messages()).singleElement().asString()
                    .startsWith("could not free region 0x" + Long.toHexString(failedFree.get()) + " (" + 64 * MIB
                            + " bytes) once its last view was collected");
        }
        assertThat(a.bytesHeldForViews()).isZero();
        assertThat(host.liveRegions()).isZero();
    }

    @Test
    void aReachableBufferKeepsItsRegionAfterAForcedCloseUntilItIsCollected() throws InterruptedException {
        Counting sub = new Counting();
        BfcAllocator a = forcing(sub);
        ByteBuffer view = a.allocate(64 * MIB).asByteBuffer();
        view.putLong(0, 42);
        a.close();

        assertThat(sub.frees).as("regions given back while the view is reachable").hasValue(0);
        assertThat(a.bytesHeldForViews()).isEqualTo(64 * MIB);
        assertThat(a.reservedBytes()).as("the allocator's own books").isZero();
        view.putLong((int) (64 * MIB - 8), 7); // mapped still: no crash
        assertThat(view.getLong(0)).isEqualTo(42);

        view = null;
        gcUntil("returned once collected", () -> sub.frees.get() == 1);
        assertThat(sub.freedBytes).hasValue(64 * MIB);
        assertThat(a.bytesHeldForViews()).isZero();
    }

    @Test
    void aRegionHeldForAViewCannotBeFreedAroundTheAllocator() throws InterruptedException {
        AlignedHostSubAllocator sub = new AlignedHostSubAllocator();
        BfcAllocator a = forcing(sub);
        ByteBuffer view = a.allocate(MIB).asByteBuffer();
        MemoryMap.Region region = a.memoryMap().regions().get(0);
        a.close();

        assertThatThrownBy(() -> sub.free(region.ptr(), region.size()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("belongs to allocator 'views'");
        view.putLong((int) (MIB - 8), 7); // mapped still: no crash
        assertThat(view.getLong((int) (MIB - 8))).isEqualTo(7);

        view = null;
        gcUntil("the allocator's held-back free, made once the view is collected, not refused",
                () -> sub.liveRegions() == 0);
    }

    @Test
    void aBufferDerivedFromAViewHoldsTheRegionAsTheViewDoes() throws InterruptedException {
        Counting sub = new Counting();
        BfcAllocator a = forcing(sub);
        LongBuffer longs = a.allocate(64 * MIB).asByteBuffer().asLongBuffer(); // the view itself is dropped
        a.close();
        collectAFewTimes(); // the view stays reachable through the derived buffer
        assertThat(sub.frees).hasValue(0);
        longs.put(longs.limit() - 1, 9);
        assertThat(longs.get(longs.limit() - 1)).isEqualTo(9);

        longs = null;
        gcUntil("one region freed", () -> sub.frees.get() == 1);
    }

    @Test
    void aPointerViewAndABufferMadeFromItHoldTheRegion() throws InterruptedException {
        Counting sub = new Counting();
        BfcAllocator a = forcing(sub);
        BytePointer pointer = a.allocate(64 * MIB).asPointer();
        ByteBuffer fromPointer = pointer.asBuffer();
        a.close();
        assertItsAccessorsRefuse(pointer);
        // Native code given the address (here a pointer JavaCPP derives from it) still finds it mapped.
        new BytePointer(pointer).put(64 * MIB - 1, (byte) 5);
        assertThat(sub.frees).hasValue(0);

        pointer = null;
        collectAFewTimes();
        assertThat(sub.frees).as("the buffer made from the pointer still holds it").hasValue(0);
        assertThat(fromPointer.get((int) (64 * MIB - 1))).isEqualTo((byte) 5);

        fromPointer = null;
        gcUntil("one region freed", () -> sub.frees.get() == 1);
        assertThat(a.bytesHeldForViews()).isZero();
    }

    @Test
    void aPointerFurtherOnHoldsTheRegionAsTheViewDoes() throws InterruptedException {
        Counting sub = new Counting();
        BfcAllocator a = forcing(sub);
        BytePointer furtherOn = a.allocate(64 * MIB).asPointer().getPointer(MIB); // the view itself: garbage
        a.close();
        collectAFewTimes();
        assertThat(sub.frees).as("held by the pointer further on").hasValue(0);
        new BytePointer(furtherOn).put(63 * MIB - 1, (byte) 1); // native code given its address

        furtherOn = null;
        gcUntil("one region freed", () -> sub.frees.get() == 1);
        assertThat(a.bytesHeldForViews()).isZero();
    }

    @Test
    void aViewKeptPastItsAllocationsCloseHoldsTheRegionThatGarbageCollectionGivesBack()
            throws InterruptedException {
        Counting sub = new Counting();
        BfcAllocator a = BfcAllocator.builder().name("views").memoryLimit(1024 * MIB).subAllocator(sub)
                .options(BfcOptions.builder().allowGrowth(true).garbageCollection(true).build())
                .leakDetection(LeakDetection.DISABLED).build();
        ByteBuffer stale;
        try (Allocation x = a.allocate(64 * MIB)) {
            stale = x.asByteBuffer(); // misuse: kept beyond the handle's block
        }
        assertThat(a.emptyCache()).isEqualTo(64 * MIB);
        assertThat(sub.frees).hasValue(0);
        assertThat(a.bytesHeldForViews()).isEqualTo(64 * MIB);
        assertThat(BfcAllocatorView.of(a).bytesHeldForViews()).isEqualTo(64 * MIB);
        assertThat(a.memoryStats().bytesHeldForViews()).isEqualTo(64 * MIB);
        assertThat(a.memoryStats().reservedBytes()).isZero();
        assertThat(a.memorySummary()).contains("| Held for views: 64.00MiB  (out of the pool; freed once its views are collected) |");
        assertThat(a.memoryMap().toJson()).contains("\"bytesHeldForViews\": " + 64 * MIB);
        stale.put(0, (byte) 1); // memory nobody else can be given, not an unmapped page

        // Memory without views goes back at once; the allocator works on.
        try (Allocation y = a.allocate(64 * MIB)) {
            y.asByteBuffer().put(0, (byte) 2);
        }
        stale = null;
        gcUntil("one region freed", () -> sub.frees.get() == 1);
        a.close();
        gcUntil("two regions freed", () -> sub.frees.get() == 2);
        assertThat(sub.freedBytes).hasValue(128 * MIB);
    }

    @Test
    void viewsAnywhereInARegionLargerThanABufferCanSpanHoldIt() throws InterruptedException {
        Counting sub = new Counting();
        long gib = 1L << 30;
        // One region of 3 GiB (no growth); only the pages written are ever touched.
        BfcAllocator a = BfcAllocator.builder().name("views").memoryLimit(3 * gib).subAllocator(sub)
                .options(BfcOptions.builder().allowGrowth(false).build())
                .closePolicy(ClosePolicy.FORCE).leakDetection(LeakDetection.DISABLED).build();
        Allocation first = a.allocate(768 * MIB);
        Allocation across = a.allocate(1536 * MIB); // crosses the 2 GiB mark
        Allocation last = a.allocate(512 * MIB);
        List<ByteBuffer> views = new ArrayList<>(List.of(first.asByteBuffer(), across.asByteBuffer(),
                last.asByteBuffer()));
        BytePointer lastPointer = last.asPointer();
        writeEnds(views, (byte) 2);
        a.close();
        assertThat(sub.frees).hasValue(0);
        writeEnds(views, (byte) 3);
        new BytePointer(lastPointer).put(512 * MIB - 1, (byte) 4); // native code given the address
        assertThat(views.get(2).get((int) (512 * MIB - 1))).isEqualTo((byte) 4);

        // The view across two windows (an anchor of its own) holds the region alone.
        lastPointer = null;
        views.remove(2);
        views.remove(0);
        collectAFewTimes();
        assertThat(sub.frees).hasValue(0);
        writeEnds(views, (byte) 5);
        views.clear();
        gcUntil("one region freed", () -> sub.frees.get() == 1);
        assertThat(sub.freedBytes).hasValue(3 * gib);
    }

    /** In a method of its own, so that no local variable of the test keeps the pointer. */
    private static void assertItsAccessorsRefuse(BytePointer pointer) {
        assertThatThrownBy(() -> pointer.put(0, (byte) 5)).as("the pointer's own accessors refuse")
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("ClosePolicy.FORCE");
    }

    /** In a method of its own, so that no local variable of the test keeps a view. */
    private static void writeEnds(List<ByteBuffer> views, byte value) {
        for (ByteBuffer v : views) {
            v.put(0, value);
            v.put(v.capacity() - 1, value);
        }
    }

    @Test
    void withoutViewsRegionsGoBackAtOnce() {
        Counting sub = new Counting();
        BfcAllocator a = forcing(sub);
        Allocation x = a.allocate(64 * MIB);
        x.close();
        assertThat(a.emptyCache()).isEqualTo(64 * MIB);
        assertThat(sub.frees).hasValue(1);
        a.allocate(MIB);
        a.close();
        assertThat(sub.frees).hasValue(2);
        assertThat(a.bytesHeldForViews()).isZero();
    }

    @Test
    void writersThatKeepWritingWhileAnotherThreadClosesNeverTouchUnmappedMemory() throws Exception {
        Counting sub = new Counting();
        BfcAllocator a = forcing(sub);
        int threads = 4;
        CountDownLatch writing = new CountDownLatch(threads);
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> writers = new ArrayList<>();
        AtomicLong written = new AtomicLong();
        AtomicLongArray passes = new AtomicLongArray(threads);
        for (int t = 0; t < threads; t++) {
            ByteBuffer view = a.allocate(16 * MIB).asByteBuffer();
            int id = t;
            Thread w = new Thread(() -> {
                writing.countDown();
                long n = 0;
                while (!stop.get()) {
                    for (int i = 0; i < view.capacity(); i += 4096) {
                        view.put(i, (byte) n);
                    }
                    n++;
                    passes.incrementAndGet(id);
                }
                written.addAndGet(n);
            }, "writer-" + t);
            w.setDaemon(true);
            writers.add(w);
            w.start();
        }
        writing.await();
        a.close(); // forced, under the writers' feet
        // Every writer writes its whole view after the close: a pass begun after it, ended.
        long[] atClose = new long[threads];
        for (int t = 0; t < threads; t++) {
            atClose[t] = passes.get(t);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        for (int t = 0; t < threads; t++) {
            while (passes.get(t) < atClose[t] + 2) {
                assertThat(System.nanoTime() - deadline).as("writer %d wrote its view after the close, within 30 s", t)
                        .isNegative();
                Thread.sleep(1);
            }
        }
        assertThat(sub.frees).as("regions given back under the writers").hasValue(0);
        stop.set(true);
        TestThreads.joinOrFail(TestThreads.RUN_LIMIT, writers.toArray(new Thread[0]));
        assertThat(written.get()).isPositive();
        writers.clear();
        gcUntil("nothing held for views", () -> a.bytesHeldForViews() == 0);
        assertThat(sub.freedBytes.get()).as("every region given back in the end")
                .isEqualTo(sub.obtainedBytes.get()).isPositive();
    }

    @Test
    void aViewAskedForWhileAnotherThreadClosesIsRefusedOrUsable() throws Exception {
        for (int round = 0; round < 20; round++) {
            Counting sub = new Counting();
            BfcAllocator a = forcing(sub);
            Allocation x = a.allocate(64 * MIB);
            List<ByteBuffer> views = new ArrayList<>();
            AtomicInteger refused = new AtomicInteger();
            Thread viewer = new Thread(() -> {
                while (true) {
                    try {
                        views.add(x.asByteBuffer());
                    } catch (IllegalStateException e) {
                        refused.incrementAndGet();
                        return;
                    }
                }
            }, "viewer-in-round-" + round);
            viewer.setDaemon(true);
            viewer.start();
            Thread.sleep(1);
            a.close();
            TestThreads.joinOrFail(TestThreads.RUN_LIMIT, viewer);
            assertThat(refused).hasValue(1);
            for (ByteBuffer v : views) {
                v.put(v.capacity() - 1, (byte) 3); // every view let out is over mapped memory
            }
            assertThat(sub.frees.get() == 0 || views.isEmpty())
                    .as("round %d: the region was given back under %d views", round, views.size()).isTrue();
            views.clear();
            gcUntil("one region freed", () -> sub.frees.get() == 1);
        }
    }

    @Test
    void aShardedAllocatorsViewsHoldTheirRegionsOutsideItsBooks() throws InterruptedException {
        Counting sub = new Counting();
        ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("views").memoryLimit(128 * MIB).shards(2)
                .subAllocator(sub).closePolicy(ClosePolicy.FORCE).leakDetection(LeakDetection.DISABLED).build();
        ByteBuffer view;
        try (Allocation x = a.allocate(64 * MIB)) {
            view = x.asByteBuffer();
        }
        assertThat(a.emptyCache()).isEqualTo(64 * MIB);
        assertThat(sub.frees).hasValue(0);
        assertThat(a.bytesHeldForViews()).isEqualTo(64 * MIB);
        assertThat(a.reservedBytes()).as("not counted against the limit").isZero();
        try (Allocation y = a.allocate(128 * MIB)) { // the whole limit, beside the held region
            assertThat(y.size()).isEqualTo(128 * MIB);
        }
        view.put(0, (byte) 1);
        a.close();
        assertThat(sub.frees).as("the second region had no view").hasValue(1);

        view = null;
        gcUntil("two regions freed", () -> sub.frees.get() == 2);
        assertThat(a.bytesHeldForViews()).isZero();
    }

    @Test
    void aViewIsRefusedAfterItsAllocationsClose() {
        BfcAllocator a = forcing(new Counting());
        Allocation x = a.allocate(MIB);
        x.close();
        assertThatThrownBy(x::asByteBuffer).isInstanceOf(IllegalStateException.class).hasMessageContaining("is closed");
        assertThatThrownBy(x::asPointer).isInstanceOf(IllegalStateException.class).hasMessageContaining("is closed");
        a.close();
    }
}
