/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.SubAllocator.Block;
import io.github.bfc4j.core.sim.SimSubAllocator;
import org.junit.jupiter.api.Test;

class LimitingSubAllocatorTest extends SubAllocatorContractTest {

    private static final long BASE = 0x7f0000000000L;
    private static final long MIB = 1L << 20;

    @Override
    protected SubAllocator newSubAllocator(long capacityHintBytes) {
        return new LimitingSubAllocator(new SimSubAllocator(BASE, 4 * capacityHintBytes, 0, true), 2 * capacityHintBytes);
    }

    @Override
    protected void close(SubAllocator subAllocator) {
        assertThat(((LimitingSubAllocator) subAllocator).heldBytes()).isZero();
    }

    @Test
    void requestsAboveTheCapFailAndFreesMakeRoomAgain() {
        SimSubAllocator sim = new SimSubAllocator(BASE, 64 * MIB, 0, true);
        LimitingSubAllocator sub = new LimitingSubAllocator(sim, 10 * MIB);
        Block a = sub.alloc(256, 6 * MIB);
        assertThat(a).isNotNull();
        assertThat(sub.alloc(256, 5 * MIB)).isNull();
        Block b = sub.alloc(256, 4 * MIB);
        assertThat(b).isNotNull();
        assertThat(sub.heldBytes()).isEqualTo(10 * MIB);
        assertThat(sub.alloc(256, 256)).isNull();
        sub.free(a.ptr(), a.bytes());
        assertThat(sub.heldBytes()).isEqualTo(4 * MIB);
        assertThat(sub.alloc(256, 6 * MIB)).isNotNull();
        assertThat(sim.reservedBytes()).isEqualTo(10 * MIB);
    }

    @Test
    void anAllocatorOverTheCapRunsOutAtTheCapNotAtItsLimit() {
        LimitingSubAllocator sub = new LimitingSubAllocator(new SimSubAllocator(BASE, 1L << 32, 0, false), 8 * MIB);
        BfcAllocator a = new BfcAllocator(sub, 1L << 30, "capped", BfcOptions.builder().allowRetryOnFailure(false).build());
        long p = a.allocateRaw(64, 5 * MIB);
        assertThat(p).isNotZero();
        // Growth asks for regions of 2 MiB doubling; the back-off shrinks requests to fit the cap.
        assertThat(a.allocateRaw(64, 6 * MIB)).isZero();
        assertThat(sub.heldBytes()).isLessThanOrEqualTo(8 * MIB);
        a.deallocateRaw(p);
        a.close();
        assertThat(sub.heldBytes()).isZero();
    }

    @Test
    void freeOfMoreThanIsHeldIsRejectedAndChangesNothing() {
        LimitingSubAllocator sub = new LimitingSubAllocator(new SimSubAllocator(BASE, 64 * MIB, 0, true), 10 * MIB);
        Block a = sub.alloc(256, MIB);
        assertThatThrownBy(() -> sub.free(a.ptr(), 2 * MIB)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("more than the 1048576 bytes held");
        assertThat(sub.heldBytes()).isEqualTo(MIB);
    }

    @Test
    void negativeLimitIsRejected() {
        assertThatThrownBy(() -> new LimitingSubAllocator(new SimSubAllocator(BASE, MIB, 0, true), -1))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("limitBytes=-1 (expected: >= 0)");
    }
}
