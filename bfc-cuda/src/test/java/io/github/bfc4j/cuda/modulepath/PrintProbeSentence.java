/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda.modulepath;

import io.github.bfc4j.cuda.CudaProbe;

/**
 * Prints the probe's sentence, for a child JVM that runs bfc-cuda as a named module: this class
 * stays on the class path, in a package of its own (a class in bfc-cuda's package would be
 * hidden by the module).
 */
public final class PrintProbeSentence {

    private PrintProbeSentence() {
    }

    /**
     * Prints whether {@link CudaProbe} runs in a named module, then its sentence.
     *
     * @param args none
     */
    public static void main(String[] args) {
        System.out.println("named module: " + CudaProbe.class.getModule().isNamed());
        System.out.println(CudaProbe.availability().unavailableReason());
    }
}
