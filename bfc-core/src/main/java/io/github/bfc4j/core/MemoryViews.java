/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.nio.ByteBuffer;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;

/** Java views of native memory, through JavaCPP (whose JNI library makes direct buffers). */
final class MemoryViews {

    private MemoryViews() {
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
