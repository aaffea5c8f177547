/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.cuda.CudaAvailability;
import io.github.bfc4j.cuda.CudaDeviceInfo;
import io.github.bfc4j.cuda.CudaProbe;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code bfc cuda-info}: prints what {@link CudaProbe#availability()} found:
 * <pre>
 * JavaCPP CUDA presets: 12.9-9.10-1.5.12
 * CUDA driver: CUDA 12.4 (12040)
 * GPU 0: NVIDIA H100 80GB HBM3, 79.1GiB, compute capability 9.0, virtual memory management: yes
 * </pre>
 * or, without a usable GPU, the presets line and the probe's one sentence saying what is missing.
 * Exit status 0 either way (2 for bad options).
 */
@Command(
        name = "cuda-info",
        mixinStandardHelpOptions = true,
        description = {
            "Says whether bfc4j can use a CUDA GPU here: the JavaCPP CUDA presets version, the driver,"
                    + " and each device (name, memory, compute capability, virtual memory management);"
                    + " without a usable GPU, one sentence saying what is missing.",
            "Exit status: 0 whether or not a GPU can be used, 2 bad options."
        })
public final class CudaInfoCommand implements Callable<Integer> {

    @Spec
    private CommandSpec spec;

    /** Creates the command; picocli fills its fields. */
    public CudaInfoCommand() {
    }

    /**
     * Probes and prints.
     *
     * @return 0
     */
    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        print(CudaProbe.availability(), out);
        out.flush();
        return 0;
    }

    /** Prints the findings, one fact per line. */
    static void print(CudaAvailability a, PrintWriter out) {
        out.println("JavaCPP CUDA presets: "
                + (a.presetsVersion() == null ? "not on the class path" : a.presetsVersion()));
        if (a.driverVersion() > 0) {
            out.println("CUDA driver: CUDA " + a.driverVersion() / 1000 + "." + (a.driverVersion() % 1000) / 10
                    + " (" + a.driverVersion() + ")");
        }
        if (!a.isUsable()) {
            out.println(a.unavailableReason());
            return;
        }
        for (CudaDeviceInfo d : a.devices()) {
            out.println("GPU " + d.ordinal() + ": " + d.name() + ", "
                    + BfcAllocator.humanReadableNumBytes(d.totalMemoryBytes()) + ", compute capability "
                    + d.computeCapabilityMajor() + "." + d.computeCapabilityMinor()
                    + ", virtual memory management: " + (d.virtualMemoryManagement() ? "yes" : "no"));
        }
    }
}
