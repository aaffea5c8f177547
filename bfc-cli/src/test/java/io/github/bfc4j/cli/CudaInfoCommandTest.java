/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.cuda.CudaAvailability;
import io.github.bfc4j.cuda.CudaDeviceInfo;
import io.github.bfc4j.cuda.CudaProbe;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class CudaInfoCommandTest {

    private static String print(CudaAvailability a) {
        StringWriter s = new StringWriter();
        try (PrintWriter w = new PrintWriter(s)) {
            CudaInfoCommand.print(a, w);
        }
        return s.toString();
    }

    @Test
    void printsWhatTheProbeFoundHereAndExitsZero() {
        CommandLine cmd = BfcCommand.commandLine();
        StringWriter o = new StringWriter();
        StringWriter e = new StringWriter();
        cmd.setOut(new PrintWriter(o));
        cmd.setErr(new PrintWriter(e));
        assertThat(cmd.execute("cuda-info")).isZero();
        assertThat(e.toString()).isEmpty();
        CudaAvailability a = CudaProbe.availability();
        assertThat(o.toString()).isEqualTo(print(a));
        assertThat(o.toString()).startsWith("JavaCPP CUDA presets: 12.9-9.10-1.5.12" + System.lineSeparator());
        if (!a.isUsable()) {
            // Without a GPU (CI): exactly one more line, the probe's sentence.
            assertThat(o.toString().lines().toList()).last().isEqualTo(a.unavailableReason());
            assertThat(a.unavailableReason()).startsWith("No usable CUDA GPU: ");
        }
    }

    @Test
    void listsEachDevice() {
        CudaAvailability a = new CudaAvailability("12.9-9.10-1.5.12", 12040, List.of(
                new CudaDeviceInfo(0, "NVIDIA H100 80GB HBM3", 85_031_714_816L, 9, 0, true),
                new CudaDeviceInfo(1, "Tesla K80", 12L << 30, 3, 7, false)), null);
        assertThat(print(a).lines().toList()).containsExactly(
                "JavaCPP CUDA presets: 12.9-9.10-1.5.12",
                "CUDA driver: CUDA 12.4 (12040)",
                "GPU 0: NVIDIA H100 80GB HBM3, 79.19GiB, compute capability 9.0, virtual memory management: yes",
                "GPU 1: Tesla K80, 12.00GiB, compute capability 3.7, virtual memory management: no");
    }

    @Test
    void missingPresetsAndMissingDevicesAreOneSentence() {
        CudaAvailability none = new CudaAvailability(null, 0, List.of(), "No usable CUDA GPU: JavaCPP's CUDA"
                + " presets (org.bytedeco:cuda) are not on the class path; add them as docs/cuda.md says.");
        assertThat(print(none).lines().toList()).containsExactly(
                "JavaCPP CUDA presets: not on the class path",
                none.unavailableReason());
        CudaAvailability noDevice = new CudaAvailability("v", 12040, List.of(),
                "No usable CUDA GPU: the CUDA driver (CUDA 12.4) reports no device; check nvidia-smi and"
                        + " CUDA_VISIBLE_DEVICES.");
        assertThat(print(noDevice).lines().toList()).containsExactly(
                "JavaCPP CUDA presets: v", "CUDA driver: CUDA 12.4 (12040)", noDevice.unavailableReason());
    }
}
