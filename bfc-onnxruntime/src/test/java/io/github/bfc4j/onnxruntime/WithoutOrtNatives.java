/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.onnxruntime;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.ChildProcess;
import java.io.File;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

/**
 * Runs a main class in a child JVM whose class path is this one's without ONNX Runtime's natives
 * jar ({@code onnxruntime-*-linux-x86_64[-gpu].jar}): as on a platform that ORT has no natives for;
 * or without the natives jar of presets that ORT's load too.
 */
final class WithoutOrtNatives {

    /** The sentence JavaCPP's failure to find ORT's JNI library becomes. */
    static final String SENTENCE = "ONNX Runtime's JNI library could not be loaded (Could not find jnionnxruntime in"
            + " class, module, and library paths): add org.bytedeco:onnxruntime with this platform's classifier"
            + " (linux-x86_64-gpu for the CUDAExecutionProvider, with"
            + " -Dorg.bytedeco.javacpp.platform.extension=-gpu), see docs/integrations.md.";

    private WithoutOrtNatives() {
    }

    /**
     * Runs {@code main} with {@code args} there and waits for it.
     *
     * @return what it printed (stdout and stderr), also printed here
     */
    static String run(Class<?> main, String... args) throws Exception {
        return runWithout("onnxruntime", main, args);
    }

    /**
     * Runs {@code main} with {@code args} in a child JVM without the natives jar of the presets
     * {@code artifact} ({@code onnxruntime}, or {@code opencl} and {@code dnnl}, which ORT's
     * presets load too) and waits for it.
     *
     * @return what it printed (stdout and stderr), also printed here
     */
    static String runWithout(String artifact, Class<?> main, String... args) throws Exception {
        String[] entries = System.getProperty("java.class.path").split(File.pathSeparator);
        String cp = Arrays.stream(entries)
                .filter(e -> !Path.of(e).getFileName().toString().matches(artifact + "-.*-linux-x86_64(-gpu)?\\.jar"))
                .collect(Collectors.joining(File.pathSeparator));
        assertThat(cp.split(File.pathSeparator)).as(artifact + "'s natives jar to leave out")
                .hasSizeLessThan(entries.length);
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString()));
        if (Runtime.version().feature() >= 22) {
            command.add("--enable-native-access=ALL-UNNAMED"); // as README says; else the JVM warns
        }
        command.addAll(List.of("-cp", cp, main.getName()));
        command.addAll(List.of(args));
        ChildProcess.Result child = ChildProcess.run(command, Duration.ofSeconds(60));
        String out = child.output();
        System.out.println(out);
        return out;
    }
}
