/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cpu;

import io.github.bfc4j.core.MemoryType;
import io.github.bfc4j.core.SubAllocator;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.Map;
import java.util.TreeMap;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;

/**
 * Off-heap host memory for a {@link io.github.bfc4j.core.BfcAllocator}: each region is a
 * {@code malloc} through JavaCPP, over-allocated by {@code alignment - 1} bytes and aligned up,
 * and {@code free}d when the allocator gives it back. A region that an allocator obtained is
 * freed only by that allocator: a {@code free} of it from other code (or from inside another
 * allocator's call) is refused, since the allocator's views still reach its memory.
 *
 * <p><b>Overhead:</b> at most {@code alignment - 1} bytes per region (255 at the default 256),
 * plus malloc's own header; regions are at least 2 MiB, so under 0.02%.
 *
 * <p><b>Returned to the OS:</b> glibc serves blocks above its mmap threshold (128 KiB rising to at
 * most 32 MiB) with {@code mmap} and unmaps them on {@code free}; smaller blocks may be served
 * from the heap, whose free pages {@code malloc_trim(0)} returns (JavaCPP's
 * {@code Pointer.trimMemory}, reached by reflection since it is private; skipped where a JavaCPP
 * version lacks it and, on the module path, unless JavaCPP's package is opened to this module:
 * {@code --add-opens org.bytedeco.javacpp/org.bytedeco.javacpp=io.github.bfc4j.cpu}). A trim walks every free chunk of every malloc arena, so it costs from
 * microseconds to milliseconds even when there is nothing to return: it runs once at least
 * {@code trimThresholdBytes} have been freed since the last one ({@value
 * #DEFAULT_TRIM_THRESHOLD_BYTES} bytes by default; {@link #TRIM_ON_EVERY_FREE},
 * {@link #NEVER_TRIM}).
 *
 * <p>Regions never overlap a live region (checked on every {@code alloc}, which throws
 * {@link IllegalStateException} rather than hand out overlapping memory), and {@code free}
 * rejects an address or size it did not hand out. Thread-safe.
 */
public final class AlignedHostSubAllocator implements SubAllocator {

    /** The default alignment of regions. */
    public static final long DEFAULT_ALIGNMENT = 256;

    /** The smallest alignment accepted: a cache line. */
    public static final long MIN_ALIGNMENT = 64;

    /**
     * The default trim threshold, 32 MiB: glibc's largest dynamic mmap threshold on 64-bit
     * systems, so a free that reaches it has given back at least a large heap block or several
     * smaller ones, and a trim costs little beside touching that much memory.
     */
    public static final long DEFAULT_TRIM_THRESHOLD_BYTES = 32L << 20;

    /** A trim threshold of 0: {@code malloc_trim} after every free. */
    public static final long TRIM_ON_EVERY_FREE = 0;

    /** A trim threshold never reached: no {@code malloc_trim} at all. */
    public static final long NEVER_TRIM = Long.MAX_VALUE;

    private static final MethodHandle TRIM_MEMORY = findTrimMemory();

    private final long alignment;
    private final long trimThresholdBytes;
    private final Runnable trim;
    /** Runs with each new region's address before it is recorded: a test's way to fail there. */
    private final java.util.function.LongConsumer beforeRecord;

    /** Bytes freed since the last trim (or since construction). Guarded by this. */
    private long freedSinceTrim;

    /** Live regions by aligned address. Guarded by this. */
    private final TreeMap<Long, Region> live = new TreeMap<>(Long::compareUnsigned);

    /** Guarded by this. */
    private long liveBytes;

    /** @param owner the allocator that obtained the region, null for a call of other code */
    private record Region(Pointer raw, long ptr, long bytes, String owner) {
    }

    /**
     * Regions aligned to {@value #DEFAULT_ALIGNMENT} bytes, trimmed every
     * {@value #DEFAULT_TRIM_THRESHOLD_BYTES} bytes freed.
     *
     * @throws IllegalStateException if JavaCPP's native library for this platform cannot be
     *     loaded: the message names what to add
     */
    public AlignedHostSubAllocator() {
        this(DEFAULT_ALIGNMENT);
    }

    /**
     * Regions of the given alignment, trimmed every {@value #DEFAULT_TRIM_THRESHOLD_BYTES} bytes
     * freed.
     *
     * @param alignment the alignment of every region, a power of two >= {@value #MIN_ALIGNMENT}
     * @throws IllegalArgumentException if it is not
     * @throws IllegalStateException if JavaCPP's native library for this platform cannot be
     *     loaded: the message names what to add
     */
    public AlignedHostSubAllocator(long alignment) {
        this(alignment, DEFAULT_TRIM_THRESHOLD_BYTES);
    }

    /**
     * Regions of the given alignment, with {@code malloc_trim(0)} once at least
     * {@code trimThresholdBytes} have been freed since the last trim.
     *
     * @param alignment the alignment of every region, a power of two >= {@value #MIN_ALIGNMENT}
     * @param trimThresholdBytes the bytes to free between two trims: {@link #TRIM_ON_EVERY_FREE}
     *     (0) trims after every free, {@link #NEVER_TRIM} never trims
     * @throws IllegalArgumentException if the alignment is not a power of two >=
     *     {@value #MIN_ALIGNMENT}, or the threshold is negative
     * @throws IllegalStateException if JavaCPP's native library for this platform cannot be
     *     loaded (its natives jar is not on the class path, or its platform module is not in the
     *     module graph): the message names what to add
     */
    public AlignedHostSubAllocator(long alignment, long trimThresholdBytes) {
        this(alignment, trimThresholdBytes, AlignedHostSubAllocator::trimMemory);
        String missing = Natives.MISSING;
        if (missing != null) {
            throw new IllegalStateException(missing);
        }
    }

    /** Whether JavaCPP's natives load here, probed once. */
    private static final class Natives {
        /** Null if they load, else the sentence saying what to add. */
        static final String MISSING = probe();

        private static String probe() {
            try {
                Pointer.free(Pointer.malloc(1));
                return null;
            } catch (UnsatisfiedLinkError e) {
                String platform = Loader.getPlatform();
                String what = "JavaCPP's native library for " + platform + " could not be loaded (" + e.getMessage()
                        + "), so no host memory can be had";
                if (AlignedHostSubAllocator.class.getModule().isNamed()) {
                    // On the module path the natives are a platform module that nothing requires.
                    return what + ": add --add-modules org.bytedeco.javacpp." + platform.replace('-', '.')
                            + " (the jar org.bytedeco:javacpp with classifier " + platform + ")";
                }
                return what + ": add org.bytedeco:javacpp with classifier " + platform + " to the class path"
                        + " (bfc-cpu's dependency org.bytedeco:javacpp-platform brings it)";
            }
        }
    }

    /** With another trim than {@code malloc_trim(0)}, for tests that count the trims. */
    AlignedHostSubAllocator(long alignment, long trimThresholdBytes, Runnable trim) {
        this(alignment, trimThresholdBytes, trim, ptr -> { });
    }

    /** Also with {@code beforeRecord} run in {@link #alloc} after the malloc, for tests that fail there. */
    AlignedHostSubAllocator(long alignment, long trimThresholdBytes, Runnable trim,
            java.util.function.LongConsumer beforeRecord) {
        if (alignment < MIN_ALIGNMENT || (alignment & (alignment - 1)) != 0) {
            throw new IllegalArgumentException("alignment=" + alignment + " (expected: a power of two >= "
                    + MIN_ALIGNMENT + ", e.g. " + DEFAULT_ALIGNMENT + ")");
        }
        if (trimThresholdBytes < 0) {
            throw new IllegalArgumentException("trimThresholdBytes=" + trimThresholdBytes + " (expected: >= 0;"
                    + " TRIM_ON_EVERY_FREE (0), NEVER_TRIM, or a byte count such as the default "
                    + DEFAULT_TRIM_THRESHOLD_BYTES + ")");
        }
        this.alignment = alignment;
        this.trimThresholdBytes = trimThresholdBytes;
        this.trim = trim;
        this.beforeRecord = beforeRecord;
    }

    /**
     * Mallocs {@code numBytes} aligned to the larger of this sub-allocator's alignment and
     * {@code alignment}.
     *
     * @return the region, or null if malloc fails
     * @throws IllegalArgumentException if {@code numBytes} is not positive or {@code alignment}
     *     not a power of two
     */
    @Override
    public synchronized Block alloc(long alignment, long numBytes) {
        if (numBytes <= 0) {
            throw new IllegalArgumentException("numBytes=" + numBytes + " (expected: > 0)");
        }
        if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
            throw new IllegalArgumentException("alignment=" + alignment + " (expected: a power of two)");
        }
        long align = Math.max(this.alignment, alignment);
        if (numBytes > Long.MAX_VALUE - align) {
            return null;
        }
        Pointer raw = Pointer.malloc(numBytes + align - 1);
        if (raw == null || raw.isNull()) {
            return null;
        }
        long ptr = (raw.address() + align - 1) & -align;
        checkNoOverlap(ptr, numBytes, raw);
        try {
            beforeRecord.accept(ptr);
            Block block = new Block(ptr, numBytes);
            // The put is the last step that can fail (an OutOfMemoryError making its entry leaves
            // the map as it was): after it the region is recorded and nothing can throw.
            live.put(ptr, new Region(raw, ptr, numBytes, SubAllocator.callingAllocator()));
            liveBytes += numBytes;
            return block;
        } catch (Throwable t) {
            // An OutOfMemoryError making the records: the memory is nobody's, so it goes back.
            Pointer.free(raw);
            throw t;
        }
    }

    private void checkNoOverlap(long ptr, long numBytes, Pointer raw) {
        Map.Entry<Long, Region> below = live.floorEntry(ptr);
        Map.Entry<Long, Region> above = live.ceilingEntry(ptr);
        boolean overlaps = (below != null && Long.compareUnsigned(ptr, below.getKey() + below.getValue().bytes()) < 0)
                || (above != null && Long.compareUnsigned(above.getKey(), ptr + numBytes) < 0);
        if (overlaps) {
            Pointer.free(raw);
            throw new IllegalStateException("malloc returned 0x" + Long.toHexString(raw.address())
                    + ", overlapping a live region: the native heap is corrupt");
        }
    }

    /**
     * Frees a region handed out by {@link #alloc}, then trims the native heap if at least the
     * trim threshold has been freed since the last trim.
     *
     * @throws IllegalArgumentException if {@code ptr} is not the start of a live region of
     *     exactly {@code numBytes}, or if an allocator obtained the region and that allocator
     *     does not make this call ({@link SubAllocator#callingAllocator()}); nothing is freed
     *     then
     */
    @Override
    public void free(long ptr, long numBytes) {
        boolean trimNow;
        synchronized (this) {
            Region r = live.get(ptr);
            if (r == null) {
                throw new IllegalArgumentException("free(ptr=0x" + Long.toHexString(ptr) + ", numBytes=" + numBytes
                        + "): not a region this sub-allocator handed out (or it was already freed)");
            }
            if (r.bytes() != numBytes) {
                throw new IllegalArgumentException("free(ptr=0x" + Long.toHexString(ptr) + ", numBytes=" + numBytes
                        + "): the region there has " + r.bytes() + " bytes (expected: its exact size;"
                        + " this sub-allocator does not coalesce)");
            }
            // DEVIATION(port): upstream frees it, and its allocator hands out memory that is gone
            // (docs/deviations.md #26).
            SubAllocator.refuseIfAllocatorHolds(r.owner(), "the region", ptr, numBytes);
            live.remove(ptr);
            liveBytes -= numBytes;
            Pointer.free(r.raw());
            freedSinceTrim += numBytes;
            trimNow = freedSinceTrim >= trimThresholdBytes;
            if (trimNow) {
                freedSinceTrim = 0;
            }
        }
        if (trimNow) {
            trim.run();
        }
    }

    /** @return false: two mallocs are never one range */
    @Override
    public boolean supportsCoalescing() {
        return false;
    }

    /** @return {@link MemoryType#HOST_PAGEABLE} */
    @Override
    public MemoryType memoryType() {
        return MemoryType.HOST_PAGEABLE;
    }

    /** @return the alignment of every region */
    public long alignment() {
        return alignment;
    }

    /** @return the bytes freed between two {@code malloc_trim} calls (0: every free) */
    public long trimThresholdBytes() {
        return trimThresholdBytes;
    }

    /** @return the number of regions handed out and not yet freed */
    public synchronized int liveRegions() {
        return live.size();
    }

    /** @return the bytes of regions handed out and not yet freed */
    public synchronized long liveBytes() {
        return liveBytes;
    }

    @Override
    public synchronized String toString() {
        return "AlignedHostSubAllocator[alignment=" + alignment + ", trimThresholdBytes=" + trimThresholdBytes
                + ", " + live.size() + " regions, " + liveBytes + " bytes]";
    }

    private static void trimMemory() {
        if (TRIM_MEMORY != null) {
            try {
                TRIM_MEMORY.invoke();
            } catch (Throwable e) {
                // Only a missed chance to return heap pages early; the memory is freed.
            }
        }
    }

    private static MethodHandle findTrimMemory() {
        try {
            var m = Pointer.class.getDeclaredMethod("trimMemory");
            m.setAccessible(true);
            return MethodHandles.lookup().unreflect(m).asType(MethodType.methodType(void.class));
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }
}
