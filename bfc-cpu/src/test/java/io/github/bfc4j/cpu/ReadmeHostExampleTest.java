/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cpu;

import static io.github.bfc4j.core.GarbageCollection.gcUntil;
import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.Allocation;
import io.github.bfc4j.core.BfcAllocator;
import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

/** The host-memory example of README.md, as written there. */
class ReadmeHostExampleTest {

    @Test
    void hostExampleBehavesAsTheReadmeSays() throws InterruptedException {
        AlignedHostSubAllocator sub = new AlignedHostSubAllocator();
        runExample(sub);
        // The example's views are unreachable once it has returned, so its region goes back.
        gcUntil("every byte returned", () -> sub.liveBytes() == 0);
    }

    private static void runExample(AlignedHostSubAllocator sub) {
        try (BfcAllocator cpu = BfcAllocator.builder()
                .name("cpu_bfc")
                .memoryLimit(1L << 30)
                .subAllocator(sub)
                .build()) {
            try (Allocation a = cpu.allocate(1000)) {
                ByteBuffer buf = a.asByteBuffer();
                assertThat(buf.capacity()).isEqualTo(1000);
                buf.putLong(0, 42);
                assertThat(a.asPointer().getLong(0)).isEqualTo(42);
                assertThat(a.size()).isEqualTo(1024);
            }
            try (Allocation page = cpu.allocate(10_000, 4096)) {
                assertThat(page.address() % 4096).isZero();
            }
            assertThat(cpu.peakBytesInUse()).isGreaterThanOrEqualTo(10_000);
            assertThat(cpu.reservedBytes()).isPositive();
            cpu.emptyCache();
            assertThat(cpu.reservedBytes()).isZero();
            // At once, but for a region that a view still reaches (buf, while this method runs).
            Returned.assertNothingHeldButForViews(sub, cpu::bytesHeldForViews);
        }
    }
}
