/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's tsl::SubAllocator (Copyright 2015 The TensorFlow Authors),
 * licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.util.Objects;

/**
 * Where a {@link BfcAllocator} gets its memory from: large regions, obtained on the
 * allocator's slow path ({@code Extend}) and given back only by garbage collection of
 * free regions or {@link BfcAllocator#close()}. Port of {@code tsl::SubAllocator}.
 *
 * <p>Implementations need not be thread-safe: the allocator never makes two calls at once. It
 * calls them under its lock, except the {@link #free} of a region that a Java view still
 * reached when the allocator gave it back: that call comes later, from the thread that finds
 * the view collected, without the allocator's lock (so it must not call back into the
 * allocator).
 *
 * <p>From inside {@code alloc} or {@code free}, an implementation must not allocate from, free
 * to, empty, check or close the allocator it serves (or another shard of a
 * {@link ShardedBfcAllocator}): those calls throw {@link IllegalStateException}, the allocator
 * being between two states there. Under the allocator's lock it may read the allocator's
 * figures ({@link BfcAllocator#getStats()}); it may call other allocators. Where it runs without
 * that lock (the free of a region that waited for a view, on the cleaner's thread; another
 * shard of a sharded allocator), every call of the allocator that takes its lock (its figures
 * and queries included) throws {@link IllegalStateException}: waiting for the lock there could
 * deadlock with a thread that holds it and waits for this call to end.
 */
public interface SubAllocator {

    /**
     * Obtains a region of at least {@code numBytes} bytes. Port of {@code SubAllocator::Alloc}.
     *
     * @param alignment the alignment the caller of the allocation asked for (a power of two);
     *     an implementation may align more strictly
     * @param numBytes the number of bytes wanted, a positive multiple of 256
     * @return the region obtained (its {@link Block#bytes()} may exceed {@code numBytes}), or
     *     {@code null} if the memory cannot be had; the allocator then asks for less. It must
     *     overlap no block handed out and not yet freed, and lie between address 1 and
     *     2<sup>63</sup> - 1: an allocator given any other block throws
     *     {@link IllegalStateException} from the allocation that asked for it
     */
    Block alloc(long alignment, long numBytes);

    /**
     * Returns a region. Port of {@code SubAllocator::Free}. When {@link #supportsCoalescing()}
     * is true, one call may return several adjacent blocks that {@link #alloc} handed out, as
     * one range.
     *
     * <p>When the allocator makes this call, it gives the region up whatever happens here: if
     * the release fails (a driver error), throw, and keep what could not be freed to free it
     * later (at the sub-allocator's close); the allocator passes the exception on once its books
     * are whole and its other regions freed.
     *
     * @param ptr the start of the range, as returned by {@link #alloc}
     * @param numBytes the size of the range
     * @throws IllegalArgumentException if the range was not handed out by this sub-allocator
     */
    void free(long ptr, long numBytes);

    /**
     * Whether adjacent blocks returned by {@link #alloc} may be treated as one contiguous
     * region (and later freed as one). Port of {@code SubAllocator::SupportsCoalescing}.
     *
     * @return true if adjacent blocks can be merged into one region
     */
    boolean supportsCoalescing();

    /**
     * The kind of memory handed out. Port of {@code SubAllocator::GetMemoryType}.
     *
     * @return the memory type; {@link MemoryType#UNKNOWN} unless overridden
     */
    default MemoryType memoryType() {
        return MemoryType.UNKNOWN;
    }

    /**
     * The device whose memory this is, by its CUDA ordinal: what PyTorch's memory snapshots of
     * the allocator say ({@link MemorySnapshot#deviceId()}). Not upstream's (bfc4j's addition).
     * bfc-cuda's device and virtual-memory sub-allocators give their device's; its pinned host
     * sub-allocator the device whose context allocates. Read once, when the allocator is built.
     *
     * @return the ordinal, 0 to 1023; 0 unless overridden (memory of no device, such as host
     *     or simulated memory, is written as device 0's, PyTorch's default device)
     */
    default int deviceId() {
        return 0;
    }

    /**
     * The name of the allocator whose call to its sub-allocator is in progress on this thread,
     * or null when no allocator's is: a call that a {@link BfcAllocator} or a
     * {@link ShardedBfcAllocator} makes to the sub-allocator it was given (through any adaptors
     * in between) sees the allocator's name; a call that other code makes directly sees null.
     *
     * <p>A sub-allocator whose memory Java code can reach uses it to refuse a {@link #free} of
     * a region that an allocator obtained, when that allocator does not make the call: the allocator
     * still hands out that memory, so freeing it under the allocator would let its
     * views read and write memory given back to the operating system. bfc-cpu's
     * {@code AlignedHostSubAllocator} and bfc-cuda's device, pinned host and virtual-memory
     * sub-allocators do, through {@link #refuseIfAllocatorHolds}.
     *
     * @return the allocator's name, or null: a String of that allocator's own (equal to its
     *     name), which {@link #refuseIfAllocatorHolds} tells apart from another allocator's of
     *     the same name; keep the String itself to pass it there
     */
    static String callingAllocator() {
        return AllocatorCalls.CALLER.get();
    }

    /**
     * The check of a {@link #free} that {@link #callingAllocator()} serves: refuses to free
     * memory that an allocator obtained (the name {@code callingAllocator()} gave at its
     * {@link #alloc}) unless that allocator makes this call, since it still hands the memory
     * out: a call from no allocator is refused, and so is one from another allocator (a
     * sub-allocator of its own, shared with the owner, freeing the owner's region inside that
     * allocator's call). Allocators are told apart by the String {@code callingAllocator()}
     * gave, each allocator's own, so two of one name that share a sub-allocator are told apart
     * too; an {@code owner} merely equal to the caller's name (a copy, a literal) is taken for
     * the caller. Call it before changing anything (docs/deviations.md #26).
     *
     * @param owner the allocator that obtained the memory, or null if other code did: the very
     *     String {@code callingAllocator()} returned at its {@code alloc}
     * @param what the memory, for the message: {@code "the region"}, {@code "the mapping at 0x..."}
     * @param ptr the address given to {@code free}
     * @param numBytes the size given to {@code free}
     * @throws IllegalArgumentException if {@code owner} is not null and is not the allocator
     *     making the call
     * @throws NullPointerException if {@code what} is null
     */
    static void refuseIfAllocatorHolds(String owner, String what, long ptr, long numBytes) {
        Objects.requireNonNull(what, "what=null (expected: the memory, for the message, e.g. \"the region\")");
        String caller = callingAllocator();
        if (owner != null && owner != caller && (!owner.equals(caller) || AllocatorCalls.isToken(owner))) {
            throw new IllegalArgumentException("free(0x" + Long.toHexString(ptr) + ", " + numBytes + "): " + what
                    + " belongs to allocator '" + owner + "', which still hands out its memory"
                    + (caller == null ? "" : ", and this call is made inside a call of allocator '" + caller + "'"
                            + (owner.equals(caller) ? " (another allocator of that name)" : ""))
                    + " (expected: memory obtained by calling alloc directly; the allocator gives its regions back"
                    + " itself: emptyCache(), garbage collection of free regions, close()). Nothing was freed");
        }
    }

    /**
     * A range obtained from a sub-allocator.
     *
     * @param ptr the start address, never 0
     * @param bytes the number of bytes received (upstream's {@code bytes_received})
     */
    record Block(long ptr, long bytes) {
        /**
         * Validates the block.
         *
         * @throws IllegalArgumentException if {@code ptr} is 0 or {@code bytes} is not positive
         */
        public Block {
            if (ptr == 0) {
                throw new IllegalArgumentException("ptr=0 (expected: a non-null address)");
            }
            if (bytes <= 0) {
                throw new IllegalArgumentException("bytes=" + bytes + " (expected: > 0)");
            }
        }
    }
}
