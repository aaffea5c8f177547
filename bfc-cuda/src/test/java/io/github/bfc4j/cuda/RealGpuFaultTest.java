/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import static io.github.bfc4j.cuda.RealGpuTest.requireGpu;
import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.ChildProcess;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A kernel that fails behind a stream-ordered free on the real device 0, each in a process of
 * its own ({@link FaultingKernelRun}) since the failure breaks its process's CUDA state (run
 * with {@code mvn -Pgpu verify}; skipped, with the probe's sentence, where no usable GPU is).
 * The event poller warns once, not at every interval; close() reports the failure and still
 * releases everything it holds (the device's primary context is inactive after it); a new
 * allocator's failure says that only a new process can use the GPU again.
 */
@Tag("gpu")
class RealGpuFaultTest {

    private static Map<String, String> run(String kind) throws Exception {
        String output = ChildProcess.run(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-ea", "-cp", System.getProperty("java.class.path"), FaultingKernelRun.class.getName(), kind),
                Duration.ofSeconds(60)).output();
        System.out.println("FaultingKernelRun " + kind + ":\n" + output);
        Map<String, String> out = new LinkedHashMap<>();
        output.lines().filter(l -> l.matches("[a-z]+=.*")).forEach(l -> out.put(l.substring(0, l.indexOf('=')),
                l.substring(l.indexOf('=') + 1)));
        assertThat(out).as(output).containsEntry("load", "0").containsEntry("function", "0")
                .containsEntry("launch", "0").containsEntry("warnings", "1").containsEntry("active", "0");
        return out;
    }

    @Test
    void afterAFailedAssertTheMessageSaysANewProcessIsNeeded() throws Exception {
        requireGpu();
        Map<String, String> out = run("assert");
        assertThat(out.get("close")).contains("CUDA_ERROR_ASSERT (710); a kernel failed on the device");
        assertThat(out.get("again")).contains("CUDA_ERROR_ASSERT (710)")
                .contains("the GPU can be used again only from a new process");
    }

    @Test
    void afterAStoreToAddressZeroTheMessageSaysANewProcessIsNeeded() throws Exception {
        requireGpu();
        Map<String, String> out = run("store");
        assertThat(out.get("close")).contains("CUDA_ERROR_ILLEGAL_ADDRESS (700); a kernel failed on the device");
        assertThat(out.get("again")).contains("CUDA_ERROR_ILLEGAL_ADDRESS (700)")
                .contains("the GPU can be used again only from a new process");
    }
}
