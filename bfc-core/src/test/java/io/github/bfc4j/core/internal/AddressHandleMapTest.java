package io.github.bfc4j.core.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class AddressHandleMapTest {

    private static long seed() {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("AddressHandleMapTest seed: " + seed + " (rerun with -Dbfc4j.test.seed=" + seed + ")");
        return seed;
    }

    @Test
    void agreesWithAHashMapUnderRandomPutsAndRemoves() {
        long seed = seed();
        Random rnd = new Random(seed);
        AddressHandleMap map = new AddressHandleMap(4);
        Map<Long, Integer> shadow = new HashMap<>();
        List<Long> keys = new ArrayList<>();
        // Addresses clustered like chunk starts: a few regions, 256-byte multiples, so that
        // probe runs collide and wrap around.
        for (int i = 0; i < 200_000; i++) {
            int op = rnd.nextInt(10);
            if (op < 5 || keys.isEmpty()) {
                long region = 0x7f0000000000L + ((long) rnd.nextInt(4) << 32);
                long key = region + ((long) rnd.nextInt(1 << 14) << 8);
                int h = rnd.nextInt(1_000_000);
                map.put(key, h);
                if (shadow.put(key, h) == null) {
                    keys.add(key);
                }
            } else if (op < 8) {
                int idx = rnd.nextInt(keys.size());
                long key = keys.get(idx);
                keys.set(idx, keys.get(keys.size() - 1));
                keys.remove(keys.size() - 1);
                map.remove(key);
                shadow.remove(key);
            } else {
                long key = keys.get(rnd.nextInt(keys.size()));
                assertThat(map.get(key)).as("seed %d, key 0x%x", seed, key).isEqualTo(shadow.get(key));
                assertThat(map.get(key + 256)).as("seed %d", seed)
                        .isEqualTo(shadow.getOrDefault(key + 256, ChunkTable.INVALID_CHUNK_HANDLE));
            }
            if (i % 50_000 == 0) {
                for (Map.Entry<Long, Integer> e : shadow.entrySet()) {
                    assertThat(map.get(e.getKey())).as("seed %d", seed).isEqualTo(e.getValue());
                }
            }
            assertThat(map.size()).isEqualTo(shadow.size());
        }
        for (Map.Entry<Long, Integer> e : shadow.entrySet()) {
            assertThat(map.get(e.getKey())).as("seed %d", seed).isEqualTo(e.getValue());
        }
    }

    @Test
    void zeroIsNeverAKey() {
        AddressHandleMap map = new AddressHandleMap(16);
        assertThat(map.get(0)).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
        map.remove(0);
        assertThat(map.size()).isZero();
    }

    @Test
    void clearForgetsEverything() {
        AddressHandleMap map = new AddressHandleMap(16);
        for (int i = 1; i <= 100; i++) {
            map.put(i * 256L, i);
        }
        map.clear();
        assertThat(map.size()).isZero();
        assertThat(map.get(256)).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
    }
}
