/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class FaultInjectingSubAllocatorTest extends SubAllocatorContractTest {

    private static final long BASE = 0x7f0000000000L;
    private static final long MIB = 1L << 20;

    @Override
    protected SubAllocator newSubAllocator(long capacityHintBytes) {
        return new FaultInjectingSubAllocator(new SimSubAllocator(BASE, 2 * capacityHintBytes, 0, true));
    }

    private static FaultInjectingSubAllocator sub() {
        return new FaultInjectingSubAllocator(new SimSubAllocator(BASE, 1L << 30, 0, true));
    }

    private static List<Boolean> outcomes(FaultInjectingSubAllocator sub, int calls) {
        List<Boolean> ok = new ArrayList<>();
        for (int i = 0; i < calls; i++) {
            SubAllocator.Block b = sub.alloc(256, MIB);
            ok.add(b != null);
            if (b != null) {
                sub.free(b.ptr(), b.bytes());
            }
        }
        return ok;
    }

    @Test
    void failsExactlyTheNamedCalls() {
        FaultInjectingSubAllocator sub = sub().failCalls(4, 2);
        assertThat(outcomes(sub, 5)).containsExactly(true, false, true, false, true);
        assertThat(sub.allocCalls()).isEqualTo(5);
        assertThat(sub.injectedFailures()).isEqualTo(2);
    }

    @Test
    void failsEveryCallFromANumberUntilToldToStop() {
        FaultInjectingSubAllocator sub = sub().failCallsFrom(3);
        assertThat(outcomes(sub, 4)).containsExactly(true, true, false, false);
        sub.failNothing();
        assertThat(outcomes(sub, 2)).containsExactly(true, true);
        assertThat(sub.injectedFailures()).isEqualTo(2);
    }

    @Test
    void aSeededFractionFailsAboutThatShareAndRepeatsWithTheSeed() {
        long seed = 20261121L;
        System.out.println("aSeededFractionFailsAboutThatShareAndRepeatsWithTheSeed: seed=" + seed);
        List<Boolean> first = outcomes(sub().failFraction(0.25, seed), 2000);
        List<Boolean> second = outcomes(sub().failFraction(0.25, seed), 2000);
        assertThat(second).isEqualTo(first);
        long failed = first.stream().filter(ok -> !ok).count();
        assertThat(failed).isBetween(400L, 600L);
        assertThat(outcomes(sub().failFraction(0.0, seed), 100)).doesNotContain(false);
        assertThat(outcomes(sub().failFraction(1.0, seed), 100)).doesNotContain(true);
    }

    @Test
    void anAllocatorSeesAFailedExtendAsOutOfMemoryAndRecovers() {
        FaultInjectingSubAllocator sub = sub().failCalls(1);
        BfcAllocator a = new BfcAllocator(sub, 1L << 30, "faulty", BfcOptions.builder().allowRetryOnFailure(false).build());
        // The first extend fails; the back-off asks again for 90%, which succeeds.
        long p = a.allocateRaw(64, 1024);
        assertThat(p).isNotZero();
        assertThat(sub.allocCalls()).isEqualTo(2);
        sub.failCallsFrom(sub.allocCalls() + 1);
        assertThat(a.allocateRaw(64, 512 * MIB)).isZero();
        sub.failNothing();
        long q = a.allocateRaw(64, 512 * MIB);
        assertThat(q).isNotZero();
        a.deallocateRaw(p);
        a.deallocateRaw(q);
        assertThat(a.getStats().bytesInUse()).isZero();
        a.close();
    }

    @Test
    void badRulesAreRejected() {
        assertThatThrownBy(() -> sub().failCalls(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("callNumber=0 (expected: >= 1, calls are numbered from 1)");
        assertThatThrownBy(() -> sub().failCalls((long[]) null)).isInstanceOf(NullPointerException.class)
                .hasMessageStartingWith("callNumbers=null");
        assertThatThrownBy(() -> sub().failCallsFrom(-5)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("callNumber=-5 (expected: >= 1");
        assertThatThrownBy(() -> sub().failFraction(1.5, 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("fraction=1.5 (expected: a probability in [0, 1])");
        assertThatThrownBy(() -> sub().failFraction(Double.NaN, 1)).isInstanceOf(IllegalArgumentException.class);
    }
}
