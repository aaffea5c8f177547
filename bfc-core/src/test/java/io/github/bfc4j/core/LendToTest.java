/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link MemoryAllocator#lendTo}: while a loan is open, a close() refused for live allocations
 * says what frees the memory the runtime holds, and not the FORCE policy that would free it
 * under the runtime; once the loan is closed, the advice is the allocator's own again.
 */
class LendToTest {

    private static SimSubAllocator sim() {
        return new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false);
    }

    private static final String RUNTIME = "Runtime R (adapter 'r')";
    private static final String RELEASE = "release R's sessions, then close the adapter";

    @Test
    void aRefusedCloseGivesTheLoansAdviceUntilTheLoanIsClosed() {
        try (BfcAllocator a = BfcAllocator.builder().name("lent").memoryLimit(64L << 20).subAllocator(sim()).build()) {
            check(a, () -> a.allocateRawOrThrow(64, 1000), a::deallocateRaw);
        }
    }

    @Test
    void aRefusedCloseOfAShardedAllocatorGivesTheLoansAdviceUntilTheLoanIsClosed() {
        try (ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("lent").shards(2).memoryLimit(64L << 20)
                .subAllocator(sim()).build()) {
            check(a, () -> a.allocateRawOrThrow(64, 1000), a::deallocateRaw);
        }
    }

    /**
     * A shard closed on its own while the sharded allocator is lent: its refusal gave the advice
     * for memory the caller holds ("build the allocator with ClosePolicy.FORCE"), which would free
     * the runtime's memory under it. The shards share the sharded allocator's loans, both ways.
     */
    @Test
    void aShardsOwnRefusedCloseGivesTheShardedAllocatorsLoanAdvice() {
        try (ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("lent").shards(2).memoryLimit(64L << 20)
                .subAllocator(sim()).build()) {
            long p = a.allocateRawOrThrow(64, 1000);
            BfcAllocator shard = a.shardOf(p);
            MemoryAllocator.Loan loan = a.lendTo(RUNTIME, RELEASE);
            assertThatThrownBy(shard::close).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("allocator 'lent' (shard ")
                    .hasMessageContaining(RUNTIME + " may hold memory of it: " + RELEASE + ".")
                    .message().doesNotContain("ClosePolicy.FORCE");
            loan.close();
            assertThatThrownBy(shard::close).as("the loan is closed").hasMessageContaining("ClosePolicy.FORCE")
                    .message().doesNotContain(RUNTIME);
            try (MemoryAllocator.Loan onShard = a.shards().get(1).lendTo(RUNTIME, RELEASE)) {
                assertThatThrownBy(a::close).as("a loan made on a shard").hasMessageContaining(RUNTIME)
                        .message().doesNotContain("ClosePolicy.FORCE");
            }
            assertThat(shard.isClosed()).isFalse();
            a.deallocateRaw(p);
        }
    }

    private static void check(MemoryAllocator a, java.util.function.LongSupplier alloc,
            java.util.function.LongConsumer free) {
        long p = alloc.getAsLong();
        MemoryAllocator.Loan loan = a.lendTo(RUNTIME, RELEASE);
        MemoryAllocator.Loan again = a.lendTo(RUNTIME, RELEASE);
        assertThatThrownBy(a::close).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("1 live allocation")
                .hasMessageContaining(". " + RUNTIME + " may hold memory of it: " + RELEASE + ". Close (or deallocate)"
                        + " any allocations of your own as well, then close this allocator.")
                .satisfies(e -> assertThat(e.getMessage().split(java.util.regex.Pattern.quote(RUNTIME), -1))
                        .as("the same loan twice is said once").hasSize(2))
                .message().doesNotContain("ClosePolicy.FORCE");
        loan.close();
        loan.close();   // again: nothing
        assertThatThrownBy(a::close).as("one loan is still open").hasMessageContaining(RUNTIME)
                .message().doesNotContain("ClosePolicy.FORCE");
        again.close();
        assertThatThrownBy(a::close).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("Close (or deallocate) them first; or build the allocator with"
                        + " closePolicy(ClosePolicy.FORCE)")
                .message().doesNotContain(RUNTIME);
        assertThat(a.isClosed()).isFalse();
        free.accept(p);
    }

    /**
     * Two loans whose advice differ, one a part of the other's text (runtime "R" beside
     * "Runtime R", the same release): each is said. The second used to be left out as a repeat
     * of the first, so the refusal named one runtime of the two that hold memory.
     */
    @Test
    void aLoanWhoseAdviceIsPartOfAnothersIsStillSaid() {
        try (BfcAllocator a = BfcAllocator.builder().name("lent").memoryLimit(64L << 20).subAllocator(sim()).build()) {
            long p = a.allocateRawOrThrow(64, 1000);
            try (MemoryAllocator.Loan outer = a.lendTo("Runtime R", RELEASE);
                    MemoryAllocator.Loan inner = a.lendTo("R", RELEASE)) {
                assertThatThrownBy(a::close).isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("Runtime R may hold memory of it: " + RELEASE + ". R may hold memory of it: "
                                + RELEASE + ". Close (or deallocate) any allocations of your own as well");
            }
            a.deallocateRaw(p);
        }
    }

    @Test
    void aNullSaysWhatItTakes() {
        try (BfcAllocator a = BfcAllocator.builder().name("lent").memoryLimit(64L << 20).subAllocator(sim()).build()) {
            for (List<String> args : java.util.Arrays.asList(java.util.Arrays.asList(null, RELEASE),
                    java.util.Arrays.asList(RUNTIME, null))) {
                assertThatThrownBy(() -> a.lendTo(args.get(0), args.get(1))).isInstanceOf(NullPointerException.class)
                        .hasMessageContaining("=null (expected: ");
            }
            long p = a.allocateRawOrThrow(64, 1000);
            assertThatThrownBy(a::close).as("no loan was made").hasMessageContaining("ClosePolicy.FORCE");
            a.deallocateRaw(p);
        }
    }
}
