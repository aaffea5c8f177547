/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

/**
 * Told of every failed allocation of an allocator ({@link BfcAllocator#addOutOfMemoryListener}).
 * Called on the failing thread after the allocator's lock is released, with a picture of the
 * allocator taken under the lock at the moment of failure; the failing call returns (or
 * throws) after every listener has run. A listener must not block for long; an exception it
 * throws (an {@link Error} too) is logged and otherwise ignored, except a
 * {@link VirtualMachineError} ({@link StackOverflowError}, {@link OutOfMemoryError}): the
 * failing call throws that at once, and the listeners after it are not called.
 */
@FunctionalInterface
public interface OutOfMemoryListener {

    /**
     * One failed allocation.
     *
     * @param report the failure and the allocator's state at that moment
     */
    void onOutOfMemory(OutOfMemoryReport report);
}
