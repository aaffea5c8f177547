/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

/**
 * A sub-allocator that caps the bytes it obtains from another: a request that would take the
 * total held above the cap fails ({@code null}), as a device with that much memory would.
 * Useful to rehearse out-of-memory on a large machine, or to bound a host pool independently of
 * the allocator's own memory limit.
 *
 * <p>Thread-safe when its upstream is: the count is updated under this object's monitor.
 */
public final class LimitingSubAllocator extends ForwardingSubAllocator {

    private final long limitBytes;

    /** Guarded by this. */
    private long heldBytes;

    /**
     * @param upstream where the memory comes from
     * @param limitBytes the most bytes held from {@code upstream} at once
     * @throws IllegalArgumentException if {@code limitBytes} is negative
     */
    public LimitingSubAllocator(SubAllocator upstream, long limitBytes) {
        super(upstream);
        if (limitBytes < 0) {
            throw new IllegalArgumentException("limitBytes=" + limitBytes + " (expected: >= 0)");
        }
        this.limitBytes = limitBytes;
    }

    @Override
    public synchronized Block alloc(long alignment, long numBytes) {
        if (numBytes > limitBytes - heldBytes) {
            return null;
        }
        Block block = upstream.alloc(alignment, numBytes);
        if (block == null) {
            return null;
        }
        if (block.bytes() > limitBytes - heldBytes) {
            // The upstream gave more than asked and the surplus does not fit under the cap.
            upstream.free(block.ptr(), block.bytes());
            return null;
        }
        heldBytes += block.bytes();
        return block;
    }

    /**
     * Returns a range to the upstream; from then on it no longer counts against the cap. A free
     * that the upstream refuses ({@link IllegalArgumentException}: not a range it handed out)
     * changes nothing. One that fails otherwise (a driver error, also an {@link Error}) is
     * passed on, and the range no longer counts: its caller gives it up all the same
     * ({@link SubAllocator#free}), and the upstream keeps what it could not free.
     *
     * @throws IllegalArgumentException if {@code numBytes} is not positive or exceeds the bytes
     *     held, or the upstream refuses the range; nothing changes then
     */
    @Override
    public synchronized void free(long ptr, long numBytes) {
        if (numBytes <= 0 || numBytes > heldBytes) {
            throw new IllegalArgumentException("free(ptr=0x" + Long.toHexString(ptr) + ", numBytes="
                    + numBytes + "): " + (numBytes <= 0 ? "not a size" : "more than the " + heldBytes
                    + " bytes held from the upstream") + " (expected: a range this sub-allocator handed out)");
        }
        try {
            upstream.free(ptr, numBytes);
        } catch (IllegalArgumentException refused) {
            throw refused;
        } catch (RuntimeException | Error failed) {
            heldBytes -= numBytes;
            throw failed;
        }
        heldBytes -= numBytes;
    }

    /** @return the cap on bytes held from the upstream */
    public long limitBytes() {
        return limitBytes;
    }

    /** @return the bytes held from the upstream now */
    public synchronized long heldBytes() {
        return heldBytes;
    }

    @Override
    public String toString() {
        return "LimitingSubAllocator[limit=" + limitBytes + ", held=" + heldBytes() + ", upstream=" + upstream + "]";
    }
}
