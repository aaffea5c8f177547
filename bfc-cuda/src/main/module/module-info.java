/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */

/**
 * GPU memory for the BFC allocator through JavaCPP's CUDA presets: device, pinned host and
 * virtual-memory sub-allocators, {@code GpuBfcAllocators}, and the probe that says why CUDA
 * cannot be used when it cannot.
 */
module io.github.bfc4j.cuda {
    requires transitive io.github.bfc4j.core;
    requires org.bytedeco.cuda;

    exports io.github.bfc4j.cuda;
}
