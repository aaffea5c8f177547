/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.lang.ref.Cleaner;
import java.security.AccessController;
import java.security.PrivilegedAction;

/**
 * The one {@link Cleaner} of bfc4j, on a daemon thread named {@code bfc4j-cleaner}, created on
 * first use (so that a program that neither watches leaks nor takes views starts no thread). Its
 * actions: leak detection's reclaims ({@link LeakGuard}) and the frees that waited for views
 * ({@link ViewPins}). Each takes the lock it needs itself and holds it only for its own work.
 *
 * <p>Its thread holds nothing of the code that first needed it. It starts on whatever thread
 * that was, an application's request in a container, say, and by default takes that thread's
 * context class loader, its inheritable thread locals and (JDK 17 to 23) the access control
 * context of the frames on its stack: each kept that application's class loader, and every class
 * it loaded, reachable for the life of the JVM. So it has no context class loader, inherits no
 * thread locals, and is made inside {@code doPrivileged}, which leaves the callers' frames out.
 * (bfc-tensorflow's {@code bfc4j-tensor-pins} thread is made the same way.)
 */
final class BfcCleaner {

    static final Cleaner CLEANER = create();

    private BfcCleaner() {
    }

    @SuppressWarnings("removal") // AccessController: the only way to leave the callers' frames out before JDK 24
    private static Cleaner create() {
        return AccessController.doPrivileged((PrivilegedAction<Cleaner>) () -> Cleaner.create(r -> {
            Thread t = new Thread(null, r, "bfc4j-cleaner", 0, false);
            t.setDaemon(true);
            t.setContextClassLoader(null);
            return t;
        }));
    }
}
