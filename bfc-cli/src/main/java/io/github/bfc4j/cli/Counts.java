/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

/** A count and its noun as the commands print them: {@code 1 call}, {@code 0 calls}, {@code 2 calls}. */
final class Counts {

    private Counts() {
    }

    /**
     * The count, a space and the noun, with an {@code s} unless the count is one.
     *
     * @param n the count
     * @param noun the noun in the singular, with a regular plural ({@code call}, {@code timeline step})
     * @return e.g. {@code 1 call}, {@code 5226 calls}
     */
    static String of(long n, String noun) {
        return n + " " + noun + (n == 1 ? "" : "s");
    }
}
