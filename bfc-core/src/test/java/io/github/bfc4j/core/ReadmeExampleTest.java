package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.sim.SimSubAllocator;
import org.junit.jupiter.api.Test;

/** The README's usage example, so that what it claims stays true. */
class ReadmeExampleTest {

    @Test
    void usageExampleBehavesAsTheReadmeSays() {
        SubAllocator device = new SimSubAllocator(0x7f0000000000L, 32L << 30, 0, true);
        BfcOptions opts = BfcOptions.builder()
                .allowGrowth(true)
                .garbageCollection(true)
                .allowRetryOnFailure(false)
                .build();
        try (BfcAllocator gpu = new BfcAllocator(device, 16L << 30, "gpu_0_bfc", opts)) {
            long p = gpu.allocateRaw(256, 3_000_000);
            assertThat(p).isEqualTo(0x7f0000000000L);
            assertThat(gpu.allocatedSize(p)).isEqualTo(4194304);
            assertThat(gpu.getStats().poolBytes()).isEqualTo(4L << 20);
            gpu.deallocateRaw(p);
            assertThat(gpu.getStats().bytesInUse()).isZero();
        }
    }
}
