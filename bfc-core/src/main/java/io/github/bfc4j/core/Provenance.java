/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import io.github.bfc4j.core.internal.NullElements;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Locale;

/**
 * Who made an allocation (or another event of the history), and when: the thread, the
 * {@link MemoryAnnotation} open on it, and the stack. What is known depends on what was
 * recorded: with {@link BfcAllocator#recordAnnotations(boolean)} alone only the annotation and
 * its step; with {@link BfcAllocator#recordHistory(HistoryOptions)} also the time, the thread
 * and (when stacks are on and the allocation was sampled) the stack.
 *
 * @param timeMicros when, in microseconds since the epoch (a monotonic clock anchored to the
 *     wall clock once per process, the same for every allocator's recording, so that their
 *     times compare; in a replayed trace that gives times, the latest time it gave at or
 *     before the call), or -1 if not recorded
 * @param thread the name of the thread, or {@code null} if not recorded
 * @param annotation the name of the innermost {@link MemoryAnnotation} open on the thread, or
 *     {@code null} if none; an empty or blank name (which {@link MemoryAnnotation} refuses, and
 *     a trace may give) is none, {@code null}
 * @param step the annotation's step, or -1 if none
 * @param stack the stack, innermost frame first, bfc4j's own frames left out; empty if not
 *     recorded
 */
public record Provenance(long timeMicros, String thread, String annotation, long step, List<StackFrame> stack) {

    /** Nothing known. */
    public static final Provenance UNKNOWN = new Provenance(-1, null, null, -1, List.of());

    /** What {@link #holder()} answers when nothing names a holder. */
    static final String UNKNOWN_HOLDER = "(unknown)";

    /**
     * Copies the stack (a {@code null} stack becomes empty); an empty or blank annotation becomes
     * {@code null}: it names no one, so it neither makes the provenance known nor a holder.
     *
     * @throws NullPointerException if a frame of {@code stack} is null
     */
    public Provenance {
        annotation = annotation == null || annotation.isBlank() ? null : annotation;
        stack = stack == null ? List.of() : NullElements.copyOf(stack, "stack", "a StackFrame, innermost first");
    }

    /**
     * Whether anything is known.
     *
     * @return false for {@link #UNKNOWN} and its equals
     */
    public boolean isKnown() {
        return timeMicros >= 0 || thread != null || annotation != null || step >= 0 || !stack.isEmpty();
    }

    /**
     * How an annotation's step follows its name wherever bfc4j names it (holders, PyTorch's
     * {@code user_metadata}, JFR events, leak reports): {@code " (step n)"}, or {@code ""} for
     * an annotation without a step (-1).
     */
    static String stepSuffix(long step) {
        return step >= 0 ? " (step " + step + ")" : "";
    }

    /**
     * How an annotation is named wherever bfc4j names it as a label (holders, PyTorch's
     * {@code user_metadata}, JFR events): its name with its step ({@link #stepSuffix}), or, for
     * an annotation that gave a step without a name ({@code MemoryAnnotation.push(null, 5, stack)}
     * outside any named one), {@code "step 5"}.
     *
     * @return the label, or null when there is neither a name nor a step
     */
    static String annotationLabel(String annotation, long step) {
        if (annotation != null) {
            return annotation + stepSuffix(step);
        }
        return step >= 0 ? "step " + step : null;
    }

    /**
     * How a recorded time is written wherever bfc4j writes one in a sentence (the summary's and
     * the out-of-memory message's "since", a leak report's "at"): UTC to the millisecond, e.g.
     * {@code 2026-11-27 05:41:32.123 UTC}.
     *
     * @param timeMicros microseconds since the epoch, as {@link #timeMicros()} gives
     */
    static String timeText(long timeMicros) {
        return TIME.format(Instant.EPOCH.plus(timeMicros, ChronoUnit.MICROS));
    }

    private static final DateTimeFormatter TIME =
            DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS 'UTC'", Locale.ROOT).withZone(ZoneOffset.UTC);

    /** Where JavaCPP's bindings live (ONNX Runtime's, CUDA's): a frame there names no caller. */
    private static final String JAVACPP_BINDINGS = "org.bytedeco.";

    /**
     * The key that groups holders of memory: the annotation (with its step when it has one),
     * else the innermost frame of the stack outside JavaCPP's bindings ({@code org.bytedeco.},
     * such as ONNX Runtime's {@code Session.allocate} or {@code SessionImpl.Run}, which every
     * session shares: the application's frame that called into the native runtime), else the
     * innermost frame when the stack holds only those, else the thread, else the step of an
     * annotation that gave a step without a name ({@code MemoryAnnotation.push(null, 5, stack)}
     * with annotations alone recorded, which keep neither its stack nor the thread:
     * {@code "step 5"}), else {@code "(unknown)"}.
     *
     * @return a short, human-readable key
     */
    public String holder() {
        if (annotation != null) {
            return annotationLabel(annotation, step);
        }
        if (!stack.isEmpty()) {
            for (StackFrame f : stack) {
                if (!f.className().startsWith(JAVACPP_BINDINGS)) {
                    return f.toString();
                }
            }
            return stack.get(0).toString();
        }
        if (thread != null) {
            return "thread '" + thread + "'";
        }
        if (step >= 0) {
            return annotationLabel(null, step);
        }
        return UNKNOWN_HOLDER;
    }
}
