/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's BFCAllocator::Bin::FreeChunkSet
 * (Copyright 2015 The TensorFlow Authors), licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

/**
 * The free chunks of one bin, ordered by upstream's {@code ChunkComparator}: size, then address
 * (both unsigned). Port of {@code BFCAllocator::Bin::FreeChunkSet}, an {@code std::set} of
 * chunk handles, which libstdc++ implements as a red-black tree; so is this.
 *
 * <p>DEVIATION(port) (representation only, docs/deviations.md): the tree is intrusive. Its
 * links live in the {@link ChunkTable}, in primitive arrays indexed by the chunk handle
 * ({@code binLeft}, {@code binRight}, {@code binParent}, {@code binTag}), shared by every set of
 * the table because a free chunk is in at most one bin. Adding, removing and searching create
 * no object (a {@code TreeSet<Integer>} created a 40-byte entry per insertion), and the order,
 * hence every decision of the allocator, is the same. The balancing is the textbook one
 * (Cormen et al., <i>Introduction to Algorithms</i>, ch. 13, as in {@code java.util.TreeMap}),
 * except that deletion relinks the successor node instead of copying its key, since a node is
 * its handle.
 *
 * <pre>
 *  bin 3 (chunks of 2 KiB .. 4 KiB), ordered by (size, ptr):
 *
 *                 h7 (3072, 0x..1000) black
 *                /                      \
 *   h2 (2048, 0x..9000) black     h5 (3584, 0x..0400) black
 *                                     /
 *                       h9 (3072, 0x..8000) red
 *
 *  binLeft[h7] = h2, binRight[h7] = h5, binParent[h2] = h7, binTag[h9] = id(bin 3) << 1 | 1
 * </pre>
 *
 * <p>The API speaks {@code int} handles only. Walk a set in order with
 * {@code for (int h = s.first(); h != NONE; h = s.higher(h))}. As with a {@code TreeSet}, two
 * handles with the same (size, address) are equal. A handle may be in only one set of a table
 * at a time ({@link #add} throws otherwise), and its size and address must not change while it
 * is in.
 *
 * <p>Not thread-safe: guarded by the owning allocator's lock.
 */
public final class FreeChunkSet {

    /** Returned where there is no such handle. */
    public static final int NONE = ChunkTable.INVALID_CHUNK_HANDLE;

    private static final int RED = 1;

    private final ChunkTable chunks;
    /** This set's tag for a black node; {@code | RED} for a red one. */
    private final int blackTag;
    private int root = NONE;
    private int count;

    // The table's arrays, re-read after the table grows (sync()).
    private long[] size;
    private long[] ptr;
    private int[] left;
    private int[] right;
    private int[] parent;
    private int[] tag;

    /** @param chunks the table whose sizes and addresses order the handles, and which holds the links */
    public FreeChunkSet(ChunkTable chunks) {
        this.chunks = chunks;
        this.blackTag = chunks.newSetId() << 1;
        sync();
    }

    /** Re-reads the table's arrays if it has grown (they are replaced together). */
    private void sync() {
        ChunkTable c = chunks;
        if (tag != c.binTag) {
            size = c.size;
            ptr = c.ptr;
            left = c.binLeft;
            right = c.binRight;
            parent = c.binParent;
            tag = c.binTag;
        }
    }

    /** @return true if the set holds no chunk */
    public boolean isEmpty() {
        return count == 0;
    }

    /** @return the number of chunks in the set */
    public int size() {
        return count;
    }

    /**
     * Adds a chunk, ordered by its current size and address (neither may change while it is in).
     *
     * @param h a live handle, in no other set of this table
     * @return false if it (or a chunk of the same size and address) was already in
     * @throws IllegalStateException if {@code h} is in another set of the same table
     */
    public boolean add(int h) {
        sync();
        final int[] tag = this.tag;
        if (tag[h] != 0) {
            if ((tag[h] & ~RED) == blackTag) {
                return false;
            }
            throw new IllegalStateException("chunk handle " + h
                    + " is already in another FreeChunkSet of this ChunkTable; remove it there first");
        }
        final long s = size[h];
        final long p = ptr[h];
        int x = root;
        int xp = NONE;
        int cmp = 0;
        while (x != NONE) {
            xp = x;
            cmp = compare(s, p, x);
            if (cmp < 0) {
                x = left[x];
            } else if (cmp > 0) {
                x = right[x];
            } else {
                return false;
            }
        }
        left[h] = NONE;
        right[h] = NONE;
        parent[h] = xp;
        tag[h] = blackTag | RED;
        if (xp == NONE) {
            root = h;
        } else if (cmp < 0) {
            left[xp] = h;
        } else {
            right[xp] = h;
        }
        count++;
        fixAfterInsertion(h);
        return true;
    }

    /**
     * Removes a chunk (or the chunk of the same size and address).
     *
     * @param h a live handle
     * @return false if it was not in
     */
    public boolean remove(int h) {
        sync();
        int z = h;
        if ((tag[h] & ~RED) != blackTag) {
            z = find(size[h], ptr[h]);
            if (z == NONE) {
                return false;
            }
        }
        delete(z);
        tag[z] = 0;
        count--;
        return true;
    }

    /**
     * @param h a live handle
     * @return true if it (or a chunk of the same size and address) is in
     */
    public boolean contains(int h) {
        sync();
        return (tag[h] & ~RED) == blackTag || find(size[h], ptr[h]) != NONE;
    }

    /**
     * The first chunk at or after (size, ptr) in the order.
     *
     * @param size the size to search from
     * @param ptr the address to search from, among chunks of exactly {@code size}
     * @return its handle, or {@link #NONE}
     */
    public int ceiling(long size, long ptr) {
        sync();
        final int[] left = this.left;
        final int[] right = this.right;
        int best = NONE;
        int x = root;
        while (x != NONE) {
            int cmp = compare(size, ptr, x);
            if (cmp < 0) {
                best = x;
                x = left[x];
            } else if (cmp > 0) {
                x = right[x];
            } else {
                return x;
            }
        }
        return best;
    }

    /**
     * @param h a handle in the set (or any live handle: the first chunk after its size and
     *     address)
     * @return the next chunk after {@code h} in the order, or {@link #NONE}
     */
    public int higher(int h) {
        sync();
        if ((tag[h] & ~RED) == blackTag) {
            return successor(h);
        }
        final long s = size[h];
        final long p = ptr[h];
        int best = NONE;
        int x = root;
        while (x != NONE) {
            if (compare(s, p, x) < 0) {
                best = x;
                x = left[x];
            } else {
                x = right[x];
            }
        }
        return best;
    }

    /** @return the smallest chunk (lowest address among equals), or {@link #NONE} */
    public int first() {
        sync();
        int x = root;
        if (x != NONE) {
            final int[] left = this.left;
            while (left[x] != NONE) {
                x = left[x];
            }
        }
        return x;
    }

    /** @return the largest chunk (highest address among equals), or {@link #NONE} */
    public int last() {
        sync();
        int x = root;
        if (x != NONE) {
            final int[] right = this.right;
            while (right[x] != NONE) {
                x = right[x];
            }
        }
        return x;
    }

    /** Removes every chunk (linear: each one's tag is reset). */
    public void clear() {
        sync();
        for (int h = first(); h != NONE;) {
            int next = successor(h);
            tag[h] = 0;
            h = next;
        }
        root = NONE;
        count = 0;
    }

    // ---------------------------------------------------------------------------------------
    // The tree
    // ---------------------------------------------------------------------------------------

    /** Upstream's {@code ChunkComparator} of (s, p) against handle {@code x}. */
    private int compare(long s, long p, int x) {
        long sx = size[x];
        if (s != sx) {
            return Long.compareUnsigned(s, sx);
        }
        return Long.compareUnsigned(p, ptr[x]);
    }

    private int find(long s, long p) {
        int x = root;
        while (x != NONE) {
            int cmp = compare(s, p, x);
            if (cmp < 0) {
                x = left[x];
            } else if (cmp > 0) {
                x = right[x];
            } else {
                return x;
            }
        }
        return NONE;
    }

    private int successor(int x) {
        final int[] left = this.left;
        final int[] right = this.right;
        final int[] parent = this.parent;
        int r = right[x];
        if (r != NONE) {
            while (left[r] != NONE) {
                r = left[r];
            }
            return r;
        }
        int p = parent[x];
        while (p != NONE && x == right[p]) {
            x = p;
            p = parent[p];
        }
        return p;
    }

    private boolean isRed(int x) {
        return x != NONE && (tag[x] & RED) != 0;
    }

    private void setRed(int x) {
        tag[x] |= RED;
    }

    private void setBlack(int x) {
        tag[x] &= ~RED;
    }

    private void rotateLeft(int x) {
        final int[] left = this.left;
        final int[] right = this.right;
        final int[] parent = this.parent;
        int y = right[x];
        int yl = left[y];
        right[x] = yl;
        if (yl != NONE) {
            parent[yl] = x;
        }
        int xp = parent[x];
        parent[y] = xp;
        if (xp == NONE) {
            root = y;
        } else if (left[xp] == x) {
            left[xp] = y;
        } else {
            right[xp] = y;
        }
        left[y] = x;
        parent[x] = y;
    }

    private void rotateRight(int x) {
        final int[] left = this.left;
        final int[] right = this.right;
        final int[] parent = this.parent;
        int y = left[x];
        int yr = right[y];
        left[x] = yr;
        if (yr != NONE) {
            parent[yr] = x;
        }
        int xp = parent[x];
        parent[y] = xp;
        if (xp == NONE) {
            root = y;
        } else if (right[xp] == x) {
            right[xp] = y;
        } else {
            left[xp] = y;
        }
        right[y] = x;
        parent[x] = y;
    }

    private void fixAfterInsertion(int x) {
        final int[] left = this.left;
        final int[] right = this.right;
        final int[] parent = this.parent;
        while (x != root && isRed(parent[x])) {
            int xp = parent[x];
            int xpp = parent[xp];
            if (xp == left[xpp]) {
                int y = right[xpp];
                if (isRed(y)) {
                    setBlack(xp);
                    setBlack(y);
                    setRed(xpp);
                    x = xpp;
                } else {
                    if (x == right[xp]) {
                        x = xp;
                        rotateLeft(x);
                        xp = parent[x];
                    }
                    setBlack(xp);
                    setRed(xpp);
                    rotateRight(xpp);
                }
            } else {
                int y = left[xpp];
                if (isRed(y)) {
                    setBlack(xp);
                    setBlack(y);
                    setRed(xpp);
                    x = xpp;
                } else {
                    if (x == left[xp]) {
                        x = xp;
                        rotateRight(x);
                        xp = parent[x];
                    }
                    setBlack(xp);
                    setRed(xpp);
                    rotateLeft(xpp);
                }
            }
        }
        setBlack(root);
    }

    /** Replaces the subtree rooted at {@code u} by the one rooted at {@code v} (may be NONE). */
    private void transplant(int u, int v) {
        int up = parent[u];
        if (up == NONE) {
            root = v;
        } else if (u == left[up]) {
            left[up] = v;
        } else {
            right[up] = v;
        }
        if (v != NONE) {
            parent[v] = up;
        }
    }

    /** Unlinks node {@code z} (CLRS RB-DELETE, tracking x's parent since there is no sentinel). */
    private void delete(int z) {
        final int[] left = this.left;
        final int[] right = this.right;
        final int[] parent = this.parent;
        final int[] tag = this.tag;
        boolean removedBlack = (tag[z] & RED) == 0;
        int x;
        int xp;
        if (left[z] == NONE) {
            x = right[z];
            xp = parent[z];
            transplant(z, x);
        } else if (right[z] == NONE) {
            x = left[z];
            xp = parent[z];
            transplant(z, x);
        } else {
            int y = right[z];
            while (left[y] != NONE) {
                y = left[y];
            }
            removedBlack = (tag[y] & RED) == 0;
            x = right[y];
            if (parent[y] == z) {
                xp = y;
            } else {
                xp = parent[y];
                transplant(y, x);
                right[y] = right[z];
                parent[right[y]] = y;
            }
            transplant(z, y);
            left[y] = left[z];
            parent[left[y]] = y;
            tag[y] = (tag[y] & ~RED) | (tag[z] & RED);
        }
        if (removedBlack) {
            fixAfterDeletion(x, xp);
        }
    }

    private void fixAfterDeletion(int x, int xp) {
        final int[] left = this.left;
        final int[] right = this.right;
        final int[] parent = this.parent;
        while (x != root && !isRed(x)) {
            if (x == left[xp]) {
                int w = right[xp];
                if (isRed(w)) {
                    setBlack(w);
                    setRed(xp);
                    rotateLeft(xp);
                    w = right[xp];
                }
                if (!isRed(left[w]) && !isRed(right[w])) {
                    setRed(w);
                    x = xp;
                    xp = parent[x];
                } else {
                    if (!isRed(right[w])) {
                        setBlack(left[w]);
                        setRed(w);
                        rotateRight(w);
                        w = right[xp];
                    }
                    if (isRed(xp)) {
                        setRed(w);
                    } else {
                        setBlack(w);
                    }
                    setBlack(xp);
                    setBlack(right[w]);
                    rotateLeft(xp);
                    x = root;
                }
            } else {
                int w = left[xp];
                if (isRed(w)) {
                    setBlack(w);
                    setRed(xp);
                    rotateRight(xp);
                    w = left[xp];
                }
                if (!isRed(right[w]) && !isRed(left[w])) {
                    setRed(w);
                    x = xp;
                    xp = parent[x];
                } else {
                    if (!isRed(left[w])) {
                        setBlack(right[w]);
                        setRed(w);
                        rotateLeft(w);
                        w = left[xp];
                    }
                    if (isRed(xp)) {
                        setRed(w);
                    } else {
                        setBlack(w);
                    }
                    setBlack(xp);
                    setBlack(left[w]);
                    rotateRight(xp);
                    x = root;
                }
            }
        }
        if (x != NONE) {
            setBlack(x);
        }
    }

    /**
     * Checks the red-black and order invariants and the size (for tests).
     *
     * @return the black height
     * @throws IllegalStateException if an invariant is broken
     */
    int checkInvariants() {
        sync();
        if (root != NONE && (parent[root] != NONE || isRed(root))) {
            throw new IllegalStateException("root " + root + " has a parent or is red");
        }
        int[] n = new int[1];
        int bh = check(root, n);
        if (n[0] != count) {
            throw new IllegalStateException("count " + count + " but " + n[0] + " nodes");
        }
        return bh;
    }

    private int check(int x, int[] n) {
        if (x == NONE) {
            return 1;
        }
        n[0]++;
        if ((tag[x] & ~RED) != blackTag) {
            throw new IllegalStateException("node " + x + " has tag " + tag[x]);
        }
        int l = left[x];
        int r = right[x];
        if (l != NONE && (parent[l] != x || chunks.compare(l, x) >= 0)) {
            throw new IllegalStateException("bad left child " + l + " of " + x);
        }
        if (r != NONE && (parent[r] != x || chunks.compare(r, x) <= 0)) {
            throw new IllegalStateException("bad right child " + r + " of " + x);
        }
        if (isRed(x) && (isRed(l) || isRed(r))) {
            throw new IllegalStateException("red node " + x + " has a red child");
        }
        int bl = check(l, n);
        int br = check(r, n);
        if (bl != br) {
            throw new IllegalStateException("black heights differ under " + x);
        }
        return bl + (isRed(x) ? 0 : 1);
    }
}
