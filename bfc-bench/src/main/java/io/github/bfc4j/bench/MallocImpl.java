/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.bench;

import org.bytedeco.javacpp.Pointer;

/** glibc {@code malloc}/{@code free} through JavaCPP (one {@link Pointer} per allocation). */
final class MallocImpl implements Impl {

    private final Pointer[] ptrs;

    MallocImpl(int slots) {
        this.ptrs = new Pointer[slots];
    }

    @Override
    public void alloc(int slot, long bytes, long alignment) {
        ptrs[slot] = Pointer.malloc(bytes);
    }

    @Override
    public void free(int slot) {
        Pointer p = ptrs[slot];
        if (p != null) {
            ptrs[slot] = null;
            Pointer.free(p);
        }
    }

    @Override
    public void freeAll() {
        for (int s = 0; s < ptrs.length; s++) {
            free(s);
        }
    }

    @Override
    public void close() {
        freeAll();
    }
}
