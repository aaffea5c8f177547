/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.util.Locale;

/**
 * Whether an {@link Allocation} that becomes unreachable without being closed is reported and
 * its memory returned. Only handles from {@link BfcAllocator#allocate(long)} are watched; raw
 * addresses from {@code allocateRaw} never are.
 *
 * <p>The default comes from the system property {@code bfc4j.leakDetection}
 * ({@code disabled}, {@code simple} or {@code paranoid}; unset means {@code disabled}).
 */
public enum LeakDetection {
    /** Nothing is watched; an unclosed allocation stays allocated until the allocator closes. */
    DISABLED,
    /**
     * Each allocation (and each {@code ByteBuffer} view of it) is registered with a
     * {@link java.lang.ref.Cleaner}; when all have become unreachable without {@code close()},
     * the leak is logged once (allocator, id, size) and the memory is returned (nothing once the
     * allocator is closed: its memory is already back).
     */
    SIMPLE,
    /** As {@link #SIMPLE}, and the report also shows the stack where the allocation was made. */
    PARANOID;

    /** The system property that sets the default. */
    public static final String PROPERTY = "bfc4j.leakDetection";

    /**
     * The level the system property {@value #PROPERTY} asks for.
     *
     * @return the level; {@link #DISABLED} when the property is unset
     * @throws IllegalArgumentException if the property holds something else than
     *     {@code disabled}, {@code simple} or {@code paranoid}
     */
    public static LeakDetection fromSystemProperty() {
        String value = System.getProperty(PROPERTY);
        if (value == null || value.isBlank()) {
            return DISABLED;
        }
        try {
            return valueOf(value.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("-D" + PROPERTY + "=" + value
                    + " (expected: disabled, simple or paranoid)", e);
        }
    }
}
