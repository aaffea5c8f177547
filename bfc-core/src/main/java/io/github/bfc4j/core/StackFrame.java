/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.util.Objects;

/**
 * One frame of the stack that made an allocation: a Java frame captured by
 * {@link BfcAllocator#recordHistory(HistoryOptions)}, or a frame of another runtime (a
 * TensorFlow C++ stack imported from its log, a Python stack) given with
 * {@link MemoryAnnotation#push(String, long, java.util.List)}.
 *
 * @param className the declaring class (empty for a frame that has none, e.g. a C++ function)
 * @param methodName the method or function; for a C++ frame, the whole symbol
 * @param fileName the source file, or {@code null} if unknown
 * @param lineNumber the line, or a negative number if unknown (Java: -1; -2 for native code)
 */
public record StackFrame(String className, String methodName, String fileName, int lineNumber) {

    /**
     * Checks the names.
     *
     * @throws NullPointerException if {@code className} or {@code methodName} is null
     */
    public StackFrame {
        Objects.requireNonNull(className, "className=null (expected: the frame's class or module name, \"\" if none)");
        Objects.requireNonNull(methodName, "methodName=null (expected: the frame's function name, \"\" if none)");
    }

    /**
     * A frame from {@link StackWalker}.
     *
     * @param f the walker's frame
     * @return the same class, method, file and line
     * @throws NullPointerException if {@code f} is null
     */
    public static StackFrame of(StackWalker.StackFrame f) {
        Objects.requireNonNull(f, "f=null (expected: a frame of StackWalker)");
        // One StackTraceElement, read four times: asking the walker's frame for file and line
        // separately took more than twice as long per stack (measured on JDK 17, 25 frames deep).
        return of(f.toStackTraceElement());
    }

    /**
     * A frame from a {@link StackTraceElement}.
     *
     * @param e the element
     * @return the same class, method, file and line
     * @throws NullPointerException if {@code e} is null
     */
    public static StackFrame of(StackTraceElement e) {
        Objects.requireNonNull(e, "e=null (expected: an element of a stack trace)");
        return new StackFrame(e.getClassName(), e.getMethodName(), e.getFileName(), e.getLineNumber());
    }

    /**
     * The function's full name.
     *
     * @return {@code className.methodName}, or the method name alone when there is no class
     */
    public String function() {
        return className.isEmpty() ? methodName : className + "." + methodName;
    }

    /**
     * The frame as a Java stack trace prints it.
     *
     * @return e.g. {@code com.example.Model.forward(Model.java:42)}; {@code (Unknown Source)}
     *     for a Java frame without a file; a frame without class, file or line (a C++ symbol) is
     *     its function alone
     */
    @Override
    public String toString() {
        if (className.isEmpty() && fileName == null && lineNumber < 0) {
            return methodName;
        }
        String where = fileName == null ? "Unknown Source"
                : lineNumber >= 0 ? fileName + ":" + lineNumber : fileName;
        return function() + "(" + where + ")";
    }
}
