/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.ChildProcess;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The commands that use real host memory, where JavaCPP's native library cannot be loaded: they
 * said {@code internal error: java.lang.IllegalStateException: ...} though nothing is wrong with
 * bfc4j, only with the machine or the class path. In a child JVM told a platform JavaCPP has no
 * natives for ({@code -Dorg.bytedeco.javacpp.platform}), as a machine without them is.
 */
class HostNativesMissingTest {
    private static final String PLATFORM = "linux-nowhere";
    private static final String SAID = "JavaCPP's native library for " + PLATFORM + " could not be loaded (";

    @Test
    void aMissingNativeLibraryIsSaidAsTheEnvironmentNotAsAnInternalError() throws Exception {
        String trace = Cli.TRACES.resolve("tiny-single.bfctrace").toString();
        String[][] commands = {
            {"replay", trace, "--sub", "host"},
            {"whatif", trace, "--sub", "host"},
            {"demo"},
            {"serve", "--port", "0"},
        };
        for (String[] args : commands) {
            List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                    .toString()));
            if (Runtime.version().feature() >= 22) {
                cmd.add("--enable-native-access=ALL-UNNAMED"); // as bfc.jar's manifest does; else the JVM warns
            }
            cmd.addAll(List.of("-cp", System.getProperty("java.class.path"),
                    "-Dorg.bytedeco.javacpp.platform=" + PLATFORM, BfcCommand.class.getName()));
            cmd.addAll(List.of(args));
            // Outputs in files, not pipes read one after the other: a child writing much to its
            // error while its output was read would block, and one that hung would hang the build.
            ChildProcess.Apart r = ChildProcess.runApart(cmd, Duration.ofSeconds(60));
            String out = r.output();
            String err = r.error();
            String name = args[0];
            assertThat(r.status()).as("%s: %s", name, err).isOne();
            assertThat(err.lines().filter(l -> !l.startsWith("WARNING:"))).as(name).singleElement()
                    .satisfies(l -> assertThat(l).startsWith("bfc " + name + ": " + SAID)
                            .contains("so no host memory can be had: add org.bytedeco:javacpp with classifier "
                                    + PLATFORM)
                            .doesNotContain("internal error").doesNotContain("Exception"));
            if (!name.equals("demo")) {
                assertThat(out).as(name).doesNotContain("internal error");
            }
        }
    }
}
