/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcAllocatorView;
import io.github.bfc4j.core.MemoryType;
import io.github.bfc4j.core.SubAllocator;
import io.github.bfc4j.core.ThreadWatch;
import java.lang.reflect.Method;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Stream-ordered frees (events, timing counter, safe frontier), the fence before regions go back,
 * and pause/resume through {@link GpuBfcAllocator}, against the simulated driver.
 */
class GpuBfcAllocatorTest {

    private static final long G = 64 << 10;
    private static final long MIB = 1 << 20;
    private static final long STREAM = SimulatedCudaDriver.STREAM;

    private final SimulatedCudaDriver driver = new SimulatedCudaDriver(256 * G, G);

    private static GpuBfcOptions.Builder options() {
        return GpuBfcOptions.builder().environment(Map.<String, String>of()::get).eventPollIntervalMicros(0);
    }

    private GpuBfcAllocator create(GpuBfcOptions.Builder b) {
        return GpuBfcAllocators.create(driver, 0, b.build());
    }

    /**
     * Memory lent to a runtime (ONNX Runtime's CUDA provider) through {@code lendTo}: a stale
     * double free of an address of the caller's own, which the runtime was given since, is
     * refused (plain or on a stream: nothing queued), and the loan frees it; a loan frees
     * only lent memory. The loan's chunks are those allocateRaw would give, with the same
     * stream-ordered constraint: memory freed on a stream is not lent before its event completes.
     */
    @Test
    void memoryLentToARuntimeIsFreedByTheLoanOnly() {
        try (GpuBfcAllocator a = create(options());
                GpuBfcAllocator.DeviceLoan loan = a.lendTo("Runtime R", "release R's sessions")) {
            long mine = a.allocateRaw(256, 1000);
            a.deallocateRaw(mine);
            long lent = loan.allocateRaw(256, 1000);
            assertThat(lent).as("the chunk just freed").isEqualTo(mine);
            assertThatThrownBy(() -> a.deallocateRaw(mine)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("lent to Runtime R, which frees it itself");
            assertThatThrownBy(() -> a.deallocateRaw(mine, STREAM)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("lent to Runtime R");
            assertThat(a.pendingFrees()).as("nothing queued").isZero();
            assertThat(a.getStats().bytesInUse()).as("nothing freed").isEqualTo(1024);

            long raw = a.allocateRaw(256, 1000);
            assertThatThrownBy(() -> loan.deallocateRaw(raw)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("a raw allocation, not memory this loan (to Runtime R) lent");
            a.deallocateRaw(raw, STREAM);
            assertThat(loan.allocateRaw(256, 1000)).as("not before the stream's event completes")
                    .isNotEqualTo(raw).satisfies(p -> loan.deallocateRaw(p));
            driver.completeAllEvents();
            a.pollEvents();
            long again = loan.allocateRaw(256, 1000);
            assertThat(again).as("once it has").isEqualTo(raw);
            loan.deallocateRaw(again);
            loan.deallocateRaw(lent);
            assertThat(a.getStats().bytesInUse()).isZero();
        }
    }

    /**
     * A close() while a runtime still holds memory lent to it: it used to give the memory back
     * anyway, so the runtime's queued and later kernels wrote into device memory that another
     * allocation could get. It is refused, naming the runtime and what releases its memory, and
     * changes nothing; once the runtime has freed it (through the loan, also after the loan is
     * closed), the close goes through. A loan's failed allocation lends nothing.
     */
    @Test
    void closeIsRefusedWhileARuntimeHoldsLentMemory() {
        GpuBfcAllocator a = create(options().memoryLimitBytes(64L << 20));
        GpuBfcAllocator.DeviceLoan loan = a.lendTo("Runtime R", "release R's sessions");
        GpuBfcAllocator.DeviceLoan idle = a.lendTo("Runtime S", "release S's sessions");
        long lent = loan.allocateRaw(256, 1000);
        long second = loan.allocateRaw(256, 2000);
        assertThat(idle.allocateRaw(256, 0)).as("nothing lent").isZero();
        loan.close();
        assertThatThrownBy(a::close).isInstanceOf(IllegalStateException.class)
                .hasMessage("close() refused: allocator '" + a.allocator().name() + "' has 2 allocations lent to a"
                        + " runtime that has not freed them (its work on the device may still use them), and nothing"
                        + " was closed. Runtime R holds 2 allocations of it: release R's sessions. Then close this"
                        + " allocator.");
        assertThat(a.getStats().bytesInUse()).as("nothing given back").isEqualTo(3072);
        long mine = a.allocateRaw(256, 1000);
        assertThat(mine).as("still open").isNotZero();
        a.deallocateRaw(mine);
        loan.deallocateRaw(lent);
        assertThatThrownBy(a::close).hasMessageContaining("has 1 allocation lent to a runtime that has not freed it");
        loan.deallocateRaw(second);
        a.close();
        assertThatThrownBy(() -> a.allocateRaw(256, 1000)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("is closed");
        idle.close();
    }

    @Test
    void aNumberThatIsNoStreamIsRefusedAndFreesNothing() {
        try (GpuBfcAllocator a = create(options())) {
            long p = a.allocateRaw(256, 1000);
            int events = driver.liveEvents();
            assertThatThrownBy(() -> a.deallocateRaw(p, 0x3039)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("stream=0x3039 is not a CUDA stream");
            assertThat(a.getStats().bytesInUse()).as("nothing freed").isEqualTo(1024);
            assertThat(a.pendingFrees()).isZero();
            assertThat(driver.pendingEvents()).isEmpty();
            a.deallocateRaw(p, STREAM);
            assertThat(driver.pendingEvents()).hasSize(1);
            assertThat(driver.liveEvents()).as("the refused free's event was pooled and used again")
                    .isEqualTo(events + 1);
        }
    }

    /**
     * An IllegalStateException from the event's record (the driver finding the context not
     * retained) reaches the caller and the event taken from the pool is destroyed, as
     * on a CudaException: it was neither pooled nor destroyed, so it outlived close().
     */
    @Test
    void anIllegalStateExceptionFromTheRecordDestroysTheEvent() {
        GpuBfcAllocator a = create(options());
        long p = a.allocateRaw(256, 1000);
        IllegalStateException notRetained = new IllegalStateException("eventRecord without a retain of device 0's"
                + " primary context (injected)");
        driver.throwNext("eventRecord", notRetained);
        assertThatThrownBy(() -> a.deallocateRaw(p, STREAM)).isSameAs(notRetained);
        assertThat(a.getStats().bytesInUse()).as("nothing freed").isEqualTo(1024);
        a.deallocateRaw(p);
        a.close();
        assertThat(driver.liveEvents()).as("events left after close()").isZero();
        assertThat(driver.retainedContexts()).isZero();
    }

    /**
     * A close on another thread while a free on a stream is inside the driver's eventRecord (the
     * retain checked, the call not yet made) waits for that free: it released the device's last
     * retain meanwhile, so that the call ran into a destroyed context with an event destroyed
     * with it (in the real driver a use after free, which may kill the JVM), and the event was
     * left behind.
     */
    @Test
    void aCloseWaitsForAFreeOnAStreamThatIsInTheDriver() throws Exception {
        GpuBfcAllocator a = create(options());
        long p = a.allocateRaw(256, 1000);
        CountDownLatch inRecord = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        driver.duringNext("eventRecord", () -> {
            inRecord.countDown();
            await(letGo);
        });
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try {
            Future<?> free = threads.submit(() -> a.deallocateRaw(p, STREAM));
            assertThat(inRecord.await(10, TimeUnit.SECONDS)).isTrue();
            AtomicReference<Thread> closing = new AtomicReference<>();
            Future<?> close = threads.submit(() -> {
                closing.set(Thread.currentThread());
                a.close();
            });
            // close() has set closed and waits for the free under way (parked in its own loop).
            ThreadWatch.awaitWaitingIn(closing::get, close, GpuBfcAllocator.class.getName(), "close",
                    "for the free on a stream under way");
            assertThat(close).as("close() while a free is in the driver").isNotDone();
            assertThat(driver.retainedContexts()).as("the context the free is using").isEqualTo(1);
            letGo.countDown();
            free.get(10, TimeUnit.SECONDS);
            close.get(10, TimeUnit.SECONDS);
        } finally {
            letGo.countDown();
            threads.shutdownNow();
        }
        assertThat(driver.liveEvents()).as("the free's event, destroyed by close()").isZero();
        assertThat(driver.retainedContexts()).isZero();
        assertThat(driver.liveDeviceBlocks()).isZero();
        assertThatThrownBy(() -> a.deallocateRaw(p, STREAM)).isInstanceOf(IllegalStateException.class)
                .hasMessage("allocator 'GPU_0_bfc' is closed");
    }

    private static void await(CountDownLatch latch) {
        try {
            assertThat(latch.await(10, TimeUnit.SECONDS)).isTrue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /**
     * An Error while the allocator is made (here the event poller's thread, as "unable to create
     * native thread" does) reaches the caller with the sub-allocator closed and the context given
     * back: only a RuntimeException closed it, and the context stayed retained.
     */
    @Test
    void anErrorStartingThePollerLeavesNothingRetained() {
        OutOfMemoryError noThread = new OutOfMemoryError("unable to create native thread: possibly out of memory"
                + " or process/resource limits reached (injected)");
        for (boolean virtualMemory : new boolean[] {false, true}) {
            assertThatThrownBy(() -> GpuBfcAllocators.create(driver, 0, options().eventPollIntervalMicros(100)
                    .virtualMemory(virtualMemory).memoryLimitBytes(64 * MIB).build(), r -> {
                        throw noThread;
                    })).as("virtualMemory=" + virtualMemory).isSameAs(noThread);
            assertThat(driver.retainedContexts()).as("virtualMemory=" + virtualMemory).isZero();
        }
        try (GpuBfcAllocator a = create(options().eventPollIntervalMicros(100))) {
            assertThat(a.allocateRaw(256, 1000)).as("the device is usable after").isNotZero();
        }
    }

    @Test
    void memoryFreedOnAStreamIsNotReusedUntilItsEventCompletes() {
        try (GpuBfcAllocator a = create(options().memoryLimitBytes(4 * MIB))) {
            long p = a.allocateRaw(256, 1024);
            a.deallocateRaw(p, STREAM);
            assertThat(a.pendingFrees()).isEqualTo(1);
            assertThat(driver.pendingEvents()).hasSize(1);
            assertThat(driver.calls()).contains("eventRecord(event=0x"
                    + Long.toHexString(driver.pendingEvents().get(0)) + ", stream=" + STREAM + ")");
            long q = a.allocateRaw(256, 1024);
            assertThat(q).as("a kernel may still read p").isNotEqualTo(p).isNotZero();
            assertThat(a.pollEvents()).isEqualTo(1);
            assertThat(a.allocator().memorySummary()).contains("| Not yet safe: 1.0KiB in 1 free chunk");

            driver.completeAllEvents();
            long r = a.allocateRaw(256, 1024);
            assertThat(r).as("p is safe once its event completed").isEqualTo(p);
            assertThat(a.pendingFrees()).isZero();
            assertThat(a.allocator().memorySummary()).doesNotContain("Not yet safe");
        }
        assertThat(driver.liveEvents()).isZero();
        assertThat(driver.deviceBytesUsed()).isZero();
    }

    @Test
    void anImmediateFreeIsReusableAtOnce() {
        try (GpuBfcAllocator a = create(options().memoryLimitBytes(4 * MIB))) {
            long p = a.allocateRaw(256, 1024);
            a.deallocateRaw(p);
            assertThat(a.allocateRaw(256, 1024)).isEqualTo(p);
            assertThat(driver.liveEvents()).isZero();
        }
    }

    @Test
    void safetyAdvancesInFreeOrderBehindAPendingEvent() {
        try (GpuBfcAllocator a = create(options().memoryLimitBytes(4 * MIB))) {
            long p1 = a.allocateRaw(256, 1024);
            long guard1 = a.allocateRaw(256, 1024);
            long p2 = a.allocateRaw(256, 2048);
            long guard2 = a.allocateRaw(256, 1024);
            long p3 = a.allocateRaw(256, 4096);
            a.allocateRaw(256, 1024);
            a.deallocateRaw(p1, STREAM);
            a.deallocateRaw(p2);
            a.deallocateRaw(p3, STREAM + 1);
            List<Long> events = driver.pendingEvents();
            assertThat(events).hasSize(2);
            // The second event completes first: nothing is safe while the first is pending.
            driver.completeEvent(events.get(1));
            a.pollEvents();
            assertThat(a.pendingFrees()).isEqualTo(3);
            assertThat(a.allocateRaw(256, 2048)).isNotIn(p1, p2, p3);
            driver.completeEvent(events.get(0));
            assertThat(a.pollEvents()).isGreaterThanOrEqualTo(4);
            assertThat(a.pendingFrees()).isZero();
            assertThat(a.allocateRaw(256, 4096)).isEqualTo(p3);
            assertThat(a.allocateRaw(256, 2048)).isEqualTo(p2);
            assertThat(a.allocateRaw(256, 1024)).isEqualTo(p1);
            a.deallocateRaw(guard1);
            a.deallocateRaw(guard2);
        }
    }

    @Test
    void eventsAreReused() {
        try (GpuBfcAllocator a = create(options().memoryLimitBytes(4 * MIB))) {
            for (int i = 0; i < 100; i++) {
                long p = a.allocateRaw(256, 4096);
                a.deallocateRaw(p, STREAM);
                driver.completeAllEvents();
                a.pollEvents();
            }
            assertThat(driver.calls()).filteredOn(c -> c.startsWith("eventCreate")).hasSize(1);
        }
        assertThat(driver.liveEvents()).isZero();
    }

    @Test
    void aFailedRecordFreesNothingAndLeaksNoEvent() {
        try (GpuBfcAllocator a = create(options().memoryLimitBytes(4 * MIB))) {
            long p = a.allocateRaw(256, 1024);
            driver.failNext("eventRecord", 400);
            assertThatThrownBy(() -> a.deallocateRaw(p, STREAM)).isInstanceOf(CudaException.class)
                    .hasMessageContaining("eventRecord(");
            assertThat(driver.liveEvents()).isZero();
            assertThat(a.allocator().getStats().bytesInUse()).isEqualTo(1024);
            assertThatThrownBy(() -> a.deallocateRaw(p + 256, STREAM))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("was not allocated by allocator 'GPU_0_bfc'");
            assertThat(a.pendingFrees()).isZero();
            a.deallocateRaw(p, STREAM);
            assertThat(a.pendingFrees()).isEqualTo(1);
        }
        assertThat(driver.liveEvents()).isZero();
    }

    /**
     * A failed wait for the pending frees' events (an error of earlier GPU work) still gives the
     * region back to the driver, and the failure is thrown: before, the sub-allocator kept the
     * region for an allocator that had let it go, and the context's retain with it, for the
     * process's life.
     */
    @Test
    void aFailedFenceStillGivesTheRegionBack() {
        // Two regions (cuMemAlloc blocks do not coalesce); the one of q goes back while p's free
        // is pending, and the wait for p's event fails.
        SimulatedCudaDriver d = new SimulatedCudaDriver(256 * G, G);
        GpuBfcAllocator a = GpuBfcAllocators.create(d, 0, options().memoryLimitBytes(64 * MIB).build());
        long p = a.allocateRaw(256, 2 * MIB);
        long q = a.allocateRaw(256, 4 * MIB);
        a.deallocateRaw(q);
        a.deallocateRaw(p, STREAM);
        d.failNext("eventSynchronize", 700);
        assertThatThrownBy(a::emptyCache).isInstanceOf(CudaException.class).hasMessageContaining("eventSynchronize(");
        assertThat(d.liveDeviceBlocks()).as("q's region went back").isEqualTo(1);
        a.close();
        assertThat(d.retainedContexts()).isZero();
        assertThat(d.liveDeviceBlocks()).isZero();
        // Every wait failing (a context hit by an error): close() still gives everything back.
        for (boolean vmm : new boolean[] {false, true}) {
            SimulatedCudaDriver d2 = new SimulatedCudaDriver(256 * G, G);
            GpuBfcAllocator b = GpuBfcAllocators.create(d2, 0, options().memoryLimitBytes(64 * MIB).virtualMemory(vmm)
                    .build());
            b.deallocateRaw(b.allocateRaw(256, 2 * MIB), STREAM);
            for (int i = 0; i < 100; i++) {
                d2.failNext("eventSynchronize", 700);
                d2.failNext("eventQuery", 700);
            }
            assertThatThrownBy(b::close).as("vmm=%s", vmm).isInstanceOf(CudaException.class);
            assertThat(d2.retainedContexts()).as("vmm=%s", vmm).isZero();
            assertThat(d2.liveDeviceBlocks() + d2.liveMappings() + d2.livePhysicalAllocations()
                    + d2.liveReservations()).as("vmm=%s", vmm).isZero();
        }
    }

    /**
     * While every poll of the events fails (a context hit by an error), the poller warns once,
     * not at every interval (it logged over 4,000 warnings a second at the default interval).
     */
    @Test
    void aPollerThatKeepsFailingWarnsOnce() throws InterruptedException {
        try (LogCapture log = new LogCapture(GpuBfcAllocator.class, true)) {
            try (GpuBfcAllocator a = create(options().eventPollIntervalMicros(100).memoryLimitBytes(4 * MIB))) {
                long p = a.allocateRaw(256, 1024);
                for (int i = 0; i < 100_000; i++) {
                    driver.failNext("eventQuery", 700);
                }
                a.deallocateRaw(p, STREAM);
                // Waits for the poller's polls, not for a time: on a loaded machine its thread may
                // not have run at all a second after the free.
                awaitPolls(() -> !log.messages().isEmpty(), "a warning from the failing poller");
                int polled = driver.callCount("eventQuery");
                // Backing off to one try every 100 ms, 15 more polls take about a second: none
                // of them warns again.
                awaitPolls(() -> driver.callCount("eventQuery") >= polled + 15, "15 more polls after its warning");
                assertThat(log.messages()).hasSize(1);
                assertThat(log.messages().get(0))
                        .contains("polling the events of stream-ordered frees of 'GPU_0_bfc' failed")
                        .contains("the poller backs off to one try every 100 ms and says so once a minute");
            } catch (CudaException e) {
                // close() waits for the pending free's event, whose query keeps failing
                assertThat(e).hasMessageContaining("eventQuery(");
            }
            assertThat(log.messages()).hasSize(1);
        }
    }

    /** Waits up to a minute for what the poller's thread does; fails naming it if it does not come. */
    private static void awaitPolls(java.util.function.BooleanSupplier done, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError(what + ": not seen within 60 s");
            }
            Thread.sleep(5);
        }
    }

    /**
     * An allocation waiting for memory (the retry loop) when pause() runs does not hand out a
     * chunk of the paused memory, which has no device memory behind it: it throws as an
     * allocation made after the pause would. Before, it returned an unmapped address.
     */
    @Test
    void anAllocationThatWaitedThroughAPauseIsNotHandedOut() throws Exception {
        // No garbage collection: the waiter finds its chunk in the region x leaves (with it, the
        // region could go back first, and the paused sub-allocator refuse a new one itself).
        try (GpuBfcAllocator a = create(options().memoryLimitBytes(8 * MIB).virtualMemory(true)
                .garbageCollection(false))) {
            long x = a.allocateRaw(256, 8 * MIB);
            AtomicReference<Thread> waiterThread = new AtomicReference<>();
            CompletableFuture<Long> waiter = CompletableFuture.supplyAsync(() -> {
                waiterThread.set(Thread.currentThread());
                return a.allocateRaw(256, 4 * MIB);
            });
            awaitRetryWait(waiterThread, waiter); // its first try failed: it waits for frees (up to 10 s)
            a.pause(false);
            a.deallocateRaw(x); // allowed while paused; wakes the waiter
            assertThatThrownBy(() -> waiter.get(10, TimeUnit.SECONDS)).hasCauseInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("allocator 'GPU_0_bfc' is paused; call resume() first");
            assertThat(a.getStats().bytesInUse()).isZero();
            a.resume();
            assertThat(a.allocateRaw(256, 4 * MIB)).isNotZero();
        }
    }

    /**
     * Waits until {@code thread} waits in the allocator's retry loop for a free ({@code Object.wait}
     * under {@code AllocatorRetry.waitForMillis}), so that what the test does next happens while
     * the allocation waits, not before it started; fails if the allocation returned first, or after
     * 30 s.
     */
    private static void awaitRetryWait(AtomicReference<Thread> thread, CompletableFuture<?> allocation)
            throws InterruptedException {
        ThreadWatch.awaitWaitingIn(thread::get, allocation, "io.github.bfc4j.core.internal.AllocatorRetry",
                "waitForMillis", "in the retry loop for a free");
    }

    /** A failed record whose event cannot be destroyed either reports the record's failure. */
    @Test
    void aFailedRecordIsTheErrorReportedWhenTheEventsDestroyFailsToo() {
        try (GpuBfcAllocator a = create(options().memoryLimitBytes(4 * MIB))) {
            long p = a.allocateRaw(256, 1024);
            driver.failNext("eventRecord", 400);
            driver.failNext("eventDestroy", 700);
            assertThatThrownBy(() -> a.deallocateRaw(p, STREAM)).isInstanceOf(CudaException.class)
                    .hasMessageContaining("eventRecord(")
                    .satisfies(e -> assertThat(e.getSuppressed()).singleElement().asString()
                            .contains("eventDestroy("));
            a.deallocateRaw(p);
        }
    }

    @Test
    void regionsGoBackOnlyAfterPendingEventsAreWaitedFor() {
        GpuBfcOptions.Builder b = options().memoryLimitBytes(MIB).allowGrowth(false)
                .garbageCollection(true).allowRetryOnFailure(false);
        try (GpuBfcAllocator a = create(b)) {
            long p = a.allocateRaw(256, MIB / 2);
            a.deallocateRaw(p, STREAM);
            // Only garbage collection can serve this: the pool is full and p is held back.
            long q = a.allocateRaw(256, MIB);
            assertThat(q).isNotZero();
            List<String> calls = driver.calls();
            int sync = indexOf(calls, "eventSynchronize(");
            int free = indexOf(calls, "memFree(");
            assertThat(sync).isGreaterThanOrEqualTo(0).isLessThan(free);
        }
        assertThat(driver.liveDeviceBlocks()).isZero();
    }

    private static int indexOf(List<String> calls, String prefix) {
        for (int i = 0; i < calls.size(); i++) {
            if (calls.get(i).startsWith(prefix)) {
                return i;
            }
        }
        return -1;
    }

    @Test
    void closeWaitsForPendingEventsBeforeFreeingRegions() {
        GpuBfcAllocator a = create(options().memoryLimitBytes(MIB));
        long p = a.allocateRaw(256, 4096);
        a.deallocateRaw(p, STREAM);
        a.close();
        List<String> calls = driver.calls();
        assertThat(indexOf(calls, "eventSynchronize(")).isLessThan(indexOf(calls, "memFree("));
        assertThat(driver.liveEvents()).isZero();
        assertThat(driver.liveDeviceBlocks()).isZero();
        a.close();
        assertThatThrownBy(() -> a.deallocateRaw(p, STREAM)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void virtualMemoryRegionsCoalesceAcrossSubAllocatorBlocks() {
        try (GpuBfcAllocator a = create(options().memoryLimitBytes(8 * MIB).virtualMemory(true))) {
            long p = a.allocateRaw(256, MIB / 4); // first region: 2 MiB, split: 1.75 MiB stay free
            long q = a.allocateRaw(256, 3 * MIB);  // extends by 4 MiB right after the first region
            assertThat(q).as("one free chunk spanning both blocks").isEqualTo(p + MIB / 4);
            assertThat(a.getStats().poolBytes()).isEqualTo(6 * MIB);
        }
        try (GpuBfcAllocator a = create(options().memoryLimitBytes(8 * MIB))) {
            long p = a.allocateRaw(256, MIB / 4);
            long q = a.allocateRaw(256, 3 * MIB);
            assertThat(q).as("cuMemAlloc blocks do not coalesce").isNotEqualTo(p + MIB / 4);
        }
    }

    @Test
    void pauseAndResumeKeepAddressesAndWithBackupTheContents() {
        try (GpuBfcAllocator a = create(options().memoryLimitBytes(4 * MIB).virtualMemory(true))) {
            long p = a.allocateRaw(256, 4096);
            long q = a.allocateRaw(256, 4096);
            a.deallocateRaw(q, STREAM);
            driver.writeDevice(p, new byte[] {42, 43});
            a.pause(true);
            assertThat(a.isPaused()).isTrue();
            assertThat(driver.deviceBytesUsed()).isZero();
            assertThat(a.pendingFrees()).as("pause waits for pending frees").isZero();
            assertThatThrownBy(() -> a.allocateRaw(256, 4096)).isInstanceOf(IllegalStateException.class)
                    .hasMessage("allocator 'GPU_0_bfc' is paused; call resume() first");
            a.resume();
            assertThat(driver.readDevice(p, 2)).containsExactly(42, 43);
            assertThat(a.allocateRaw(256, 4096)).isEqualTo(q);
            a.deallocateRaw(p);
        }
        assertThat(driver.deviceBytesUsed()).isZero();
        assertThat(driver.liveHostBlocks()).isZero();
    }

    @Test
    void emptyCacheGivesBackARegionOnlyOnceItsStreamFreesAreSafe() {
        try (GpuBfcAllocator a = create(options().memoryLimitBytes(4 * MIB))) {
            long p = a.allocateRaw(256, MIB);
            long peak = a.allocator().peakBytesInUse();
            assertThat(peak).isGreaterThanOrEqualTo(MIB);
            a.deallocateRaw(p, STREAM);
            assertThat(a.emptyCache()).as("a kernel may still use p").isZero();
            assertThat(driver.liveDeviceBlocks()).isNotZero();

            driver.completeAllEvents();
            long reserved = a.allocator().reservedBytes();
            assertThat(reserved).isGreaterThanOrEqualTo(MIB);
            assertThat(a.emptyCache()).isEqualTo(reserved);
            assertThat(a.pendingFrees()).isZero();
            assertThat(driver.liveDeviceBlocks()).isZero();
            assertThat(a.allocator().reservedBytes()).isZero();

            assertThat(a.allocator().peakBytesInUse()).isEqualTo(peak);
            a.resetPeakStats();
            assertThat(a.allocator().peakBytesInUse()).isZero();
            assertThat(a.allocateRaw(256, 1024)).as("regions come back on demand").isNotZero();
        }
        assertThat(driver.liveDeviceBlocks()).isZero();
    }

    @Test
    void emptyCacheIsRefusedWhilePausedAndAfterClose() {
        GpuBfcAllocator a = create(options().memoryLimitBytes(4 * MIB).virtualMemory(true));
        a.allocateRaw(256, 4096);
        a.pause(false);
        assertThatThrownBy(a::emptyCache).isInstanceOf(IllegalStateException.class)
                .hasMessage("allocator 'GPU_0_bfc' is paused; call resume() first");
        a.resume();
        assertThat(a.emptyCache()).as("a region with memory in use stays").isZero();
        a.close();
        assertThatThrownBy(a::emptyCache).isInstanceOf(IllegalStateException.class)
                .hasMessage("allocator 'GPU_0_bfc' is closed");
    }

    @Test
    void nothingHandedOutCanAllocateOrFreeAroundTheStreamOrdering() {
        // Every public accessor: none gives the BFC allocator or the sub-allocator itself.
        for (Method m : GpuBfcAllocator.class.getMethods()) {
            assertThat(m.getReturnType()).as(m.toString())
                    .isNotEqualTo(BfcAllocator.class)
                    .matches(t -> !SubAllocator.class.isAssignableFrom(t), "not a SubAllocator");
        }
        try (GpuBfcAllocator a = create(options().memoryLimitBytes(4 * MIB).virtualMemory(true))) {
            BfcAllocatorView view = a.allocator();
            assertThat(a.allocator()).as("one view, so that weakly held meters keep reading").isSameAs(view);
            for (Method m : view.getClass().getMethods()) {
                assertThat(m.getName()).as(m.toString()).doesNotStartWith("set")
                        .isNotIn("allocate", "allocateRaw", "deallocateRaw", "close", "clearStats");
            }
            // The view reads what the stream-ordered calls did.
            long p = a.allocateRaw(256, 1000);
            assertThat(view.bytesInUse()).isEqualTo(1024);
            assertThat(view.allocatedSize(p)).isEqualTo(1024);
            a.deallocateRaw(p, STREAM);
            assertThat(view.bytesInUse()).isZero();
            assertThat(a.allocateRaw(256, 1000)).as("still held back by its event").isNotEqualTo(p);
            assertThat(view.name()).isEqualTo("GPU_0_bfc");
            assertThat(view.getMemoryType()).isEqualTo(MemoryType.DEVICE);
            assertThat(a.virtualMemory()).isTrue();
        }
    }

    @Test
    void pauseNeedsVirtualMemory() {
        try (GpuBfcAllocator a = create(options().memoryLimitBytes(MIB))) {
            assertThatThrownBy(() -> a.pause(false)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("virtualMemory(true)");
            assertThatThrownBy(a::resume).isInstanceOf(IllegalStateException.class);
        }
    }

    @Test
    void theBackgroundPollerWakesAnAllocationWaitingForAStreamFree() throws Exception {
        GpuBfcOptions.Builder b = options().memoryLimitBytes(MIB).allowGrowth(false)
                .garbageCollection(false).eventPollIntervalMicros(50);
        try (GpuBfcAllocator a = create(b)) {
            long p = a.allocateRaw(256, MIB);
            a.deallocateRaw(p, STREAM);
            long start = System.nanoTime();
            AtomicReference<Thread> waiterThread = new AtomicReference<>();
            CompletableFuture<Long> waiting = CompletableFuture.supplyAsync(() -> {
                waiterThread.set(Thread.currentThread());
                return a.allocateRaw(256, MIB);
            });
            awaitRetryWait(waiterThread, waiting); // its first try met the pending free: it waits
            assertThat(waiting).isNotDone();
            driver.completeAllEvents();
            assertThat(waiting.get(9, TimeUnit.SECONDS)).isEqualTo(p);
            // Well before AllocatorRetry's 10 s deadline: woken by the poller, not by timing out.
            assertThat(System.nanoTime() - start).isLessThan(TimeUnit.SECONDS.toNanos(9));
            assertThat(a.pendingFrees()).isZero();
        }
    }
}
