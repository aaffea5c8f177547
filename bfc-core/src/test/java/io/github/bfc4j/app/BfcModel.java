/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.app;

import io.github.bfc4j.core.BfcAllocator;

/**
 * An application's class whose name starts with {@code Bfc}, in a package under
 * {@code io.github.bfc4j}: its frames are the application's, and recorded stacks keep them.
 */
final class BfcModel {

    private BfcModel() {
    }

    static long loadWeights(BfcAllocator a, long bytes) {
        return a.allocateRaw(64, bytes);
    }
}
