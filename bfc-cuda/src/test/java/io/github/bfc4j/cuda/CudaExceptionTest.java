/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The message of a failed CUDA call, and which errors leave the process's CUDA state broken. */
class CudaExceptionTest {

    @Test
    void aKernelsFailureSaysThatOnlyANewProcessCanUseTheGpu() {
        for (int code : new int[] {700, 710, 719}) {
            CudaException e = new CudaException(code, "NAME", "cuEventQuery(hEvent=0x1)");
            assertThat(e.isSticky()).as("%d", code).isTrue();
            assertThat(e).hasMessage("cuEventQuery(hEvent=0x1) failed: NAME (" + code + "); a kernel failed on the"
                    + " device, and CUDA fails every later call of this process with the same error: the GPU can be"
                    + " used again only from a new process");
        }
    }

    @Test
    void otherErrorsSayTheCallAndTheCodeOnly() {
        for (int code : new int[] {1, 2, 201, 999}) {
            CudaException e = new CudaException(code, "NAME", "cuMemAlloc(bytesize=1)");
            assertThat(e.isSticky()).as("%d", code).isFalse();
            assertThat(e).hasMessage("cuMemAlloc(bytesize=1) failed: NAME (" + code + ")");
        }
        assertThat(new CudaException(2, "CUDA_ERROR_OUT_OF_MEMORY", "cuMemAlloc(bytesize=1)").isOutOfMemory()).isTrue();
    }
}
