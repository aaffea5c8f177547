/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.time.Duration;
import java.util.logging.LogManager;
import org.junit.jupiter.api.Test;

/**
 * A loan's {@code close()} that fails for want of Java heap (the list of open loans is copied
 * as the loan leaves it) still gives its number back when the loan lent nothing, and a refused
 * close of the allocator no longer advises on the closed loan. Runs in a JVM of its own with a
 * small heap ({@link Child}), which it fills ({@link FullHeap#fill()}) before the close.
 */
class LoanCloseWithoutHeapTest {

    @Test
    void aLoansCloseThatFailsForWantOfHeapGivesItsNumberBack() throws Exception {
        ChildProcess.Result r = ChildProcess.run(FullHeap.childJvm(Child.class, 24), Duration.ofMinutes(2));
        System.out.println(r.output());
        assertThat(r.output()).as("the child's output (exit %d)", r.status())
                .contains("the close failed: java.lang.OutOfMemoryError")
                .contains("a new loan was made")
                .contains("the refused close advised on the open loans only");
        assertThat(r.status()).as("the child's exit status; its output:%n%s", r.output()).isZero();
    }

    /**
     * Lends to as many runtimes as it can, closes the first with the heap full, then lends once
     * more and tries to close the allocator under an allocation of its own.
     */
    static final class Child {
        private static final String RELEASE = "close its adapter";
        /** The objects that fill the heap, dropped once the close has been tried. */
        private static Object ballast;

        public static void main(String[] args) {
            LogManager.getLogManager().reset(); // the refused close's warning names 254 runtimes
            BfcAllocator a = BfcAllocator.builder().name("loans").memoryLimit(1L << 20)
                    .subAllocator(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false)).build();
            MemoryAllocator.Loan[] loans = new MemoryAllocator.Loan[255];
            for (int i = 0; i < loans.length; i++) {
                loans[i] = a.lendTo("runtime-" + i, RELEASE);
            }
            // Warm up the close's path, so that nothing on it is still to be loaded or linked.
            loans[254].close();
            loans[254] = a.lendTo("runtime-254", RELEASE);

            Throwable failure = null;
            ballast = FullHeap.fill();
            try {
                loans[0].close();
            } catch (Throwable e) {
                failure = e;
            }
            ballast = null;
            if (!(failure instanceof OutOfMemoryError)) {
                System.out.println("the close did not fail for want of heap: " + failure);
                System.exit(1);
            }
            System.out.println("the close failed: " + failure);
            try {
                a.lendTo("runtime-again", RELEASE).close();
                System.out.println("a new loan was made");
            } catch (IllegalStateException e) {
                System.out.println("no new loan: " + e.getMessage());
                System.exit(1);
            }
            long own = a.allocateRawOrThrow(64, 1024);
            try {
                a.close();
                System.out.println("the allocator closed under an allocation");
                System.exit(1);
            } catch (IllegalStateException e) {
                if (e.getMessage().contains("runtime-0 may hold") || !e.getMessage().contains("runtime-1 may hold")) {
                    System.out.println("the refused close's advice: " + e.getMessage());
                    System.exit(1);
                }
                System.out.println("the refused close advised on the open loans only");
            }
            a.deallocateRaw(own);
        }
    }
}
