/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cpu;

import static io.github.bfc4j.core.GarbageCollection.gcUntil;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.function.LongSupplier;

/**
 * Checks that a closed allocator (or one whose cache was emptied) gave its memory back: at
 * once, but for the regions that views still reach, and all of it once those are collected.
 */
final class Returned {

    private Returned() {
    }

    /**
     * Checks that the sub-allocator holds nothing but what is held back for views, which the
     * caller may still reach (a view in a local variable of a method still running).
     *
     * @param sub the allocator's sub-allocator
     * @param bytesHeldForViews the allocator's {@code bytesHeldForViews()}
     */
    static void assertNothingHeldButForViews(AlignedHostSubAllocator sub, LongSupplier bytesHeldForViews) {
        // Read first: a view collected in between only lowers what the sub-allocator holds.
        long held = bytesHeldForViews.getAsLong();
        assertThat(sub.liveBytes()).as("bytes not returned, beyond the %d held for views", held)
                .isLessThanOrEqualTo(held);
    }

    /**
     * Checks {@link #assertNothingHeldButForViews}, then that everything is returned once the
     * views are collected: for callers that hold no view themselves.
     *
     * @param sub the allocator's sub-allocator
     * @param bytesHeldForViews the allocator's {@code bytesHeldForViews()}
     */
    static void assertAllReturned(AlignedHostSubAllocator sub, LongSupplier bytesHeldForViews)
            throws InterruptedException {
        assertNothingHeldButForViews(sub, bytesHeldForViews);
        gcUntil("every byte returned once the views are collected", () -> sub.liveBytes() == 0);
        assertThat(bytesHeldForViews.getAsLong()).isZero();
    }
}
