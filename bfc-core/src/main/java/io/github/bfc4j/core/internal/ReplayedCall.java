/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

/**
 * What a replayed trace recorded of the call the calling thread is making: its time and its
 * thread. A history recorded during the call carries them in place of the recording's own
 * clock and of the replaying thread's name, so that a replay shows the run the trace recorded,
 * not the replay.
 */
public final class ReplayedCall {

    /** The call on each thread; one mutable holder, so that setting it creates nothing. */
    private static final ThreadLocal<ReplayedCall> CALL = ThreadLocal.withInitial(ReplayedCall::new);

    private boolean replaying;
    private long micros = -1;
    private String thread;

    private ReplayedCall() {
    }

    /**
     * Marks the calls the thread makes from now on as a replay's, until {@link #end()}.
     *
     * @param micros the time the trace recorded, epoch microseconds; -1 for none (the
     *     recording's own clock)
     * @param thread the name of the thread the trace recorded the call on; null if the trace
     *     does not say (the replaying thread's name says nothing of the recorded run)
     */
    public static void begin(long micros, String thread) {
        ReplayedCall c = CALL.get();
        c.replaying = true;
        c.micros = micros < 0 ? -1 : micros;
        c.thread = thread;
    }

    /** Ends the replayed call: the thread's calls are its own again. */
    public static void end() {
        ReplayedCall c = CALL.get();
        c.replaying = false;
        c.micros = -1;
        c.thread = null;
    }

    /**
     * @return whether the calling thread is making a replayed call: its Java stack (the
     *     replayer's) says nothing of the recorded run, so none is walked for it
     */
    public static boolean replaying() {
        return CALL.get().replaying;
    }

    /** @return the time set on the calling thread, or -1 if none */
    public static long micros() {
        return CALL.get().micros;
    }

    /**
     * @return the name to record for a call on the calling thread: the thread the trace recorded
     *     while a replayed call is made (null if the trace does not say), else the calling
     *     thread's own name
     */
    public static String threadName() {
        ReplayedCall c = CALL.get();
        return c.replaying ? c.thread : Thread.currentThread().getName();
    }
}
