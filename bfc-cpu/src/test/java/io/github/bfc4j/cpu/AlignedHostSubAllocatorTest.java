/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.FaultInjectingSubAllocator;
import io.github.bfc4j.core.LimitingSubAllocator;
import io.github.bfc4j.core.MemoryType;
import io.github.bfc4j.core.SubAllocator;
import io.github.bfc4j.core.SubAllocator.Block;
import io.github.bfc4j.core.SubAllocatorContractTest;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.javacpp.Pointer;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

class AlignedHostSubAllocatorTest extends SubAllocatorContractTest {

    private static final long MIB = 1L << 20;

    @Override
    protected SubAllocator newSubAllocator(long capacityHintBytes) {
        return new AlignedHostSubAllocator();
    }

    @Override
    protected void close(SubAllocator subAllocator) {
        assertThat(((AlignedHostSubAllocator) subAllocator).liveRegions()).isZero();
        assertThat(((AlignedHostSubAllocator) subAllocator).liveBytes()).isZero();
    }

    @Override
    protected long maxHonouredAlignment() {
        return 1L << 16;
    }

    /** The contract, through the limiting adaptor over real memory. */
    @Nested
    class Limited extends SubAllocatorContractTest {
        @Override
        protected SubAllocator newSubAllocator(long capacityHintBytes) {
            return new LimitingSubAllocator(new AlignedHostSubAllocator(), 2 * capacityHintBytes);
        }
    }

    /** The contract, through the fault-injecting adaptor (with no fault due) over real memory. */
    @Nested
    class FaultInjecting extends SubAllocatorContractTest {
        @Override
        protected SubAllocator newSubAllocator(long capacityHintBytes) {
            return new FaultInjectingSubAllocator(new AlignedHostSubAllocator()).failCallsFrom(1_000_000);
        }
    }

    @Test
    void regionsAreAlignedToTheConfiguredAlignmentAndWritable() {
        for (long alignment : new long[] {64, 256, 4096, 1L << 21}) {
            AlignedHostSubAllocator sub = new AlignedHostSubAllocator(alignment);
            List<Block> blocks = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                Block b = sub.alloc(64, MIB + 256L * i);
                assertThat(b.ptr() % alignment).as("alignment %d", alignment).isZero();
                assertThat(b.bytes()).isEqualTo(MIB + 256L * i);
                // Touch the first and last byte: the memory is real and writable.
                Pointer p = new Pointer() { { address = b.ptr(); } };
                Pointer.memset(p, 0xAB, b.bytes());
                blocks.add(b);
            }
            assertThat(sub.liveRegions()).isEqualTo(8);
            for (Block b : blocks) {
                sub.free(b.ptr(), b.bytes());
            }
            assertThat(sub.liveBytes()).isZero();
        }
    }

    @Test
    void aRequestedAlignmentAboveTheConfiguredOneIsHonoured() {
        AlignedHostSubAllocator sub = new AlignedHostSubAllocator(64);
        Block b = sub.alloc(1L << 20, 4 * MIB);
        assertThat(b.ptr() % (1L << 20)).isZero();
        sub.free(b.ptr(), b.bytes());
    }

    @Test
    void freeRejectsAWrongSizeOrAnInteriorAddressAndFreesNothing() {
        AlignedHostSubAllocator sub = new AlignedHostSubAllocator();
        Block b = sub.alloc(256, MIB);
        assertThatThrownBy(() -> sub.free(b.ptr(), 2 * MIB)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("the region there has 1048576 bytes");
        assertThatThrownBy(() -> sub.free(b.ptr() + 256, MIB - 256)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not a region this sub-allocator handed out");
        assertThat(sub.liveRegions()).isEqualTo(1);
        sub.free(b.ptr(), MIB);
        assertThat(sub.liveRegions()).isZero();
    }

    @Test
    void badArgumentsAreRejected() {
        assertThatThrownBy(() -> new AlignedHostSubAllocator(32)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("alignment=32 (expected: a power of two >= 64, e.g. 256)");
        assertThatThrownBy(() -> new AlignedHostSubAllocator(384)).isInstanceOf(IllegalArgumentException.class);
        AlignedHostSubAllocator sub = new AlignedHostSubAllocator();
        assertThatThrownBy(() -> sub.alloc(256, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("numBytes=0 (expected: > 0)");
        assertThatThrownBy(() -> sub.alloc(3, 256)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("alignment=3 (expected: a power of two)");
        assertThat(sub.alloc(256, Long.MAX_VALUE - 64)).isNull();
        assertThat(sub.memoryType()).isEqualTo(MemoryType.HOST_PAGEABLE);
        assertThat(sub.supportsCoalescing()).isFalse();
    }

    @Test
    @EnabledOnOs(value = OS.LINUX, disabledReason = "resident set size is read from Linux's /proc")
    void freedRegionsGoBackToTheOperatingSystem() {
        AlignedHostSubAllocator sub = new AlignedHostSubAllocator();
        // Regions of 4 MiB (may come from malloc's heap: trimmed) and 64 MiB (mmapped).
        List<Block> blocks = new ArrayList<>();
        for (int i = 0; i < 32; i++) {
            blocks.add(sub.alloc(256, 4 * MIB));
        }
        for (int i = 0; i < 6; i++) {
            blocks.add(sub.alloc(256, 64 * MIB));
        }
        long before = Pointer.physicalBytes();
        for (Block b : blocks) {
            Pointer.memset(new Pointer() { { address = b.ptr(); } }, 1, b.bytes());
        }
        long touched = Pointer.physicalBytes();
        assertThat(touched - before).as("resident growth after touching 512 MiB").isGreaterThan(400 * MIB);
        for (Block b : blocks) {
            sub.free(b.ptr(), b.bytes());
        }
        long after = Pointer.physicalBytes();
        assertThat(touched - after).as("resident drop after freeing 512 MiB").isGreaterThan(400 * MIB);
    }
}
