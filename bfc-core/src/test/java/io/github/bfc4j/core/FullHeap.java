/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.nio.file.Path;
import java.util.List;

/**
 * A Java heap with no room left, for the tests of what a call leaves behind when it fails for
 * want of heap: in a JVM of its own ({@link #childJvm}), since a full heap fails whatever else
 * runs in the JVM meanwhile.
 */
public final class FullHeap {

    private FullHeap() {
    }

    /**
     * The command that runs {@code main} on this JVM's class path in a JVM of its own, with a
     * heap of {@code heapMiB} and the serial collector (whose failure is plain: no allocation
     * succeeds once it has failed, until something is dropped), for {@link ChildProcess#run}.
     *
     * @param main the class whose {@code main} runs
     * @param heapMiB the heap's size
     * @return the command
     */
    public static List<String> childJvm(Class<?> main, int heapMiB) {
        return List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx" + heapMiB + "m",
                "-XX:+UseSerialGC", "-cp", System.getProperty("java.class.path"), main.getName());
    }

    /**
     * Allocates until not even the smallest object can be had, also in the calling thread's
     * allocation buffer: the next allocation of this thread fails with an
     * {@link OutOfMemoryError} (another thread's buffer may still have room) until the
     * returned object is dropped.
     *
     * @return what it allocated, to keep until the heap may have room again
     */
    public static Object fill() {
        Object[] chain = null;
        for (int words = 1 << 17; words > 0; ) {
            try {
                chain = new Object[] {chain, new long[words - 1]};
            } catch (OutOfMemoryError e) {
                words >>= 1;
            }
        }
        return chain;
    }
}
