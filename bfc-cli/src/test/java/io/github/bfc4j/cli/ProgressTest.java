/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class ProgressTest {

    @Test
    void withoutATerminalNothingIsDrawnAndTheStreamIsUntouched() {
        // Tests run without a console, as pipes and files do.
        assertThat(System.console()).isNull();
        InputStream in = new ByteArrayInputStream(new byte[10]);
        assertThat(Progress.start("replay", 10).track(in)).isSameAs(in);
    }

    @Test
    void onATerminalTheBarFollowsTheBytesReadAndIsErasedAtTheEnd() throws IOException {
        ByteArrayOutputStream screen = new ByteArrayOutputStream();
        Progress p = new Progress(new PrintStream(screen, true, StandardCharsets.UTF_8), "replay t", 200);
        try (InputStream in = p.track(new ByteArrayInputStream(new byte[200]))) {
            assertThat(in.read(new byte[100])).isEqualTo(100);
            String first = screen.toString(StandardCharsets.UTF_8);
            assertThat(first).isEqualTo("\r[###############...............] 50% replay t");
            in.readAllBytes();
        }
        p.finish();
        String all = screen.toString(StandardCharsets.UTF_8);
        assertThat(all).endsWith("\r" + " ".repeat(30 + 8 + "replay t".length()) + "\r");
    }
}
