/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

/**
 * The lines the allocator logs ({@link BfcPort#LOGGER_NAME}, through {@code System.Logger}'s
 * default backend, java.util.logging) while a call runs, formatted as a log would show them
 * (parameters filled in), at every level.
 */
final class LogCapture {

    private LogCapture() {
    }

    /** A call that may throw. */
    @FunctionalInterface
    interface Call {
        void run() throws Exception;
    }

    /**
     * @param call what to run
     * @return the messages logged while it ran, in order
     */
    static List<String> during(Call call) throws Exception {
        List<String> lines = Collections.synchronizedList(new ArrayList<>());
        SimpleFormatter format = new SimpleFormatter();
        Handler h = new Handler() {
            @Override
            public void publish(LogRecord r) {
                lines.add(format.formatMessage(r));
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        h.setLevel(Level.ALL);
        Logger log = Logger.getLogger(BfcPort.LOGGER_NAME);
        Level was = log.getLevel();
        log.setLevel(Level.ALL);
        log.addHandler(h);
        try {
            call.run();
        } finally {
            log.removeHandler(h);
            log.setLevel(was);
        }
        return new ArrayList<>(lines);
    }
}
