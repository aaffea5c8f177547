/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cpu;

import static io.github.bfc4j.core.GarbageCollection.gcUntil;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.Allocation;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.HistoryOptions;
import io.github.bfc4j.core.LeakDetection;
import io.github.bfc4j.core.MemoryAnnotation;
import io.github.bfc4j.core.ShardedBfcAllocator;
import io.github.bfc4j.core.TestThreads;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class LeakDetectionTest {

    private static final long MIB = 1L << 20;

    private LogCapture log;
    /**
     * The leak reports. A report is logged on the cleaner's thread just after the allocator
     * counts the leak reclaimed, so the tests wait for both.
     */
    private List<String> warnings;

    @BeforeEach
    void listen() {
        log = new LogCapture(LeakDetection.class.getName());
        warnings = log.messages();
    }

    @AfterEach
    void stopListening() {
        log.close();
    }

    private static BfcAllocator allocator(LeakDetection level) {
        return BfcAllocator.builder().name("leaky").memoryLimit(64 * MIB)
                .subAllocator(new AlignedHostSubAllocator()).leakDetection(level).build();
    }

    private static void leak(BfcAllocator a, long bytes) {
        a.allocate(bytes).asPointer().put(0, (byte) 1);
    }

    @Test
    void anUnreachableUnclosedAllocationIsReportedOnceAndItsMemoryReturned() throws InterruptedException {
        BfcAllocator a = allocator(LeakDetection.SIMPLE);
        leak(a, 3000);
        gcUntil("leak reclaimed", () -> a.leaksReclaimed() == 1 && !warnings.isEmpty());
        assertThat(a.getStats().bytesInUse()).isZero();
        assertThat(warnings).hasSize(1);
        assertThat(warnings.get(0)).startsWith("LEAK: allocation #1 of 3000 bytes (3072 reserved) at 0x")
                .contains("from allocator 'leaky' became unreachable without close(); its memory has been returned.")
                .endsWith("Run with -Dbfc4j.leakDetection=paranoid to see where it was allocated.");
        a.close(); // nothing live any more, so the refusing policy lets it close
    }

    /**
     * A leak from a ShardedBfcAllocator is reported naming the allocator the user built and the
     * shard that held it, not the shard's own name ('leaky/0'), which the user never gave.
     */
    @Test
    void aLeakFromAShardedAllocatorNamesIt() throws InterruptedException {
        ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("leaky").memoryLimit(64 * MIB)
                .subAllocator(new AlignedHostSubAllocator()).shards(2).leakDetection(LeakDetection.SIMPLE).build();
        a.allocate(3000).asPointer().put(0, (byte) 1);
        BfcAllocator home = a.homeShard();
        gcUntil("leak reclaimed", () -> home.leaksReclaimed() == 1 && !warnings.isEmpty());
        assertThat(warnings).singleElement().asString().startsWith("LEAK: allocation #1 of 3000 bytes (3072 reserved) at 0x")
                .contains("from allocator 'leaky' (shard 0 of 2) became unreachable without close()");
        assertThat(a.leaksReclaimed()).as("all shards' leaks").isEqualTo(1);
        // A leak in the other shard counts too.
        Thread other = new Thread(() -> a.allocate(5000).asPointer().put(0, (byte) 1), "other");
        other.setDaemon(true);
        other.start();
        TestThreads.joinOrFail(TestThreads.RUN_LIMIT, other);
        gcUntil("second leak reclaimed", () -> a.leaksReclaimed() == 2 && warnings.size() == 2);
        assertThat(a.shards().get(1).leaksReclaimed()).isEqualTo(1);
        assertThat(home.leaksReclaimed()).isEqualTo(1);
        assertThat(a.bytesInUse()).isZero();
        a.close();
    }

    @Test
    void paranoidReportsWhereTheAllocationWasMade() throws InterruptedException {
        BfcAllocator a = allocator(LeakDetection.PARANOID);
        leak(a, 100);
        gcUntil("the leak reclaimed and warned of", () -> a.leaksReclaimed() == 1 && !warnings.isEmpty());
        assertThat(warnings).singleElement().asString()
                .contains("java.lang.Throwable: allocation #1 was made here")
                .contains("LeakDetectionTest.leak(");
        a.close();
    }

    /**
     * With the history recorded, a leak's report says what was recorded when the allocation was
     * made (thread, annotation, time, stack), without the cost of {@code PARANOID}.
     */
    @Test
    void aRecordedHistoryNamesWhoMadeTheLeakedAllocation() throws InterruptedException {
        BfcAllocator a = allocator(LeakDetection.SIMPLE);
        a.recordHistory(HistoryOptions.defaults());
        try (MemoryAnnotation step = MemoryAnnotation.push("load weights", 3)) {
            leak(a, 3000);
        }
        gcUntil("the leak reclaimed and warned of", () -> a.leaksReclaimed() == 1 && !warnings.isEmpty());
        assertThat(warnings).singleElement().asString()
                .contains("its memory has been returned. Close every Allocation (try-with-resources) when done"
                        + " with it. Recorded when it was allocated: on thread '" + Thread.currentThread().getName()
                        + "', in annotation 'load weights' (step 3), at 20")
                .contains("\n\tat io.github.bfc4j.cpu.LeakDetectionTest.leak(LeakDetectionTest.java:")
                .contains("\tat io.github.bfc4j.cpu.LeakDetectionTest.aRecordedHistoryNamesWhoMadeTheLeakedAllocation(")
                .doesNotContain("paranoid");
        a.close();
    }

    /** Annotations alone name the annotation; with no stack recorded, the report still points at PARANOID. */
    @Test
    void recordedAnnotationsAloneNameTheAnnotation() throws InterruptedException {
        BfcAllocator a = allocator(LeakDetection.SIMPLE);
        a.recordAnnotations(true);
        try (MemoryAnnotation step = MemoryAnnotation.push("decode")) {
            leak(a, 3000);
        }
        gcUntil("the leak reclaimed and warned of", () -> a.leaksReclaimed() == 1 && !warnings.isEmpty());
        assertThat(warnings).singleElement().asString()
                .endsWith(" Recorded when it was allocated: in annotation 'decode'. Run with"
                        + " -Dbfc4j.leakDetection=paranoid to see where it was allocated.");
        a.close();
    }

    @Test
    void aReachableViewKeepsTheMemoryAlive() throws InterruptedException {
        assertTheMemoryStaysWhileReachable(Allocation::asByteBuffer);
    }

    @Test
    void aBufferMadeFromAViewKeepsTheMemoryAliveToo() throws InterruptedException {
        // A slice refers to the root of its chain of buffers, which must be the watched view.
        assertTheMemoryStaysWhileReachable(x -> x.asByteBuffer().slice());
    }

    @Test
    void aBufferMadeFromAPointerViewKeepsTheMemoryAlive() throws InterruptedException {
        assertTheMemoryStaysWhileReachable(x -> x.asPointer().asBuffer());
    }

    /**
     * Drops an allocation's handle but keeps what {@code view} makes of it: once a marker leak
     * is reclaimed (so the collector has been through), the viewed memory must still be
     * allocated, and reclaimed once the view is dropped too.
     */
    private void assertTheMemoryStaysWhileReachable(Function<Allocation, ByteBuffer> view)
            throws InterruptedException {
        BfcAllocator a = allocator(LeakDetection.SIMPLE);
        ByteBuffer kept = view.apply(a.allocate(MIB));
        kept.putLong(0, 42);
        leak(a, 256);
        gcUntil("a leak reclaimed and warned of", () -> a.leaksReclaimed() >= 1 && !warnings.isEmpty());
        assertThat(a.leaksReclaimed()).as("the marker only").isEqualTo(1);
        assertThat(a.getStats().bytesInUse()).as("the viewed allocation is not reclaimed").isEqualTo(MIB);
        try (Allocation other = a.allocate(MIB)) { // would be handed the same chunk if it were
            other.asByteBuffer().putLong(0, 7);
        }
        assertThat(kept.getLong(0)).isEqualTo(42);
        kept = null;
        // Its report too, so that it cannot land in the next test's.
        gcUntil("both leaks reclaimed and warned of", () -> a.leaksReclaimed() == 2 && warnings.size() == 2);
        assertThat(a.getStats().bytesInUse()).isZero();
        a.close();
    }

    @Test
    void closedAllocationsAreNeverReported() throws InterruptedException {
        BfcAllocator a = allocator(LeakDetection.SIMPLE);
        for (int i = 0; i < 100; i++) {
            try (Allocation x = a.allocate(1000)) {
                x.asByteBuffer().put(0, (byte) i);
            }
        }
        leak(a, 256); // a marker: once it is reclaimed, the closed ones had their chance
        gcUntil("the leak reclaimed and warned of", () -> a.leaksReclaimed() == 1 && !warnings.isEmpty());
        assertThat(warnings).hasSize(1);
        assertThat(a.getStats().bytesInUse()).isZero();
        a.close();
    }

    @Test
    void withDetectionOffAnUnclosedAllocationStaysAllocated() throws InterruptedException {
        BfcAllocator a = allocator(LeakDetection.DISABLED);
        BfcAllocator marker = allocator(LeakDetection.SIMPLE); // also named 'leaky'
        leak(a, 1000);
        leak(marker, 256);
        gcUntil("the leak reclaimed by the marker and warned of",
                () -> marker.leaksReclaimed() == 1 && !warnings.isEmpty());
        assertThat(a.leaksReclaimed()).isZero();
        assertThat(a.getStats().bytesInUse()).isEqualTo(1024);
        assertThat(warnings).singleElement().asString().contains("allocator 'leaky' became unreachable") // the marker
                .contains("allocation #1 of 256 bytes");
        marker.close();
        assertThatThrownBy(a::close).hasMessageContaining("1 live allocation");
    }

    @Test
    void theSystemPropertySetsTheDefaultAndIsValidated() {
        String old = System.getProperty(LeakDetection.PROPERTY);
        try {
            System.setProperty(LeakDetection.PROPERTY, "Paranoid");
            assertThat(LeakDetection.fromSystemProperty()).isEqualTo(LeakDetection.PARANOID);
            System.setProperty(LeakDetection.PROPERTY, "sometimes");
            assertThatThrownBy(() -> BfcAllocator.builder().memoryLimit(MIB).subAllocator(new AlignedHostSubAllocator()).build())
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("-Dbfc4j.leakDetection=sometimes (expected: disabled, simple or paranoid)");
            System.clearProperty(LeakDetection.PROPERTY);
            assertThat(LeakDetection.fromSystemProperty()).isEqualTo(LeakDetection.DISABLED);
        } finally {
            if (old == null) {
                System.clearProperty(LeakDetection.PROPERTY);
            } else {
                System.setProperty(LeakDetection.PROPERTY, old);
            }
        }
    }
}
