/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import io.github.bfc4j.core.internal.NullElements;
import java.util.List;

/**
 * A name (and optionally a step) for the allocations a thread makes inside a scope: the Java
 * counterpart of TensorFlow's {@code ScopedMemoryDebugAnnotation} (its op name and step id).
 *
 * <pre>{@code
 * try (MemoryAnnotation a = MemoryAnnotation.push("encoder/layer3/attention", step)) {
 *     Allocation activations = allocator.allocate(bytes);
 *     ...
 * }
 * }</pre>
 *
 * <p>Annotations are per thread and nest: the innermost open annotation names the allocation
 * (as upstream, an inner op name replaces the outer one), and an inner annotation pushed
 * without a step keeps the enclosing one's. A thread never sees another thread's annotations,
 * and a new thread starts with none. Closing an annotation restores the one that was open when
 * it was pushed (closing an outer one closes the inner ones still open too); only the thread
 * that pushed it may close it.
 *
 * <p>An allocator stores the annotation with each chunk when
 * {@link BfcAllocator#recordAnnotations(boolean)} is on, and with each event of its history
 * when {@link BfcAllocator#recordHistory(HistoryOptions)} is; otherwise annotations cost it
 * nothing.
 */
public final class MemoryAnnotation implements AutoCloseable {

    private static final ThreadLocal<MemoryAnnotation> CURRENT = new ThreadLocal<>();

    private final String name;
    private final long step;
    private final List<StackFrame> stack;
    private final MemoryAnnotation parent;
    /** The stack given here or, if none, by the innermost enclosing annotation that gives one. */
    private final List<StackFrame> stackInEffect;
    private final Thread owner;
    private boolean closed;

    private MemoryAnnotation(String name, long step, List<StackFrame> stack, MemoryAnnotation parent) {
        this.name = name;
        this.step = step;
        this.stack = stack;
        this.parent = parent;
        this.stackInEffect = stack != null || parent == null ? stack : parent.stackInEffect;
        this.owner = Thread.currentThread();
    }

    /**
     * Opens an annotation without a step of its own (it keeps the enclosing annotation's step,
     * if any).
     *
     * @param name the name, e.g. an op or layer name
     * @return the annotation; close it (try-with-resources) when the scope ends
     * @throws IllegalArgumentException if {@code name} is null, empty or blank
     */
    public static MemoryAnnotation push(String name) {
        MemoryAnnotation parent = CURRENT.get();
        return push(name, parent == null ? -1 : parent.step, null, parent);
    }

    /**
     * Opens an annotation with a step (e.g. the training step).
     *
     * @param name the name, e.g. an op or layer name
     * @param step the step, {@code >= 0}
     * @return the annotation; close it (try-with-resources) when the scope ends
     * @throws IllegalArgumentException if {@code name} is null, empty or blank, or {@code step}
     *     is negative
     */
    public static MemoryAnnotation push(String name, long step) {
        return push(name, step, null);
    }

    /**
     * Opens an annotation that also gives the stack to record for the allocations made inside
     * it, in place of the Java stack: for allocations made on behalf of another runtime (a
     * Python or C++ caller, a replayed trace) whose own stack says more than the Java one.
     *
     * @param name the name, e.g. an op or layer name; {@code null} for none of its own (the
     *     enclosing annotation's name is kept) when a stack is given
     * @param step the step, {@code >= 0}, or -1 for none of its own (the enclosing
     *     annotation's step is kept)
     * @param stack the stack, innermost frame first; {@code null} or empty to record the Java
     *     stack as usual
     * @return the annotation; close it (try-with-resources) when the scope ends
     * @throws IllegalArgumentException if {@code name} is empty or blank, or null without a stack,
     *     {@code step} is below -1, or a frame of {@code stack} is null ({@code stack[i]=null})
     */
    public static MemoryAnnotation push(String name, long step, List<StackFrame> stack) {
        if (step < -1) {
            throw new IllegalArgumentException("step=" + step + " (expected: >= 0, or -1 for none)");
        }
        List<StackFrame> st = stack == null || stack.isEmpty() ? null : NullElements.copyOf(stack, "stack",
                "a StackFrame, innermost first; null or an empty list for no stack", IllegalArgumentException::new);
        MemoryAnnotation parent = CURRENT.get();
        long s = step >= 0 || parent == null ? step : parent.step;
        String n = name == null && st != null && parent != null ? parent.name : name;
        if (name == null && st != null) {
            MemoryAnnotation a = new MemoryAnnotation(n, s, st, parent);
            CURRENT.set(a);
            return a;
        }
        return push(name, s, st, parent);
    }

    private static MemoryAnnotation push(String name, long step, List<StackFrame> stack, MemoryAnnotation parent) {
        // A blank name names no one: as the allocator's own name, it is refused, so that every
        // annotation recorded (holders, histories, traces, JFR events) says something.
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException("name=" + (name == null ? "null" : "'" + name + "'")
                    + " (expected: a name that is not blank, such as \"encoder/layer3/attention\")");
        }
        MemoryAnnotation a = new MemoryAnnotation(name, step, stack, parent);
        CURRENT.set(a);
        return a;
    }

    /**
     * The innermost annotation open on the calling thread.
     *
     * @return the annotation, or {@code null} if none is open
     */
    public static MemoryAnnotation current() {
        return CURRENT.get();
    }

    /**
     * The name: this annotation's own, else (for an annotation that only gives a stack) the
     * enclosing one's.
     *
     * @return the name, or {@code null} for a stack-only annotation outside any named one
     */
    public String name() {
        return name;
    }

    /**
     * The step: this annotation's own, else the enclosing one's.
     *
     * @return the step, or -1 if none
     */
    public long step() {
        return step;
    }

    /**
     * The stack given to {@link #push(String, long, List)}.
     *
     * @return the frames, innermost first, or {@code null} if none was given (the Java stack is
     *     recorded)
     */
    public List<StackFrame> stack() {
        return stack;
    }

    /** The stack recorded for allocations inside: this one's, else the nearest enclosing one's, or null. */
    List<StackFrame> stackInEffect() {
        return stackInEffect;
    }

    /**
     * The annotation that was open when this one was pushed.
     *
     * @return the enclosing annotation, or {@code null}
     */
    public MemoryAnnotation parent() {
        return parent;
    }

    /**
     * Whether this annotation was closed (by itself or by closing an enclosing one).
     *
     * @return true once closed
     */
    public boolean isClosed() {
        if (closed) {
            return true;
        }
        // Closed by closing an enclosing annotation: no longer on the thread's chain.
        if (Thread.currentThread() == owner) {
            for (MemoryAnnotation a = CURRENT.get(); a != null; a = a.parent) {
                if (a == this) {
                    return false;
                }
            }
            return true;
        }
        return false;
    }

    /**
     * Closes the annotation: the thread's current annotation becomes the one that was open when
     * this one was pushed (inner annotations still open are closed with it). Closing twice does
     * nothing.
     *
     * @throws IllegalStateException if called on another thread than the one that pushed it
     */
    @Override
    public void close() {
        if (Thread.currentThread() != owner) {
            throw new IllegalStateException("annotation '" + name + "' was pushed on thread '" + owner.getName()
                    + "' and cannot be closed on thread '" + Thread.currentThread().getName()
                    + "' (annotations are per thread: close each one where it was pushed)");
        }
        if (closed) {
            return;
        }
        closed = true;
        MemoryAnnotation cur = CURRENT.get();
        for (MemoryAnnotation a = cur; a != null; a = a.parent) {
            if (a == this) {
                for (MemoryAnnotation inner = cur; inner != this; inner = inner.parent) {
                    inner.closed = true;
                }
                if (parent == null) {
                    CURRENT.remove();
                } else {
                    CURRENT.set(parent);
                }
                return;
            }
        }
        // Already taken off the chain by closing an enclosing annotation: nothing to restore.
    }

    @Override
    public String toString() {
        return "MemoryAnnotation[" + name + (step >= 0 ? ", step " + step : "") + (closed ? ", closed" : "") + "]";
    }
}
