/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.util.Arrays;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * For tests of one thread's call that another thread must find waiting (a close waiting for a
 * free in flight, an allocation waiting in the retry loop): the waiting thread is observed, its
 * state and stack, and nothing in the code under test is hooked. What the test does next then
 * happens while that thread waits there, not before it got there (a thread started late on a
 * loaded machine), and a test whose thread never waits there fails instead of passing without
 * testing the wait.
 */
public final class ThreadWatch {

    /** Far longer than a thread takes to start and reach its wait, even under load. */
    private static final long TIMEOUT_SECONDS = 30;

    private ThreadWatch() {
    }

    /**
     * Returns once {@code thread} waits ({@code WAITING} or {@code TIMED_WAITING}) in the method
     * {@code method} of the class named {@code owner}: the innermost frame below the JDK's waiting
     * ({@code Object.wait}, {@code LockSupport.park*}).
     *
     * @param thread the thread; null until it has started
     * @param call its call, which cannot wait once done
     * @param owner the waiting method's class, by name (an internal class a test cannot import)
     * @param method the waiting method's name
     * @param what what it waits for, for the failure's message
     * @throws AssertionError if the call returned before the thread was seen waiting there, or if
     *     it was not seen waiting there within 30 s (with the stack last seen)
     * @throws InterruptedException if this thread is interrupted while it watches
     */
    public static void awaitWaitingIn(Supplier<Thread> thread, Future<?> call, String owner, String method,
            String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_SECONDS);
        String where = owner.substring(owner.lastIndexOf('.') + 1) + "." + method;
        StackTraceElement[] last = {};
        Thread.State lastState = null;
        while (System.nanoTime() - deadline < 0) {
            if (call.isDone()) {
                throw new AssertionError(where + " returned before it was seen waiting " + what);
            }
            Thread t = thread.get();
            if (t != null) {
                last = t.getStackTrace();
                lastState = t.getState();
                if ((lastState == Thread.State.WAITING || lastState == Thread.State.TIMED_WAITING)
                        && waitingIn(last, owner, method)) {
                    return;
                }
            }
            Thread.sleep(5);
        }
        throw new AssertionError(where + " was not seen waiting " + what + " within " + TIMEOUT_SECONDS
                + " s; last seen: " + (lastState == null ? "not started" : lastState + " at " + Arrays.toString(last)));
    }

    /** Whether the innermost frame below the JDK's waiting methods is {@code owner.method}. */
    private static boolean waitingIn(StackTraceElement[] stack, String owner, String method) {
        for (StackTraceElement e : stack) {
            String c = e.getClassName();
            boolean jdkWait = c.equals("java.lang.Object") && e.getMethodName().startsWith("wait")
                    || c.equals("java.util.concurrent.locks.LockSupport") && e.getMethodName().startsWith("park")
                    || c.equals("jdk.internal.misc.Unsafe") && e.getMethodName().equals("park");
            if (!jdkWait) {
                return c.equals(owner) && e.getMethodName().equals(method);
            }
        }
        return false;
    }
}
