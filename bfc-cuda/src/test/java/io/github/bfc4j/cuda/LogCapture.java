/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/** The messages one java.util.logging logger receives while this is open. */
final class LogCapture implements AutoCloseable {

    private final List<String> messages = new CopyOnWriteArrayList<>();
    private final Logger logger;
    private final boolean parents;
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

    /**
     * @param type the class whose logger (named after it) is captured
     * @param quiet whether the messages stay out of the test's output while this is open
     */
    LogCapture(Class<?> type, boolean quiet) {
        logger = Logger.getLogger(type.getName());
        parents = logger.getUseParentHandlers();
        logger.addHandler(handler);
        if (quiet) {
            logger.setUseParentHandlers(false);
        }
    }

    /** @return the messages so far */
    List<String> messages() {
        return messages;
    }

    @Override
    public void close() {
        logger.removeHandler(handler);
        logger.setUseParentHandlers(parents);
    }
}
