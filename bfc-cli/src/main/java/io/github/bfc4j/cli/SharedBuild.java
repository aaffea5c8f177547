/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import java.util.function.Supplier;

/**
 * A page built once for all the requests that wait for it together: at most one build runs at a
 * time, and each request is answered by a build begun after it arrived (so it is never older
 * than the request). Requests that arrive while a build runs wait for the next build, which
 * then serves them all. So {@code /memory-map}, whose page grows with the allocator's chunks
 * (about 135 bytes of JSON a chunk, and three times that in heap while it is built), is built
 * once however many scrapes ask at once, not once per worker.
 *
 * @param <T> what is built
 */
final class SharedBuild<T> implements Supplier<T> {

    private final Supplier<T> build;
    private final Object lock = new Object();
    /** The build that runs, or null; guarded by {@link #lock}. */
    private Build<T> running;
    /** The build that the requests arrived while one runs wait for, or null; guarded by {@link #lock}. */
    private Build<T> next;

    /** One build's outcome, held only by the requests it serves; its fields guarded by the lock. */
    private static final class Build<T> {
        T result;
        Throwable failure;
        boolean done;
    }

    /**
     * @param build makes the page; it may throw (each request it served then gets the throwable)
     */
    SharedBuild(Supplier<T> build) {
        this.build = build;
    }

    /**
     * Waits for a build begun after this call (beginning one if none runs) and returns its result.
     *
     * @throws RuntimeException or Error as the build threw
     * @throws IllegalStateException if the thread is interrupted while it waits
     */
    @Override
    public T get() {
        Build<T> mine;
        synchronized (lock) {
            if (running == null) {
                mine = running = new Build<>();
            } else {
                if (next == null) {
                    next = new Build<>();
                }
                mine = next;
                boolean builder = false;
                while (!mine.done) {
                    if (running == null) {
                        running = mine; // the build before ended: this thread makes the one it waits for
                        next = null;
                        builder = true;
                        break;
                    }
                    try {
                        lock.wait();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException("interrupted while waiting for the page to be built", e);
                    }
                }
                if (!builder) {
                    return outcome(mine);
                }
            }
        }
        T built = null;
        Throwable thrown = null;
        try {
            built = build.get();
        } catch (RuntimeException | Error e) {
            thrown = e;
        }
        synchronized (lock) {
            mine.result = built;
            mine.failure = thrown;
            mine.done = true;
            running = null;
            lock.notifyAll();
            return outcome(mine);
        }
    }

    /** The build's result, or its failure thrown; call with the lock held. */
    private static <T> T outcome(Build<T> b) {
        if (b.failure instanceof RuntimeException e) {
            throw e;
        }
        if (b.failure instanceof Error e) {
            throw e;
        }
        return b.result;
    }
}
