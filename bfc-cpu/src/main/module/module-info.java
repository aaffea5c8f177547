/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */

/** Aligned off-heap host memory for the BFC allocator, through JavaCPP. */
module io.github.bfc4j.cpu {
    requires transitive io.github.bfc4j.core;

    exports io.github.bfc4j.cpu;
}
