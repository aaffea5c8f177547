/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

/**
 * Collects the failures of a clean-up that attempts every step: the first failure is the one
 * thrown, the later ones are added to it as suppressed.
 */
final class Failures {

    private Failures() {
    }

    /**
     * Adds a failure to those collected so far.
     *
     * @param first the first failure so far, or null if none
     * @param next the failure of the step just attempted
     * @return the first failure, with {@code next} suppressed by it, or {@code next} if it is the
     *     first
     */
    static RuntimeException add(RuntimeException first, RuntimeException next) {
        if (first == null) {
            return next;
        }
        if (next != first) {
            first.addSuppressed(next);
        }
        return first;
    }

    /**
     * Runs one step of a clean-up, collecting its failure.
     *
     * @param first the first failure so far, or null if none
     * @param step the step
     * @return the first failure after the step, or null if none
     */
    static RuntimeException attempt(RuntimeException first, Runnable step) {
        try {
            step.run();
            return first;
        } catch (RuntimeException e) {
            return add(first, e);
        }
    }

    /**
     * Ends a clean-up.
     *
     * @param first the first failure, or null if none
     * @throws RuntimeException {@code first}, if not null
     */
    static void throwIfAny(RuntimeException first) {
        if (first != null) {
            throw first;
        }
    }
}
