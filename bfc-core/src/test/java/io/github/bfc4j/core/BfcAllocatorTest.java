package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The port's own behaviour beyond upstream's tests: bad input, the two fixed upstream defects,
 * retry, close, and the static helpers. (Upstream's tests live in conformance-tests.)
 */
class BfcAllocatorTest {

    private static final long BASE = 0x7f0000000000L;
    private static final long MIB = 1L << 20;

    private static BfcOptions noRetry() {
        return BfcOptions.builder().allowRetryOnFailure(false).build();
    }

    private static BfcAllocator simAllocator(long limit, BfcOptions opts) {
        return new BfcAllocator(new SimSubAllocator(BASE, 4 * limit, 0, true), limit, "test_bfc", opts);
    }

    /** A sub-allocator that refuses everything and records what it was asked for. */
    private static final class RefusingSubAllocator implements SubAllocator {
        final List<Long> asked = new ArrayList<>();

        @Override
        public Block alloc(long alignment, long numBytes) {
            asked.add(numBytes);
            if (asked.size() > 10_000) {
                throw new AssertionError("back-off does not terminate: " + asked.subList(0, 20));
            }
            return null;
        }

        @Override
        public void free(long ptr, long numBytes) {
            throw new AssertionError("nothing was allocated");
        }

        @Override
        public boolean supportsCoalescing() {
            return false;
        }
    }

    @Test
    void roundedBytesRoundsUpTo256() {
        assertThat(BfcAllocator.roundedBytes(0)).isZero();
        assertThat(BfcAllocator.roundedBytes(1)).isEqualTo(256);
        assertThat(BfcAllocator.roundedBytes(256)).isEqualTo(256);
        assertThat(BfcAllocator.roundedBytes(257)).isEqualTo(512);
        assertThat(BfcAllocator.roundedBytes(BfcAllocator.MAX_ALLOCATION_BYTES))
                .isEqualTo(BfcAllocator.MAX_ALLOCATION_BYTES);
    }

    @Test
    void binNumForSizeIsLog2OfSizeOver256CappedAt20() {
        assertThat(BfcAllocator.binNumForSize(0)).isZero();
        assertThat(BfcAllocator.binNumForSize(256)).isZero();
        assertThat(BfcAllocator.binNumForSize(511)).isZero();
        assertThat(BfcAllocator.binNumForSize(512)).isEqualTo(1);
        assertThat(BfcAllocator.binNumForSize(3 * 1024)).isEqualTo(3);
        assertThat(BfcAllocator.binNumForSize(256 * MIB - 1)).isEqualTo(19);
        assertThat(BfcAllocator.binNumForSize(256 * MIB)).isEqualTo(20);
        assertThat(BfcAllocator.binNumForSize(80L << 30)).isEqualTo(20);
        assertThat(BfcAllocator.binNumForSize(Long.MAX_VALUE)).isEqualTo(20);
        // A negative size is no size: refused, as roundedBytes refuses it.
        assertThatThrownBy(() -> BfcAllocator.binNumForSize(-1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("bytes=-1 (expected: a size, 0 or more)");
    }

    @Test
    void negativeSizeIsRejectedWithTheValueAndLeavesTheAllocatorUnchanged() {
        try (BfcAllocator a = simAllocator(MIB, noRetry())) {
            long p = a.allocateRaw(64, 1000);
            AllocatorStats before = a.getStats();
            assertThatThrownBy(() -> a.allocateRaw(64, -1))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("numBytes=-1")
                    .hasMessageContaining("test_bfc");
            // Too large to ever be served: a failure, like upstream's null (newer upstream).
            assertThat(a.allocateRaw(64, BfcAllocator.MAX_ALLOCATION_BYTES + 1)).isZero();
            assertThat(a.allocateRaw(64, Long.MAX_VALUE)).isZero();
            assertThatThrownBy(() -> a.allocateRaw(64, 10, null)).isInstanceOf(NullPointerException.class)
                    .hasMessage("attr=null (expected: AllocationAttributes.DEFAULT, or attributes of your own)");
            assertThat(a.getStats()).isEqualTo(before);
            a.deallocateRaw(p);
        }
        // The static rounding, outside its range.
        assertThat(BfcAllocator.roundedBytes(BfcAllocator.MAX_ALLOCATION_BYTES))
                .isEqualTo(BfcAllocator.MAX_ALLOCATION_BYTES);
        for (long bad : new long[] {-1, BfcAllocator.MAX_ALLOCATION_BYTES + 1, Long.MAX_VALUE}) {
            assertThatThrownBy(() -> BfcAllocator.roundedBytes(bad)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("bytes=" + bad + " (expected: 0 to MAX_ALLOCATION_BYTES");
        }
    }

    @Test
    void alignmentMustBeAPowerOfTwo() {
        try (BfcAllocator a = simAllocator(MIB, noRetry())) {
            for (long bad : new long[] {0, -64, 3, 96}) {
                assertThatThrownBy(() -> a.allocateRaw(bad, 256))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("alignment=" + bad)
                        .hasMessageContaining("power of two");
            }
            assertThat(a.getStats().numAllocs()).isZero();
        }
    }

    @Test
    void sizeAboveTheLimitReturnsZeroLikeUpstreamsNull() {
        try (BfcAllocator a = simAllocator(MIB, noRetry())) {
            assertThat(a.allocateRaw(64, MIB + 1)).isZero();
            assertThat(a.allocateRaw(64, 1L << 61)).isZero();
            assertThat(a.getStats().poolBytes()).isZero();
        }
    }

    @Test
    void doubleFreeIsRejectedAndTheAllocatorStaysUsable() {
        try (BfcAllocator a = simAllocator(MIB, noRetry())) {
            long p = a.allocateRaw(64, 1000);
            long q = a.allocateRaw(64, 1000);
            a.deallocateRaw(p);
            AllocatorStats before = a.getStats();
            assertThatThrownBy(() -> a.deallocateRaw(p))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("0x" + Long.toHexString(p))
                    .hasMessageContaining("was not allocated by allocator 'test_bfc' (or was already freed)");
            assertThat(a.getStats()).isEqualTo(before);
            // The freed chunk is reused: nothing was corrupted by the rejected call.
            assertThat(a.allocateRaw(64, 1000)).isEqualTo(p);
            a.deallocateRaw(q);
        }
    }

    @Test
    void freeOfAForeignAddressIsRejected() {
        try (BfcAllocator a = simAllocator(MIB, noRetry())) {
            long p = a.allocateRaw(64, 1000);
            AllocatorStats before = a.getStats();
            for (long foreign : new long[] {p + 256, p + 1, 0x1234L, BASE + 8 * MIB}) {
                assertThatThrownBy(() -> a.deallocateRaw(foreign))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("0x" + Long.toHexString(foreign));
            }
            assertThat(a.getStats()).isEqualTo(before);
            a.deallocateRaw(p);
            assertThat(a.getStats().bytesInUse()).isZero();
        }
    }

    @Test
    void freeOfZeroIsANoOp() {
        try (BfcAllocator a = simAllocator(MIB, noRetry())) {
            SharedCounter counter = new SharedCounter();
            a.setTimingCounter(counter);
            a.deallocateRaw(0);
            assertThat(counter.get()).isZero();
        }
    }

    @Test
    void queriesOfUnknownAddressesThrow() {
        try (BfcAllocator a = simAllocator(MIB, noRetry())) {
            assertThatThrownBy(() -> a.requestedSize(BASE)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("requested size");
            assertThatThrownBy(() -> a.allocatedSize(0)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> a.allocationId(42)).isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void aRequestAbove2Pow62LeavesTheRegionTargetAsItWasEvenUnderALargerLimit() {
        // Under a limit of 2^63 - 1 upstream runs a request of 2^62 + 256 through Extend: the
        // target doubles to 2^63, the back-off asks the sub-allocator, and the next region is
        // asked for at the available 2^63 - 2 MiB - 256 bytes (backing off from there, the
        // reference got 976684544 bytes of this 1 GiB sim). Here it fails at once and the next
        // region is the 4 MiB that the target was (docs/deviations.md #6).
        BfcOptions opts = BfcOptions.builder().allowRetryOnFailure(false).allowGrowth(true)
                .garbageCollection(true).build();
        List<Long> asked = new ArrayList<>();
        SubAllocator sim = new ForwardingSubAllocator(new SimSubAllocator(BASE, 1L << 30, 0, false)) {
            @Override
            public Block alloc(long alignment, long numBytes) {
                asked.add(numBytes);
                return super.alloc(alignment, numBytes);
            }
        };
        try (BfcAllocator a = new BfcAllocator(sim, Long.MAX_VALUE, "test_bfc", opts)) {
            long p = a.allocateRaw(64, 1000);
            assertThat(asked).containsExactly(2 * MIB);
            assertThat(a.allocateRaw(64, BfcAllocator.MAX_ALLOCATION_BYTES + 256)).isZero();
            assertThat(asked).containsExactly(2 * MIB);
            long q = a.allocateRaw(64, 4 * MIB);
            assertThat(q).isEqualTo(BASE + 2 * MIB);
            assertThat(asked).containsExactly(2 * MIB, 4 * MIB);
            a.deallocateRaw(p);
            a.deallocateRaw(q);
        }
    }

    @Test
    void aPoolAboveTheLimitByMoreThanTheFreeRegionsIsNotGarbageCollected() {
        // The second region is 8 MiB where 3 MiB were asked, the third is refused: the pool
        // (10 MiB) exceeds the limit (5 MiB) by more than the free region (2 MiB). Upstream's
        // estimate limit - pool + free wraps around there and its garbage collection gives the
        // free region back (checked against the reference built standalone); here the estimate
        // is below 0 and nothing is given back (docs/deviations.md #10).
        List<Long> freed = new ArrayList<>();
        SubAllocator sub = new SubAllocator() {
            private int calls;
            private long next = BASE;

            @Override
            public Block alloc(long alignment, long numBytes) {
                calls++;
                long bytes = calls == 1 ? numBytes : calls == 2 ? 8 * MIB : 0;
                if (bytes == 0) {
                    return null;
                }
                next += bytes;
                return new Block(next - bytes, bytes);
            }

            @Override
            public void free(long ptr, long numBytes) {
                freed.add(ptr);
            }

            @Override
            public boolean supportsCoalescing() {
                return false;
            }
        };
        BfcOptions opts = BfcOptions.builder().allowRetryOnFailure(false).garbageCollection(true).build();
        try (BfcAllocator a = new BfcAllocator(sub, 5 * MIB, "test_bfc", opts)) {
            long p = a.allocateRaw(64, MIB);
            long q = a.allocateRaw(64, 3 * MIB);
            assertThat(a.getStats().poolBytes()).isEqualTo(10 * MIB);
            a.deallocateRaw(p);
            assertThat(a.allocateRaw(64, 6 * MIB)).isZero();
            assertThat(freed).isEmpty();
            assertThat(a.getStats().poolBytes()).isEqualTo(10 * MIB);
            a.deallocateRaw(q);
        }
    }

    @Test
    void queriesOfAnAddressJustPastAChunkStartThrow() {
        // Upstream's 256-byte slot answers for p + 1 .. p + 255 as for p (the chunk at p);
        // bfc4j finds chunk starts only (docs/deviations.md #4).
        try (BfcAllocator a = simAllocator(MIB, noRetry())) {
            long p = a.allocateRaw(64, 1000);
            for (long inside : new long[] {p + 1, p + 16, p + 255}) {
                assertThatThrownBy(() -> a.requestedSize(inside)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("0x" + Long.toHexString(inside));
                assertThatThrownBy(() -> a.allocatedSize(inside)).isInstanceOf(IllegalArgumentException.class);
                assertThatThrownBy(() -> a.allocationId(inside)).isInstanceOf(IllegalArgumentException.class);
            }
            assertThat(a.requestedSize(p)).isEqualTo(1000);
            a.deallocateRaw(p);
        }
    }

    @Test
    void queriesOfAFreedChunkAnswerAsUpstreamUntilItIsMerged() {
        // Upstream's slots hold free chunks too: a query of a freed address that is still a
        // chunk start answers with the chunk's last values; once a merge deletes the chunk, no
        // chunk starts there and the query fails.
        try (BfcAllocator a = simAllocator(MIB, noRetry())) {
            long p = a.allocateRaw(64, 1000);
            long q = a.allocateRaw(64, 5000);
            long r = a.allocateRaw(64, 300);
            assertThat(q).isEqualTo(p + 1024);
            a.deallocateRaw(q);
            a.checkInvariants();
            assertThat(a.requestedSize(q)).isEqualTo(5000);
            assertThat(a.allocatedSize(q)).isEqualTo(5120);
            assertThat(a.allocationId(q)).isEqualTo(-1);
            // Inside the freed chunk, not at its start: no chunk starts there.
            assertThatThrownBy(() -> a.requestedSize(q + 256)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("never allocated");
            // Freeing p merges q's chunk into p's: q is no chunk start any more; p still is.
            a.deallocateRaw(p);
            assertThatThrownBy(() -> a.allocatedSize(q)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("never allocated");
            assertThat(a.allocatedSize(p)).isEqualTo(1024 + 5120);
            assertThat(a.requestedSize(p)).isEqualTo(1000);
            // The chunk in use still answers, and a freed address cannot be freed again.
            assertThat(a.requestedSize(r)).isEqualTo(300);
            assertThatThrownBy(() -> a.deallocateRaw(p)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("already freed");
            a.checkInvariants();
            a.deallocateRaw(r);
            a.checkInvariants();
        }
    }

    @Test
    void fragmentationFractionWhoseThresholdTruncatesToZeroIsRejected() {
        // Upstream would split exact fits into zero-size chunks (docs/deviations.md #2).
        BfcOptions opts = BfcOptions.builder().fragmentationFraction(1e-9).build();
        assertThatThrownBy(() -> new BfcAllocator(new SimSubAllocator(BASE, 1L << 30, 0, true),
                100 * MIB, "frag", opts))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fragmentationFraction=1.0E-9")
                .hasMessageContaining("fraction * totalMemory = " + 1e-9 * (100 * MIB) + " is at least 1 byte"
                        + " for totalMemory=" + 100 * MIB);
        // The same fraction is fine where the threshold is at least one byte.
        new BfcAllocator(new SimSubAllocator(BASE, 1L << 40, 0, true), 1L << 30, "frag", opts).close();
    }

    @Test
    void fragmentationFractionMustBeFiniteAndNotNegative() {
        for (double bad : new double[] {-0.1, Double.NaN, Double.POSITIVE_INFINITY}) {
            assertThatThrownBy(() -> BfcOptions.builder().fragmentationFraction(bad))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("fragmentationFraction=");
        }
    }

    @Test
    void theConstructorChecksItsArgumentsAsTheBuilderDoes() {
        SimSubAllocator sim = new SimSubAllocator(BASE, MIB, 0, true);
        assertThatThrownBy(() -> new BfcAllocator(sim, -1, "x", noRetry()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("totalMemory=-1 (expected: a number of bytes > 0, e.g. 1L << 30 for 1 GiB)");
        assertThatThrownBy(() -> new BfcAllocator(sim, 0, "x", noRetry()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("totalMemory=0 (expected: a number of bytes > 0, e.g. 1L << 30 for 1 GiB)");
        assertThatThrownBy(() -> new BfcAllocator(sim, MIB, " ", noRetry()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("name=' ' (expected: a non-empty name such as \"cpu_bfc\")");
        assertThatThrownBy(() -> new BfcAllocator(null, MIB, "x", noRetry()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("subAllocator=null (expected: ");
        assertThatThrownBy(() -> new BfcAllocator(sim, MIB, null, noRetry()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("name=null (expected: ");
        assertThatThrownBy(() -> new BfcAllocator(sim, MIB, "x", null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("opts=null (expected: ");
        assertThatThrownBy(() -> BfcAllocator.builder().options(null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("options=null (expected: ");
        assertThatThrownBy(() -> BfcAllocator.builder().memoryLimit(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("memoryLimit=0 (expected: ");
    }

    @Test
    void theDefaultsDifferOnlyInRetryAndClosePolicy() {
        SimSubAllocator sim = new SimSubAllocator(BASE, 64 * MIB, 0, true);
        try (BfcAllocator upstreamShaped = new BfcAllocator(sim, MIB, "x", BfcOptions.defaults());
             BfcAllocator built = BfcAllocator.builder().memoryLimit(MIB).subAllocator(sim).build()) {
            assertThat(upstreamShaped.options().allowRetryOnFailure()).isTrue();
            assertThat(built.options().allowRetryOnFailure()).isFalse();
            assertThat(upstreamShaped.closePolicy()).isEqualTo(ClosePolicy.FORCE);
            assertThat(built.closePolicy()).isEqualTo(ClosePolicy.REFUSE);
            BfcOptions upstream = BfcOptions.defaults();
            assertThat(built.options().allowGrowth()).isEqualTo(upstream.allowGrowth());
            assertThat(built.options().garbageCollection()).isEqualTo(upstream.garbageCollection());
            assertThat(built.options().fragmentationFraction()).isEqualTo(upstream.fragmentationFraction());
            assertThat(BfcAllocator.builder().memoryLimit(MIB).subAllocator(sim).options(BfcOptions.defaults())
                    .build().options().allowRetryOnFailure()).isTrue();
        }
    }

    @Test
    void backOffEndsForSmallRequestsWhenTheSubAllocatorRefusesEverything() {
        // Upstream loops forever here: 0.9 * 2304 rounds back up to 2304 (docs/deviations.md #1).
        RefusingSubAllocator sub = new RefusingSubAllocator();
        try (BfcAllocator a = new BfcAllocator(sub, 2304, "tiny", noRetry())) {
            assertThat(a.allocateRaw(64, 1000)).isZero();
        }
        // Asked for the whole (rounded) limit, then stepped down 256 bytes at a time to the
        // request's rounded size.
        assertThat(sub.asked).containsExactly(2304L, 2048L, 1792L, 1536L, 1280L, 1024L);
    }

    @Test
    void backOffUsesSinglePrecisionLikeUpstream() {
        RefusingSubAllocator sub = new RefusingSubAllocator();
        long limit = 3L << 30;
        BfcOptions fixedSize = BfcOptions.builder().allowGrowth(false).allowRetryOnFailure(false).build();
        try (BfcAllocator a = new BfcAllocator(sub, limit, "bp", fixedSize)) {
            assertThat(a.allocateRaw(64, 2L << 30)).isZero();
        }
        // Each step: RoundedBytes((size_t) ((float) bytes * 0.9f)).
        long expected = limit;
        assertThat(sub.asked.get(0)).isEqualTo(expected);
        for (int i = 1; i < sub.asked.size(); i++) {
            expected = BfcAllocator.roundedBytes((long) ((float) expected * 0.9f));
            assertThat(sub.asked.get(i)).isEqualTo(expected);
        }
        // The double product would differ here, which the conformance traces catch.
        assertThat(BfcAllocator.roundedBytes((long) (limit * 0.9d)))
                .isNotEqualTo(BfcAllocator.roundedBytes((long) ((float) limit * 0.9f)));
        assertThat(sub.asked.get(sub.asked.size() - 1)).isGreaterThanOrEqualTo(2L << 30);
    }

    @Test
    void zeroBytesReturnsZeroWithoutAnAllocationId() {
        try (BfcAllocator a = simAllocator(MIB, noRetry())) {
            assertThat(a.allocateRaw(64, 0)).isZero();
            long p = a.allocateRaw(64, 1);
            assertThat(a.allocationId(p)).isEqualTo(1);
            assertThat(a.getStats().numAllocs()).isEqualTo(1);
        }
    }

    @Test
    void closeReturnsEveryRegionAndRefusesLaterUse() {
        SimSubAllocator sim = new SimSubAllocator(BASE, 64 * MIB, 0, true);
        BfcAllocator a = new BfcAllocator(sim, 16 * MIB, "closing", noRetry());
        a.allocateRaw(64, 3 * MIB);
        a.allocateRaw(64, 5 * MIB);
        assertThat(sim.reservedBytes()).isPositive();
        a.close();
        assertThat(sim.reservedBytes()).isZero();
        a.close(); // idempotent
        assertThatThrownBy(() -> a.allocateRaw(64, 256)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("'closing' is closed");
        assertThatThrownBy(() -> a.allocateRaw(64, BfcAllocator.MAX_ALLOCATION_BYTES + 1))
                .as("a request above the largest possible one").isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("'closing' is closed");
        assertThatThrownBy(() -> a.deallocateRaw(BASE)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> a.requestedSize(BASE)).as("a query of a chunk it had")
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("'closing' is closed");
        assertThatThrownBy(() -> a.allocatedSize(BASE)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> a.allocationId(BASE)).isInstanceOf(IllegalStateException.class);
        assertThat(a.getStats().numAllocs()).isEqualTo(2);
        assertThat(a.memoryStats().oomsTotal()).as("refusals of a closed allocator are no failures").isZero();
    }

    @Test
    void retryWaitsForAFreeFromAnotherThread() throws Exception {
        BfcOptions retry = BfcOptions.builder().allowGrowth(false).allowRetryOnFailure(true).build();
        try (BfcAllocator a = simAllocator(MIB, retry)) {
            long full = a.allocateRaw(64, MIB);
            assertThat(full).isNotZero();
            Thread allocating = Thread.currentThread();
            java.util.concurrent.atomic.AtomicBoolean returned = new java.util.concurrent.atomic.AtomicBoolean();
            AtomicReference<Throwable> notWaiting = new AtomicReference<>();
            Thread freer = new Thread(() -> {
                try {
                    TestThreads.awaitRetryWait(() -> allocating, returned::get);
                } catch (Throwable e) {
                    notWaiting.set(e);
                } finally {
                    a.deallocateRaw(full);
                }
            }, "freer");
            freer.setDaemon(true);
            freer.start();
            long t0 = System.nanoTime();
            long p = a.allocateRaw(64, 4096); // waits for the free, then succeeds
            long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            returned.set(true);
            TestThreads.joinOrFail(TestThreads.RUN_LIMIT, freer);
            assertThat(notWaiting.get()).as("the free came while the allocation waited for it").isNull();
            assertThat(p).isEqualTo(full);
            assertThat(waitedMs).as("woken by the free, not the 10 s deadline").isLessThan(9_000);
        }
    }

    /**
     * A request of exactly the memory limit is not one that can never fit: while a smaller
     * region is in use it waits in the retry loop, and once that is freed the garbage
     * collection gives the region back and a region of the whole limit serves it, as upstream's
     * retry loop does.
     */
    @Test
    void aRequestOfExactlyTheLimitWaitsForFreesAndThenFits() throws Exception {
        BfcOptions retry = BfcOptions.builder().allowGrowth(true).allowRetryOnFailure(true)
                .garbageCollection(true).build();
        try (BfcAllocator a = simAllocator(4 * MIB, retry)) {
            long small = a.allocateRaw(64, MIB);
            assertThat(a.getStats().poolBytes()).as("a first region below the limit").isLessThan(4 * MIB);
            AtomicReference<Thread> waiting = new AtomicReference<>();
            java.util.concurrent.CompletableFuture<Long> waiter =
                    java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                        waiting.set(Thread.currentThread());
                        return a.allocateRaw(64, 4 * MIB);
                    });
            // Its first try failed: it waits for a free.
            TestThreads.awaitRetryWait(waiting::get, waiter::isDone);
            assertThat(waiter).isNotDone();
            long t0 = System.nanoTime();
            a.deallocateRaw(small);
            long p = waiter.get(20, TimeUnit.SECONDS);
            long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertThat(p).as("served after the free").isNotZero();
            assertThat(a.allocatedSize(p)).isEqualTo(4 * MIB);
            assertThat(waitedMs).isLessThan(5_000);
            a.deallocateRaw(p);
        }
    }

    /**
     * A sub-allocator may hand out more than it was asked for ({@link SubAllocator#alloc}:
     * {@code Block.bytes()} may exceed {@code numBytes}; upstream's {@code Extend} makes a region
     * of {@code bytes_received}), so the pool can exceed the memory limit. A request above the
     * limit but no larger than such a region then fits once the region is free again: it waits
     * in the retry loop for the free, as upstream's retry loop waits for every request, and is
     * served from that region, not refused at once as one that can never fit.
     */
    @Test
    void aRequestAboveTheLimitThatFitsAGenerousRegionWaitsForFreesAndThenFits() throws Exception {
        SimSubAllocator sim = new SimSubAllocator(BASE, 16 * MIB, 0, false);
        List<Long> asked = new ArrayList<>();
        // The first region is twice what was asked; later calls get nothing.
        SubAllocator generousOnce = new ForwardingSubAllocator(sim) {
            @Override
            public Block alloc(long alignment, long numBytes) {
                asked.add(numBytes);
                if (asked.size() > 1) {
                    return null;
                }
                Block b = super.alloc(alignment, 2 * numBytes);
                return b == null ? null : new Block(b.ptr(), 2 * numBytes);
            }
        };
        BfcOptions retry = BfcOptions.builder().allowGrowth(false).allowRetryOnFailure(true)
                .garbageCollection(false).build();
        try (BfcAllocator a = new BfcAllocator(generousOnce, MIB, "generous", retry)) {
            long small = a.allocateRaw(64, 256);
            assertThat(asked).as("without growth the first region asked for is the limit").containsExactly(MIB);
            assertThat(a.getStats().poolBytes()).as("a region of twice the limit").isEqualTo(2 * MIB);
            AtomicReference<Thread> waiting = new AtomicReference<>();
            java.util.concurrent.CompletableFuture<Long> waiter =
                    java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                        waiting.set(Thread.currentThread());
                        return a.allocateRaw(64, 2 * MIB);
                    });
            // Its first try failed (256 bytes of the region in use): it waits for a free.
            TestThreads.awaitRetryWait(waiting::get, waiter::isDone);
            assertThat(waiter).isNotDone();
            long t0 = System.nanoTime();
            a.deallocateRaw(small);
            long p = waiter.get(20, TimeUnit.SECONDS);
            long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertThat(p).as("served from the whole region after the free").isEqualTo(small);
            assertThat(a.allocatedSize(p)).isEqualTo(2 * MIB);
            assertThat(waitedMs).isLessThan(5_000);
            a.deallocateRaw(p);
        }
    }

    /**
     * {@code SetSafeFrontier} ends with {@code retry_helper_.NotifyDealloc()}: an allocation
     * waiting in the retry loop for chunks whose stamps are past its {@code freed_by} count
     * wakes when the frontier passes them (the next attempt merges them, stamps cleared) and
     * succeeds at once, not at its last attempt 10 seconds after its first failure.
     */
    @Test
    void retryWaitsForTheSafeFrontierToPassTheStamps() throws Exception {
        BfcOptions retry = BfcOptions.builder().allowGrowth(false).allowRetryOnFailure(true)
                .garbageCollection(false).build();
        try (BfcAllocator a = simAllocator(MIB, retry)) {
            a.setTimingCounter(new SharedCounter());
            long first = a.allocateRaw(64, MIB / 2);
            long second = a.allocateRaw(64, MIB / 2);
            a.deallocateRaw(first); // stamped 1
            a.deallocateRaw(second); // stamped 2: two free halves, not merged
            AllocationAttributes freedBy1 = new AllocationAttributes(true, () -> 1);
            AtomicReference<Thread> waiting = new AtomicReference<>();
            java.util.concurrent.CompletableFuture<Long> waiter = java.util.concurrent.CompletableFuture
                    .supplyAsync(() -> {
                        waiting.set(Thread.currentThread());
                        return a.allocateRaw(64, 3 * MIB / 4, freedBy1);
                    });
            // Its first try failed: it waits for a free.
            TestThreads.awaitRetryWait(waiting::get, waiter::isDone);
            assertThat(waiter).isNotDone();
            long t0 = System.nanoTime();
            a.setSafeFrontier(3);
            long p = waiter.get(20, TimeUnit.SECONDS);
            long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertThat(p).as("the two halves merged").isEqualTo(first);
            assertThat(waitedMs).as("woken by the frontier, not the 10 s deadline").isLessThan(5_000);
            a.deallocateRaw(p);
        }
    }

    /**
     * Closing an {@link Allocation} is a {@code DeallocateRaw}, which ends with
     * {@code retry_helper_.NotifyDealloc()}: an allocation waiting in the retry loop wakes and
     * succeeds at once, instead of at its last attempt 10 seconds after its first failure.
     */
    @Test
    void retryWaitsForAnAllocationClosedByAnotherThread() throws Exception {
        BfcOptions retry = BfcOptions.builder().allowGrowth(false).allowRetryOnFailure(true).build();
        try (BfcAllocator a = simAllocator(MIB, retry)) {
            Allocation full = a.allocate(MIB);
            long fullAddress = full.address();
            AtomicReference<Thread> waiting = new AtomicReference<>();
            java.util.concurrent.CompletableFuture<Long> waiter =
                    java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                        waiting.set(Thread.currentThread());
                        return a.allocateRaw(64, 4096);
                    });
            // Its first try failed: it waits for a free.
            TestThreads.awaitRetryWait(waiting::get, waiter::isDone);
            assertThat(waiter).isNotDone();
            long t0 = System.nanoTime();
            full.close();
            long p = waiter.get(20, TimeUnit.SECONDS);
            long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertThat(p).isEqualTo(fullAddress);
            assertThat(waitedMs).as("woken by the close, not the 10 s deadline").isLessThan(5_000);
            a.deallocateRaw(p);
        }
    }

    /**
     * An allocation waiting for memory when the allocator is closed (by force) fails at once
     * with the allocator's "closed", instead of waiting out the 10 seconds of the retry loop.
     */
    @Test
    void aCloseEndsTheWaitOfAnAllocationInTheRetryLoop() throws Exception {
        BfcOptions retry = BfcOptions.builder().allowGrowth(false).allowRetryOnFailure(true).build();
        BfcAllocator a = BfcAllocator.builder().name("waiting").memoryLimit(MIB).options(retry)
                .subAllocator(new SimSubAllocator(BASE, 64 * MIB, 0, false)).closePolicy(ClosePolicy.FORCE).build();
        a.allocateRaw(64, MIB);
        AtomicReference<Thread> waiting = new AtomicReference<>();
        java.util.concurrent.CompletableFuture<Long> waiter =
                java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                    waiting.set(Thread.currentThread());
                    return a.allocateRaw(64, 4096);
                });
        // Its first try failed: it waits for a free.
        TestThreads.awaitRetryWait(waiting::get, waiter::isDone);
        assertThat(waiter).isNotDone();
        long t0 = System.nanoTime();
        a.close();
        assertThatThrownBy(() -> waiter.get(5, TimeUnit.SECONDS)).as("not the 10 s of the retry loop")
                .hasCauseInstanceOf(IllegalStateException.class).hasMessageContaining("'waiting' is closed");
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)).isLessThan(5_000);
    }

    /**
     * A forEachChunk visitor that frees is stopped with an exception at the chunk where it did;
     * the walk used to end silently there, the later chunks unvisited. Reading is allowed.
     */
    @Test
    void aVisitorThatFreesIsStoppedNotSilentlyCutShort() {
        try (BfcAllocator a = simAllocator(64 * MIB, BfcOptions.builder().allowRetryOnFailure(false).build())) {
            List<Long> live = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                live.add(a.allocateRaw(64, 4096));
            }
            List<Long> visited = new ArrayList<>();
            a.forEachChunk((region, regionPtr, regionBytes, ptr, bytes, requested, id) -> {
                visited.add(ptr);
                a.getStats(); // reading is fine
            });
            assertThat(visited).hasSize(21); // 20 allocations and the free rest
            assertThatThrownBy(() -> a.forEachChunk((region, regionPtr, regionBytes, ptr, bytes, requested, id) -> {
                if (id >= 0) {
                    a.deallocateRaw(ptr);
                }
            })).isInstanceOf(IllegalStateException.class)
                    .hasMessage("forEachChunk's visitor changed allocator 'test_bfc' (an allocation, a free, a region"
                            + " given back, or a close) at the chunk at 0x" + Long.toHexString(live.get(0))
                            + ": the walk stops; collect what to change, and change it after the walk");
            a.checkInvariants();
            for (long p : live.subList(1, live.size())) {
                a.deallocateRaw(p);
            }
            assertThat(a.getStats().bytesInUse()).isZero();
        }
    }

    @Test
    void aRequestThatCanNeverFitFailsAtOnceEvenWhenRetryIsAllowed() {
        // Upstream waits the whole 10 s for frees that cannot help: more than the limit can
        // never be obtained, and every chunk is smaller. (Not a speed target: the 10 s wait is
        // what is checked for, with a bound far from it.)
        try (BfcAllocator a = simAllocator(MIB, BfcOptions.defaults())) {
            long live = a.allocateRaw(64, 4096);
            long t0 = System.nanoTime();
            assertThat(a.allocateRaw(64, MIB + 1)).isZero();
            assertThat(a.allocateRaw(64, 2 * MIB)).isZero();
            long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertThat(tookMs).as("two requests above the limit took %d ms", tookMs).isLessThan(5_000);
            assertThat(a.memoryStats().oomsTotal()).isEqualTo(2);
            // A request within the limit still waits for frees (retryWaitsForAFreeFromAnotherThread).
            a.deallocateRaw(live);
            a.checkInvariants();
        }
    }

    @Test
    void noRetryAttributesFailAtOnceEvenWhenRetryIsAllowed() {
        BfcOptions retry = BfcOptions.builder().allowGrowth(false).allowRetryOnFailure(true).build();
        try (BfcAllocator a = simAllocator(MIB, retry)) {
            assertThat(a.allocateRaw(64, MIB)).isNotZero();
            assertThat(a.allocateRaw(64, 256, AllocationAttributes.NO_RETRY)).isZero();
        }
    }

    @Test
    void renderOccupancyAndDumpMemoryLogDescribeTheChunks() {
        try (BfcAllocator a = simAllocator(MIB, BfcOptions.builder().allowGrowth(false)
                .allowRetryOnFailure(false).build())) {
            assertThat(a.renderOccupancy()).isEqualTo("<allocator contains no memory>");
            long p = a.allocateRaw(64, MIB / 2 - 100);
            String occupancy = a.renderOccupancy();
            assertThat(occupancy).hasSize(100);
            assertThat(occupancy.substring(0, 49)).matches("\\*+");
            assertThat(occupancy.substring(51)).matches("_+");
            String dump = a.dumpMemoryLog(MIB);
            assertThat(dump).contains("BFCAllocator dump for test_bfc")
                    .contains("InUse at " + Long.toHexString(p) + " of size 524288")
                    .contains("Free  at " + Long.toHexString(p + MIB / 2) + " of size 524288")
                    .contains("1 Chunks of size 524288 totalling 512.0KiB");
        }
    }

    @Test
    void renderOccupancyIsExactInPoolsTooLargeForADoublesProduct() {
        // A pool of 3 * 2^55 bytes whose first quarter is one chunk in use: the chunk's last
        // byte lies at (3 * 2^53 - 1) * 100 / (3 * 2^55) = 24.99..., position 24, in upstream's
        // size_t arithmetic; a double rounds the product to 25 * 3 * 2^55 and marks position 25.
        long pool = 3L << 55;
        try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(BASE, pool, 0, true), pool, "huge",
                BfcOptions.builder().allowGrowth(false).allowRetryOnFailure(false).build())) {
            assertThat(a.allocateRaw(256, pool / 4)).isNotZero();
            assertThat(a.renderOccupancy()).isEqualTo("*".repeat(25) + "_".repeat(75));
        }
    }

    @Test
    void everyRejectedMisuseLeavesTheAllocatorConsistent() {
        // A loaded allocator: several regions, free and used chunks, stamped frees.
        SimSubAllocator sim = new SimSubAllocator(BASE, 64 * MIB, 0, true);
        BfcOptions opts = BfcOptions.builder().allowGrowth(true).garbageCollection(true)
                .allowRetryOnFailure(false).build();
        try (BfcAllocator a = new BfcAllocator(sim, 16 * MIB, "misuse", opts)) {
            SharedCounter counter = new SharedCounter();
            a.setTimingCounter(counter);
            List<Long> live = new ArrayList<>();
            for (int i = 0; i < 40; i++) {
                live.add(a.allocateRaw(64, 1000L + 37_000L * i));
            }
            long freed = live.remove(3);
            a.deallocateRaw(freed);
            a.deallocateRaw(live.remove(10));
            a.checkInvariants();
            AllocatorStats before = a.getStats();
            List<Runnable> misuse = List.of(
                    () -> a.deallocateRaw(freed),                       // double free
                    () -> a.deallocateRaw(live.get(0) + 256),           // inside an allocation
                    () -> a.deallocateRaw(0x1234),                      // foreign
                    () -> a.deallocateRaw(-BASE),                       // foreign, negative
                    () -> a.allocateRaw(64, -1),                        // negative size
                    () -> a.allocateRaw(64, Long.MIN_VALUE),
                    () -> a.allocateRaw(0, 256),                        // alignment not a power of two
                    () -> a.allocateRaw(-64, 256),
                    () -> a.allocateRaw(3 << 10, 256),
                    () -> a.allocateRaw(Long.MIN_VALUE, 256));
            for (Runnable call : misuse) {
                assertThatThrownBy(call::run).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageMatching("(?s).*(0x[0-9a-f]+ was not allocated by allocator 'misuse'"
                                + "|numBytes=-?\\d+ \\(expected: >= 0\\)|alignment=-?\\d+ \\(expected: a power of two\\)).*");
                a.checkInvariants();
                assertThat(a.getStats()).isEqualTo(before);
            }
            // Sizes that can never be served fail with 0 (the raw API's null) and change nothing
            // in use, whatever path they take (limit check, back-off, garbage collection).
            for (long huge : new long[] {16 * MIB + 1, Long.MAX_VALUE / 2, Long.MAX_VALUE / 2 + 1,
                    BfcAllocator.MAX_ALLOCATION_BYTES + 1, Long.MAX_VALUE}) {
                assertThat(a.allocateRaw(64, huge)).as("allocateRaw(%d)", huge).isZero();
                a.checkInvariants();
                assertThat(a.getStats().bytesInUse()).isEqualTo(before.bytesInUse());
                assertThat(a.getStats().numAllocs()).isEqualTo(before.numAllocs());
            }
            // Later calls work, and everything can be freed.
            long p = a.allocateRaw(64, 5000);
            assertThat(p).isNotZero();
            a.deallocateRaw(p);
            for (long q : live) {
                a.deallocateRaw(q);
            }
            a.checkInvariants();
            assertThat(a.getStats().bytesInUse()).isZero();
        }
        assertThat(sim.reservedBytes()).isZero();
    }

    @Test
    void hugeRequestsUnderAHugeLimitBackOffAndFailCleanly() {
        // Limit Long.MAX_VALUE: the region target starts at 2^63 (unsigned, as upstream), the
        // sub-allocator refuses, back-off ends, and the answer is 0.
        SimSubAllocator sim = new SimSubAllocator(BASE, 1L << 40, 0, true);
        BfcOptions opts = BfcOptions.builder().allowGrowth(true).garbageCollection(true)
                .allowRetryOnFailure(false).build();
        try (BfcAllocator a = new BfcAllocator(sim, Long.MAX_VALUE, "huge", opts)) {
            long p = a.allocateRaw(64, MIB);
            for (long huge : new long[] {Long.MAX_VALUE / 2, Long.MAX_VALUE / 2 + 1,
                    BfcAllocator.MAX_ALLOCATION_BYTES, Long.MAX_VALUE}) {
                assertThat(a.allocateRaw(64, huge)).as("allocateRaw(%d)", huge).isZero();
                a.checkInvariants();
            }
            assertThat(a.allocateRaw(64, 1L << 30)).isNotZero();
            a.deallocateRaw(p);
            a.checkInvariants();
        }
        assertThat(sim.reservedBytes()).isZero();
    }

    @Test
    void freesRacingACloseEitherSucceedOrSeeAClosedAllocator() throws Exception {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("freesRacingACloseEitherSucceedOrSeeAClosedAllocator seed: " + seed);
        java.util.Random rnd = new java.util.Random(seed);
        int raced = 0;
        for (int round = 0; round < 20; round++) {
            SimSubAllocator sim = new SimSubAllocator(BASE, 64 * MIB, 0, true);
            // The public constructor's close policy is FORCE: close() frees live memory.
            BfcAllocator a = new BfcAllocator(sim, 32 * MIB, "racing", noRetry());
            List<Long> live = new ArrayList<>();
            for (int i = 0; i < 2000; i++) {
                live.add(a.allocateRaw(64, 256 + rnd.nextInt(8000)));
            }
            java.util.concurrent.atomic.AtomicInteger freedOk = new java.util.concurrent.atomic.AtomicInteger();
            java.util.concurrent.atomic.AtomicInteger sawClosed = new java.util.concurrent.atomic.AtomicInteger();
            java.util.concurrent.atomic.AtomicReference<Throwable> unexpected = new java.util.concurrent.atomic.AtomicReference<>();
            CountDownLatch go = new CountDownLatch(1);
            Thread freer = new Thread(() -> {
                try {
                    go.await();
                    for (long p : live) {
                        try {
                            a.deallocateRaw(p);
                            freedOk.incrementAndGet();
                        } catch (IllegalStateException e) {
                            assertThat(e).hasMessageContaining("allocator 'racing' is closed");
                            sawClosed.incrementAndGet();
                        }
                    }
                } catch (Throwable e) {
                    unexpected.set(e);
                }
            }, "freer-in-round-" + round);
            freer.setDaemon(true);
            freer.start();
            go.countDown();
            Thread.sleep(rnd.nextInt(3));
            a.close();
            TestThreads.joinOrFail(seed, TestThreads.RUN_LIMIT, freer);
            if (unexpected.get() != null) {
                throw new AssertionError("seed " + seed + ", round " + round, unexpected.get());
            }
            assertThat(freedOk.get() + sawClosed.get()).isEqualTo(live.size());
            if (freedOk.get() > 0 && sawClosed.get() > 0) {
                raced++;
            }
            a.checkInvariants();
            assertThat(sim.reservedBytes()).isZero();
            assertThatThrownBy(() -> a.allocateRaw(64, 256)).isInstanceOf(IllegalStateException.class);
        }
        System.out.println("freesRacingACloseEitherSucceedOrSeeAClosedAllocator: " + raced
                + " of 20 rounds had frees on both sides of the close");
    }

    @Test
    void humanReadableNumBytesMatchesTensorFlow() {
        assertThat(BfcAllocator.humanReadableNumBytes(0)).isEqualTo("0B");
        assertThat(BfcAllocator.humanReadableNumBytes(1023)).isEqualTo("1023B");
        assertThat(BfcAllocator.humanReadableNumBytes(1024)).isEqualTo("1.0KiB");
        assertThat(BfcAllocator.humanReadableNumBytes(512 * 1024)).isEqualTo("512.0KiB");
        assertThat(BfcAllocator.humanReadableNumBytes(25 * MIB / 2)).isEqualTo("12.50MiB");
        assertThat(BfcAllocator.humanReadableNumBytes(80L << 30)).isEqualTo("80.00GiB");
    }
}
