/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

/**
 * The time a replayed trace recorded for the call the calling thread is making: a history
 * recorded during the call carries it in place of the recording's own clock, so that a replay
 * shows the times of the run the trace recorded, not those of the replay.
 */
public final class RecordedTime {

    /** The time on each thread, -1 when none is given; an array, so that setting it creates nothing. */
    private static final ThreadLocal<long[]> TIME = ThreadLocal.withInitial(() -> new long[] {-1});

    private RecordedTime() {
    }

    /**
     * @param micros the recorded time of the calls the thread makes from now on, epoch
     *     microseconds; -1 for none (the recording's own clock)
     */
    public static void set(long micros) {
        TIME.get()[0] = micros < 0 ? -1 : micros;
    }

    /** @return the time set on the calling thread, or -1 if none */
    public static long get() {
        return TIME.get()[0];
    }
}
