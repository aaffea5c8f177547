/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.lang.ref.Cleaner;

/**
 * The one {@link Cleaner} of bfc4j, on a daemon thread named {@code bfc4j-cleaner}, created on
 * first use (so that a program that neither watches leaks nor takes views starts no thread). Its
 * actions: leak detection's reclaims ({@link LeakGuard}) and the frees that waited for views
 * ({@link ViewPins}). Each takes the lock it needs itself and holds it only for its own work.
 */
final class BfcCleaner {

    static final Cleaner CLEANER = Cleaner.create(r -> {
        Thread t = new Thread(r, "bfc4j-cleaner");
        t.setDaemon(true);
        return t;
    });

    private BfcCleaner() {
    }
}
