package io.github.bfc4j.onnxruntime;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * What ONNX Runtime's calls into a {@link BfcOrtAllocator} or {@link BfcCudaProvider} came to,
 * read at one moment (each figure is read on its own, without a common lock).
 *
 * @param allocCalls      {@code Alloc} calls (not counting {@code Reserve})
 * @param reserveCalls    {@code Reserve} calls (ORT reserves memory for weights; bfc4j serves them
 *                        like any allocation); always 0 for the CUDA provider
 * @param freeCalls       {@code Free} calls, null pointers included
 * @param emptyCacheCalls the CUDA provider's empty-cache calls; always 0 for the CPU allocator
 * @param failedAllocs    allocations that could not be served (out of memory, or after close)
 * @param callbackErrors  exceptions caught in a callback, each logged (a free bfc4j rejected, an
 *                        allocation after close, an unexpected error)
 * @param liveAllocations allocations handed to ORT and not yet freed by it
 * @param lastError       the last failure's reason, or null if there was none
 */
public record OrtCallbackStats(long allocCalls, long reserveCalls, long freeCalls, long emptyCacheCalls,
        long failedAllocs, long callbackErrors, long liveAllocations, String lastError) {

    /** The live counters behind the snapshots; updated by the callbacks from any thread. */
    static final class Counters {
        final LongAdder allocCalls = new LongAdder();
        final LongAdder reserveCalls = new LongAdder();
        final LongAdder freeCalls = new LongAdder();
        final LongAdder emptyCacheCalls = new LongAdder();
        final LongAdder failedAllocs = new LongAdder();
        final LongAdder callbackErrors = new LongAdder();
        final AtomicLong liveAllocations = new AtomicLong();
        volatile String lastError;

        /**
         * Counts, remembers and logs a callback error. Never throws, not even where logging fails
         * (a handler that throws, no memory left to format the record): the callbacks run inside
         * ORT, where an exception out of a free ends the process. A failed log is added to
         * {@link #lastError} instead.
         */
        void error(Logger log, String message, Throwable t) {
            callbackErrors.increment();
            lastError = message;
            try {
                log.log(Level.SEVERE, message, t);
            } catch (Throwable logFailure) {
                try {
                    lastError = message + " (logging it failed: " + logFailure + ")";
                } catch (Throwable ignored) {
                    // No memory left even for the note: the message alone stays.
                }
            }
        }

        OrtCallbackStats snapshot() {
            return new OrtCallbackStats(allocCalls.sum(), reserveCalls.sum(), freeCalls.sum(), emptyCacheCalls.sum(),
                    failedAllocs.sum(), callbackErrors.sum(), liveAllocations.get(), lastError);
        }
    }
}
