package io.github.bfc4j.core.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayDeque;
import java.util.NoSuchElementException;
import java.util.Random;
import org.junit.jupiter.api.Test;

class IntDequeTest {

    @Test
    void behavesLikeArrayDequeAcrossGrowthAndWrapAround() {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("IntDequeTest seed: " + seed);
        Random rnd = new Random(seed);
        IntDeque q = new IntDeque(2);
        ArrayDeque<Integer> shadow = new ArrayDeque<>();
        for (int i = 0; i < 100_000; i++) {
            if (rnd.nextInt(3) > 0) {
                int v = rnd.nextInt();
                q.pushBack(v);
                shadow.addLast(v);
            } else if (!shadow.isEmpty()) {
                assertThat(q.popFront()).as("seed %d", seed).isEqualTo(shadow.pollFirst());
            }
            assertThat(q.size()).isEqualTo(shadow.size());
        }
        int i = 0;
        for (int v : shadow) {
            assertThat(q.get(i++)).isEqualTo(v);
        }
    }

    @Test
    void popOfEmptyThrows() {
        IntDeque q = new IntDeque(4);
        assertThatThrownBy(q::popFront).isInstanceOf(NoSuchElementException.class);
        q.pushBack(1);
        q.clear();
        assertThat(q.isEmpty()).isTrue();
    }

    @Test
    void ensureCapacityMakesRoomSoThatPushesUpToItDoNotGrow() {
        IntDeque q = new IntDeque(8);
        for (int i = 0; i < 5; i++) {
            q.pushBack(i);
        }
        q.popFront();
        q.popFront();
        q.ensureCapacity(101);
        IntDeque.beforeGrowth = () -> {
            throw new AssertionError("grew after ensureCapacity(101)");
        };
        try {
            for (int i = 5; i < 103; i++) {
                q.pushBack(i);
            }
        } finally {
            IntDeque.beforeGrowth = null;
        }
        assertThat(q.size()).isEqualTo(101);
        for (int i = 0; i < 101; i++) {
            assertThat(q.get(i)).isEqualTo(i + 2);
        }
    }

    @Test
    void aGrowthThatFailsLeavesTheDequeAsItWas() {
        IntDeque q = new IntDeque(8);
        for (int i = 0; i < 10; i++) {
            q.pushBack(i);
        }
        for (int i = 0; i < 6; i++) {
            q.popFront();
        }
        for (int i = 10; i < 22; i++) {
            q.pushBack(i); // 16 elements, wrapped around a full array of 16
        }
        IntDeque.beforeGrowth = () -> {
            throw new OutOfMemoryError("injected");
        };
        try {
            assertThatThrownBy(() -> q.pushBack(99)).isInstanceOf(OutOfMemoryError.class);
            assertThatThrownBy(() -> q.ensureCapacity(17)).isInstanceOf(OutOfMemoryError.class);
        } finally {
            IntDeque.beforeGrowth = null;
        }
        assertThat(q.size()).isEqualTo(16);
        for (int i = 0; i < 16; i++) {
            assertThat(q.get(i)).isEqualTo(i + 6);
        }
        q.pushBack(22);
        assertThat(q.get(16)).isEqualTo(22);
    }
}
