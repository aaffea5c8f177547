/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import io.github.bfc4j.core.AllocationAttributes;
import io.github.bfc4j.core.AllocatorStats;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcAllocatorView;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.HistoryOptions;
import io.github.bfc4j.core.MemoryAllocator;
import io.github.bfc4j.core.MemorySnapshot;
import io.github.bfc4j.core.MemoryType;
import io.github.bfc4j.core.OutOfMemoryListener;
import io.github.bfc4j.core.SharedCounter;
import io.github.bfc4j.core.SubAllocator;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * A {@link BfcAllocator} over one GPU, made by {@link GpuBfcAllocators#create}, with
 * stream-ordered frees and (over virtual memory) pause/resume.
 *
 * <h2>Stream-ordered frees</h2>
 * {@link #deallocateRaw(long, long)} frees memory that kernels queued on a stream may still use.
 * It records an event on the stream; the allocator's timing counter stamps the freed chunk with a
 * count; until the event has completed, the chunk is only handed to allocations whose
 * {@code freedByFunc} allows its count, and every allocation made here asks for the largest count
 * whose events have all completed. Completed events advance the BFC allocator's safe frontier
 * ({@code SetSafeFrontier}), after which the chunks coalesce as usual.
 *
 * <pre>
 *  count:   1 (burnt)   2            3                 4
 *  free:                free(a, s1)  free(b)           free(c, s2)
 *  event:               e2 pending   none (immediate)  e4 done
 *  safe count = 1: a, b, c are all held back (3 and 4 wait behind e2: in order)
 *  e2 completes  -> safe count = 4, frontier 5: a, b, c reusable, coalesced on the next allocation
 * </pre>
 *
 * <p>Events are polled on each allocation, by {@link #pollEvents()}, and by a background thread
 * unless {@link GpuBfcOptions#eventPollIntervalMicros()} is 0. Before a region goes back to the
 * driver (garbage collection, {@link #close()}), every pending event is waited for.
 *
 * <p>Who holds the memory: {@link #recordHistory}, {@link #recordAnnotations},
 * {@link #snapshot()} (for pytorch.org/memory_viz) and {@link #addOutOfMemoryListener}, as on a
 * {@code BfcAllocator}.
 *
 * <p>Allocation and free go through this class only: {@link #allocator()} is a read-only view of
 * the BFC allocator (statistics, summaries, memory map), and the sub-allocator is not handed out,
 * since an allocation or free made around this class would ignore the stamps (and the
 * virtual-memory sub-allocator is not thread-safe).
 *
 * <p>Thread-safe, except that {@link #pause(boolean)}, {@link #resume()} and {@link #close()}
 * must not run while another thread allocates or frees.
 */
public final class GpuBfcAllocator implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(GpuBfcAllocator.class.getName());
    private static final int EVENT_POOL_LIMIT = 1024;
    /** The longest wait between two polls while polling fails (100 ms). */
    private static final long POLL_BACKOFF_MAX_NANOS = 100_000_000L;

    private final CudaDriver driver;
    private final int deviceId;
    private final SubAllocator subAllocator;
    private final CudaVirtualMemorySubAllocator vmm;
    private final BfcAllocator bfc;
    /** The one view handed out (meters hold it weakly: it lives as long as this allocator). */
    private final BfcAllocatorView view;
    private final SharedCounter counter = new SharedCounter();
    private final AllocationAttributes retryAttributes;
    private final AllocationAttributes noRetryAttributes;

    /** Serialises frees, so that the count read after a free is the one it stamped. */
    private final Object freeLock = new Object();

    /** The loans made by {@link #lendTo}, for {@link #close()}'s refusal while one has memory lent. */
    private final List<DeviceLoan> loans = new CopyOnWriteArrayList<>();
    /** Guards the pending queue and the event pool; taken under the BFC lock, never around it. */
    private final Object pendingLock = new Object();
    /** Guarded by pendingLock: a ring of (count, event) in free order; event 0 = already safe. */
    private long[] pendingCounts = new long[64];
    private long[] pendingEvents = new long[64];
    private int pendingHead;
    private int pendingSize;
    /** Guarded by pendingLock: completed events ready for reuse. */
    private final long[] eventPool = new long[EVENT_POOL_LIMIT];
    private int eventPoolSize;
    /** The largest count up to which every free is known safe. */
    private volatile long safeCount;

    /** Frees on a stream under way: close() waits for them before it releases the context. */
    private final AtomicInteger streamFreesUnderWay = new AtomicInteger();

    private final Thread poller;
    private final long pollIntervalNanos;
    private volatile boolean paused;
    private volatile boolean closed;

    GpuBfcAllocator(CudaDriver driver, int deviceId, SubAllocator subAllocator,
            CudaVirtualMemorySubAllocator vmm, long memoryLimit, String name, BfcOptions options,
            long pollIntervalMicros, ThreadFactory pollerThreads) {
        this.driver = driver;
        this.deviceId = deviceId;
        this.subAllocator = subAllocator;
        this.vmm = vmm;
        // Burn count 1: an allocation then always passes freedBefore >= 1, which no stamp
        // (>= 2) satisfies until its event completes; freedBefore == 0 would mean "no
        // constraint" to the BFC allocator.
        this.safeCount = counter.next();
        this.bfc = new BfcAllocator(new FencedSubAllocator(), memoryLimit, name, options);
        this.view = BfcAllocatorView.of(bfc);
        bfc.setTimingCounter(counter);
        this.retryAttributes = new AllocationAttributes(true, this::pollEvents);
        this.noRetryAttributes = new AllocationAttributes(false, this::pollEvents);
        this.pollIntervalNanos = pollIntervalMicros * 1000;
        if (pollIntervalMicros > 0) {
            poller = pollerThreads.newThread(this::pollLoop);
            poller.setName("bfc-cuda-events-" + name);
            poller.setDaemon(true);
            poller.start();
        } else {
            poller = null;
        }
    }

    /**
     * Allocates device memory, retrying (if the options allow) while other threads free.
     *
     * @param alignment a power of two (addresses are always 256-aligned)
     * @param numBytes the size
     * @return the device address, or 0 if the memory cannot be had
     * @throws IllegalStateException if paused or closed
     * @throws CudaException if a CUDA call fails (polling an event, obtaining a region)
     */
    public long allocateRaw(long alignment, long numBytes) {
        return allocateRaw(alignment, numBytes, true);
    }

    /**
     * Allocates device memory.
     *
     * @param alignment a power of two (addresses are always 256-aligned)
     * @param numBytes the size
     * @param retryOnFailure whether a failure may wait (up to 10 s) for frees, when the options
     *     allow retry
     * @return the device address, or 0 if the memory cannot be had
     * @throws IllegalStateException if paused or closed
     * @throws CudaException if a CUDA call fails (polling an event, obtaining a region)
     */
    public long allocateRaw(long alignment, long numBytes, boolean retryOnFailure) {
        return allocateRaw(alignment, numBytes, retryOnFailure, null);
    }

    /** {@link #allocateRaw(long, long, boolean)}, through {@code loan} unless it is null. */
    private long allocateRaw(long alignment, long numBytes, boolean retryOnFailure, MemoryAllocator.Loan loan) {
        checkNotPaused();
        AllocationAttributes attr = retryOnFailure ? retryAttributes : noRetryAttributes;
        long ptr = loan == null ? bfc.allocateRaw(alignment, numBytes, attr) : loan.allocateRaw(alignment, numBytes, attr);
        if (ptr != 0 && paused) {
            // pause() ran while this call waited for memory (the retry loop): the chunk it found
            // has no device memory behind it now. Not handed out.
            deallocateRaw(ptr, loan);
            checkNotPaused();
        }
        return ptr;
    }

    /**
     * Frees memory that no queued GPU work uses any more (the caller has synchronised): it is
     * reusable at once.
     *
     * @param ptr an address from {@link #allocateRaw}; 0 is a no-op
     * @throws IllegalArgumentException if {@code ptr} is not a live allocation, or is memory lent
     *     to a runtime ({@link #lendTo}: only its loan frees it); nothing is freed
     * @throws IllegalStateException if closed
     */
    public void deallocateRaw(long ptr) {
        deallocateRaw(ptr, null);
    }

    /** {@link #deallocateRaw(long)}, through {@code loan} unless it is null. */
    private void deallocateRaw(long ptr, MemoryAllocator.Loan loan) {
        if (ptr == 0) {
            return;
        }
        synchronized (freeLock) {
            if (loan == null) {
                bfc.deallocateRaw(ptr);
            } else {
                loan.deallocateRaw(ptr);
            }
            long count = counter.get();
            boolean immediate;
            synchronized (pendingLock) {
                immediate = pendingSize == 0;
                if (immediate) {
                    safeCount = count;
                } else {
                    pushPendingLocked(count, 0);
                }
            }
            if (immediate) {
                bfc.setSafeFrontier(count + 1);
            }
        }
    }

    /**
     * Frees memory that work already queued on {@code stream} may still use: records an event
     * on the stream, and the memory is handed out again only once the event has completed.
     *
     * @param ptr an address from {@link #allocateRaw}; 0 is a no-op
     * @param stream the {@code CUstream} the last use of the memory was queued on (0: the
     *     default stream)
     * @throws IllegalArgumentException if {@code ptr} is not a live allocation or is memory lent
     *     to a runtime ({@link #lendTo}), or
     *     {@code stream} is no stream (a number where no memory of the process is, which the
     *     driver would crash the JVM reading); nothing is freed, no event is left behind
     * @throws IllegalStateException if closed (a {@link #close()} on another thread waits for
     *     a free already past this check, which then finishes as if the close came after it)
     * @throws CudaException if creating or recording the event fails (nothing is freed)
     */
    public void deallocateRaw(long ptr, long stream) {
        if (ptr == 0) {
            return;
        }
        // Counted through the driver calls: close() waits for them before it releases the
        // context (the driver checks the retain, then makes the call; a release in between
        // would destroy the context, and the event with it, under the call). Counted before
        // closed is read, as close() sets closed before it reads the count: one of the two
        // sees the other.
        streamFreesUnderWay.incrementAndGet();
        try {
            checkOpen();
            deallocateRawCounted(ptr, stream);
        } finally {
            streamFreesUnderWay.decrementAndGet();
        }
    }

    /** {@link #deallocateRaw(long, long)} once counted in {@link #streamFreesUnderWay} and open. */
    private void deallocateRawCounted(long ptr, long stream) {
        long event = takeEvent();
        try {
            driver.eventRecord(deviceId, event, stream);
        } catch (CudaException | IllegalStateException e) {
            // The record's failure is the one to report; the destroy's, if any, goes with it.
            // IllegalStateException: the driver found the context not retained.
            throw Failures.attempt(e, () -> driver.eventDestroy(deviceId, event));
        } catch (IllegalArgumentException e) { // refused before it reached the driver
            throw Failures.attempt(e, () -> recycleEvent(event));
        }
        synchronized (freeLock) {
            try {
                bfc.deallocateRaw(ptr);
            } catch (RuntimeException e) {
                // After a concurrent close the event is destroyed, not pooled (a failure of the
                // destroy goes with e).
                throw Failures.attempt(e, () -> recycleEvent(event));
            }
            long count = counter.get();
            synchronized (pendingLock) {
                pushPendingLocked(count, event);
            }
        }
        if (poller != null) {
            LockSupport.unpark(poller);
        }
    }

    /**
     * Checks the pending frees' events in order and advances the safe frontier past every free
     * whose event (and every earlier one's) has completed. Called on each allocation.
     *
     * @return the largest count whose frees are all safe
     * @throws CudaException if querying an event fails
     */
    public long pollEvents() {
        long advanced = -1;
        synchronized (pendingLock) {
            while (pendingSize > 0) {
                long event = pendingEvents[pendingHead];
                if (event != 0) {
                    if (!driver.eventQuery(deviceId, event)) {
                        break;
                    }
                    recycleEventLocked(event);
                }
                advanced = pendingCounts[pendingHead];
                pendingHead = (pendingHead + 1) % pendingCounts.length;
                pendingSize--;
            }
            if (advanced >= 0) {
                safeCount = advanced;
            }
        }
        if (advanced >= 0) {
            bfc.setSafeFrontier(advanced + 1);
        }
        return safeCount;
    }

    /**
     * Gives every region with nothing in use back to the driver, as
     * {@code torch.cuda.empty_cache()} and {@link BfcAllocator#emptyCache()}: polls the pending
     * frees' events first; a region that holds memory freed on a stream whose event has not
     * completed stays (as does one with anything in use).
     *
     * @return the bytes given back
     * @throws IllegalStateException if paused or closed
     * @throws CudaException if a CUDA call fails (polling an event, freeing a region)
     */
    public long emptyCache() {
        checkOpen();
        checkNotPaused();
        pollEvents();
        return bfc.emptyCache();
    }

    /**
     * Starts the peaks ({@code peakBytesInUse}, {@code peakReservedBytes}) again from the current
     * figures, as {@code torch.cuda.reset_peak_memory_stats()} and
     * {@link BfcAllocator#resetPeakStats()}.
     */
    public void resetPeakStats() {
        bfc.resetPeakStats();
    }

    /**
     * The number of stream-ordered frees whose memory is not yet known to be safe.
     *
     * @return the pending frees, including immediate frees queued behind them
     */
    public int pendingFrees() {
        synchronized (pendingLock) {
            return pendingSize;
        }
    }

    /** Waits for every pending event (the memory behind them is about to go back). */
    private void synchronizePendingEvents() {
        synchronized (pendingLock) {
            for (int i = 0; i < pendingSize; i++) {
                long event = pendingEvents[(pendingHead + i) % pendingEvents.length];
                if (event != 0) {
                    driver.eventSynchronize(deviceId, event);
                }
            }
        }
    }

    private void pushPendingLocked(long count, long event) {
        if (pendingSize == pendingCounts.length) {
            long[] c = new long[pendingSize * 2];
            long[] e = new long[pendingSize * 2];
            for (int i = 0; i < pendingSize; i++) {
                c[i] = pendingCounts[(pendingHead + i) % pendingSize];
                e[i] = pendingEvents[(pendingHead + i) % pendingSize];
            }
            pendingCounts = c;
            pendingEvents = e;
            pendingHead = 0;
        }
        int tail = (pendingHead + pendingSize) % pendingCounts.length;
        pendingCounts[tail] = count;
        pendingEvents[tail] = event;
        pendingSize++;
    }

    private long takeEvent() {
        synchronized (pendingLock) {
            if (eventPoolSize > 0) {
                return eventPool[--eventPoolSize];
            }
        }
        return driver.eventCreate(deviceId);
    }

    private void recycleEvent(long event) {
        synchronized (pendingLock) {
            recycleEventLocked(event);
        }
    }

    private void recycleEventLocked(long event) {
        // Once closed, the pool has been destroyed (or is about to be, under this lock): an
        // event pooled after that would never be.
        if (!closed && eventPoolSize < EVENT_POOL_LIMIT) {
            eventPool[eventPoolSize++] = event;
        } else {
            driver.eventDestroy(deviceId, event);
        }
    }

    private void pollLoop() {
        int failures = 0; // in a row
        long nextWarning = 0;
        while (!closed) {
            boolean pending;
            synchronized (pendingLock) {
                pending = pendingSize > 0;
            }
            if (pending) {
                long park = pollIntervalNanos;
                try {
                    pollEvents();
                    failures = 0;
                } catch (CudaException e) {
                    // An error of earlier GPU work fails every query from then on: one warning a
                    // minute, and polls backing off to one every POLL_BACKOFF_MAX_NANOS, not a
                    // warning every interval.
                    failures++;
                    long now = System.nanoTime();
                    if (failures == 1 || now - nextWarning >= 0) {
                        LOG.log(Level.WARNING, "polling the events of stream-ordered frees of '" + bfc.name()
                                + "' failed" + (failures > 1 ? " (" + failures + " times in a row)" : "") + ": "
                                + e.getMessage() + "; while it fails, the poller backs off to one try every 100 ms and"
                                + " says so once a minute");
                        nextWarning = now + 60_000_000_000L;
                    }
                    park = Math.max(park, Math.min(POLL_BACKOFF_MAX_NANOS, 1_000_000L << Math.min(failures - 1, 7)));
                }
                LockSupport.parkNanos(this, park);
            } else {
                LockSupport.park(this);
            }
        }
    }

    /**
     * Releases the device memory of every region while keeping its addresses (torch_memory_saver's
     * pause): waits for pending frees' events, then unmaps and releases the physical memory.
     * Allocations fail with {@link IllegalStateException} until {@link #resume()}; live
     * allocations keep their addresses but must not be touched.
     *
     * @param backupToHost whether to copy the contents to pinned host memory so that
     *     {@link #resume()} restores them; otherwise they are lost
     * @throws IllegalStateException if the allocator was not made with virtual memory, or closed
     * @throws CudaException if a call fails; calling {@code pause} again carries on
     */
    public void pause(boolean backupToHost) {
        requireVirtualMemory("pause");
        synchronized (freeLock) {
            paused = true;
            synchronizePendingEvents();
            pollEvents();
            vmm.pause(backupToHost);
        }
    }

    /**
     * Re-creates the device memory of every region at the same addresses (with the contents, if
     * paused with a backup) and allows allocations again.
     *
     * @throws IllegalStateException if the allocator was not made with virtual memory, or closed
     * @throws CudaException if a call fails (e.g. the memory was taken meanwhile); the allocator
     *     stays paused and calling {@code resume} again carries on
     */
    public void resume() {
        requireVirtualMemory("resume");
        synchronized (freeLock) {
            vmm.resume();
            paused = false;
        }
    }

    /**
     * Whether {@link #pause(boolean)} holds.
     *
     * @return true while paused
     */
    public boolean isPaused() {
        return paused;
    }

    private void requireVirtualMemory(String what) {
        checkOpen();
        if (vmm == null) {
            throw new IllegalStateException(what + " needs virtual memory: allocator '" + bfc.name()
                    + "' was made without it (expected: GpuBfcOptions.builder().virtualMemory(true))");
        }
    }

    /**
     * Lends this allocator's memory to a runtime that frees it in its own terms (ONNX Runtime's
     * CUDA provider: {@code BfcCudaProvider}). Memory allocated through the loan is the
     * runtime's until it frees it through the loan: a {@link #deallocateRaw(long)} (or
     * {@link #deallocateRaw(long, long)}) of its address here is refused, naming
     * {@code runtime}, so that a double free of an address of the caller's own, which the
     * runtime was given since, cannot free memory the runtime's kernels still use.
     *
     * @param runtime who holds the memory, e.g. {@code ONNX Runtime (BfcCudaProvider over 'gpu0')}
     * @param release what frees it, e.g. {@code release the sessions, then close the provider}
     * @return the loan; close it once the runtime holds none of this allocator's memory
     * @throws NullPointerException if an argument is null
     * @throws IllegalStateException if 255 loans of this allocator are open or hold lent memory
     */
    public DeviceLoan lendTo(String runtime, String release) {
        DeviceLoan loan = new DeviceLoan(bfc.lendTo(runtime, release), runtime, release);
        loans.removeIf(DeviceLoan::done);   // so that loans made and closed over a long run do not pile up
        loans.add(loan);
        return loan;
    }

    /**
     * Memory of a {@link GpuBfcAllocator} lent to a runtime ({@link #lendTo}): allocated and freed
     * as the allocator's own {@link GpuBfcAllocator#allocateRaw(long, long)} and
     * {@link GpuBfcAllocator#deallocateRaw(long)} do (the same chunks, the same waits for
     * stream-ordered frees), but owned by the loan.
     */
    public final class DeviceLoan implements AutoCloseable {
        private final MemoryAllocator.Loan loan;
        private final String runtime;
        private final String release;
        private volatile boolean closed;

        private DeviceLoan(MemoryAllocator.Loan loan, String runtime, String release) {
            this.loan = loan;
            this.runtime = runtime;
            this.release = release;
        }

        /**
         * Allocates device memory to lend, as {@link GpuBfcAllocator#allocateRaw(long, long)}
         * does.
         *
         * @param alignment a power of two (addresses are always 256-aligned)
         * @param numBytes the size
         * @return the device address, or 0 if the memory cannot be had
         * @throws IllegalStateException if paused or closed, or the loan is closed
         * @throws CudaException if a CUDA call fails (polling an event, obtaining a region)
         */
        public long allocateRaw(long alignment, long numBytes) {
            return GpuBfcAllocator.this.allocateRaw(alignment, numBytes, true, loan);
        }

        /**
         * Frees lent memory that no queued GPU work uses any more, as
         * {@link GpuBfcAllocator#deallocateRaw(long)} does; also once the loan is closed.
         *
         * @param ptr an address this loan lent; 0 is a no-op
         * @throws IllegalArgumentException if {@code ptr} is not memory this loan lent (another
         *     loan's, the allocator's own, or already freed; nothing is freed)
         * @throws IllegalStateException if the allocator is closed
         */
        public void deallocateRaw(long ptr) {
            GpuBfcAllocator.this.deallocateRaw(ptr, loan);
        }

        /** Ends the loan: it lends no more; what it lent can still be freed through it. */
        @Override
        public void close() {
            closed = true;
            loan.close();
        }

        /** Whether the loan is closed and nothing it lent is left: {@link #close()} need not ask it. */
        private boolean done() {
            return closed && loan.lentAllocations() == 0;
        }
    }

    /**
     * Refuses a {@link #close()} while a loan has memory lent that its runtime has not freed:
     * giving that memory back would leave the runtime's queued and later work writing into
     * device memory that another allocation (or another process) may get.
     */
    private void refuseCloseWhileLent() {
        StringBuilder held = new StringBuilder();
        long n = 0;
        for (DeviceLoan l : loans) {
            long k = l.loan.lentAllocations();
            if (k > 0) {
                n += k;
                held.append(' ').append(l.runtime).append(" holds ").append(k)
                        .append(k == 1 ? " allocation" : " allocations").append(" of it: ").append(l.release)
                        .append('.');
            }
        }
        if (n > 0) {
            throw new IllegalStateException("close() refused: allocator '" + bfc.name() + "' has " + n
                    + (n == 1 ? " allocation" : " allocations") + " lent to a runtime that has not freed "
                    + (n == 1 ? "it" : "them") + " (its work on the device may still use " + (n == 1 ? "it" : "them")
                    + "), and nothing was closed." + held + " Then close this allocator.");
        }
    }

    /**
     * A read-only view of the underlying BFC allocator, for statistics, summaries and queries (and
     * Micrometer's {@code BfcAllocatorMetrics}); allocate and free through this class.
     *
     * @return the view, the same one on every call
     */
    public BfcAllocatorView allocator() {
        return view;
    }

    /**
     * Starts recording who holds the device's memory: every allocation, free, region obtained
     * and given back, and out-of-memory failure, with its time, thread,
     * {@link io.github.bfc4j.core.MemoryAnnotation} and (as the options say) Java stack, and with
     * each chunk allocated from then on, who allocated it. {@link BfcAllocator#recordHistory}; a
     * stack starts at the caller of this class. A free on a stream is recorded when it is made,
     * not when its event completes.
     *
     * @param options what to record, e.g. {@link HistoryOptions#defaults()}
     * @throws NullPointerException if {@code options} is null
     */
    public void recordHistory(HistoryOptions options) {
        bfc.recordHistory(options);
    }

    /** Stops recording the history; what was recorded stays ({@link BfcAllocator#stopHistory}). */
    public void stopHistory() {
        bfc.stopHistory();
    }

    /**
     * Whether each chunk allocated from now on keeps the annotation open on the allocating
     * thread ({@link BfcAllocator#recordAnnotations}).
     *
     * @param enabled true to record annotations, false to stop
     */
    public void recordAnnotations(boolean enabled) {
        bfc.recordAnnotations(enabled);
    }

    /**
     * Everything the allocator knows about the device's memory now: its memory map, with who
     * holds each chunk when recorded, and the recorded history ({@link BfcAllocator#snapshot}).
     * {@link #writePyTorchPickle(Path)} writes it for pytorch.org/memory_viz as this device's.
     *
     * @return the immutable snapshot
     */
    public MemorySnapshot snapshot() {
        return bfc.snapshot();
    }

    /**
     * Writes {@link #snapshot()} as PyTorch's memory snapshot of this allocator's device
     * ({@link MemorySnapshot#writePyTorchPickle(Path, int)}), to a file (created or replaced),
     * for pytorch.org/memory_viz or {@code torch.cuda._memory_viz}.
     *
     * @param file the file, e.g. {@code snapshot.pickle}
     * @throws IOException if the file cannot be written
     */
    public void writePyTorchPickle(Path file) throws IOException {
        snapshot().writePyTorchPickle(file, deviceId);
    }

    /**
     * Tells {@code listener} of every failed allocation, with the allocator's state at the
     * moment of failure ({@link BfcAllocator#addOutOfMemoryListener}).
     *
     * @param listener the listener
     * @throws NullPointerException if {@code listener} is null
     */
    public void addOutOfMemoryListener(OutOfMemoryListener listener) {
        bfc.addOutOfMemoryListener(listener);
    }

    /**
     * Stops telling a listener of failures.
     *
     * @param listener a listener given to {@link #addOutOfMemoryListener}
     * @return whether it was there
     * @throws NullPointerException if {@code listener} is null
     */
    public boolean removeOutOfMemoryListener(OutOfMemoryListener listener) {
        return bfc.removeOutOfMemoryListener(listener);
    }

    /**
     * The allocator's statistics.
     *
     * @return {@link BfcAllocator#getStats()}
     */
    public AllocatorStats getStats() {
        return bfc.getStats();
    }

    /**
     * Whether regions come from one reserved virtual range ({@link CudaVirtualMemorySubAllocator},
     * {@link GpuBfcOptions#virtualMemory()}) rather than from {@code cuMemAlloc}
     * ({@link CudaDeviceSubAllocator}).
     *
     * @return true with virtual memory
     */
    public boolean virtualMemory() {
        return vmm != null;
    }

    /**
     * The size of the reserved virtual range.
     *
     * @return bytes, a multiple of the device's allocation granularity; 0 without virtual memory
     */
    public long reservedAddressSpaceBytes() {
        return vmm != null ? vmm.reservedBytes() : 0;
    }

    /**
     * The device.
     *
     * @return its ordinal
     */
    public int deviceId() {
        return deviceId;
    }

    /**
     * The memory limit.
     *
     * @return bytes
     */
    public long memoryLimit() {
        return bfc.memoryLimit();
    }

    private void checkNotPaused() {
        if (paused) {
            throw new IllegalStateException("allocator '" + bfc.name() + "' is paused; call resume() first");
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("allocator '" + bfc.name() + "' is closed");
        }
    }

    /**
     * Waits for pending frees' events, gives every region back (live allocations become invalid),
     * destroys the events, then closes the sub-allocator (the reservation and the retain of the
     * device's primary context go back). Every step is attempted even when an earlier one failed.
     * A free on a stream that another thread has under way finishes first (its event is then
     * waited for and destroyed here); one that starts later throws. Idempotent: a second call
     * does nothing.
     *
     * <p>Refused while memory lent to a runtime ({@link #lendTo}, ONNX Runtime's CUDA provider)
     * is not yet freed through its loan: the runtime's work may still use it. The allocator then
     * stays open and unchanged; release the runtime's sessions (the message says what each
     * runtime needs), then close it. Memory a runtime never frees stays until the process ends.
     * A loan that allocates while {@code close()} runs is a race the refusal cannot see: stop
     * the runtime's work before closing.
     *
     * @throws IllegalStateException if memory lent to a runtime is not yet freed; nothing closed
     * @throws CudaException the first call that failed, the later failures suppressed by it
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        refuseCloseWhileLent();
        closed = true;
        // Frees on a stream already past their check of closed finish first (microseconds).
        while (streamFreesUnderWay.get() != 0) {
            LockSupport.parkNanos(this, 20_000);
        }
        if (poller != null) {
            LockSupport.unpark(poller);
            try {
                poller.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        RuntimeException failure = null;
        synchronized (freeLock) {
            failure = Failures.attempt(failure, () -> {
                synchronizePendingEvents();
                pollEvents();
            });
            failure = Failures.attempt(failure, bfc::close);
            // Events before the sub-allocator: destroying one needs the context it releases.
            failure = destroyEvents(failure);
            failure = Failures.attempt(failure, this::closeSubAllocator);
        }
        Failures.throwIfAny(failure);
    }

    private void closeSubAllocator() {
        if (vmm != null) {
            vmm.close();
        } else if (subAllocator instanceof CudaBlockSubAllocator blocks) {
            blocks.close();
        }
    }

    /** Destroys the pooled events and any still pending (their frees are moot now). */
    private RuntimeException destroyEvents(RuntimeException failure) {
        synchronized (pendingLock) {
            while (pendingSize > 0) {
                long event = pendingEvents[pendingHead];
                pendingHead = (pendingHead + 1) % pendingEvents.length;
                pendingSize--;
                if (event != 0) {
                    failure = Failures.attempt(failure, () -> driver.eventDestroy(deviceId, event));
                }
            }
            while (eventPoolSize > 0) {
                long event = eventPool[--eventPoolSize];
                failure = Failures.attempt(failure, () -> driver.eventDestroy(deviceId, event));
            }
        }
        return failure;
    }

    @Override
    public String toString() {
        return "GpuBfcAllocator[" + bfc.name() + " on device " + deviceId + ", limit " + bfc.memoryLimit()
                + (vmm != null ? ", virtual memory" : "") + (paused ? ", paused" : "") + "]";
    }

    /**
     * The sub-allocator as the BFC allocator sees it: a region goes back to the driver only
     * after every pending stream-ordered free's event has completed.
     */
    private final class FencedSubAllocator implements SubAllocator {
        @Override
        public Block alloc(long alignment, long numBytes) {
            return subAllocator.alloc(alignment, numBytes);
        }

        /**
         * Gives a region back once the pending frees' events have completed. A failed wait (an
         * error of earlier GPU work: the context is broken and runs nothing more) still gives
         * the region back, and is thrown after it: kept by the sub-allocator for an allocator
         * that has let it go, the region and the context's retain would stay for the process's
         * life, so a context hit by an error could never be recreated.
         */
        @Override
        public void free(long ptr, long numBytes) {
            RuntimeException fence = Failures.attempt(null, GpuBfcAllocator.this::synchronizePendingEvents);
            Failures.throwIfAny(Failures.attempt(fence, () -> subAllocator.free(ptr, numBytes)));
        }

        @Override
        public boolean supportsCoalescing() {
            return subAllocator.supportsCoalescing();
        }

        @Override
        public MemoryType memoryType() {
            return subAllocator.memoryType();
        }

        @Override
        public int deviceId() {
            return subAllocator.deviceId();
        }
    }
}
