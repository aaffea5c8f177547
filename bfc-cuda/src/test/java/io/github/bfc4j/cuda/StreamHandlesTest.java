/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

/** A number that cannot be a stream is refused before the driver reads it. */
class StreamHandlesTest {

    @Test
    void theSpecialStreamsAndReadableMemoryPass() {
        for (long stream : new long[] {0, 1, 2, SimulatedCudaDriver.STREAM}) {
            assertThatCode(() -> StreamHandles.check(stream)).as("0x%x", stream).doesNotThrowAnyException();
        }
    }

    @Test
    @EnabledOnOs(value = OS.LINUX, disabledReason = "the kernel is asked through /proc/self/mem, which only Linux has")
    void aNumberWhereNothingIsMappedIsRefused() {
        // The first page, a low number no process maps, beyond user space, negative.
        for (long stream : new long[] {3, 77, 0x3039, 1L << 47, -1, 0x3039}) { // refused again: never remembered
            assertThatThrownBy(() -> StreamHandles.check(stream)).as("0x%x", stream)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("stream=0x" + Long.toHexString(stream) + " is not a CUDA stream")
                    .hasMessageContaining("cuStreamCreate");
        }
    }
}
