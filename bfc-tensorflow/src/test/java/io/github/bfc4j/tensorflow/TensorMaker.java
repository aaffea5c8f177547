/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.tensorflow;

import java.util.ArrayList;
import java.util.List;
import org.tensorflow.ndarray.Shape;
import org.tensorflow.types.TFloat32;

/**
 * An application's call that makes tensors, for tests of what the history records as its stack:
 * bfc4j leaves its own frames (and those of its classes named {@code Bfc...}, such as
 * {@code BfcTensorsTest}) out of the top of a recorded stack, so the call is made from here.
 */
final class TensorMaker {

    private TensorMaker() {
    }

    /** Makes {@code count} uninitialized tensors of {@code shape}. */
    static List<TFloat32> make(BfcTensors tensors, Shape shape, int count) {
        List<TFloat32> made = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            made.add(tensors.tensorOf(TFloat32.class, shape));
        }
        return made;
    }
}
