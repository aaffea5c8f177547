/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's GpuVirtualMemAllocator (tensorflow/core/common_runtime/gpu/
 * gpu_virtual_mem_allocator.{h,cc}; Copyright 2020 The TensorFlow Authors), licensed under the
 * Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import io.github.bfc4j.core.MemoryType;
import io.github.bfc4j.core.SubAllocator;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Device memory through CUDA's virtual memory management: TensorFlow's
 * {@code GpuVirtualMemAllocator}, plus pause/resume as torch_memory_saver does it.
 *
 * <pre>
 *  reservation (cuMemAddressReserve, once)  base ............................. base + size
 *  | mapping 0       | mapping 1  | mapping 2             |  not yet backed          |
 *  | cuMemCreate +   |            |                       |                          |
 *  | cuMemMap +      |            |                       |                          |
 *  | cuMemSetAccess  |            |                       |                          |
 *                                                         ^ base + nextAllocOffset
 * </pre>
 *
 * <ul>
 *   <li>The constructor reserves {@code virtualAddressSpaceBytes} (rounded up to the
 *       granularity) once.</li>
 *   <li>{@link #alloc} rounds the request up to the device's minimum allocation granularity,
 *       backs it with a new physical allocation mapped right after the previous one, and grants
 *       the device read-write access. Consecutive blocks are adjacent, so
 *       {@link #supportsCoalescing()} is true and the BFC allocator merges them into one region.</li>
 *   <li>{@link #free} takes a run of whole adjacent mappings (one or several blocks), unmaps and
 *       releases them; if the run was at the end, the next block goes right after the highest
 *       live mapping (as upstream, a freed hole in the middle is not reused).</li>
 *   <li>{@link #pause(boolean)} synchronizes the context, then unmaps and releases the physical
 *       memory of every mapping, keeping
 *       the virtual addresses (and, if asked, a copy of the contents in pinned host memory);
 *       {@link #resume()} creates new physical memory and maps it at the same addresses. Each
 *       mapping converges on its own, so a pause or resume that failed half-way can simply be
 *       called again.</li>
 * </ul>
 *
 * <p>Out-of-memory answers {@code null} (so that the BFC allocator backs off); any other CUDA
 * error is a {@link CudaException}. Only the owning device gets access (upstream's peer access
 * is not ported). The device's primary context is retained, and the range reserved, from
 * construction to {@link #close()}, or, when an allocator still holds mappings then, until it has
 * given the last of them back. A mapping that an allocator obtained is freed by that allocator
 * only ({@link SubAllocator#callingAllocator()}). Its calls are serialised on this object; call
 * {@link #pause} and {@link #resume} only while no other thread uses the allocator.
 */
public final class CudaVirtualMemorySubAllocator implements SubAllocator, AutoCloseable {

    private static final System.Logger LOG = System.getLogger(CudaVirtualMemorySubAllocator.class.getName());

    /** One physical allocation mapped at {@code va}. */
    private static final class Mapping {
        final long va;
        final long bytes;
        /** The physical allocation, 0 while paused (released). */
        long handle;
        /** Whether {@link #handle} is mapped at {@link #va} with access granted. */
        boolean mapped;
        /** Pinned host copy of the contents while paused with backup, else 0. */
        long backupHostPtr;
        /** The allocator that obtained it and has not given it up, null for a call of other code. */
        String allocator;

        Mapping(long va, long bytes, long handle, String allocator) {
            this.va = va;
            this.bytes = bytes;
            this.handle = handle;
            this.mapped = true;
            this.allocator = allocator;
        }
    }

    private final CudaDriver driver;
    private final int deviceId;
    private final long granularity;
    private final long base;
    private final long sizeBytes;
    /** Upstream's {@code next_alloc_offset_}. */
    private long nextAllocOffset;
    /** Upstream's {@code mappings_}, by virtual address. */
    private final TreeMap<Long, Mapping> mappings = new TreeMap<>();
    private boolean paused;
    private boolean closed;

    /**
     * Reserves a virtual address range on one GPU. Port of {@code GpuVirtualMemAllocator::Create}.
     *
     * @param deviceId the device's ordinal
     * @param virtualAddressSpaceBytes how much to reserve: the most this sub-allocator can ever
     *     have mapped at once
     * @throws CudaUnavailableException if no usable GPU is here (the probe's sentence)
     * @throws IllegalArgumentException if no device has that ordinal, or the size is not positive
     * @throws IllegalStateException if the device does not support virtual memory management
     * @throws CudaException if retaining the device's primary context or the reservation fails
     *     (nothing stays retained or reserved)
     */
    public CudaVirtualMemorySubAllocator(int deviceId, long virtualAddressSpaceBytes) {
        this(CudaProbe.driver(), deviceId, virtualAddressSpaceBytes);
    }

    CudaVirtualMemorySubAllocator(CudaDriver driver, int deviceId, long virtualAddressSpaceBytes) {
        this.driver = driver;
        this.deviceId = GpuBfcAllocators.checkDeviceId(driver, deviceId);
        if (virtualAddressSpaceBytes <= 0) {
            throw new IllegalArgumentException("virtualAddressSpaceBytes=" + virtualAddressSpaceBytes
                    + " (expected: > 0, the most device memory the allocator may map at once)");
        }
        if (!driver.deviceInfo(deviceId).virtualMemoryManagement()) {
            throw new IllegalStateException("GPU " + deviceId + " does not support virtual memory"
                    + " address management; use CudaDeviceSubAllocator (GpuBfcOptions.virtualMemory(false)).");
        }
        driver.retainPrimaryContext(deviceId);
        long g;
        long size;
        long reserved;
        try {
            g = driver.allocationGranularity(deviceId);
            if (g <= 0 || (g & (g - 1)) != 0) {
                throw new IllegalStateException("cuMemGetAllocationGranularity returned " + g
                        + " for GPU " + deviceId + " (expected: a power of two)");
            }
            if (virtualAddressSpaceBytes > Long.MAX_VALUE - (g - 1)) {
                throw new IllegalArgumentException("virtualAddressSpaceBytes=" + virtualAddressSpaceBytes
                        + " cannot be reserved: it rounds up past 2^63 bytes at GPU " + deviceId
                        + "'s granularity of " + g + " bytes (expected: at most " + (Long.MAX_VALUE & -g)
                        + "; GpuBfcAllocators reserves GpuBfcOptions.virtualAddressSpaceBytes, or the memory"
                        + " limit if that is 0)");
            }
            // Must be aligned to the page size and larger than the granularity; the granularity
            // is a multiple of the page size.
            size = alignUp(virtualAddressSpaceBytes, g);
            reserved = reserve(driver, deviceId, size);
        } catch (RuntimeException e) {
            try {
                driver.releasePrimaryContext(deviceId);
            } catch (RuntimeException r) {
                e.addSuppressed(r);
            }
            throw e;
        }
        this.granularity = g;
        this.base = reserved;
        this.sizeBytes = size;
        LOG.log(Level.DEBUG, "Reserved GPU virtual memory at 0x{0} of size {1} bytes",
                Long.toHexString(base), size);
    }

    /**
     * Reserves {@code size} bytes. An out-of-memory answer says which setting asked for them: a
     * GPU's virtual address space is far smaller than a {@code long} can say (an H200 reserves
     * 2^46 bytes, refuses 2^47), and all the reservations of a process share it.
     */
    private static long reserve(CudaDriver driver, int deviceId, long size) {
        try {
            return driver.addressReserve(deviceId, size, 0);
        } catch (CudaException e) {
            if (!e.isOutOfMemory()) {
                throw e;
            }
            CudaException said = new CudaException(e.code(), e.errorName(), e.call() + " for virtualAddressSpaceBytes="
                    + size + " on GPU " + deviceId + " (expected: a range the GPU's virtual address space still has"
                    + " room for, which is far smaller than 2^63 bytes and shared by every reservation of the"
                    + " process; GpuBfcAllocators reserves GpuBfcOptions.virtualAddressSpaceBytes, or the memory"
                    + " limit if that is 0)");
            said.initCause(e);
            throw said;
        }
    }

    /** Rounds value up to the power-of-two alignment; fails on overflow. */
    static long alignUp(long value, long alignment) {
        long r = (value + alignment - 1) & ~(alignment - 1);
        if (r < value) {
            throw new IllegalArgumentException("value=" + value + " (expected: small enough to round up to "
                    + alignment + ")");
        }
        return r;
    }

    /**
     * Port of {@code GpuVirtualMemAllocator::Alloc}: backs the next {@code numBytes} (rounded up
     * to the granularity) of the reservation with new physical memory.
     *
     * @return the block, or {@code null} if the reservation is exhausted or the device is out of
     *     memory
     * @throws IllegalStateException if paused or closed
     * @throws CudaException for a CUDA error other than out-of-memory
     */
    @Override
    public synchronized Block alloc(long alignment, long numBytes) {
        checkUsable("alloc");
        if (numBytes <= 0) {
            return null;
        }
        // (Checked before rounding too: a request near Long.MAX_VALUE cannot be rounded up.)
        long paddedBytes = numBytes > sizeBytes - nextAllocOffset ? numBytes : alignUp(numBytes, granularity);
        long nextVa = base + nextAllocOffset;
        if (paddedBytes > sizeBytes - nextAllocOffset) {
            LOG.log(Level.WARNING, "OOM in GPU virtual memory allocator when attempting to allocate"
                    + " '{'request: {0}, aligned: {1}'}' bytes.", numBytes, paddedBytes);
            return null;
        }
        long handle;
        try {
            handle = driver.memCreate(deviceId, paddedBytes);
        } catch (CudaException e) {
            return nullIfOutOfMemory(e);
        }
        try {
            mapAndGrant(nextVa, paddedBytes, handle);
        } catch (CudaException e) {
            RuntimeException release = Failures.attempt(null, () -> driver.memRelease(deviceId, handle));
            if (release != null) { // the handle leaks: say so rather than answer "try less"
                e.addSuppressed(release);
                throw e;
            }
            return nullIfOutOfMemory(e);
        }
        nextAllocOffset += paddedBytes;
        mappings.put(nextVa, new Mapping(nextVa, paddedBytes, handle, SubAllocator.callingAllocator()));
        return new Block(nextVa, paddedBytes);
    }

    /** Upstream's {@code GpuDriver::MapMemory}: map, then set access (unmapping if that fails). */
    private void mapAndGrant(long va, long bytes, long handle) {
        driver.memMap(deviceId, va, bytes, handle);
        try {
            driver.memSetAccess(deviceId, va, bytes);
        } catch (CudaException e) {
            throw Failures.attempt(e, () -> driver.memUnmap(deviceId, va, bytes));
        }
    }

    /**
     * DEVIATION(port): upstream logs every error and answers null; here only out-of-memory is
     * "try less", any other CUDA error is thrown (docs/deviations.md C2).
     */
    private static Block nullIfOutOfMemory(CudaException e) {
        if (e.isOutOfMemory()) {
            LOG.log(Level.DEBUG, "{0}", e.getMessage());
            return null;
        }
        throw e;
    }

    /**
     * Port of {@code GpuVirtualMemAllocator::Free}: unmaps and releases the run of adjacent
     * mappings that starts at {@code ptr} and covers exactly {@code numBytes}. Allowed while
     * paused (the mappings' host copies are freed).
     *
     * @throws IllegalArgumentException if no mapping starts at {@code ptr}, or the run does not
     *     add up to exactly {@code numBytes}, or an allocator obtained a mapping of the run and
     *     that allocator does not make this call ({@link SubAllocator#callingAllocator()});
     *     nothing changes
     * @throws IllegalStateException if closed, unless an allocator gives back mappings it still
     *     held at the close (every other mapping was released then)
     * @throws CudaException if unmapping or releasing fails (after {@link #close()}, the mappings
     *     are forgotten all the same, as {@code close()} forgets them)
     */
    @Override
    public synchronized void free(long ptr, long numBytes) {
        boolean byAllocator = SubAllocator.callingAllocator() != null;
        if (closed && !byAllocator) {
            throw new IllegalStateException("free after close: " + this);
        }
        // DEVIATION(port): upstream logs and ignores a bad free; the SubAllocator contract
        // throws and changes nothing (docs/deviations.md C3).
        Mapping first = mappings.get(ptr);
        if (first == null) {
            throw new IllegalArgumentException("Could not find GPU vmem mapping for address 0x"
                    + Long.toHexString(ptr) + " (expected: an address returned by alloc and not freed)");
        }
        if (numBytes <= 0) {
            throw new IllegalArgumentException("Invalid size requested for freeing GPU vmem mapping at 0x"
                    + Long.toHexString(ptr) + ": " + numBytes + " bytes (expected: the sizes of whole blocks from"
                    + " alloc)");
        }
        List<Mapping> run = new ArrayList<>();
        long total = 0;
        for (Map.Entry<Long, Mapping> e : mappings.tailMap(ptr, true).entrySet()) {
            if (total >= numBytes || e.getKey() != ptr + total) {
                break;
            }
            run.add(e.getValue());
            total += e.getValue().bytes;
        }
        if (total != numBytes) {
            throw new IllegalArgumentException("Invalid size requested for freeing GPU vmem mapping at 0x"
                    + Long.toHexString(ptr) + ": got " + numBytes + " bytes but the adjacent mappings"
                    + " there add up to " + total + " (expected: the sizes of whole blocks from alloc)");
        }
        // DEVIATION(port): upstream unmaps it, and its allocator hands out addresses that are
        // gone (docs/deviations.md #26).
        for (Mapping m : run) {
            SubAllocator.refuseIfAllocatorHolds(m.allocator, "the mapping at 0x" + Long.toHexString(m.va), ptr,
                    numBytes);
        }
        for (Mapping m : run) {
            // The allocator is done with it, even if unmapping fails: close() may release it.
            m.allocator = null;
        }
        if (closed) {
            // As close() does: every call attempted, a mapping whose release fails forgotten, and
            // the reservation and the context released after the last one all the same.
            RuntimeException failure = null;
            for (Mapping m : run) {
                failure = releaseAttempted(failure, m);
                mappings.remove(m.va);
            }
            if (mappings.isEmpty()) {
                failure = Failures.attempt(failure, this::releaseReservation);
            }
            Failures.throwIfAny(failure);
            return;
        }
        for (Mapping m : run) {
            releasePhysical(m);
            if (m.backupHostPtr != 0) {
                driver.hostFree(deviceId, m.backupHostPtr);
                m.backupHostPtr = 0;
            }
            mappings.remove(m.va);
        }
        // Move back the next_alloc_offset_ if this free was at the end.
        // DEVIATION(port): upstream moves it back to the start of the freed run only; here it
        // goes back to the end of the highest live mapping, so that runs freed in any order
        // give the whole free tail back (upstream loses every hole below the last run freed;
        // docs/deviations.md C1).
        if (mappings.higherKey(ptr) == null) {
            Map.Entry<Long, Mapping> last = mappings.lastEntry();
            nextAllocOffset = last == null ? 0 : last.getKey() + last.getValue().bytes - base;
        }
    }

    private void releasePhysical(Mapping m) {
        if (m.mapped) {
            driver.memUnmap(deviceId, m.va, m.bytes);
            m.mapped = false;
        }
        if (m.handle != 0) {
            driver.memRelease(deviceId, m.handle);
            m.handle = 0;
        }
    }

    /**
     * Releases the physical memory of every mapping, keeping the virtual addresses: the device
     * memory becomes free for others while the allocator's addresses stay reserved. Waits for
     * all work queued on the device's context first ({@code cuCtxSynchronize}). Until
     * {@link #resume()}, {@link #alloc} throws and the addresses must not be touched.
     *
     * @param backupToHost whether to copy each mapping's contents to pinned host memory first,
     *     so that {@link #resume()} restores them; otherwise the contents are lost
     * @throws IllegalStateException if closed
     * @throws CudaException if a call fails; the mappings released so far stay released, and
     *     calling {@code pause} again carries on
     */
    public synchronized void pause(boolean backupToHost) {
        if (closed) {
            throw new IllegalStateException("pause after close: " + this);
        }
        paused = true;
        // No kernel may still use (or, with a backup, still write) the memory being released.
        driver.contextSynchronize(deviceId);
        for (Mapping m : mappings.values()) {
            if (backupToHost && m.mapped && m.backupHostPtr == 0) {
                long host = driver.hostAlloc(deviceId, m.bytes);
                try {
                    driver.memcpyDtoH(deviceId, host, m.va, m.bytes);
                } catch (CudaException e) {
                    throw Failures.attempt(e, () -> driver.hostFree(deviceId, host));
                }
                m.backupHostPtr = host;
            }
            releasePhysical(m);
        }
    }

    /**
     * Creates physical memory for every mapping again and maps it at the same address, copying
     * the host backup back where {@link #pause(boolean) pause(true)} made one.
     *
     * @throws IllegalStateException if closed
     * @throws CudaException if a call fails (e.g. out of memory because someone else took it);
     *     the allocator stays paused, and calling {@code resume} again carries on
     */
    public synchronized void resume() {
        if (closed) {
            throw new IllegalStateException("resume after close: " + this);
        }
        for (Mapping m : mappings.values()) {
            if (m.handle == 0) {
                m.handle = driver.memCreate(deviceId, m.bytes);
            }
            if (!m.mapped) {
                mapAndGrant(m.va, m.bytes, m.handle);
                m.mapped = true;
            }
            if (m.backupHostPtr != 0) {
                driver.memcpyHtoD(deviceId, m.va, m.backupHostPtr, m.bytes);
                driver.hostFree(deviceId, m.backupHostPtr);
                m.backupHostPtr = 0;
            }
        }
        paused = false;
    }

    /**
     * Whether {@link #pause(boolean)} was called without a successful {@link #resume()} since.
     *
     * @return true while paused
     */
    public synchronized boolean isPaused() {
        return paused;
    }

    /**
     * The bytes handed out by {@link #alloc} and not freed (mapped or, while paused, only
     * reserved).
     *
     * @return the sum of the live blocks' sizes
     */
    public synchronized long allocatedBytes() {
        long sum = 0;
        for (Mapping m : mappings.values()) {
            sum += m.bytes;
        }
        return sum;
    }

    /**
     * The bytes backed by physical memory now.
     *
     * @return {@link #allocatedBytes()} while running, 0 once fully paused
     */
    public synchronized long physicalBytes() {
        long sum = 0;
        for (Mapping m : mappings.values()) {
            if (m.handle != 0) {
                sum += m.bytes;
            }
        }
        return sum;
    }

    /**
     * The allocation granularity that every block is rounded up to.
     *
     * @return the device's minimum granularity
     */
    public long granularity() {
        return granularity;
    }

    /**
     * The start of the reserved range.
     *
     * @return the base virtual address
     */
    public long baseAddress() {
        return base;
    }

    /**
     * The size of the reserved range.
     *
     * @return bytes, a multiple of {@link #granularity()}
     */
    public long reservedBytes() {
        return sizeBytes;
    }

    /** Mappings are adjacent: true, as upstream. */
    @Override
    public boolean supportsCoalescing() {
        return true;
    }

    @Override
    public MemoryType memoryType() {
        return MemoryType.DEVICE;
    }

    /**
     * The device this sub-allocator maps memory on; the device that PyTorch snapshots of its
     * allocator say.
     *
     * @return the ordinal
     */
    @Override
    public int deviceId() {
        return deviceId;
    }

    private void checkUsable(String what) {
        if (closed) {
            throw new IllegalStateException(what + " after close: " + this);
        }
        if (paused) {
            throw new IllegalStateException(what + " while paused: " + this
                    + " (call resume() first)");
        }
    }

    /**
     * Port of {@code ~GpuVirtualMemAllocator}: unmaps and releases every mapping that no
     * allocator holds, frees host backups and the reservation, and releases the device's primary
     * context. A mapping that an allocator obtained and has not given back stays mapped, since
     * the allocator may still hand out its addresses: the allocator releases it when it gives it
     * back (its {@code close()}), and the reservation and the context go back after the last
     * such mapping. Every one of those calls is attempted even when an earlier one failed, as
     * upstream's calls log and carry on (what failed stays leaked, and is named in the
     * exception). Idempotent: a second call does nothing.
     *
     * @throws CudaException the first call that failed, the later failures suppressed by it
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        RuntimeException failure = null;
        String holder = null;
        for (var it = mappings.values().iterator(); it.hasNext(); ) {
            Mapping m = it.next();
            if (m.allocator != null) {
                holder = m.allocator;
                continue;
            }
            failure = releaseAttempted(failure, m);
            it.remove();
        }
        if (mappings.isEmpty()) {
            failure = Failures.attempt(failure, this::releaseReservation);
        } else {
            LOG.log(Level.WARNING, "{0} closed while allocator ''{1}'' holds {2} of its mappings: they are"
                    + " released, and the reservation and the context after them, when the allocator gives them"
                    + " back", this, holder, mappings.size());
        }
        Failures.throwIfAny(failure);
    }

    /** Unmaps and releases a mapping and frees its host backup, each attempted (for close). */
    private RuntimeException releaseAttempted(RuntimeException failure, Mapping m) {
        if (m.mapped) {
            failure = Failures.attempt(failure, () -> driver.memUnmap(deviceId, m.va, m.bytes));
        }
        if (m.handle != 0) {
            failure = Failures.attempt(failure, () -> driver.memRelease(deviceId, m.handle));
        }
        if (m.backupHostPtr != 0) {
            failure = Failures.attempt(failure, () -> driver.hostFree(deviceId, m.backupHostPtr));
        }
        return failure;
    }

    /** Frees the reservation and releases the context, both attempted. */
    private void releaseReservation() {
        RuntimeException failure = Failures.attempt(null, () -> driver.addressFree(deviceId, base, sizeBytes));
        failure = Failures.attempt(failure, () -> driver.releasePrimaryContext(deviceId));
        Failures.throwIfAny(failure);
    }

    @Override
    public synchronized String toString() {
        return "CudaVirtualMemorySubAllocator[device " + deviceId + ", 0x" + Long.toHexString(base)
                + " + " + sizeBytes + ", " + mappings.size() + " mappings"
                + (paused ? ", paused" : "") + (closed ? ", closed" : "") + "]";
    }
}
