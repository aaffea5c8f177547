/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.Allocation;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.ClosePolicy;
import io.github.bfc4j.core.LeakDetection;
import io.github.bfc4j.core.sim.SimSubAllocator;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.javacpp.BytePointer;
import org.junit.jupiter.api.Test;

class AllocationTest {

    private static final long MIB = 1L << 20;

    private static BfcAllocator host(long limit) {
        return BfcAllocator.builder().name("cpu_bfc").memoryLimit(limit)
                .subAllocator(new AlignedHostSubAllocator()).leakDetection(LeakDetection.DISABLED).build();
    }

    @Test
    void theBuilderSetsEveryOption() {
        AlignedHostSubAllocator sub = new AlignedHostSubAllocator();
        BfcAllocator a = BfcAllocator.builder().name("cpu_bfc").memoryLimit(64 * MIB).allowGrowth(false)
                .garbageCollection(true).fragmentationFraction(0.25).allowRetryOnFailure(false)
                .subAllocator(sub).closePolicy(ClosePolicy.FORCE).leakDetection(LeakDetection.SIMPLE).build();
        assertThat(a.name()).isEqualTo("cpu_bfc");
        assertThat(a.memoryLimit()).isEqualTo(64 * MIB);
        assertThat(a.options()).usingRecursiveComparison().isEqualTo(BfcOptions.builder().allowGrowth(false).garbageCollection(true)
                .fragmentationFraction(0.25).allowRetryOnFailure(false).build());
        assertThat(a.closePolicy()).isEqualTo(ClosePolicy.FORCE);
        assertThat(a.leakDetection()).isEqualTo(LeakDetection.SIMPLE);
        // allowGrowth(false): the whole limit is one region, at the first allocation.
        try (Allocation x = a.allocate(100)) {
            assertThat(sub.liveBytes()).isEqualTo(64 * MIB);
        }
        a.close();
        assertThat(sub.liveBytes()).isZero();
    }

    @Test
    void theBuilderRejectsBadOptionsSayingWhatIsExpected() {
        assertThatThrownBy(() -> BfcAllocator.builder().name(" ")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("name=' ' (expected: a non-empty name such as \"cpu_bfc\")");
        assertThatThrownBy(() -> BfcAllocator.builder().memoryLimit(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("memoryLimit=0 (expected: a number of bytes > 0, e.g. 1L << 30 for 1 GiB)");
        assertThatThrownBy(() -> BfcAllocator.builder().fragmentationFraction(-0.5))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("fragmentationFraction=-0.5 (expected: ");
        assertThatThrownBy(() -> BfcAllocator.builder().subAllocator(null)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("subAllocator=null (expected: ");
        assertThatThrownBy(() -> BfcAllocator.builder().closePolicy(null)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> BfcAllocator.builder().subAllocator(new AlignedHostSubAllocator()).build())
                .isInstanceOf(IllegalStateException.class).hasMessageStartingWith("memoryLimit is not set");
        assertThatThrownBy(() -> BfcAllocator.builder().memoryLimit(MIB).build())
                .isInstanceOf(IllegalStateException.class).hasMessageStartingWith("subAllocator is not set");
        // A fraction whose threshold rounds to 0 bytes is caught against the limit.
        assertThatThrownBy(() -> BfcAllocator.builder().memoryLimit(1000).fragmentationFraction(1e-6)
                .subAllocator(new AlignedHostSubAllocator()).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("fragmentationFraction=1.0E-6");
    }

    @Test
    void anAllocationCarriesItsSizesAndViewsExactlyTheRequestedBytes() {
        BfcAllocator a = host(64 * MIB);
        try (Allocation x = a.allocate(1000); Allocation y = a.allocate(3000)) {
            assertThat(x.size()).isEqualTo(1024);
            assertThat(x.requestedSize()).isEqualTo(1000);
            assertThat(x.allocationId()).isEqualTo(1);
            assertThat(y.allocationId()).isEqualTo(2);
            assertThat(a.allocatedSize(x.address())).isEqualTo(1024);
            ByteBuffer b = x.asByteBuffer();
            assertThat(b.isDirect()).isTrue();
            assertThat(b.capacity()).isEqualTo(1000);
            assertThat(b.order()).isEqualTo(ByteOrder.nativeOrder());
            b.putLong(0, 0x1122334455667788L);
            BytePointer p = x.asPointer();
            assertThat(p.address()).isEqualTo(x.address());
            assertThat(p.capacity()).isEqualTo(1000);
            assertThat(p.limit()).isEqualTo(1000);
            // The two views see the same memory.
            assertThat(p.getLong(0)).isEqualTo(0x1122334455667788L);
            p.put(999, (byte) 7);
            assertThat(b.get(999)).isEqualTo((byte) 7);
            // The pointer owns nothing: closing it frees nothing.
            p.close();
            assertThat(a.getStats().bytesInUse()).isEqualTo(1024 + 3072);
        }
        assertThat(a.getStats().bytesInUse()).isZero();
        a.close();
    }

    @Test
    void closeIsIdempotentAndUseAfterCloseThrows() {
        BfcAllocator a = host(64 * MIB);
        Allocation x = a.allocate(4096);
        long address = x.address();
        x.close();
        x.close();
        assertThat(x.isClosed()).isTrue();
        assertThat(a.getStats().bytesInUse()).isZero();
        assertThatThrownBy(x::address).isInstanceOf(IllegalStateException.class)
                .hasMessage("allocation #1 (4096 bytes at 0x" + Long.toHexString(address)
                        + ") of allocator 'cpu_bfc' is closed: it must not be used after close()");
        assertThatThrownBy(x::asByteBuffer).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(x::asPointer).isInstanceOf(IllegalStateException.class);
        assertThat(x.size()).isEqualTo(4096);
        // The freed memory is handed out again, and the stale handle cannot free the new owner's.
        Allocation y = a.allocate(4096);
        assertThat(y.address()).isEqualTo(address);
        x.close();
        assertThat(a.getStats().bytesInUse()).isEqualTo(4096);
        y.close();
        a.close();
    }

    @Test
    void alignedAllocationsKeepTheirAlignmentAndTheirViewsHoldTheirOwnBytes() {
        BfcAllocator a = host(256 * MIB);
        List<Allocation> live = new ArrayList<>();
        for (long alignment = 512; alignment <= MIB; alignment *= 2) {
            for (int i = 0; i < 3; i++) {
                Allocation x = a.allocate(1000 + 777 * i, alignment);
                assertThat(x.address() % alignment).isZero();
                ByteBuffer b = x.asByteBuffer();
                assertThat(b.capacity()).isEqualTo(1000 + 777 * i);
                assertThat(x.asPointer().address()).isEqualTo(x.address());
                for (int k = 0; k < b.capacity(); k++) {
                    b.put(k, (byte) live.size());
                }
                live.add(x);
            }
        }
        for (int n = 0; n < live.size(); n++) {
            ByteBuffer b = live.get(n).asByteBuffer();
            for (int k = 0; k < b.capacity(); k++) {
                assertThat(b.get(k)).isEqualTo((byte) n);
            }
        }
        live.forEach(Allocation::close);
        assertThat(a.bytesInUse()).isZero();
        a.close();
    }

    @Test
    void badSizesAreRejected() {
        BfcAllocator a = host(64 * MIB);
        assertThatThrownBy(() -> a.allocate(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("bytes=0 (expected: > 0) for allocator 'cpu_bfc'");
        assertThatThrownBy(() -> a.allocate(-1)).isInstanceOf(IllegalArgumentException.class);
        a.close();
    }

    @Test
    void simulatedMemoryCannotBeViewed() {
        BfcAllocator a = BfcAllocator.builder().name("sim").memoryLimit(64 * MIB)
                .subAllocator(new SimSubAllocator(0x7f0000000000L, 128 * MIB, 0, true)).build();
        try (Allocation x = a.allocate(256)) {
            assertThatThrownBy(x::asByteBuffer).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("is UNKNOWN memory: only host memory");
            assertThatThrownBy(x::asPointer).isInstanceOf(IllegalStateException.class);
        }
        a.close();
    }

    @Test
    void closeRefusesWhileAllocationsAreLiveByDefaultAndChangesNothing() throws InterruptedException {
        AlignedHostSubAllocator sub = new AlignedHostSubAllocator();
        BfcAllocator a = BfcAllocator.builder().name("cpu_bfc").memoryLimit(64 * MIB).subAllocator(sub).build();
        Allocation x = a.allocate(1000);
        Allocation y = a.allocate(5000);
        assertThatThrownBy(a::close).isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("close() refused: allocator 'cpu_bfc' has 2 live allocations (6.0KiB in use).");
        // Still open and whole: the memory is still there and usable.
        x.asByteBuffer().put(0, (byte) 1);
        x.close();
        assertThatThrownBy(a::close).hasMessageContaining("has 1 live allocation (5.0KiB in use)");
        y.close();
        a.close();
        Returned.assertAllReturned(sub, a::bytesHeldForViews);
        assertThatThrownBy(() -> a.allocate(1)).isInstanceOf(IllegalStateException.class)
                .hasMessage("allocator 'cpu_bfc' is closed");
    }

    @Test
    void forcedCloseFreesEverythingAndLaterHandleClosesDoNothing() {
        AlignedHostSubAllocator sub = new AlignedHostSubAllocator();
        BfcAllocator a = BfcAllocator.builder().name("cpu_bfc").memoryLimit(64 * MIB).subAllocator(sub)
                .closePolicy(ClosePolicy.FORCE).build();
        Allocation x = a.allocate(1000);
        a.close();
        assertThat(sub.liveBytes()).isZero();
        x.close();
        assertThat(x.isClosed()).isTrue();
    }
}
