/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class MemoryTypeTest {

    @Test
    void onlyPageableAndPinnedHostMemoryIsHost() {
        assertThat(MemoryType.HOST_PAGEABLE.isHost()).isTrue();
        assertThat(MemoryType.HOST_PINNED.isHost()).isTrue();
        assertThat(MemoryType.DEVICE.isHost()).isFalse();
        assertThat(MemoryType.UNKNOWN.isHost()).as("also the simulated address space").isFalse();
    }
}
