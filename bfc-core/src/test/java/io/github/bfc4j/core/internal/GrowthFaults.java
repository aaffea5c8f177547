/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

/**
 * For tests outside this package: makes the growth of the allocator's arrays (the timestamp
 * queues, the chunk table, the address map and its pages, the region list) throw {@link OutOfMemoryError} on the calling
 * thread, as a full heap would, until {@link #clear()}.
 */
public final class GrowthFaults {
    private GrowthFaults() {
    }

    /** The next growths of an {@link IntDeque} on this thread throw. */
    public static void failIntDequeGrowth() {
        IntDeque.beforeGrowth = failOn(Thread.currentThread(), "IntDeque");
    }

    /**
     * The next growths of an {@link IntDeque} on this thread run {@code hook} first: it may
     * wait (a test's way to hold a free there, under the allocator's lock, before it changes
     * anything) and may throw, as {@link #failIntDequeGrowth()} does.
     */
    public static void onIntDequeGrowth(Runnable hook) {
        Thread thread = Thread.currentThread();
        IntDeque.beforeGrowth = () -> {
            if (Thread.currentThread() == thread) {
                hook.run();
            }
        };
    }

    /** The next growths of a {@link ChunkTable} on this thread throw half-way. */
    public static void failChunkTableGrowth() {
        ChunkTable.midGrowth = failOn(Thread.currentThread(), "ChunkTable");
    }

    /** The next growths of an {@link AddressHandleMap} on this thread throw half-way. */
    public static void failAddressMapGrowth() {
        AddressHandleMap.midGrowth = failOn(Thread.currentThread(), "AddressHandleMap");
    }

    /** The next pages made by an {@link AddressHandleMap} on this thread throw. */
    public static void failAddressMapPages() {
        AddressHandleMap.beforePage = failOn(Thread.currentThread(), "AddressHandleMap page");
    }

    /** The next growths of a {@link RegionManager}'s region list on this thread throw. */
    public static void failRegionListGrowth() {
        RegionManager.beforeGrowth = failOn(Thread.currentThread(), "RegionManager");
    }

    /** Growth works again. */
    public static void clear() {
        IntDeque.beforeGrowth = null;
        ChunkTable.midGrowth = null;
        AddressHandleMap.midGrowth = null;
        AddressHandleMap.beforePage = null;
        RegionManager.beforeGrowth = null;
    }

    private static Runnable failOn(Thread thread, String what) {
        return () -> {
            if (Thread.currentThread() == thread) {
                throw new OutOfMemoryError("injected: " + what + " growth");
            }
        };
    }
}
