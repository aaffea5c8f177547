/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.LockSupport;

/**
 * The allocator's one mutex (upstream's {@code mutex_}, an {@code absl::Mutex}, which also
 * spins before it sleeps). Mutual exclusion and the memory effects of a lock: everything
 * written before {@link #unlock()} is seen after the next {@link #lock()}.
 *
 * <p>Reentrant, as the {@code ReentrantLock} it replaces: code that runs with the lock held
 * may take it again (an out-of-memory listener that reads the allocator's summary, a facade
 * method that installs listeners under the lock); each {@link #lock()} needs its
 * {@link #unlock()}. {@link #unlock()} by a thread that does not hold the lock throws
 * {@link IllegalMonitorStateException} and changes nothing.
 *
 * <ul>
 *   <li><b>Uncontended</b>: one compare-and-set to take the lock and a plain store of the
 *       owner; a plain read and store of the owner and one release store to give it back (a
 *       plain store on x86), then one read of the sleeper count. A {@code ReentrantLock} gives
 *       the lock back with a volatile store (a full fence).</li>
 *   <li><b>Contended</b>: a waiter spins with exponential backoff (so that the holder, which
 *       has the allocator's data in its cache, usually takes the lock again for its next
 *       call and long runs of calls stay on one core), then yields its core a few times (the
 *       holder may be waiting for one), and only then sleeps. Sleepers queue in arrival order.
 *       The first one (the <em>head</em>) is woken by the next {@link #unlock()}, once: if the
 *       holder has taken the lock back by then, the head sleeps again until its own timer. So a
 *       holder that keeps calling pays for one wake-up per thread that goes to sleep, not one
 *       per release, and runs long stretches of calls with the allocator's data in its core's
 *       cache while the others sleep (measured with {@code ThreadsBenchmark}: two threads went
 *       from about 0.5 to about 0.9 of one thread's pairs per second). Only the head has a
 *       timer: it wakes up on its own every {@value #SLEEP_MICROS} microseconds (and so never
 *       waits longer than that for a lock left free), also because an unlock that races with
 *       a thread going to sleep (the unlock's read of the sleeper count is not ordered after its
 *       release store) may not see it; the others sleep until they are the head, so that a
 *       crowd of sleepers costs no CPU. A head passed over for {@value #STARVE_NANOS} ns (times
 *       the sleepers per processor, when there are more sleepers than processors) is handed the
 *       lock: from then on no other thread takes it, and every release wakes the head until it
 *       has it. (The bound grows with the sleepers per processor, who take turns on the
 *       processors anyway: handing the lock over every 2 ms to one of 200 threads on two cores
 *       cost a context switch per call, and they did 12 thousand pairs a second.)</li>
 * </ul>
 *
 * <p>Unfair, as a non-fair {@code ReentrantLock}: a thread arriving at a free lock takes it
 * ahead of waiters. {@link #lock()} cannot be interrupted; an interrupt that arrives while a
 * thread sleeps here is kept and set again when it has the lock. Taking the lock creates no
 * object, also when contended, except a larger queue when more threads sleep here at once than
 * ever before (then before the thread is queued: a failure for want of heap leaves the lock as
 * it was).
 */
public final class AllocatorLock {
    private static final VarHandle STATE;
    private static final VarHandle SLEEPERS;
    private static final VarHandle WAKING;
    private static final VarHandle STARVING;
    private static final VarHandle QUEUE_GUARD;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            STATE = l.findVarHandle(AllocatorLock.class, "state", int.class);
            SLEEPERS = l.findVarHandle(AllocatorLock.class, "sleepers", int.class);
            WAKING = l.findVarHandle(AllocatorLock.class, "waking", int.class);
            STARVING = l.findVarHandle(AllocatorLock.class, "starving", int.class);
            QUEUE_GUARD = l.findVarHandle(AllocatorLock.class, "queueGuard", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * How long a waiter spins before it yields, in nanoseconds: some tens of calls of the
     * holder, so that a waiter on another core never sleeps while calls flow, and a waiter that
     * shares a core with the holder gives it back soon.
     */
    static final long SPIN_NANOS = 10_000;
    /** The most spin-waits between two looks at the lock (the backoff doubles up to it). */
    private static final int MAX_BACKOFF = 64;
    /** Yields before sleeping. */
    private static final int YIELDS = 2;
    /** The longest the head sleeper waits before it looks at the lock again, in microseconds. */
    static final long SLEEP_MICROS = 1000;
    /**
     * How long the head sleeper may be passed over (times the sleepers per processor, if more
     * than one) before the lock is handed to it: from then on no other thread takes the lock,
     * and every release wakes it.
     */
    static final long STARVE_NANOS = 2_000_000;
    /** The processors the JVM may use: sleepers beyond them take turns on them anyway. */
    private static final int CORES = Math.max(1, Runtime.getRuntime().availableProcessors());

    // Padding: the lock word is read by spinning waiters; nothing the holder writes shares its
    // cache line.
    @SuppressWarnings("unused")
    private long p0, p1, p2, p3, p4, p5, p6;
    /** 0 free, 1 held. */
    private volatile int state;
    /** Threads sleeping (or about to) in {@link #sleepUntilAcquired(long)}. */
    private volatile int sleepers;
    /** The first sleeper in {@link #queue}, or null: the one a release wakes. */
    private volatile Thread head;
    /**
     * 1 from the {@link #unlock()} that wakes a sleeper until the next thread goes to sleep: a
     * release wakes a sleeper once, and a sleeper that wakes to find the lock taken again waits
     * for its own timer.
     */
    private volatile int waking;
    /** 1 while the head sleeper is starving: then only it takes the lock. */
    private volatile int starving;
    @SuppressWarnings("unused")
    private long q0, q1, q2, q3, q4, q5, q6;

    /**
     * The holder, written only by the thread that holds the lock (set after taking it, cleared
     * before giving it back), so a thread reads itself here exactly when it holds the lock.
     */
    private Thread owner;
    /** How many times the holder took the lock again; only the holder touches it. */
    private int reentries;

    /**
     * 1 while a thread changes {@link #queue} (and its indices) and {@link #head}, which it
     * guards: a spin lock, held for a few instructions. A {@code ReentrantLock} creates a queue
     * node when contended: one that could not be had for want of heap as a thread leaves the
     * queue, the allocator's lock already taken, would leave that lock held by no one, every
     * later caller waiting for ever.
     */
    private volatile int queueGuard;
    /**
     * The sleepers, in the order they went to sleep: {@link #queued} of them from
     * {@link #first} on, in a ring. Not an {@code ArrayDeque}, whose {@code addLast} stores the
     * element before it grows: a growth that failed for want of heap left it looking empty with
     * the failed thread still in it, which later became the head in place of real sleepers, who
     * then slept for ever.
     */
    private Thread[] queue = new Thread[16];
    /** The index in {@link #queue} of the first sleeper. */
    private int first;
    /** How many threads {@link #queue} holds. */
    private int queued;

    /** Takes the lock, waiting as long as it takes. */
    public void lock() {
        Thread me = Thread.currentThread();
        if (starving != 0 || !STATE.compareAndSet(this, 0, 1)) {
            if (owner == me) {
                reentries++;
                return;
            }
            lockContended();
        }
        owner = me;
    }

    /**
     * Takes the lock if it is free.
     *
     * @return true if the calling thread now holds the lock
     */
    public boolean tryLock() {
        Thread me = Thread.currentThread();
        if (starving == 0 && STATE.compareAndSet(this, 0, 1)) {
            owner = me;
            return true;
        }
        if (owner == me) {
            reentries++;
            return true;
        }
        return false;
    }

    /**
     * Gives the lock back (once: a lock taken again is given back by as many calls).
     *
     * @throws IllegalMonitorStateException if the calling thread does not hold the lock
     */
    public void unlock() {
        if (owner != Thread.currentThread()) {
            throw new IllegalMonitorStateException("the allocator's lock is not held by thread '"
                    + Thread.currentThread().getName() + "'");
        }
        if (reentries != 0) {
            reentries--;
            return;
        }
        owner = null;
        STATE.setRelease(this, 0);
        if (sleepers != 0 && (starving != 0 || waking == 0 && WAKING.compareAndSet(this, 0, 1))) {
            Thread h = head;
            if (h != null) {
                LockSupport.unpark(h);
            }
        }
    }

    /** @return whether some thread holds the lock (a snapshot, for tests and assertions) */
    public boolean isLocked() {
        return state != 0;
    }

    /** @return whether the calling thread holds the lock */
    public boolean isHeldByCurrentThread() {
        return owner == Thread.currentThread();
    }

    /** Takes the lock if it is free and no starving sleeper waits for it. */
    private boolean tryAcquireIfFree() {
        return starving == 0 && tryAcquireAnyway();
    }

    /** Takes the lock if it is free (for a starving sleeper). */
    private boolean tryAcquireAnyway() {
        return (int) STATE.getOpaque(this) == 0 && STATE.compareAndSet(this, 0, 1);
    }

    private void lockContended() {
        final long start = System.nanoTime();
        int backoff = 1;
        do {
            for (int i = 0; i < backoff; i++) {
                Thread.onSpinWait();
            }
            if (tryAcquireIfFree()) {
                return;
            }
            if (backoff < MAX_BACKOFF) {
                backoff <<= 1;
            }
        } while (System.nanoTime() - start < SPIN_NANOS);
        for (int i = 0; i < YIELDS; i++) {
            Thread.yield();
            if (tryAcquireIfFree()) {
                return;
            }
        }
        sleepUntilAcquired(start);
    }

    /** @param start when this thread began to wait ({@link System#nanoTime()}) */
    private void sleepUntilAcquired(long start) {
        final Thread me = Thread.currentThread();
        boolean interrupted = false;
        boolean starved = false;
        enqueue(me);
        try {
            while (!(starved ? tryAcquireAnyway() : tryAcquireIfFree())) {
                if (head == me) {
                    LockSupport.parkNanos(this, SLEEP_MICROS * 1000);
                    if (!starved && System.nanoTime() - start >= STARVE_NANOS * Math.max(1, sleepers / CORES)) {
                        // Passed over long enough: from now on the lock is handed to this
                        // thread (no one else takes it; every release wakes it).
                        starved = true;
                        STARVING.getAndAdd(this, 1);
                    }
                } else {
                    LockSupport.park(this); // until this thread is the head
                }
                if (Thread.interrupted()) {
                    interrupted = true;
                }
            }
        } finally {
            if (starved) {
                STARVING.getAndAdd(this, -1);
            }
            dequeue(me);
        }
        if (interrupted) {
            me.interrupt();
        }
    }

    private void enqueue(Thread me) {
        guardQueue();
        try {
            if (queued == queue.length) {
                growQueue(); // before anything changes: a failure leaves the queue as it was
            }
            queue[(first + queued) & (queue.length - 1)] = me;
            queued++;
            head = queue[first];
            SLEEPERS.getAndAdd(this, 1);
            // A new sleeper is woken by the next release, even if a wake-up sent earlier found
            // no sleeper (one that had just taken the lock).
            waking = 0;
        } finally {
            unguardQueue();
        }
    }

    /** Leaves the queue; a new head is woken, so that it sleeps with a timer from now on. */
    private void dequeue(Thread me) {
        Thread next;
        guardQueue();
        try {
            boolean wasHead = queued != 0 && queue[first] == me;
            if (wasHead) {
                queue[first] = null;
                first = (first + 1) & (queue.length - 1);
                queued--;
            } else {
                removeFromQueue(me);
            }
            Thread newHead = queued == 0 ? null : queue[first];
            next = wasHead ? newHead : null;
            head = newHead;
            SLEEPERS.getAndAdd(this, -1);
        } finally {
            unguardQueue();
        }
        if (next != null) {
            LockSupport.unpark(next);
        }
    }

    /** Doubles {@link #queue}, its sleepers first; the guard held. */
    private void growQueue() {
        Thread[] grown = new Thread[queue.length * 2];
        for (int i = 0; i < queued; i++) {
            grown[i] = queue[(first + i) & (queue.length - 1)];
        }
        queue = grown;
        first = 0;
    }

    /** Takes {@code me} out of {@link #queue}, behind the first, closing the gap; the guard held. */
    private void removeFromQueue(Thread me) {
        int mask = queue.length - 1;
        for (int i = 1; i < queued; i++) {
            if (queue[(first + i) & mask] == me) {
                for (int j = i; j < queued - 1; j++) {
                    queue[(first + j) & mask] = queue[(first + j + 1) & mask];
                }
                queued--;
                queue[(first + queued) & mask] = null;
                return;
            }
        }
    }

    /**
     * Takes {@link #queueGuard}: spins, and now and then yields its core (its holder may be
     * waiting for one). Creates no object.
     */
    private void guardQueue() {
        int spins = 0;
        while (!QUEUE_GUARD.compareAndSet(this, 0, 1)) {
            if ((++spins & 63) == 0) {
                Thread.yield();
            } else {
                Thread.onSpinWait();
            }
        }
    }

    /** Gives {@link #queueGuard} back. */
    private void unguardQueue() {
        QUEUE_GUARD.setRelease(this, 0);
    }

    /** Runs {@code r} holding the guard of the sleepers' queue, for tests. */
    void withQueueGuarded(Runnable r) {
        guardQueue();
        try {
            r.run();
        } finally {
            unguardQueue();
        }
    }
}
