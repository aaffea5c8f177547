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

/** What {@link SubAllocator#callingAllocator()} tells a sub-allocator, below any adaptors. */
class CallingAllocatorTest {

    private static final long MIB = 1L << 20;

    /** Writes down, for each call, what it was and who was calling. */
    private static final class Listening extends ForwardingSubAllocator {
        final List<String> calls = new ArrayList<>();

        Listening() {
            super(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false));
        }

        @Override
        public Block alloc(long alignment, long numBytes) {
            calls.add("alloc by " + SubAllocator.callingAllocator());
            return super.alloc(alignment, numBytes);
        }

        @Override
        public void free(long ptr, long numBytes) {
            calls.add("free by " + SubAllocator.callingAllocator());
            super.free(ptr, numBytes);
        }
    }

    @Test
    void anAllocatorsRegionCallsNameItAndOtherCallsNameNobody() {
        Listening sub = new Listening();
        try (BfcAllocator a = BfcAllocator.builder().name("gpu_0_bfc").memoryLimit(64 * MIB)
                .subAllocator(new LimitingSubAllocator(sub, 64 * MIB)).build()) {
            a.deallocateRaw(a.allocateRaw(256, 1000));
            a.emptyCache();
            SubAllocator.Block own = sub.alloc(256, MIB);
            sub.free(own.ptr(), own.bytes());
            long p = a.allocateRaw(256, 1000); // given back by close()
            assertThat(p).isNotZero();
            assertThat(SubAllocator.callingAllocator()).isNull();
            a.deallocateRaw(p);
        }
        assertThat(sub.calls).containsExactly("alloc by gpu_0_bfc", "free by gpu_0_bfc", "alloc by null",
                "free by null", "alloc by gpu_0_bfc", "free by gpu_0_bfc");
        assertThat(SubAllocator.callingAllocator()).as("after the calls, on this thread").isNull();
    }

    @Test
    void aShardedAllocatorsShardsAreNamedByIt() {
        Listening sub = new Listening();
        try (ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("host").memoryLimit(64 * MIB)
                .subAllocator(sub).shards(2).build()) {
            a.deallocateRaw(a.allocateRaw(256, 1000));
            a.emptyCache();
        }
        assertThat(sub.calls).containsExactly("alloc by host", "free by host");
    }

    @Test
    void refuseIfAllocatorHoldsRefusesOnlyOtherCodesFreeOfAnAllocatorsMemory() {
        assertThatThrownBy(() -> SubAllocator.refuseIfAllocatorHolds("gpu_0", "the region", 0x7f00, 4096))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("free(0x7f00, 4096): the region belongs to allocator 'gpu_0', which still hands out its"
                        + " memory (expected: memory obtained by calling alloc directly; the allocator gives its"
                        + " regions back itself: emptyCache(), garbage collection of free regions, close())."
                        + " Nothing was freed");
        SubAllocator.refuseIfAllocatorHolds(null, "the region", 0x7f00, 4096); // other code's own memory

        List<String> checked = new ArrayList<>();
        SubAllocator checking = new ForwardingSubAllocator(new Listening()) {
            @Override
            public void free(long ptr, long numBytes) {
                SubAllocator.refuseIfAllocatorHolds("checking", "the region", ptr, numBytes); // the allocator's call
                checked.add("free of 0x" + Long.toHexString(ptr));
                super.free(ptr, numBytes);
            }
        };
        try (BfcAllocator a = BfcAllocator.builder().name("checking").memoryLimit(64 * MIB).subAllocator(checking)
                .build()) {
            a.deallocateRaw(a.allocateRaw(256, 1000));
            assertThat(a.emptyCache()).isPositive();
        }
        assertThat(checked).hasSize(1);
    }

    /**
     * Two allocators share a sub-allocator that refuses other code's frees of their regions; a
     * sub-allocator of the second's own frees the first's region inside the second's call. That
     * free must be refused as other code's is: the first still hands out that memory (on host
     * memory its views then wrote to memory given back to the operating system: SIGSEGV).
     */
    @Test
    void anotherAllocatorsCallMayNotFreeAnAllocatorsRegion() {
        anotherAllocatorsCallMayNotFreeAnAllocatorsRegion("first", "second");
    }

    /**
     * The same with two allocators of one name: they are told apart by the String of their own
     * that {@code callingAllocator()} gives (told apart by name, the free went through).
     */
    @Test
    void anotherAllocatorOfTheSameNameMayNotFreeAnAllocatorsRegion() {
        anotherAllocatorsCallMayNotFreeAnAllocatorsRegion("same", "same");
    }

    private void anotherAllocatorsCallMayNotFreeAnAllocatorsRegion(String firstName, String secondName) {
        List<long[]> owned = new ArrayList<>();
        List<String> owners = new ArrayList<>();
        SubAllocator shared = new ForwardingSubAllocator(new Listening()) {
            @Override
            public Block alloc(long alignment, long numBytes) {
                Block b = super.alloc(alignment, numBytes);
                owned.add(new long[] {b.ptr(), b.bytes()});
                owners.add(SubAllocator.callingAllocator());
                return b;
            }

            @Override
            public void free(long ptr, long numBytes) {
                for (int i = 0; i < owned.size(); i++) {
                    if (owned.get(i)[0] == ptr) {
                        SubAllocator.refuseIfAllocatorHolds(owners.get(i), "the region", ptr, numBytes);
                    }
                }
                super.free(ptr, numBytes);
            }
        };
        try (BfcAllocator first = BfcAllocator.builder().name(firstName).memoryLimit(64 * MIB).subAllocator(shared)
                .build()) {
            long p = first.allocateRaw(256, 1000);
            long[] region = owned.get(0);
            List<Throwable> refused = new ArrayList<>();
            SubAllocator sneaky = new ForwardingSubAllocator(shared) {
                @Override
                public Block alloc(long alignment, long numBytes) {
                    try {
                        shared.free(region[0], region[1]);
                    } catch (IllegalArgumentException e) {
                        refused.add(e);
                    }
                    return super.alloc(alignment, numBytes);
                }
            };
            try (BfcAllocator second = BfcAllocator.builder().name(secondName).memoryLimit(64 * MIB)
                    .subAllocator(sneaky).build()) {
                second.deallocateRaw(second.allocateRaw(256, 1000));
            }
            assertThat(refused).singleElement().extracting(Throwable::getMessage).asString()
                    .contains("belongs to allocator '" + firstName + "'", "inside a call of allocator '" + secondName + "'",
                            "Nothing was freed");
            first.checkInvariants();
            first.deallocateRaw(p);
            assertThat(first.emptyCache()).as("the first gives its region back itself").isEqualTo(region[1]);
        }
    }

    @Test
    void aCallThatThrowsLeavesTheThreadUnmarked() {
        SubAllocator throwing = new ForwardingSubAllocator(new Listening()) {
            @Override
            public Block alloc(long alignment, long numBytes) {
                throw new IllegalStateException("the device is gone");
            }
        };
        try (BfcAllocator a = BfcAllocator.builder().name("failing").memoryLimit(64 * MIB).subAllocator(throwing)
                .build()) {
            assertThatThrownBy(() -> a.allocateRaw(256, 1000)).hasMessageContaining("the device is gone");
            assertThat(SubAllocator.callingAllocator()).isNull();
        }
    }
}
