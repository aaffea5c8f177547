/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.tensorflow;

/** Seeds for randomised tests: {@code -Dbfc4j.test.seed}, else the clock; always printed. */
final class Seeds {

    private Seeds() {
    }

    static long seed(String test) {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println(test + " seed=" + seed + " (-Dbfc4j.test.seed)");
        return seed;
    }
}
