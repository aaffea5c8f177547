/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cpu;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/** The messages one java.util.logging logger receives while this is open; and a GC helper. */
final class LogCapture implements AutoCloseable {

    private final List<String> messages = new CopyOnWriteArrayList<>();
    private final Logger logger;
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord r) {
            messages.add(r.getMessage());
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };

    LogCapture(String loggerName) {
        logger = Logger.getLogger(loggerName);
        logger.addHandler(handler);
    }

    /** @return the messages so far */
    List<String> messages() {
        return messages;
    }

    @Override
    public void close() {
        logger.removeHandler(handler);
    }

    /**
     * How long {@link #gcUntil(String, BooleanSupplier)} collects: generous, for a slow or loaded
     * machine, where a cleaner's thread may run long after the collection that found its object.
     */
    static final Duration GC_LIMIT = Duration.ofSeconds(60);

    /**
     * Runs the garbage collector until {@code condition} holds, for at most {@link #GC_LIMIT}.
     *
     * @param what what the condition says, for the failure
     * @param condition what is awaited
     * @throws AssertionError naming {@code what} if it still does not hold then
     */
    static void gcUntil(String what, BooleanSupplier condition) throws InterruptedException {
        gcUntil(what, condition, GC_LIMIT);
    }

    /**
     * Runs the garbage collector until {@code condition} holds, for at most {@code limit} (the
     * condition is checked once more when the limit is reached), however long each collection
     * and each check takes.
     *
     * @param what what the condition says, for the failure
     * @param condition what is awaited
     * @param limit how long to collect
     * @throws AssertionError naming {@code what} if it still does not hold then
     */
    static void gcUntil(String what, BooleanSupplier condition, Duration limit) throws InterruptedException {
        long start = System.nanoTime();
        int collections = 0;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - start >= limit.toNanos()) {
                throw new AssertionError("gave up after " + limit + " (" + collections + " garbage collections)"
                        + " waiting for: " + what);
            }
            System.gc();
            collections++;
            Thread.sleep(20); // the cleaner's and the reference handler's threads run meanwhile
        }
    }
}
