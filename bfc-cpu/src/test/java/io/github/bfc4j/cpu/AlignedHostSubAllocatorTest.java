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

    /**
     * An OutOfMemoryError after the malloc (making the region's records) gives the memory back
     * before it reaches the caller: the 64 MiB, touched so that they count in the resident set,
     * stayed mapped and unrecorded. Measured as the process's resident bytes, which drop by about
     * the region's size when the memory is freed (a region this large is mapped on its own, so
     * its free unmaps it; no trim runs).
     */
    @Test
    @EnabledOnOs(OS.LINUX)
    void anOutOfMemoryErrorAfterTheMallocFreesTheMemory() {
        long bytes = 64 * MIB;
        long[] residentWhenFailing = {0};
        AlignedHostSubAllocator sub = new AlignedHostSubAllocator(256, AlignedHostSubAllocator.NEVER_TRIM, () -> { },
                ptr -> {
                    Pointer.memset(new Pointer() {
                        {
                            address = ptr;
                        }
                    }, 1, bytes);
                    residentWhenFailing[0] = Pointer.physicalBytes();
                    throw new OutOfMemoryError("Java heap space (injected)");
                });
        assertThatThrownBy(() -> sub.alloc(256, bytes)).isInstanceOf(OutOfMemoryError.class)
                .hasMessage("Java heap space (injected)");
        long residentAfter = Pointer.physicalBytes();
        System.out.println("resident bytes when failing " + residentWhenFailing[0] + ", after " + residentAfter);
        assertThat(residentWhenFailing[0] - residentAfter).as("resident bytes given back")
                .isGreaterThan(bytes / 2);
        assertThat(sub.liveBytes()).isZero();
    }

    @Test
    void trimsOnlyOnceTheThresholdHasBeenFreedSinceTheLastTrim() {
        int[] trims = new int[1];
        AlignedHostSubAllocator sub = new AlignedHostSubAllocator(256, 10 * MIB, () -> trims[0]++);
        List<Block> blocks = new ArrayList<>();
        for (int i = 0; i < 7; i++) {
            blocks.add(sub.alloc(256, 4 * MIB));
        }
        int[] expectedAfterEachFree = {0, 0, 1, 1, 1, 2, 2}; // 4, 8, 12 (trim: back to 0), 4, 8, 12, 4 MiB
        for (int i = 0; i < blocks.size(); i++) {
            sub.free(blocks.get(i).ptr(), blocks.get(i).bytes());
            assertThat(trims[0]).as("trims after %d frees of 4 MiB", i + 1).isEqualTo(expectedAfterEachFree[i]);
        }
        // A rejected free frees nothing and counts nothing.
        Block b = sub.alloc(256, 8 * MIB);
        assertThatThrownBy(() -> sub.free(b.ptr(), 4 * MIB)).isInstanceOf(IllegalArgumentException.class);
        assertThat(trims[0]).isEqualTo(2);
        sub.free(b.ptr(), b.bytes()); // 4 + 8 MiB since the last trim
        assertThat(trims[0]).isEqualTo(3);
    }

    @Test
    void trimThresholdZeroTrimsEveryFreeAndNeverTrimNever() {
        int[] every = new int[1];
        int[] never = new int[1];
        AlignedHostSubAllocator eager = new AlignedHostSubAllocator(256,
                AlignedHostSubAllocator.TRIM_ON_EVERY_FREE, () -> every[0]++);
        AlignedHostSubAllocator lazy = new AlignedHostSubAllocator(256,
                AlignedHostSubAllocator.NEVER_TRIM, () -> never[0]++);
        for (int i = 0; i < 5; i++) {
            Block e = eager.alloc(256, 64 << 10);
            eager.free(e.ptr(), e.bytes());
            Block n = lazy.alloc(256, 64 * MIB);
            lazy.free(n.ptr(), n.bytes());
        }
        assertThat(every[0]).isEqualTo(5);
        assertThat(never[0]).isZero();
    }

    @Test
    void trimThresholdDefaultsTo32MiBAndMustNotBeNegative() {
        assertThat(new AlignedHostSubAllocator().trimThresholdBytes()).isEqualTo(32 * MIB);
        assertThat(new AlignedHostSubAllocator(4096).trimThresholdBytes()).isEqualTo(32 * MIB);
        assertThat(new AlignedHostSubAllocator(4096, 0).trimThresholdBytes()).isZero();
        assertThatThrownBy(() -> new AlignedHostSubAllocator(256, -1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("trimThresholdBytes=-1 (expected: >= 0; TRIM_ON_EVERY_FREE (0), NEVER_TRIM, or a"
                        + " byte count such as the default 33554432)");
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
