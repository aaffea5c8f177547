/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.ChildProcess;
import java.io.File;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import org.bytedeco.javacpp.Loader;
import org.junit.jupiter.api.Test;

/**
 * Without JavaCPP's natives jar for this platform, constructing the sub-allocator says what to
 * add; it used to construct, and then every allocation failed with JavaCPP's bare
 * {@code UnsatisfiedLinkError: 'Pointer Pointer.malloc(long)'}, naming nothing to do.
 */
class NativesMissingTest {

    /** Run in a child JVM whose class path lacks the natives jar: prints what construction gives. */
    public static void main(String[] args) {
        try {
            new AlignedHostSubAllocator();
            System.out.println("constructed");
        } catch (RuntimeException e) {
            System.out.println(e.getClass().getName() + ": " + e.getMessage());
        }
    }

    @Test
    void withoutTheNativesJarConstructionNamesTheJarToAdd() throws IOException, InterruptedException {
        String platform = Loader.getPlatform();
        String natives = "-" + platform + ".jar";
        List<String> entries = Arrays.asList(System.getProperty("java.class.path").split(File.pathSeparator));
        List<String> kept = entries.stream()
                .filter(e -> !(Path.of(e).getFileName().toString().startsWith("javacpp-") && e.endsWith(natives)))
                .collect(Collectors.toList());
        assertThat(kept).as("the natives jar was on the class path").hasSizeLessThan(entries.size());
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString()));
        if (Runtime.version().feature() >= 22) {
            command.add("--enable-native-access=ALL-UNNAMED"); // as README says; else the JVM warns
        }
        command.addAll(List.of("-cp", String.join(File.pathSeparator, kept), NativesMissingTest.class.getName()));
        ChildProcess.Result child = ChildProcess.run(command, Duration.ofSeconds(60));
        String out = child.output().strip();
        assertThat(out).startsWith("java.lang.IllegalStateException: JavaCPP's native library for " + platform
                + " could not be loaded (")
                .endsWith("so no host memory can be had: add org.bytedeco:javacpp with classifier " + platform
                        + " to the class path (bfc-cpu's dependency org.bytedeco:javacpp-platform brings it)");
    }
}
