/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.Allocation;
import io.github.bfc4j.core.AllocatorStats;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.BfcOutOfMemoryException;
import io.github.bfc4j.core.ClosePolicy;
import io.github.bfc4j.core.LimitingSubAllocator;
import io.github.bfc4j.core.ShardedBfcAllocator;
import io.github.bfc4j.core.SubAllocator;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The raw, TensorFlow-style API and the sub-allocators given bad pointers and extreme sizes on
 * real host memory: each call is an exception saying what was wrong, or the documented answer
 * (0, null), and the allocator is unchanged afterwards (its statistics equal, its invariants
 * holding, the next allocation and free working).
 */
class RawApiMisuseTest {

    private static final long MIB = 1L << 20;

    /** Runs {@code call}, expecting {@code type} with {@code message} in it, and nothing changed. */
    private static void refused(BfcAllocator a, Executable call, Class<? extends Throwable> type, String message) {
        AllocatorStats before = a.getStats();
        long reserved = a.reservedBytes();
        assertThatThrownBy(call::execute).isInstanceOf(type).hasMessageContaining(message);
        a.checkInvariants();
        assertThat(a.getStats()).isEqualTo(before);
        assertThat(a.reservedBytes()).isEqualTo(reserved);
    }

    @Test
    void badFreesAreRefusedAndChangeNothing() {
        AlignedHostSubAllocator sub = new AlignedHostSubAllocator();
        BfcAllocator a = BfcAllocator.builder().name("raw").memoryLimit(64 * MIB).subAllocator(sub).build();
        BfcAllocator other = BfcAllocator.builder().name("other").memoryLimit(64 * MIB)
                .subAllocator(new AlignedHostSubAllocator()).build();
        long p = a.allocateRaw(256, 10_000);
        long q = a.allocateRaw(256, 10_000);
        long foreign = other.allocateRaw(256, 10_000);
        Allocation handle = a.allocate(1000);
        a.deallocateRaw(q);

        a.deallocateRaw(0); // a no-op, as upstream's free of nullptr
        refused(a, () -> a.deallocateRaw(q), IllegalArgumentException.class, "was not allocated by allocator 'raw'");
        for (long inside : new long[] {p + 1, p + 64, p + 255, p + 256, p + 9_999}) {
            refused(a, () -> a.deallocateRaw(inside), IllegalArgumentException.class,
                    "was not allocated by allocator 'raw'");
        }
        refused(a, () -> a.deallocateRaw(foreign), IllegalArgumentException.class,
                "was not allocated by allocator 'raw'");
        refused(a, () -> a.deallocateRaw(handle.address()), IllegalArgumentException.class,
                "owned by an Allocation handle");
        for (long wild : new long[] {1, -1, Long.MIN_VALUE, Long.MAX_VALUE}) {
            refused(a, () -> a.deallocateRaw(wild), IllegalArgumentException.class,
                    "was not allocated by allocator 'raw'");
        }
        // Later calls work.
        long r = a.allocateRaw(256, 5000);
        assertThat(r).isNotZero();
        a.deallocateRaw(r);
        a.deallocateRaw(p);
        handle.close();
        assertThat(a.getStats().bytesInUse()).isZero();
        other.deallocateRaw(foreign);
        other.close();

        a.close();
        assertThat(sub.liveBytes()).isZero();
        a.deallocateRaw(0); // still a no-op
        assertThatThrownBy(() -> a.deallocateRaw(p)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("allocator 'raw' is closed");
        assertThatThrownBy(() -> a.allocateRaw(256, 1)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("allocator 'raw' is closed");
    }

    @Test
    void badAlignmentsAndSizesAreRefusedOrAnsweredZero() {
        AlignedHostSubAllocator sub = new AlignedHostSubAllocator();
        BfcAllocator a = BfcAllocator.builder().name("raw").memoryLimit(64 * MIB).subAllocator(sub).build();
        long p = a.allocateRaw(256, 10_000);
        for (long alignment : new long[] {0, -1, -256, 3, 96, 1000, Long.MIN_VALUE, Long.MAX_VALUE}) {
            refused(a, () -> a.allocateRaw(alignment, 100), IllegalArgumentException.class,
                    "alignment=" + alignment + " (expected: a power of two)");
            refused(a, () -> a.allocateRawOrThrow(alignment, 100), IllegalArgumentException.class,
                    "alignment=" + alignment + " (expected: a power of two)");
            refused(a, () -> a.allocate(100, alignment), IllegalArgumentException.class,
                    "alignment=" + alignment + " (expected: a power of two)");
        }
        for (long size : new long[] {-1, Long.MIN_VALUE}) {
            refused(a, () -> a.allocateRaw(256, size), IllegalArgumentException.class, "numBytes=" + size);
            refused(a, () -> a.allocate(size), IllegalArgumentException.class, "bytes=" + size);
        }
        refused(a, () -> a.allocate(0), IllegalArgumentException.class, "bytes=0");
        for (long size : new long[] {Long.MAX_VALUE, Long.MAX_VALUE - 255, BfcAllocator.MAX_ALLOCATION_BYTES + 1,
                BfcAllocator.MAX_ALLOCATION_BYTES}) {
            refused(a, () -> a.allocate(size), IllegalArgumentException.class, "bytes=" + size);
        }
        for (long size : new long[] {64 * MIB + 1, BfcAllocator.MAX_ALLOCATION_BYTES,
                BfcAllocator.MAX_ALLOCATION_BYTES + 1, Long.MAX_VALUE - 255, Long.MAX_VALUE}) {
            long inUse = a.getStats().bytesInUse();
            assertThat(a.allocateRaw(256, size)).as("allocateRaw(%d)", size).isZero();
            assertThatThrownBy(() -> a.allocateRawOrThrow(256, size)).isInstanceOf(BfcOutOfMemoryException.class);
            a.checkInvariants();
            assertThat(a.getStats().bytesInUse()).isEqualTo(inUse);
        }
        assertThatThrownBy(() -> a.allocate(BfcAllocator.MAX_ALLOCATION_BYTES - 63))
                .isInstanceOf(BfcOutOfMemoryException.class);
        // A huge power-of-two alignment is only passed on to the sub-allocator: served from a
        // region held, or 0 where a new region would be needed.
        long huge = a.allocateRaw(1L << 62, 100);
        assertThat(huge).isNotZero();
        a.deallocateRaw(huge);
        assertThat(a.allocateRaw(1L << 62, 63 * MIB)).isZero();
        assertThatThrownBy(() -> a.allocate(100, 1L << 62)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("expected: bytes + alignment - 1 <= ");
        assertThatThrownBy(() -> a.allocate(100, 1L << 40)).isInstanceOf(BfcOutOfMemoryException.class);
        a.checkInvariants();
        long r = a.allocateRaw(256, 5000);
        assertThat(r).isNotZero();
        a.deallocateRaw(r);
        a.deallocateRaw(p);
        a.close();
        assertThat(sub.liveBytes()).isZero();
    }

    @Test
    void aLimitNearLongMaxValueFailsCleanlyAndStillServes() {
        for (boolean growth : new boolean[] {true, false}) {
            AlignedHostSubAllocator sub = new AlignedHostSubAllocator();
            // Under a cap, so that the back-off from 8 EiB cannot reserve much of this machine.
            LimitingSubAllocator capped = new LimitingSubAllocator(sub, 64 * MIB);
            BfcAllocator a = BfcAllocator.builder().name("huge").memoryLimit(Long.MAX_VALUE).subAllocator(capped)
                    .allowGrowth(growth).build();
            long p = a.allocateRaw(256, 1000);
            assertThat(p).as("growth=%s", growth).isNotZero();
            for (long size : new long[] {Long.MAX_VALUE / 2, BfcAllocator.MAX_ALLOCATION_BYTES, Long.MAX_VALUE}) {
                assertThat(a.allocateRaw(256, size)).isZero();
                a.checkInvariants();
            }
            a.deallocateRaw(p);
            a.close();
            assertThat(capped.heldBytes()).isZero();
            assertThat(sub.liveBytes()).isZero();
        }
        AlignedHostSubAllocator sub = new AlignedHostSubAllocator();
        LimitingSubAllocator capped = new LimitingSubAllocator(sub, 64 * MIB);
        ShardedBfcAllocator s = ShardedBfcAllocator.builder().name("huge").memoryLimit(Long.MAX_VALUE)
                .subAllocator(capped).shards(2).build();
        long p = s.allocateRaw(256, 1000);
        assertThat(p).isNotZero();
        for (long size : new long[] {Long.MAX_VALUE / 2, BfcAllocator.MAX_ALLOCATION_BYTES, Long.MAX_VALUE}) {
            assertThat(s.allocateRaw(256, size)).isZero();
        }
        s.shards().forEach(BfcAllocator::checkInvariants);
        s.deallocateRaw(p);
        s.close();
        assertThat(sub.liveBytes()).isZero();
    }

    @Test
    void theShardedRawApiRefusesBadPointersAndChangesNothing() {
        AlignedHostSubAllocator sub = new AlignedHostSubAllocator();
        ShardedBfcAllocator s = ShardedBfcAllocator.builder().name("sharded").memoryLimit(64 * MIB).subAllocator(sub)
                .shards(2).closePolicy(ClosePolicy.FORCE).build();
        BfcAllocator other = BfcAllocator.builder().name("other").memoryLimit(64 * MIB)
                .subAllocator(new AlignedHostSubAllocator()).build();
        long p = s.allocateRaw(256, 10_000);
        long q = s.allocateRaw(256, 10_000);
        long foreign = other.allocateRaw(256, 1000);
        s.deallocateRaw(q);
        AllocatorStats before = s.getStats();
        List<Executable> calls = new ArrayList<>();
        calls.add(() -> s.deallocateRaw(q));
        calls.add(() -> s.deallocateRaw(p + 1));
        calls.add(() -> s.deallocateRaw(p + 256));
        calls.add(() -> s.deallocateRaw(foreign));
        calls.add(() -> s.deallocateRaw(-1));
        calls.add(() -> s.deallocateRaw(Long.MIN_VALUE));
        calls.add(() -> s.deallocateRaw(Long.MAX_VALUE));
        calls.add(() -> s.allocateRaw(3, 100));
        calls.add(() -> s.allocateRaw(0, 100));
        calls.add(() -> s.allocateRaw(Long.MIN_VALUE, 100));
        calls.add(() -> s.allocateRaw(256, -1));
        calls.add(() -> s.allocate(0));
        calls.add(() -> s.allocate(Long.MAX_VALUE));
        calls.add(() -> s.allocate(100, 3));
        for (Executable call : calls) {
            assertThatThrownBy(call::execute).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageMatching("(?s).*(was not allocated by allocator 'sharded'( \\(shard \\d of 2\\))?|expected).*")
                    .hasMessageNotContaining("sharded/");
            assertThat(s.getStats()).isEqualTo(before);
            s.shards().forEach(BfcAllocator::checkInvariants);
        }
        assertThat(s.allocateRaw(256, Long.MAX_VALUE)).isZero();
        assertThatThrownBy(() -> s.allocateRawOrThrow(256, Long.MAX_VALUE)).isInstanceOf(BfcOutOfMemoryException.class);
        s.deallocateRaw(0);
        long r = s.allocateRaw(256, 5000);
        s.deallocateRaw(r);
        s.close();
        assertThat(sub.liveBytes()).isZero();
        s.deallocateRaw(0);
        assertThatThrownBy(() -> s.deallocateRaw(p)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
        assertThatThrownBy(() -> s.allocateRaw(256, 100)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
        other.deallocateRaw(foreign);
        other.close();
    }

    @Test
    void theSubAllocatorsTakeExtremeSizesWithoutHarm() {
        AlignedHostSubAllocator host = new AlignedHostSubAllocator();
        assertThat(host.alloc(256, Long.MAX_VALUE)).isNull();
        assertThat(host.alloc(256, Long.MAX_VALUE - 255)).isNull();
        assertThat(host.alloc(1L << 62, 1L << 62)).isNull();
        assertThat(host.alloc(1L << 62, 1)).isNull();
        assertThat(host.alloc(Long.MIN_VALUE >>> 1, 1L << 61)).isNull();
        assertThatThrownBy(() -> host.alloc(256, 0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> host.alloc(256, -1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> host.alloc(256, Long.MIN_VALUE)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> host.alloc(Long.MIN_VALUE, 256)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> host.alloc(0, 256)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> host.free(0, 0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> host.free(-1, Long.MAX_VALUE)).isInstanceOf(IllegalArgumentException.class);
        SubAllocator.Block b = host.alloc(256, 4096);
        assertThatThrownBy(() -> host.free(b.ptr(), -1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> host.free(b.ptr(), Long.MAX_VALUE)).isInstanceOf(IllegalArgumentException.class);
        assertThat(host.liveBytes()).isEqualTo(4096);

        for (long limit : new long[] {0, 1, Long.MAX_VALUE}) {
            LimitingSubAllocator capped = new LimitingSubAllocator(host, limit);
            assertThat(capped.alloc(256, Long.MAX_VALUE)).isNull();
            assertThat(capped.alloc(256, Long.MAX_VALUE - 255)).isNull();
            assertThatThrownBy(() -> capped.alloc(256, -1)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> capped.alloc(256, Long.MIN_VALUE)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> capped.alloc(256, 0)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> capped.free(b.ptr(), Long.MIN_VALUE)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> capped.free(b.ptr(), Long.MAX_VALUE)).isInstanceOf(IllegalArgumentException.class);
            assertThat(capped.heldBytes()).isZero();
        }
        assertThatThrownBy(() -> new LimitingSubAllocator(host, -1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new LimitingSubAllocator(host, Long.MIN_VALUE)).isInstanceOf(IllegalArgumentException.class);
        host.free(b.ptr(), 4096);
        assertThat(host.liveBytes()).isZero();
    }

    @Test
    void theBuildersRefuseLimitsOutOfRange() {
        for (long limit : new long[] {0, -1, Long.MIN_VALUE}) {
            assertThatThrownBy(() -> BfcAllocator.builder().memoryLimit(limit))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("memoryLimit=" + limit);
            assertThatThrownBy(() -> ShardedBfcAllocator.builder().memoryLimit(limit))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("memoryLimit=" + limit);
        }
        assertThat(BfcAllocator.builder().memoryLimit(Long.MAX_VALUE).subAllocator(new AlignedHostSubAllocator())
                .options(BfcOptions.builder().fragmentationFraction(1.0).build()).build().memoryLimit())
                .isEqualTo(Long.MAX_VALUE);
    }
}
