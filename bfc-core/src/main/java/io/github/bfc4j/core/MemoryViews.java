/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;

/** Java views of native memory, through JavaCPP (whose JNI library makes direct buffers). */
final class MemoryViews {

    private MemoryViews() {
    }

    /**
     * A {@code BytePointer} at a given address, with no deallocator, holding its allocation and
     * an anchor of its region (see {@link ViewPins}). The buffers made from it ({@code
     * asByteBuffer()}, {@code asBuffer()}) hold the region as it does, and leak detection
     * watches them as it watches the allocation's own buffers.
     */
    static final class ViewPointer extends BytePointer {
        /** Kept reachable (for leak detection); null for a plain buffer's pointer. */
        private final Allocation owner;
        @SuppressWarnings({"unused", "FieldCanBeLocal"}) // keeps the region
        private final Object anchor;
        /** Where the buffers made from this pointer hold the region; null: nowhere. */
        private final ViewPins pins;

        ViewPointer(long address, long bytes, Allocation owner, Object anchor, ViewPins pins) {
            super((Pointer) null);
            this.address = address;
            this.capacity = bytes;
            this.limit = bytes;
            this.owner = owner;
            this.anchor = anchor;
            this.pins = pins;
        }

        @Override
        public ByteBuffer asByteBuffer() {
            ByteBuffer buffer = super.asByteBuffer();
            if (pins != null && buffer != null) {
                // This pointer is reachable, so its anchor still holds the region, and its owner
                // is reachable for leak detection.
                pins.pin(buffer, address);
                owner.watch(buffer);
            }
            Reference.reachabilityFence(this);
            return buffer;
        }
    }

    /** A direct buffer over native memory, in native byte order; it holds nothing. */
    static ByteBuffer byteBuffer(long address, int bytes) {
        try {
            return new ViewPointer(address, bytes, null, null, null).asByteBuffer();
        } catch (UnsatisfiedLinkError | NoClassDefFoundError e) {
            throw nativesMissing(e);
        }
    }

    static BytePointer pointer(long address, long bytes, Allocation owner, Object anchor, ViewPins pins) {
        try {
            return new ViewPointer(address, bytes, owner, anchor, pins);
        } catch (UnsatisfiedLinkError | NoClassDefFoundError e) {
            throw nativesMissing(e);
        }
    }

    private static IllegalStateException nativesMissing(Throwable e) {
        return new IllegalStateException("JavaCPP's native library for this platform could not be"
                + " loaded, so memory cannot be viewed from Java: add org.bytedeco:javacpp-platform"
                + " (bfc-cpu depends on it) to the classpath (" + e + ")", e);
    }
}
