/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** Named pipes for tests: a trace that can be read only once, as from {@code mkfifo}. */
final class Fifo {
    private Fifo() {
    }

    /** Makes a named pipe with {@code mkfifo}; skips the test where there is none. */
    static Path create(Path dir, String name) throws IOException, InterruptedException {
        Path fifo = dir.resolve(name);
        Process p;
        try {
            p = new ProcessBuilder("mkfifo", fifo.toString()).redirectErrorStream(true).start();
        } catch (IOException e) {
            assumeTrue(false, "no mkfifo here: " + e.getMessage());
            throw e;
        }
        assumeTrue(p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0, "mkfifo failed");
        assumeTrue(Files.exists(fifo) && !Files.isRegularFile(fifo), "mkfifo made no pipe");
        return fifo;
    }

    /**
     * Starts a thread writing {@code bytes} into the pipe once (it starts when a reader opens
     * the pipe); join it when the reader is done.
     */
    static Thread write(Path fifo, byte[] bytes) {
        Thread t = new Thread(() -> {
            try (OutputStream out = Files.newOutputStream(fifo)) {
                out.write(bytes);
            } catch (IOException e) {
                // the reader went away; its assertions say why
            }
        }, "fifo-writer");
        t.setDaemon(true);
        t.start();
        return t;
    }
}
