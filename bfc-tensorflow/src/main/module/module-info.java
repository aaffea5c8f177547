/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */

/** TensorFlow Java tensors whose buffers come from a BFC allocator. */
module io.github.bfc4j.tensorflow {
    requires transitive io.github.bfc4j.core;
    requires io.github.bfc4j.cpu;
    requires transitive tensorflow;

    exports io.github.bfc4j.tensorflow;
}
