/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.bench;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;

/**
 * Netty's {@link PooledByteBufAllocator} with direct buffers and its default settings (thread
 * caches on), one allocator per benchmark state.
 */
final class NettyImpl implements Impl {

    private final PooledByteBufAllocator allocator = new PooledByteBufAllocator(true);
    private final ByteBuf[] bufs;

    NettyImpl(int slots) {
        this.bufs = new ByteBuf[slots];
    }

    @Override
    public void alloc(int slot, long bytes, long alignment) {
        int n = (int) bytes;
        bufs[slot] = allocator.directBuffer(n, n);
    }

    @Override
    public void free(int slot) {
        ByteBuf b = bufs[slot];
        if (b != null) {
            bufs[slot] = null;
            b.release();
        }
    }

    @Override
    public void freeAll() {
        for (int s = 0; s < bufs.length; s++) {
            free(s);
        }
    }

    @Override
    public void close() {
        freeAll();
    }
}
