/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.onnxruntime;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.NullSweep;
import org.junit.jupiter.api.Test;

/**
 * The public API of bfc-onnxruntime that takes a list, iterable or array of objects, where a caller could
 * pass a null element: the sweep does not call this module's API (its receivers need a device or
 * a runtime), so each such parameter would be listed here and refused by name and index in a
 * test of its own: there is none today, and a new one fails this test until it is checked.
 */
class PublicApiNullElementsTest {

    @Test
    void everyParameterThatHoldsElementsIsListedWithItsTest() {
        assertThat(NullSweep.publicClassesOf(BfcOrtAllocator.class)).contains(BfcOrtAllocator.class,
                BfcCudaProvider.class);
        assertThat(NullSweep.elementParameters(NullSweep.publicClassesOf(BfcOrtAllocator.class))).isEmpty();
    }
}
