/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicReference;

/** Test threads released together, whose first failure fails the test. */
final class TestThreads {

    /** What thread {@code id} does once all threads are released. */
    interface Body {
        void run(int id) throws Exception;
    }

    private TestThreads() {
    }

    /**
     * Runs {@code body} on {@code threads} new threads (ids 0 to {@code threads - 1}), released
     * together by a barrier, and waits for all of them.
     *
     * @param seed the test's seed, named in the failure
     * @throws AssertionError carrying the first failure of any thread, if one failed
     */
    static void runTogether(int threads, long seed, Body body) throws InterruptedException {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CyclicBarrier start = new CyclicBarrier(threads);
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int id = t;
            Thread w = new Thread(() -> {
                try {
                    start.await();
                    body.run(id);
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            });
            workers.add(w);
            w.start();
        }
        for (Thread w : workers) {
            w.join();
        }
        if (failure.get() != null) {
            throw new AssertionError("seed " + seed + ": " + failure.get(), failure.get());
        }
    }
}
