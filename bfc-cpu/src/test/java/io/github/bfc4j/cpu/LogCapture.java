/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cpu;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/** The messages one java.util.logging logger receives while this is open. */
final class LogCapture implements AutoCloseable {

    private final List<String> messages = new CopyOnWriteArrayList<>();
    private final Logger logger;
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord r) {
            messages.add(r.getMessage());
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };

    LogCapture(String loggerName) {
        logger = Logger.getLogger(loggerName);
        logger.addHandler(handler);
    }

    /** @return the messages so far */
    List<String> messages() {
        return messages;
    }

    @Override
    public void close() {
        logger.removeHandler(handler);
    }
}
