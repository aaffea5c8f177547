/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

/**
 * What code that takes its memory from bfc4j needs of an allocator, whichever kind it is: one
 * {@link BfcAllocator}, or a {@link ShardedBfcAllocator} for many allocating threads. The
 * integrations (ONNX Runtime's {@code BfcOrtAllocator}, TensorFlow Java's {@code BfcTensors})
 * take one, so either kind serves them. Upstream's counterpart is {@code tsl::Allocator}, the
 * interface {@code BFCAllocator} implements; this is the part of it that bfc4j's callers use,
 * with bfc4j's handles, figures and provenance switches.
 *
 * <p>Each method means what the implementing class documents; the sharded allocator's figures
 * are those of all its shards together. Thread-safe.
 */
public interface MemoryAllocator extends AutoCloseable {

    /** @return the allocator's name, as given to its builder */
    String name();

    /** @return the most bytes it may hold from its sub-allocator */
    long memoryLimit();

    /** @return what {@link #close()} does with live allocations */
    ClosePolicy closePolicy();

    /** @return the kind of memory handed out (the sub-allocator's) */
    MemoryType getMemoryType();

    /**
     * Allocates {@code bytes}, 64-byte aligned, and returns a handle.
     *
     * @param bytes the size wanted, > 0
     * @return the allocation
     * @throws IllegalArgumentException if {@code bytes} is not positive, or {@code bytes + 63}
     *     exceeds {@link BfcAllocator#MAX_ALLOCATION_BYTES}
     * @throws BfcOutOfMemoryException if it cannot be served
     * @throws IllegalStateException if the allocator is closed, or if called from inside its
     *     sub-allocator's {@code alloc} or {@code free}
     */
    Allocation allocate(long bytes);

    /**
     * Allocates {@code bytes} at a multiple of {@code alignment} and returns a handle.
     *
     * @param bytes the size wanted, > 0
     * @param alignment a power of two
     * @return the allocation
     * @throws IllegalArgumentException if {@code bytes} is not positive, {@code alignment} is
     *     not a power of two, or {@code bytes + alignment - 1} exceeds
     *     {@link BfcAllocator#MAX_ALLOCATION_BYTES}
     * @throws BfcOutOfMemoryException if it cannot be served
     * @throws IllegalStateException if the allocator is closed, or if called from inside its
     *     sub-allocator's {@code alloc} or {@code free}
     */
    Allocation allocate(long bytes, long alignment);

    /**
     * Allocates without a handle. Port of {@code Allocator::AllocateRaw}.
     *
     * @param alignment a power of two
     * @param numBytes the size wanted
     * @return the address, or 0 if {@code numBytes} is 0 or it cannot be served
     * @throws IllegalArgumentException if {@code numBytes} is negative or {@code alignment} is
     *     not a power of two
     * @throws IllegalStateException if the allocator is closed, or if called from inside its
     *     sub-allocator's {@code alloc} or {@code free}
     */
    long allocateRaw(long alignment, long numBytes);

    /**
     * Allocates without a handle, with per-call attributes.
     *
     * @param alignment a power of two
     * @param numBytes the size wanted
     * @param attr per-call attributes
     * @return the address, or 0 if {@code numBytes} is 0 or it cannot be served
     * @throws IllegalArgumentException as {@link #allocateRaw(long, long)}
     * @throws IllegalStateException if the allocator is closed, or if called from inside its
     *     sub-allocator's {@code alloc} or {@code free}
     */
    long allocateRaw(long alignment, long numBytes, AllocationAttributes attr);

    /**
     * Allocates without a handle, as {@link #allocateRaw(long, long)} does (the same chunk, the
     * same calls of the sub-allocator), but a failure throws the exception
     * {@link #allocate(long)} would: its figures (and largest holders, when provenance is
     * recorded) are those of the moment of failure, taken by the failing call under the lock, not
     * read afterwards, when other threads or an out-of-memory listener may have freed memory (a
     * {@link ShardedBfcAllocator}'s are those of all shards, read just after its home shard's
     * last attempt failed, as {@link ShardedBfcAllocator#allocateRawOrThrow} says). For
     * adapters that hand raw addresses to a runtime and report its failures in words (ONNX
     * Runtime's {@code BfcOrtAllocator}).
     *
     * @param alignment a power of two
     * @param numBytes the size wanted
     * @return the address, or 0 if {@code numBytes} is 0
     * @throws BfcOutOfMemoryException if it cannot be served, also when {@code numBytes} is above
     *     {@link BfcAllocator#MAX_ALLOCATION_BYTES}
     * @throws IllegalArgumentException as {@link #allocateRaw(long, long)}
     * @throws IllegalStateException if the allocator is closed, or if called from inside its
     *     sub-allocator's {@code alloc} or {@code free}
     */
    long allocateRawOrThrow(long alignment, long numBytes);

    /**
     * Frees an address {@link #allocateRaw} returned. Port of {@code Allocator::DeallocateRaw}.
     *
     * @param ptr the address; 0 is a no-op
     * @throws IllegalArgumentException if it was not allocated here or was already freed, or is
     *     memory of an {@link Allocation} handle or lent to a runtime through a {@link Loan} (which
     *     frees it itself); nothing is freed
     * @throws IllegalStateException if the allocator is closed, or if called from inside its
     *     sub-allocator's {@code alloc} or {@code free}
     */
    void deallocateRaw(long ptr);

    /** @return the bytes of chunks in use */
    long bytesInUse();

    /** @return the bytes held from the sub-allocator now */
    long reservedBytes();

    /** @return the largest free chunk */
    long largestFreeChunkBytes();

    /** @return TensorFlow's statistics. Port of {@code Allocator::GetStats} */
    AllocatorStats getStats();

    /** @return a readable summary, like {@code torch.cuda.memory_summary()} */
    String memorySummary();

    /**
     * Gives free regions back to the sub-allocator.
     *
     * @return the bytes given back
     */
    long emptyCache();

    /**
     * Adds a listener told of every allocation that fails for want of memory.
     *
     * @param listener the listener
     * @throws NullPointerException if {@code listener} is null
     */
    void addOutOfMemoryListener(OutOfMemoryListener listener);

    /**
     * Removes a listener.
     *
     * @param listener the listener
     * @return whether it was there
     * @throws NullPointerException if {@code listener} is null
     */
    boolean removeOutOfMemoryListener(OutOfMemoryListener listener);

    /**
     * Starts recording allocations and frees (who allocated, when, what for).
     *
     * @param options what to record
     */
    void recordHistory(HistoryOptions options);

    /** Stops recording; what was recorded stays for snapshots until the next {@link #recordHistory}. */
    void stopHistory();

    /**
     * Whether each chunk allocated from now on keeps the {@link MemoryAnnotation} open on the
     * allocating thread.
     *
     * @param enabled true to keep them, false to stop
     */
    void recordAnnotations(boolean enabled);

    /** @return whether {@link #close()} has closed it */
    boolean isClosed();

    /**
     * Says that an adapter lends this allocator's memory to a runtime that frees it only in its
     * own terms (ONNX Runtime's {@code BfcOrtAllocator}). Until the loan is closed, a
     * {@link #close()} refused because allocations are live names {@code runtime} and says
     * {@code release}, what makes it free the memory it holds, in place of the advice meant for
     * memory the caller holds itself (close the handles, or build the allocator with
     * {@link ClosePolicy#FORCE}, which would free memory under the runtime).
     * The adapter allocates and frees the memory it hands the runtime through the loan
     * ({@link Loan#allocateRawOrThrow}, {@link Loan#deallocateRaw}): a {@link #deallocateRaw}
     * of such an address, or another loan's, is refused, naming {@code runtime}. Up to 255
     * loans of one allocator can be open, or closed with memory they lent not yet freed, at once.
     *
     * @param runtime who holds the memory, e.g. {@code ONNX Runtime (BfcOrtAllocator 'x')}
     * @param release what frees it, e.g. {@code release the sessions and the OrtValues they
     *     returned, then close the BfcOrtAllocator}
     * @return the loan; close it once the runtime holds none of this allocator's memory
     * @throws NullPointerException if an argument is null
     * @throws IllegalStateException if 255 loans of this allocator are open or hold lent memory
     */
    Loan lendTo(String runtime, String release);

    /**
     * A loan of {@link #lendTo}: closing it takes its advice back. An adapter allocates the
     * memory it hands the runtime through the loan, so that the memory is the runtime's until
     * the runtime frees it through the same loan: a {@link MemoryAllocator#deallocateRaw} of its
     * address, or another loan's free of it, is refused (naming the runtime), as for an
     * {@link Allocation} handle's memory. A double free of an address of the caller's own (or of
     * another runtime's), given to the runtime since, then fails instead of freeing memory the
     * runtime still uses.
     */
    interface Loan extends AutoCloseable {

        /**
         * Allocates memory to lend to the runtime, as {@link MemoryAllocator#allocateRawOrThrow}
         * does (the same chunk, the same failure), owned by the loan: only a loan's
         * {@link #deallocateRaw} frees it.
         *
         * @param alignment a power of two; only passed on to the sub-allocator
         * @param numBytes the size wanted
         * @return the address, or 0 if {@code numBytes} is 0
         * @throws BfcOutOfMemoryException if the memory cannot be had
         * @throws IllegalArgumentException if {@code numBytes} is negative or {@code alignment}
         *     is not a power of two
         * @throws IllegalStateException if the loan or the allocator is closed
         */
        long allocateRawOrThrow(long alignment, long numBytes);

        /**
         * Allocates memory to lend to the runtime, as the allocator's
         * {@code allocateRaw(alignment, numBytes, attr)} does (the same chunk; 0 where that
         * returns 0), owned by the loan as {@link #allocateRawOrThrow}'s: for an adapter whose
         * runtime takes a failure as a null address, or that needs the attributes (bfc-cuda's
         * {@code GpuBfcAllocator}, whose stream-ordered frees are constrained by them).
         *
         * @param alignment a power of two; only passed on to the sub-allocator
         * @param numBytes the size wanted
         * @param attr per-call attributes (retry, timestamp constraint)
         * @return the address, or 0 if {@code numBytes} is 0 or the memory cannot be had
         * @throws IllegalArgumentException if {@code numBytes} is negative or {@code alignment}
         *     is not a power of two
         * @throws NullPointerException if {@code attr} is null
         * @throws IllegalStateException if the loan or the allocator is closed
         */
        long allocateRaw(long alignment, long numBytes, AllocationAttributes attr);

        /**
         * Frees memory this loan lent, also once the loan is closed.
         *
         * @param ptr an address returned by this loan's {@link #allocateRawOrThrow} or
         *     {@link #allocateRaw} and not yet freed; 0 is a no-op
         * @throws IllegalArgumentException if {@code ptr} is not memory this loan lent (memory
         *     another loan lent, which only that loan frees, memory of the allocator's raw
         *     allocations or of a handle, or memory already freed; any address once the loan is
         *     closed and nothing it lent is left: freed, or taken back by a forced close); the
         *     allocator is unchanged
         * @throws IllegalStateException if the allocator is closed
         */
        void deallocateRaw(long ptr);

        /**
         * The allocations this loan has lent that are not yet freed (nor taken back by a forced
         * close), counting its calls still under way: 0 once the runtime holds none of its
         * memory and no call through it runs.
         *
         * @return the count, also once the loan is closed
         */
        long lentAllocations();

        /** Takes the advice back; closing it again does nothing. */
        @Override
        void close();
    }

    /** Closes the allocator as its close policy says. */
    @Override
    void close();
}
