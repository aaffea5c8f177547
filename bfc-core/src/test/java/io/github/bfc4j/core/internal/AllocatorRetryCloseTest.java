package io.github.bfc4j.core.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * {@link AllocatorRetry#close()}: the allocator's close ends the retry loop's waits, also where it
 * comes between a failed attempt and the wait (no thread waits yet, so there is nobody to wake).
 * Upstream's tests of the retry helper are ported in the conformance tests.
 */
class AllocatorRetryCloseTest {

    /** Far longer than any test here may take: a wait that is not ended shows as a timeout. */
    private static final long TEN_SECONDS = 10_000;

    @Test
    void aCloseBetweenTheFailedAttemptAndTheWaitEndsTheWait() {
        AllocatorRetry retry = new AllocatorRetry();
        List<Boolean> attempts = new ArrayList<>();
        long start = System.nanoTime();
        long ptr = retry.allocateRaw((alignment, numBytes, verbose) -> {
            attempts.add(verbose);
            if (attempts.size() == 1) {
                // The close lands after this failed attempt and before the wait.
                retry.close();
            }
            return 0;
        }, TEN_SECONDS, 256, 1024);
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

        assertThat(ptr).isZero();
        assertThat(attempts).as("the failed attempt, then the last (verbose) one at once").containsExactly(false, true);
        assertThat(millis).as("ms until the call returned (it would wait 10 s)").isLessThan(5_000);
    }

    @Test
    void aCloseWakesAnAllocationWaitingAndLaterOnesDoNotWait() throws Exception {
        AllocatorRetry retry = new AllocatorRetry();
        CountDownLatch failedOnce = new CountDownLatch(1);
        AtomicLong returnedAfterMillis = new AtomicLong(-1);
        Thread waiter = new Thread(() -> {
            long start = System.nanoTime();
            retry.allocateRaw((alignment, numBytes, verbose) -> {
                failedOnce.countDown();
                return 0;
            }, TEN_SECONDS, 256, 1024);
            returnedAfterMillis.set(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
        });
        waiter.start();
        assertThat(failedOnce.await(5, TimeUnit.SECONDS)).isTrue();
        // The close must end a wait begun: wait until the thread waits for a free in the retry loop.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!inRetryWait(waiter)) {
            assertThat(waiter.isAlive()).as("returned without waiting for a free").isTrue();
            assertThat(System.nanoTime() - deadline).as("not waiting 30 s after its failed attempt; last seen "
                    + waiter.getState()).isNegative();
            Thread.sleep(5);
        }
        retry.close();
        waiter.join(5_000);

        assertThat(waiter.isAlive()).as("still waiting 5 s after the close").isFalse();
        assertThat(returnedAfterMillis.get()).isBetween(0L, 5_100L);

        long start = System.nanoTime();
        int[] attempts = {0};
        assertThat(retry.allocateRaw((alignment, numBytes, verbose) -> {
            attempts[0]++;
            return 0;
        }, TEN_SECONDS, 256, 1024)).isZero();
        assertThat(attempts[0]).as("a failure after the close: two attempts, no wait").isEqualTo(2);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(5_000);
    }

    /** Whether {@code t} is in {@code Object.wait}, called by the retry loop's wait. */
    private static boolean inRetryWait(Thread t) {
        StackTraceElement[] stack = t.getStackTrace();
        int i = 0;
        while (i < stack.length && stack[i].getClassName().equals(Object.class.getName())
                && stack[i].getMethodName().startsWith("wait")) {
            i++;
        }
        return i > 0 && i < stack.length && stack[i].getClassName().equals(AllocatorRetry.class.getName())
                && stack[i].getMethodName().equals("waitForMillis") && t.getState() == Thread.State.TIMED_WAITING;
    }

    /**
     * A free wakes the waiter, which then succeeds. The waiter waits up to ten minutes, so that
     * only a free can end its wait within the test's minute: with the ten seconds it had, a free
     * that woke nobody still passed, the waiter's last attempt at its deadline finding the
     * memory.
     */
    @Test
    void withoutACloseAFreeStillWakesTheWaiterWhichThenSucceeds() throws Exception {
        AllocatorRetry retry = new AllocatorRetry();
        CountDownLatch failedOnce = new CountDownLatch(1);
        AtomicLong free = new AtomicLong();
        AtomicLong got = new AtomicLong(-1);
        Thread waiter = new Thread(() -> got.set(retry.allocateRaw((alignment, numBytes, verbose) -> {
            failedOnce.countDown();
            return free.get();
        }, TimeUnit.MINUTES.toMillis(10), 256, 1024)));
        waiter.setDaemon(true);
        waiter.start();
        try {
            assertThat(failedOnce.await(5, TimeUnit.SECONDS)).isTrue();
            free.set(0x1000);
            // A free notifies until the waiter has seen it (one that lands before its wait is
            // missed, as upstream's; the next one wakes it).
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(1);
            while (waiter.isAlive() && System.nanoTime() - deadline < 0) {
                retry.notifyDealloc();
                waiter.join(10);
            }
            assertThat(waiter.isAlive()).as("still waiting a minute after the frees began").isFalse();
            assertThat(got.get()).isEqualTo(0x1000);
        } finally {
            retry.close(); // a waiter the frees did not wake ends now
        }
    }
}
