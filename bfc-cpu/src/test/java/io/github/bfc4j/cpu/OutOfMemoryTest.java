/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.github.bfc4j.core.Allocation;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOutOfMemoryException;
import io.github.bfc4j.core.ClosePolicy;
import io.github.bfc4j.core.FaultInjectingSubAllocator;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class OutOfMemoryTest {

    private static final long MIB = 1L << 20;

    private static BfcAllocator.Builder builder(long limit) {
        return BfcAllocator.builder().name("oom").memoryLimit(limit).allowRetryOnFailure(false)
                .subAllocator(new AlignedHostSubAllocator()).closePolicy(ClosePolicy.FORCE);
    }

    @Test
    void aRequestAboveTheLimitSaysSoAndTheAllocatorGoesOn() {
        BfcAllocator a = builder(64 * MIB).build();
        Allocation small = a.allocate(MIB);
        BfcOutOfMemoryException e = catchThrowableOfType(() -> a.allocate(100 * MIB + 1), BfcOutOfMemoryException.class);
        assertThat(e.allocatorName()).isEqualTo("oom");
        assertThat(e.requestedBytes()).isEqualTo(100 * MIB + 1);
        assertThat(e.roundedBytes()).isEqualTo(100 * MIB + 256);
        // The first region is 2 MiB (growth starts there), split into the 1 MiB in use and 1 MiB free.
        assertThat(e.bytesInUse()).isEqualTo(MIB);
        assertThat(e.reservedBytes()).isEqualTo(2 * MIB);
        assertThat(e.regionCount()).isEqualTo(1);
        assertThat(e.memoryLimit()).isEqualTo(64 * MIB);
        assertThat(e.largestFreeChunkBytes()).isEqualTo(MIB);
        assertThat(e.stats().bytesInUse()).isEqualTo(MIB);
        assertThat(e.stats().numAllocs()).isEqualTo(1);
        assertThat(e).hasMessage("Allocator 'oom' is out of memory: tried to allocate 100.00MiB (rounded to 100.00MiB)."
                + " 1.00MiB is in use by live allocations, 2.00MiB is reserved from the sub-allocator in 1 region,"
                + " the memory limit is 64.00MiB and the largest free chunk is 1.00MiB."
                + " The request alone is larger than the memory limit: raise memoryLimit or allocate less at once.");
        try (Allocation more = a.allocate(32 * MIB)) {
            assertThat(more.asByteBuffer().capacity()).isEqualTo(32 * MIB);
        }
        small.close();
        assertThat(a.getStats().bytesInUse()).isZero();
        a.close();
    }

    @Test
    void aFragmentedPoolSaysItIsFragmented() {
        // One region of exactly the limit; free every other MiB, then ask for 2 MiB.
        BfcAllocator a = builder(8 * MIB).allowGrowth(false).build();
        List<Allocation> all = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            all.add(a.allocate(MIB));
        }
        for (int i = 0; i < 8; i += 2) {
            all.get(i).close();
        }
        BfcOutOfMemoryException e = catchThrowableOfType(() -> a.allocate(2 * MIB), BfcOutOfMemoryException.class);
        assertThat(e.bytesInUse()).isEqualTo(4 * MIB);
        assertThat(e.reservedBytes()).isEqualTo(8 * MIB);
        assertThat(e.largestFreeChunkBytes()).isEqualTo(MIB);
        assertThat(e.roundedBytes()).isEqualTo(2 * MIB);
        assertThat(e.getMessage()).doesNotContain("(rounded to")
                .endsWith(" 4.00MiB of the reserved memory is free but no free chunk is large enough, so the pool is"
                        + " fragmented: free long-lived allocations sooner, allocate large buffers first, or enable"
                        + " garbageCollection so that wholly free regions are returned before growing.");
        // Freeing a neighbour coalesces three free MiB: now it fits, and the chunk is not split
        // (the 1 MiB left over is less than the 2 MiB asked for).
        all.get(1).close();
        try (Allocation x = a.allocate(2 * MIB)) {
            assertThat(x.size()).isEqualTo(3 * MIB);
        }
        for (int i = 3; i < 8; i += 2) {
            all.get(i).close();
        }
        assertThat(a.getStats().bytesInUse()).isZero();
        a.close();
    }

    @Test
    void aSubAllocatorThatCannotDeliverIsNamedAsTheCause() {
        FaultInjectingSubAllocator sub = new FaultInjectingSubAllocator(new AlignedHostSubAllocator());
        BfcAllocator a = BfcAllocator.builder().name("oom").memoryLimit(64 * MIB).allowRetryOnFailure(false)
                .subAllocator(sub).build();
        sub.failCallsFrom(1);
        BfcOutOfMemoryException e = catchThrowableOfType(() -> a.allocate(MIB), BfcOutOfMemoryException.class);
        assertThat(e.reservedBytes()).isZero();
        assertThat(e.largestFreeChunkBytes()).isZero();
        assertThat(e.regionCount()).isZero();
        assertThat(e.getMessage()).contains("0B is in use", "in 0 regions")
                .endsWith("The limit leaves room for it, so the sub-allocator could not provide the region:"
                        + " the host or device itself is out of memory.");
        assertThat(sub.injectedFailures()).isPositive();
        sub.failNothing();
        try (Allocation x = a.allocate(MIB)) {
            assertThat(x.asPointer().capacity()).isEqualTo(MIB);
        }
        a.close();
    }
}
