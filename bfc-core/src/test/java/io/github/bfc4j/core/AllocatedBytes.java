/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.management.ManagementFactory;

/** The JVM's count of the bytes each thread allocates, for the tests that claim none. */
public final class AllocatedBytes {

    private AllocatedBytes() {
    }

    /**
     * The counter; the calling test is skipped, saying why, where the JVM has none.
     *
     * @return the thread bean that counts each thread's allocated bytes
     */
    public static com.sun.management.ThreadMXBean counter() {
        java.lang.management.ThreadMXBean std = ManagementFactory.getThreadMXBean();
        assumeTrue(std instanceof com.sun.management.ThreadMXBean,
                "this JVM has no com.sun.management.ThreadMXBean to count allocated bytes");
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) std;
        assumeTrue(threads.isThreadAllocatedMemorySupported() && threads.isThreadAllocatedMemoryEnabled(),
                "this JVM does not count allocated bytes per thread");
        return threads;
    }
}
