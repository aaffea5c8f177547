/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
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

    /**
     * The stale double free the loan guards against: the application frees an address of its
     * own twice, and in between the runtime was given the same chunk. The second free used to
     * free the runtime's live memory (the next allocation then got it too); it is refused,
     * naming the runtime, and nothing changes. A loan, for its part, frees only lent memory.
     */
    @Test
    void aRawFreeOfLentMemoryIsRefusedAndALoanFreesOnlyLentMemory() {
        try (BfcAllocator a = BfcAllocator.builder().name("lent").memoryLimit(64L << 20).subAllocator(sim())
                .leakDetection(LeakDetection.DISABLED).build()) {
            checkOwnership(a, a);
        }
        try (ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("lent").shards(2).memoryLimit(64L << 20)
                .subAllocator(sim()).leakDetection(LeakDetection.DISABLED).build()) {
            checkOwnership(a, null);
        }
    }

    /** {@code plain}: the allocator as a {@link BfcAllocator}, for its invariants, or null. */
    private static void checkOwnership(MemoryAllocator a, BfcAllocator plain) {
        long mine = a.allocateRaw(64, 1000);
        a.deallocateRaw(mine);
        try (MemoryAllocator.Loan loan = a.lendTo(RUNTIME, RELEASE)) {
            long lent = loan.allocateRawOrThrow(64, 1000);
            assertThat(lent).as("the runtime is given the chunk just freed").isEqualTo(mine);
            AllocatorStats before = a.getStats();
            assertThatThrownBy(() -> a.deallocateRaw(mine)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("0x" + Long.toHexString(mine) + " is allocation #")
                    .hasMessageContaining(", lent to " + RUNTIME + ", which frees it itself: do not free it with"
                            + " deallocateRaw")
                    .hasMessageEndingWith("Nothing was freed.");
            assertThat(a.getStats()).isEqualTo(before);
            long next = a.allocateRaw(64, 1000);
            assertThat(next).as("the runtime's chunk is not handed out again").isNotEqualTo(lent);
            a.deallocateRaw(next);

            long raw = a.allocateRaw(64, 3000);
            Allocation handle = a.allocate(5000);
            long free = a.allocateRaw(64, 7000);
            a.deallocateRaw(free);
            AllocatorStats stats = a.getStats();
            assertThatThrownBy(() -> loan.deallocateRaw(raw)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("a raw allocation, not memory this loan (to " + RUNTIME + ") lent: a loan"
                            + " frees only what it lent, each address once. Nothing was freed.");
            assertThatThrownBy(() -> loan.deallocateRaw(handle.address())).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("owned by an Allocation handle, not memory this loan (to " + RUNTIME
                            + ") lent");
            assertThatThrownBy(() -> loan.deallocateRaw(free)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(" (or was already freed): a loan frees only");
            assertThat(a.getStats()).isEqualTo(stats);

            loan.deallocateRaw(lent);
            assertThatThrownBy(() -> loan.deallocateRaw(lent)).as("twice").isInstanceOf(IllegalArgumentException.class);
            long again = a.allocateRaw(64, 1000);
            assertThat(again).as("the chunk, raw once more, is freed raw").isEqualTo(lent);
            a.deallocateRaw(again);
            a.deallocateRaw(raw);
            handle.close();
            assertThat(loan.allocateRawOrThrow(64, 0)).isZero();
            long late = loan.allocateRawOrThrow(64, 2000);
            loan.close();
            assertThatThrownBy(() -> loan.allocateRawOrThrow(64, 2000)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("the loan to " + RUNTIME + " is closed");
            loan.deallocateRaw(late);   // what the runtime still held is freed through the closed loan
            assertThatThrownBy(() -> loan.allocateRawOrThrow(64, 1L << 30)).isInstanceOf(IllegalStateException.class);
        }
        assertThat(a.getStats().bytesInUse()).isZero();
        if (plain != null) {
            plain.checkInvariants();
        }
    }

    /**
     * Two runtimes on one allocator, each with its loan: one loan's free of the other's memory
     * (a runtime's double free of an address of its own, which the other runtime was given in
     * between) used to free it, since every loan freed any lent memory. It is refused, naming
     * the runtime the memory is lent to, and nothing changes; a raw free names that runtime
     * alone, not every runtime with an open loan.
     */
    @Test
    void aLoanFreesOnlyTheMemoryItLent() {
        try (BfcAllocator a = BfcAllocator.builder().name("lent").memoryLimit(64L << 20).subAllocator(sim())
                .leakDetection(LeakDetection.DISABLED).build()) {
            checkTwoRuntimes(a);
            a.checkInvariants();
        }
        try (ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("lent").shards(2).memoryLimit(64L << 20)
                .subAllocator(sim()).leakDetection(LeakDetection.DISABLED).build()) {
            checkTwoRuntimes(a);
        }
    }

    private static final String OTHER = "Runtime S (adapter 's')";

    private static void checkTwoRuntimes(MemoryAllocator a) {
        try (MemoryAllocator.Loan r = a.lendTo(RUNTIME, RELEASE);
                MemoryAllocator.Loan other = a.lendTo(OTHER, RELEASE)) {
            long mine = other.allocateRawOrThrow(64, 1000);
            other.deallocateRaw(mine);
            long lent = r.allocateRawOrThrow(64, 1000);
            assertThat(lent).as("R is given the chunk S just freed").isEqualTo(mine);
            AllocatorStats before = a.getStats();
            assertThatThrownBy(() -> other.deallocateRaw(mine)).as("S's stale free")
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("0x" + Long.toHexString(lent) + " is allocation #")
                    .hasMessageContaining(", lent to " + RUNTIME + " through another loan, not memory this loan (to "
                            + OTHER + ") lent: a loan frees only what it lent, each address once. Nothing was freed.");
            assertThatThrownBy(() -> a.deallocateRaw(lent)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(", lent to " + RUNTIME + ", which frees it itself");
            assertThat(a.getStats()).isEqualTo(before);
            long next = other.allocateRawOrThrow(64, 1000);
            assertThat(next).as("R's chunk is not handed out again").isNotEqualTo(lent);
            assertThatThrownBy(() -> r.deallocateRaw(next)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(", lent to " + OTHER + " through another loan");
            assertThat(r.lentAllocations()).as("R's, its refused frees not counted").isEqualTo(1);
            assertThat(other.lentAllocations()).isEqualTo(1);
            other.deallocateRaw(next);
            r.deallocateRaw(lent);
            assertThat(r.lentAllocations()).isZero();
            assertThat(other.lentAllocations()).isZero();
        }
        assertThat(a.getStats().bytesInUse()).isZero();
    }

    /**
     * A loan keeps its number, kept in the chunks it lent, until it is closed and all it lent
     * is freed: up to 255 at once, and then lendTo says what to do. A closed loan that still has
     * memory lent keeps its number (a new loan cannot free that memory, and a raw free of it
     * still names its runtime); once that memory is freed, the number serves a new loan.
     */
    @Test
    void aLoansNumberIsHeldUntilItIsClosedAndAllItLentIsFreed() {
        try (BfcAllocator a = BfcAllocator.builder().name("lent").memoryLimit(64L << 20).subAllocator(sim())
                .leakDetection(LeakDetection.DISABLED).build()) {
            MemoryAllocator.Loan first = a.lendTo("first", RELEASE);
            long held = first.allocateRawOrThrow(64, 1000);
            first.close();
            List<MemoryAllocator.Loan> loans = new ArrayList<>();
            for (int i = 1; i < 255; i++) {
                loans.add(a.lendTo("runtime " + i, RELEASE));
            }
            assertThatThrownBy(() -> a.lendTo(RUNTIME, RELEASE)).isInstanceOf(IllegalStateException.class)
                    .hasMessageStartingWith("255 loans of this allocator are open or have lent memory that is"
                            + " not yet freed: it can lend to no more runtimes at once. Close the loans");
            loans.remove(0).close();
            try (MemoryAllocator.Loan late = a.lendTo(RUNTIME, RELEASE)) {
                assertThatThrownBy(() -> late.deallocateRaw(held)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("lent to first through another loan");
                assertThatThrownBy(() -> a.deallocateRaw(held)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("lent to first, which frees it itself");
                assertThatThrownBy(() -> a.lendTo(OTHER, RELEASE)).as("all 255 held again")
                        .isInstanceOf(IllegalStateException.class);
            }
            first.deallocateRaw(held);
            try (MemoryAllocator.Loan two = a.lendTo(RUNTIME, RELEASE);
                    MemoryAllocator.Loan three = a.lendTo(OTHER, RELEASE)) {
                long p = two.allocateRawOrThrow(64, 1000);
                assertThatThrownBy(() -> three.deallocateRaw(p)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("lent to " + RUNTIME + " through another loan");
                two.deallocateRaw(p);
            }
            loans.forEach(MemoryAllocator.Loan::close);
            assertThat(a.getStats().bytesInUse()).isZero();
            a.checkInvariants();
        }
    }

    /**
     * A closed loan whose memory is all freed gives its number back, and a new loan takes it:
     * a stale free through the old loan (the first runtime's double free of an address it freed
     * before, which the second runtime was given since) used to find the chunk marked with that
     * number and free the second runtime's live memory, and then counted the old loan's chunks
     * below zero, which reopened it. It is refused, nothing changes, and the old loan stays
     * closed; on one allocator and sharded.
     */
    @Test
    void aClosedLoanWhoseNumberServesANewLoanFreesNothingOfIt() {
        try (BfcAllocator a = BfcAllocator.builder().name("lent").memoryLimit(64L << 20).subAllocator(sim())
                .leakDetection(LeakDetection.DISABLED).build()) {
            checkStaleFreeThroughAClosedLoan(a);
            a.checkInvariants();
        }
        try (ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("lent").shards(2).memoryLimit(64L << 20)
                .subAllocator(sim()).leakDetection(LeakDetection.DISABLED).build()) {
            checkStaleFreeThroughAClosedLoan(a);
        }
    }

    private static void checkStaleFreeThroughAClosedLoan(MemoryAllocator a) {
        MemoryAllocator.Loan first = a.lendTo(RUNTIME, RELEASE);
        long p = first.allocateRawOrThrow(64, 1000);
        first.close();
        first.deallocateRaw(p);
        try (MemoryAllocator.Loan next = a.lendTo(OTHER, RELEASE)) {
            long q = next.allocateRawOrThrow(64, 1000);
            assertThat(q).as("the second runtime is given the chunk the first freed").isEqualTo(p);
            AllocatorStats before = a.getStats();
            assertThatThrownBy(() -> first.deallocateRaw(p)).as("the first runtime's stale free")
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("0x" + Long.toHexString(p) + " is not memory the loan to " + RUNTIME + " lent: that"
                            + " loan is closed and nothing it lent is left (freed, or taken back by a forced close);"
                            + " free each address once. Nothing was freed.");
            assertThat(a.getStats()).isEqualTo(before);
            first.deallocateRaw(0);   // a no-op, as ever
            assertThatThrownBy(() -> first.allocateRawOrThrow(64, 1000)).as("still closed")
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("is closed");
            long other = a.allocateRawOrThrow(64, 1000);
            assertThat(other).as("the second runtime's chunk is not handed out again").isNotEqualTo(q);
            a.deallocateRaw(other);
            next.deallocateRaw(q);
        }
        assertThat(a.getStats().bytesInUse()).isZero();
    }

    /**
     * A loan closed while another thread allocates and frees through it: each allocation either
     * lends (counted before it starts, so the loan keeps its number) or is refused, never both.
     * After the close, a new loan, which takes the lowest free number, must not be able to free
     * what the closed loan lent; the closed loan frees all of it. The thread keeps at most 64
     * chunks lent, so that it never runs out of memory before the close (its failure would end
     * the round before the race); anything it throws but the refusal fails the test. Seeded
     * ({@code -Dbfc4j.test.seed}).
     */
    @Test
    void aLoanClosedWhileItLendsKeepsItsNumberForWhatItLent() throws Exception {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("LendToTest close-race seed: " + seed + " (-Dbfc4j.test.seed)");
        Random rnd = new Random(seed);
        try (BfcAllocator a = BfcAllocator.builder().name("lent").memoryLimit(64L << 20).subAllocator(sim())
                .leakDetection(LeakDetection.DISABLED).build()) {
            for (int round = 0; round < 200; round++) {
                MemoryAllocator.Loan loan = a.lendTo(RUNTIME, RELEASE);
                List<Long> lent = java.util.Collections.synchronizedList(new ArrayList<>());
                java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(1);
                java.util.concurrent.atomic.AtomicReference<Throwable> failed =
                        new java.util.concurrent.atomic.AtomicReference<>();
                Random sizes = new Random(seed + round);
                Thread t = new Thread(() -> {
                    started.countDown();
                    try {
                        for (;;) {
                            if (lent.size() == 64) {
                                loan.deallocateRaw(lent.remove(0));
                            }
                            lent.add(loan.allocateRawOrThrow(64, 1 + sizes.nextInt(4096)));
                        }
                    } catch (IllegalStateException closed) {
                        // the loan is closed: it lends no more
                    } catch (Throwable e) {
                        failed.set(e);
                    }
                }, "lender-in-round-" + round);
                t.setDaemon(true);
                t.start();
                started.await();
                for (int spin = rnd.nextInt(2000); spin > 0; spin--) {
                    Thread.onSpinWait();
                }
                loan.close();
                TestThreads.joinOrFail(seed, TestThreads.RUN_LIMIT, t);
                assertThat(failed.get()).as("seed %d round %d: the lending thread's failure", seed, round).isNull();
                try (MemoryAllocator.Loan next = a.lendTo(OTHER, RELEASE)) {
                    for (long p : lent) {
                        assertThatThrownBy(() -> next.deallocateRaw(p)).as("seed %d round %d", seed, round)
                                .isInstanceOf(IllegalArgumentException.class)
                                .hasMessageContaining("lent to " + RUNTIME + " through another loan");
                    }
                }
                for (long p : lent) {
                    loan.deallocateRaw(p);
                }
                assertThat(a.getStats().bytesInUse()).as("seed %d round %d", seed, round).isZero();
            }
            a.checkInvariants();
        }
    }

    /**
     * A loan's free after its sharded allocator was closed by force names the call made,
     * {@code Loan.deallocateRaw}; it used to name {@code deallocateRaw}, a call the runtime's
     * adapter never made.
     */
    @Test
    void aLoansFreeAfterAForcedCloseNamesTheLoansCall() {
        ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("lent").shards(2).memoryLimit(64L << 20)
                .subAllocator(sim()).closePolicy(ClosePolicy.FORCE).leakDetection(LeakDetection.DISABLED).build();
        MemoryAllocator.Loan loan = a.lendTo(RUNTIME, RELEASE);
        long p = loan.allocateRawOrThrow(64, 1000);
        a.close();
        assertThatThrownBy(() -> loan.deallocateRaw(p)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("allocator 'lent' is closed, or a shard of it (Loan.deallocateRaw(0x"
                        + Long.toHexString(p) + ") after close()");
        loan.close();
    }

    /**
     * A shard closed on its own by force takes back what it held, memory lent through a loan
     * too: that memory is no longer lent, so the loan, once closed, gives its number back while
     * the sharded allocator stays open. It used to keep the number for ever, and after 255 such
     * loans the allocator could lend to no runtime.
     */
    @Test
    void aShardClosedByForceNoLongerHoldsTheLoansNumbers() {
        try (ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("lent").shards(2).memoryLimit(64L << 20)
                .subAllocator(sim()).closePolicy(ClosePolicy.FORCE).leakDetection(LeakDetection.DISABLED).build()) {
            MemoryAllocator.Loan loan = a.lendTo(RUNTIME, RELEASE);
            long p = loan.allocateRawOrThrow(64, 1000);
            BfcAllocator shard = a.shardOf(p);
            shard.close();
            loan.close();
            assertThatThrownBy(() -> loan.deallocateRaw(p)).as("the shard took the memory back")
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("that loan is closed and nothing it lent is left");
            List<MemoryAllocator.Loan> loans = new ArrayList<>();
            for (int i = 1; i <= 255; i++) {
                loans.add(a.lendTo("runtime " + i, RELEASE));
            }
            loans.forEach(MemoryAllocator.Loan::close);
        }
    }

    /** A loan's allocation fails as allocateRawOrThrow does, with the same checks. */
    @Test
    void aLoansAllocationFailsAsAllocateRawOrThrowDoes() {
        try (BfcAllocator a = BfcAllocator.builder().name("lent").memoryLimit(64L << 20).subAllocator(sim()).build();
                MemoryAllocator.Loan loan = a.lendTo(RUNTIME, RELEASE)) {
            assertThatThrownBy(() -> loan.allocateRawOrThrow(64, 65L << 20)).isInstanceOf(BfcOutOfMemoryException.class)
                    .hasMessageContaining("Allocator 'lent' is out of memory");
            assertThatThrownBy(() -> loan.allocateRawOrThrow(3, 64)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("alignment");
            assertThatThrownBy(() -> loan.allocateRawOrThrow(64, -1)).isInstanceOf(IllegalArgumentException.class);
            assertThat(a.getStats().bytesInUse()).isZero();
        }
    }

    /**
     * {@code Loan.allocateRaw(alignment, n, attr)}: 0 where the allocator's allocateRaw would
     * give 0, and otherwise memory lent as allocateRawOrThrow's, on one allocator and sharded.
     */
    @Test
    void aLoansAllocateRawAnswersZeroOnFailureAndLendsWhatItServes() {
        try (BfcAllocator a = BfcAllocator.builder().name("lent").memoryLimit(64L << 20).subAllocator(sim())
                .leakDetection(LeakDetection.DISABLED).build()) {
            checkAllocateRaw(a);
        }
        try (ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("lent").shards(2).memoryLimit(64L << 20)
                .subAllocator(sim()).leakDetection(LeakDetection.DISABLED).build()) {
            checkAllocateRaw(a);
        }
    }

    private static void checkAllocateRaw(MemoryAllocator a) {
        try (MemoryAllocator.Loan loan = a.lendTo(RUNTIME, RELEASE)) {
            assertThat(loan.allocateRaw(64, 65L << 20, AllocationAttributes.NO_RETRY)).as("above the limit").isZero();
            assertThat(loan.allocateRaw(64, 0, AllocationAttributes.DEFAULT)).isZero();
            assertThatThrownBy(() -> loan.allocateRaw(64, 100, null)).isInstanceOf(NullPointerException.class)
                    .hasMessageContaining("attr=null (expected: ");
            long p = loan.allocateRaw(64, 100, AllocationAttributes.DEFAULT);
            assertThat(p).isNotZero();
            assertThatThrownBy(() -> a.deallocateRaw(p)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("lent to " + RUNTIME);
            loan.deallocateRaw(p);
            loan.close();
            assertThatThrownBy(() -> loan.allocateRaw(64, 100, AllocationAttributes.DEFAULT))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("is closed");
        }
        assertThat(a.getStats().bytesInUse()).isZero();
    }

    /**
     * A sharded allocator whose home shard cannot serve a loan's allocation takes it from another
     * shard, lent there too: a raw free of it is refused in that shard as well.
     */
    @Test
    void memoryLentFromAnotherShardIsLentThereToo() throws Exception {
        try (ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("lent").shards(2).memoryLimit(64L << 20)
                .subAllocator(sim()).leakDetection(LeakDetection.DISABLED).build();
                MemoryAllocator.Loan loan = a.lendTo(RUNTIME, RELEASE)) {
            long here = a.allocateRaw(64, 1000);
            BfcAllocator home = a.shardOf(here);
            a.deallocateRaw(here);
            // Another thread, whose home is the other shard, takes the whole limit in a region
            // and frees it: that shard keeps the region, so this thread's home can get none.
            long[] filled = new long[1];
            BfcAllocator other = null;
            for (int tries = 0; other == null || other == home; tries++) {
                assertThat(tries).as("a thread whose home is the other shard").isLessThan(10);
                Thread t = new Thread(() -> {
                    long p = a.allocateRaw(64, 48L << 20);
                    filled[0] = p;
                }, "filler");
                t.setDaemon(true);
                t.start();
                TestThreads.joinOrFail(TestThreads.RUN_LIMIT, t);
                assertThat(filled[0]).isNotZero();
                other = a.shardOf(filled[0]);
                a.deallocateRaw(filled[0]);
            }
            long lent = loan.allocateRawOrThrow(64, 40L << 20);
            assertThat(a.shardOf(lent)).as("served by the other shard").isSameAs(other);
            assertThatThrownBy(() -> a.deallocateRaw(lent)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("lent to " + RUNTIME);
            loan.deallocateRaw(lent);
            assertThat(a.getStats().bytesInUse()).isZero();
        }
    }

    /**
     * The stale double free on many threads: the application (thread 0) allocates raw, frees,
     * and then frees again an address it freed a while before, while three runtime threads
     * allocate and free through one loan, so that the address is often lent by then. Every such
     * stale free is refused (the chunk is lent, free, or no chunk start), and every free of the
     * runtime through its loan goes through: no stale free ever takes memory the runtime holds.
     * Thread 0 goes on until {@value #LENT_REFUSALS} of its stale frees have met lent memory.
     * Seeded ({@code -Dbfc4j.test.seed}), on one allocator and sharded.
     */
    @Test
    void staleRawFreesOnManyThreadsNeverTakeLentMemory() throws Exception {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("LendToTest stale-free seed: " + seed + " (-Dbfc4j.test.seed)");
        try (BfcAllocator a = BfcAllocator.builder().name("lent").memoryLimit(64L << 20).subAllocator(sim())
                .leakDetection(LeakDetection.DISABLED).build()) {
            staleFreesRacingALoan(a, seed);
            a.checkInvariants();
        }
        try (ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("lent").shards(2).memoryLimit(64L << 20)
                .subAllocator(sim()).leakDetection(LeakDetection.DISABLED).build()) {
            staleFreesRacingALoan(a, seed);
            for (BfcAllocator shard : a.shards()) {
                shard.checkInvariants();
            }
        }
    }

    /** Stale frees of thread 0's that met memory lent at the time: thread 0 stops at this many. */
    private static final int LENT_REFUSALS = 200;

    /** Thread 0's calls at most, far more than it takes to meet lent memory that often. */
    private static final int MAX_APPLICATION_CALLS = 2_000_000;

    private static void staleFreesRacingALoan(MemoryAllocator a, long seed) throws InterruptedException {
        AtomicBoolean done = new AtomicBoolean();
        try (MemoryAllocator.Loan loan = a.lendTo(RUNTIME, RELEASE)) {
            TestThreads.runTogether(4, seed, id -> {
                Random rnd = new Random(seed * 31 + id);
                try {
                    if (id == 0) {
                        application(a, rnd, seed);
                    } else {
                        runtime(loan, rnd, done);
                    }
                } finally {
                    done.set(true);
                }
            });
        }
        assertThat(a.getStats().bytesInUse()).as("seed %d: everything given back", seed).isZero();
    }

    /**
     * Allocates raw and frees at once, then frees again an address it freed before: thread 0
     * holds nothing at that moment, so the free must be refused.
     */
    private static void application(MemoryAllocator a, Random rnd, long seed) {
        long[] freed = new long[64];
        int lentRefusals = 0;
        for (int i = 0; lentRefusals < LENT_REFUSALS; i++) {
            assertThat(i).as("seed %d: calls before %d stale frees met lent memory (%d did)", seed,
                    LENT_REFUSALS, lentRefusals).isLessThan(MAX_APPLICATION_CALLS);
            long p = a.allocateRaw(64, 1 + rnd.nextInt(4096));
            a.deallocateRaw(p);
            freed[i % freed.length] = p;
            long stale = freed[rnd.nextInt(Math.min(i + 1, freed.length))];
            try {
                a.deallocateRaw(stale);
                throw new AssertionError("seed " + seed + ": the stale free of 0x" + Long.toHexString(stale)
                        + " went through, though thread 0 held nothing");
            } catch (IllegalArgumentException e) {
                if (e.getMessage().contains(", lent to " + RUNTIME + ", which frees it itself")) {
                    lentRefusals++;
                }
            }
        }
    }

    /** Keeps up to 16 chunks lent, freeing one at random through the loan, until thread 0 is done. */
    private static void runtime(MemoryAllocator.Loan loan, Random rnd,
            AtomicBoolean done) {
        List<Long> held = new ArrayList<>();
        while (!done.get()) {
            if (held.size() < 16 && rnd.nextBoolean()) {
                held.add(loan.allocateRawOrThrow(64, 1 + rnd.nextInt(4096)));
            } else if (!held.isEmpty()) {
                loan.deallocateRaw(held.remove(rnd.nextInt(held.size())));
            }
        }
        for (long p : held) {
            loan.deallocateRaw(p);
        }
    }
}
