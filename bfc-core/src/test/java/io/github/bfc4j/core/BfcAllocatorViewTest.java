/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The read-only view answers what the allocator answers, and offers nothing that changes it. */
class BfcAllocatorViewTest {

    private static final long MIB = 1L << 20;

    @Test
    void answersWhatTheAllocatorAnswers() {
        try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(0x7f0000000000L, 64 * MIB, 0, true),
                16 * MIB, "view_test", BfcOptions.builder().allowRetryOnFailure(false).build())) {
            BfcAllocatorView v = BfcAllocatorView.of(a);
            long p = a.allocateRaw(256, 3000);
            long q = a.allocateRaw(256, 5 * MIB);
            a.deallocateRaw(q);
            assertThat(v.name()).isEqualTo("view_test");
            assertThat(v.memoryLimit()).isEqualTo(16 * MIB);
            assertThat(v.options()).isSameAs(a.options());
            assertThat(v.getMemoryType()).isEqualTo(a.getMemoryType());
            assertThat(v.deviceId()).isEqualTo(a.deviceId()).isZero();
            assertThat(v.getStats()).isEqualTo(a.getStats());
            assertThat(v.memoryStats()).isEqualTo(a.memoryStats());
            assertThat(v.bytesInUse()).isEqualTo(3072);
            assertThat(v.reservedBytes()).isEqualTo(a.reservedBytes());
            assertThat(v.bytesHeldForViews()).isEqualTo(a.bytesHeldForViews()).isZero();
            assertThat(v.peakReservedBytes()).isEqualTo(a.peakReservedBytes());
            assertThat(v.largestFreeChunkBytes()).isEqualTo(a.largestFreeChunkBytes());
            assertThat(v.regionCount()).isEqualTo(a.regionCount());
            assertThat(v.fragmentation()).isEqualTo(a.fragmentation());
            assertThat(v.fragmentationWithinRegions()).isEqualTo(a.fragmentationWithinRegions());
            assertThat(v.peakBytesInUse()).isEqualTo(a.peakBytesInUse()).isEqualTo(a.getStats().peakBytesInUse())
                    .isGreaterThan(5 * MIB);
            assertThat(v.isClosed()).isFalse();
            assertThat(v.memorySummary()).isEqualTo(a.memorySummary());
            assertThat(v.memoryMap().toJson()).isEqualTo(a.memoryMap().toJson());
            assertThat(v.getBinDebugInfo()).isEqualTo(a.getBinDebugInfo());
            assertThat(v.renderOccupancy()).isEqualTo(a.renderOccupancy());
            assertThat(v.dumpMemoryLog(4096)).isEqualTo(a.dumpMemoryLog(4096));
            assertThat(v.tracksAllocationSizes()).isTrue();
            assertThat(v.requestedSize(p)).isEqualTo(3000);
            assertThat(v.allocatedSize(p)).isEqualTo(3072);
            assertThat(v.allocationId(p)).isEqualTo(a.allocationId(p));
            assertThatThrownBy(() -> v.allocatedSize(p + 256)).isInstanceOf(IllegalArgumentException.class);
            List<Long> chunks = new ArrayList<>();
            v.forEachChunk((region, regionPtr, regionBytes, ptr, bytes, requested, id) -> chunks.add(ptr));
            assertThat(chunks).contains(p);
            v.checkInvariants();
            assertThat(v).hasToString(a.toString());
        }
    }

    /**
     * An allocator has one view, which lives as long as it does: a view made per call was
     * another object each time (a binder comparing views by identity took two views of one
     * allocator for two allocators), and one not kept was collected while its allocator lived
     * (what held it weakly read nothing).
     */
    @Test
    void anAllocatorHasOneViewThatLivesAsLongAsIt() throws InterruptedException {
        try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(0x7f0000000000L, 64 * MIB, 0, true),
                16 * MIB, "one_view", BfcOptions.builder().allowRetryOnFailure(false).build())) {
            assertThat(BfcAllocatorView.of(a)).isSameAs(BfcAllocatorView.of(a));
            java.lang.ref.WeakReference<BfcAllocatorView> view = new java.lang.ref.WeakReference<>(BfcAllocatorView.of(a));
            java.lang.ref.WeakReference<Object> sentinel = new java.lang.ref.WeakReference<>(new Object());
            GarbageCollection.gcUntil("a collection ran (an object held only weakly collected)",
                    () -> sentinel.get() == null);
            assertThat(view.get()).as("the view, after a collection, its allocator alive").isSameAs(BfcAllocatorView.of(a));
        }
    }

    @Test
    void offersNothingThatAllocatesFreesClosesOrChangesTheAllocator() {
        assertThat(AutoCloseable.class.isAssignableFrom(BfcAllocatorView.class)).isFalse();
        for (Method m : BfcAllocatorView.class.getMethods()) {
            if (m.getDeclaringClass() == Object.class || Modifier.isStatic(m.getModifiers())) {
                continue;
            }
            assertThat(m.getName()).as(m.toString()).doesNotStartWith("set")
                    .isNotIn("allocate", "allocateRaw", "deallocateRaw", "close", "clearStats",
                            "resetPeakStats", "emptyCache");
            assertThat(m.getReturnType()).as(m.toString())
                    .isNotEqualTo(BfcAllocator.class).isNotEqualTo(SubAllocator.class);
        }
        assertThatThrownBy(() -> BfcAllocatorView.of(null)).isInstanceOf(NullPointerException.class)
                .hasMessage("allocator=null (expected: the BfcAllocator to read)");
    }
}
