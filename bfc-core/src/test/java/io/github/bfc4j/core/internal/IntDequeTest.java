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
}
