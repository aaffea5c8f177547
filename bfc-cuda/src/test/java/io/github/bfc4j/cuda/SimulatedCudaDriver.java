/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A {@link CudaDriver} without a GPU, strict where CUDA is strict: simulated device, host and
 * virtual address spaces, physical allocations that hold bytes, mappings that must lie in a
 * reservation and must not overlap, events that complete only when the test says so, primary
 * contexts retained and released as the real driver counts them (a call that needs a context
 * nobody retains fails as it does there), and injectable errors ({@link #failNext}). Every call
 * is logged ({@link #calls()}).
 */
final class SimulatedCudaDriver implements CudaDriver {

    static final int CUDA_ERROR_INVALID_VALUE = 1;
    static final int CUDA_ERROR_OUT_OF_MEMORY = 2;
    static final int CUDA_ERROR_ILLEGAL_ADDRESS = 700;

    /** Memory standing for a stream's driver object: readable, as a real {@code CUstream} is. */
    private static final ByteBuffer STREAM_OBJECT = ByteBuffer.allocateDirect(64);
    /** A stream handle that {@link #eventRecord} takes, as the real driver takes a live stream's. */
    static final long STREAM = new org.bytedeco.javacpp.BytePointer(STREAM_OBJECT).address();

    private static final Map<Integer, String> NAMES = Map.of(
            1, "CUDA_ERROR_INVALID_VALUE",
            2, "CUDA_ERROR_OUT_OF_MEMORY",
            100, "CUDA_ERROR_NO_DEVICE",
            400, "CUDA_ERROR_INVALID_HANDLE",
            700, "CUDA_ERROR_ILLEGAL_ADDRESS",
            999, "CUDA_ERROR_UNKNOWN");

    private final List<CudaDeviceInfo> devices;
    private final PrimaryContexts contexts;
    private final long granularity;
    private final List<String> calls = new ArrayList<>();
    /** Per method: {calls to let through first, error code}. */
    private final Map<String, Deque<int[]>> failures = new HashMap<>();
    private final Map<String, RuntimeException> thrown = new HashMap<>();
    private final Map<String, Runnable> during = new HashMap<>();
    private int physicalCreates;
    private int contextRetains;

    private long nextDevice = 0x7f00_0000_0000L;
    private long nextHost = 0x5500_0000_0000L;
    private long nextReserve = 0x7e00_0000_0000L;

    /**
     * The room in the device's virtual address space, which all the reservations of a process
     * share: a larger reservation (or one larger than what the others leave) fails with
     * {@code CUDA_ERROR_OUT_OF_MEMORY}, as on a real GPU. Measured on an H200 (driver 580): one
     * reservation of 2^46 bytes succeeded, one of 2^47 bytes and every larger size up to
     * 2^64 - 2 MiB failed so, and seven reservations of 2^44 bytes succeeded together where an
     * eighth failed: 7 x 2^44 bytes. Addresses are never reused here, so a test would have to
     * reserve and free the whole room some 75,000 times before they ran past 2^63.
     */
    static final long ADDRESS_SPACE_BYTES = 7L << 44;
    private long nextHandle = 1;
    private long nextEvent = 0xe000;

    /** cuMemAlloc'd blocks: address to contents. */
    private final TreeMap<Long, byte[]> deviceBlocks = new TreeMap<>();
    /** Host blocks: address to contents. */
    private final TreeMap<Long, byte[]> hostBlocks = new TreeMap<>();
    /** Reservations: start to size. */
    private final TreeMap<Long, Long> reservations = new TreeMap<>();
    /** Physical allocations: handle to contents. */
    private final Map<Long, byte[]> physical = new HashMap<>();
    /** Mappings: virtual address to handle. */
    private final TreeMap<Long, Long> mappings = new TreeMap<>();
    /** Events: handle to state. */
    private final Map<Long, EventState> events = new HashMap<>();
    private long deviceBytesUsed;

    private enum EventState { CREATED, PENDING, COMPLETE }

    /**
     * One VMM-capable device of {@code totalBytes} with the given granularity.
     */
    SimulatedCudaDriver(long totalBytes, long granularity) {
        this(List.of(new CudaDeviceInfo(0, "Simulated GPU", totalBytes, 9, 0, true)), granularity);
    }

    SimulatedCudaDriver(List<CudaDeviceInfo> devices, long granularity) {
        this.devices = List.copyOf(devices);
        this.contexts = new PrimaryContexts(devices.size());
        this.granularity = granularity;
    }

    // ------------------------------------------------------------------ test hooks

    /** The next call to {@code method} fails with {@code code} (queued per method). */
    synchronized void failNext(String method, int code) {
        failNextAfter(method, 0, code);
    }

    /**
     * {@code action} runs in the next call to {@code method} (eventRecord only), on its thread,
     * after the call has checked that the device's context is retained and before it uses it,
     * outside this driver's lock: the window in which the real driver ({@link JavaCppCudaDriver})
     * has checked the retain and not yet made the CUDA call.
     */
    void duringNext(String method, Runnable action) {
        synchronized (this) {
            during.put(method, action);
        }
    }

    /** The next call to {@code method} throws {@code e} (before the others queued for it). */
    synchronized void throwNext(String method, RuntimeException e) {
        thrown.put(method, e);
    }

    /** The call to {@code method} after the next {@code skip} ones fails with {@code code}. */
    synchronized void failNextAfter(String method, int skip, int code) {
        failures.computeIfAbsent(method, k -> new ArrayDeque<>()).add(new int[] {skip, code});
    }

    /** Successful memCreate calls so far. */
    synchronized int physicalCreates() {
        return physicalCreates;
    }

    /** Every call so far, as "method(args)". */
    synchronized List<String> calls() {
        return calls;
    }

    /** How many calls to {@code method} were made so far, failed ones included. */
    synchronized int callCount(String method) {
        String prefix = method + "(";
        int n = 0;
        for (String c : calls) {
            if (c.startsWith(prefix)) {
                n++;
            }
        }
        return n;
    }

    /** Completes every recorded event, as if the GPU had caught up. */
    synchronized void completeAllEvents() {
        events.replaceAll((e, s) -> s == EventState.PENDING ? EventState.COMPLETE : s);
    }

    /** Completes one event. */
    synchronized void completeEvent(long event) {
        requireEvent(event);
        events.put(event, EventState.COMPLETE);
    }

    /** Events created and not destroyed. */
    synchronized int liveEvents() {
        return events.size();
    }

    /** Events recorded and not yet complete, oldest first by handle. */
    synchronized List<Long> pendingEvents() {
        List<Long> out = new ArrayList<>();
        events.forEach((e, s) -> {
            if (s == EventState.PENDING) {
                out.add(e);
            }
        });
        out.sort(null);
        return out;
    }

    /** Bytes of physical memory created and not released, plus cuMemAlloc'd bytes. */
    synchronized long deviceBytesUsed() {
        return deviceBytesUsed;
    }

    synchronized int liveHostBlocks() {
        return hostBlocks.size();
    }

    synchronized int liveReservations() {
        return reservations.size();
    }

    synchronized int liveMappings() {
        return mappings.size();
    }

    synchronized int livePhysicalAllocations() {
        return physical.size();
    }

    synchronized int liveDeviceBlocks() {
        return deviceBlocks.size();
    }

    /** Retains of primary contexts not yet released, over all devices. */
    synchronized int retainedContexts() {
        int sum = 0;
        for (int d = 0; d < devices.size(); d++) {
            sum += contexts.count(d);
        }
        return sum;
    }

    /** Successful retainPrimaryContext calls so far. */
    synchronized int contextRetains() {
        return contextRetains;
    }

    /** Writes to device memory (a kernel's work), through a mapping or a cuMemAlloc block. */
    synchronized void writeDevice(long ptr, byte[] data) {
        Slice s = deviceSlice(ptr, data.length, "writeDevice");
        System.arraycopy(data, 0, s.array, s.offset, data.length);
    }

    /** Reads device memory. */
    synchronized byte[] readDevice(long ptr, int length) {
        Slice s = deviceSlice(ptr, length, "readDevice");
        return Arrays.copyOfRange(s.array, s.offset, s.offset + length);
    }

    // ------------------------------------------------------------------ CudaDriver

    private void enter(String method, String args) {
        calls.add(method + "(" + args + ")");
        RuntimeException e = thrown.remove(method);
        if (e != null) {
            throw e;
        }
        Deque<int[]> q = failures.get(method);
        if (q != null && !q.isEmpty()) {
            int[] head = q.peek();
            if (head[0] > 0) {
                head[0]--;
            } else {
                q.poll();
                throw error(head[1], method, args);
            }
        }
    }

    private static CudaException error(int code, String method, String args) {
        return new CudaException(code, NAMES.getOrDefault(code, "CUresult " + code), method + "(" + args + ")");
    }

    private void checkDevice(int device, String method) {
        if (device < 0 || device >= devices.size()) {
            throw error(101, method, "device=" + device);
        }
    }

    /** As the real driver: the call needs the device's primary context retained. */
    private void needsContext(int device, String method) {
        checkDevice(device, method);
        contexts.require(device, method);
    }

    @Override
    public synchronized void retainPrimaryContext(int device) {
        checkDevice(device, "retainPrimaryContext");
        enter("retainPrimaryContext", "device=" + device);
        contexts.retained(device);
        contextRetains++;
    }

    @Override
    public synchronized void releasePrimaryContext(int device) {
        checkDevice(device, "releasePrimaryContext");
        contexts.releasing(device); // counted as released even when the driver's call fails
        enter("releasePrimaryContext", "device=" + device);
    }

    @Override
    public synchronized String bindingsVersion() {
        return "simulated";
    }

    @Override
    public synchronized int driverVersion() {
        return 12090;
    }

    @Override
    public synchronized int deviceCount() {
        return devices.size();
    }

    @Override
    public synchronized CudaDeviceInfo deviceInfo(int device) {
        enter("deviceInfo", "device=" + device);
        checkDevice(device, "deviceInfo");
        return devices.get(device);
    }

    @Override
    public synchronized CudaMemInfo memGetInfo(int device) {
        enter("memGetInfo", "device=" + device);
        checkDevice(device, "memGetInfo");
        long total = devices.get(device).totalMemoryBytes();
        return new CudaMemInfo(total - deviceBytesUsed, total);
    }

    private void takeDeviceBytes(long bytes, String method, String args) {
        long total = devices.get(0).totalMemoryBytes();
        if (bytes > total - deviceBytesUsed) {
            throw error(CUDA_ERROR_OUT_OF_MEMORY, method, args);
        }
        deviceBytesUsed += bytes;
    }

    @Override
    public synchronized long memAlloc(int device, long bytes) {
        String args = "bytes=" + bytes;
        enter("memAlloc", args);
        needsContext(device, "memAlloc");
        checkDevice(device, "memAlloc");
        takeDeviceBytes(bytes, "memAlloc", args);
        long ptr = nextDevice;
        nextDevice += (bytes + 511) & ~511L;
        nextDevice += 512; // a gap, so that blocks are never adjacent
        deviceBlocks.put(ptr, new byte[Math.toIntExact(bytes)]);
        return ptr;
    }

    @Override
    public synchronized void memFree(int device, long ptr) {
        enter("memFree", "ptr=0x" + Long.toHexString(ptr));
        needsContext(device, "memFree");
        byte[] b = deviceBlocks.remove(ptr);
        if (b == null) {
            throw error(CUDA_ERROR_INVALID_VALUE, "memFree", "ptr=0x" + Long.toHexString(ptr));
        }
        deviceBytesUsed -= b.length;
    }

    @Override
    public synchronized long hostAlloc(int device, long bytes) {
        enter("hostAlloc", "bytes=" + bytes);
        needsContext(device, "hostAlloc");
        // 256 bytes past a page: aligned to 256 and to nothing more, as the driver promises no
        // more (a real cuMemHostAlloc of 256 bytes answered an address 1024 bytes past 2048).
        long ptr = nextHost + 256;
        nextHost += ((bytes + 256 + 4095) & ~4095L) + 4096;
        hostBlocks.put(ptr, new byte[Math.toIntExact(bytes)]);
        return ptr;
    }

    @Override
    public synchronized void hostFree(int device, long ptr) {
        enter("hostFree", "ptr=0x" + Long.toHexString(ptr));
        needsContext(device, "hostFree");
        if (hostBlocks.remove(ptr) == null) {
            throw error(CUDA_ERROR_INVALID_VALUE, "hostFree", "ptr=0x" + Long.toHexString(ptr));
        }
    }

    @Override
    public synchronized long allocationGranularity(int device) {
        enter("allocationGranularity", "device=" + device);
        return granularity;
    }

    @Override
    public synchronized long addressReserve(int device, long bytes, long alignment) {
        String args = "bytes=" + bytes + ", alignment=" + alignment;
        enter("addressReserve", args);
        needsContext(device, "addressReserve");
        if (bytes <= 0 || bytes % granularity != 0 || alignment < 0 || (alignment & (alignment - 1)) != 0) {
            throw error(CUDA_ERROR_INVALID_VALUE, "addressReserve", args);
        }
        long reserved = 0;
        for (long r : reservations.values()) {
            reserved += r;
        }
        if (bytes > ADDRESS_SPACE_BYTES - reserved || alignment > ADDRESS_SPACE_BYTES) {
            throw error(CUDA_ERROR_OUT_OF_MEMORY, "addressReserve", args);
        }
        long a = Math.max(alignment, granularity);
        long ptr = (nextReserve + a - 1) & -a;
        nextReserve = ptr + bytes + granularity;
        reservations.put(ptr, bytes);
        return ptr;
    }

    @Override
    public synchronized void addressFree(int device, long ptr, long bytes) {
        String args = "ptr=0x" + Long.toHexString(ptr) + ", bytes=" + bytes;
        enter("addressFree", args);
        needsContext(device, "addressFree");
        Long size = reservations.get(ptr);
        if (size == null || size != bytes) {
            throw error(CUDA_ERROR_INVALID_VALUE, "addressFree", args);
        }
        if (!mappings.subMap(ptr, ptr + bytes).isEmpty()) {
            throw error(CUDA_ERROR_INVALID_VALUE, "addressFree (still mapped)", args);
        }
        reservations.remove(ptr);
    }

    @Override
    public synchronized long memCreate(int device, long bytes) {
        String args = "bytes=" + bytes;
        enter("memCreate", args);
        needsContext(device, "memCreate");
        checkDevice(device, "memCreate");
        if (bytes <= 0 || bytes % granularity != 0) {
            throw error(CUDA_ERROR_INVALID_VALUE, "memCreate", args);
        }
        takeDeviceBytes(bytes, "memCreate", args);
        long h = nextHandle++;
        physicalCreates++;
        physical.put(h, new byte[Math.toIntExact(bytes)]);
        return h;
    }

    @Override
    public synchronized void memMap(int device, long ptr, long bytes, long handle) {
        String args = "ptr=0x" + Long.toHexString(ptr) + ", bytes=" + bytes + ", handle=" + handle;
        enter("memMap", args);
        needsContext(device, "memMap");
        byte[] p = physical.get(handle);
        Map.Entry<Long, Long> r = reservations.floorEntry(ptr);
        if (p == null || p.length != bytes || r == null || ptr + bytes > r.getKey() + r.getValue()
                || ptr % granularity != 0) {
            throw error(CUDA_ERROR_INVALID_VALUE, "memMap", args);
        }
        Map.Entry<Long, Long> below = mappings.floorEntry(ptr + bytes - 1);
        if (below != null && below.getKey() + physical.get(below.getValue()).length > ptr) {
            throw error(CUDA_ERROR_INVALID_VALUE, "memMap (overlaps a mapping)", args);
        }
        mappings.put(ptr, handle);
    }

    @Override
    public synchronized void memSetAccess(int device, long ptr, long bytes) {
        String args = "ptr=0x" + Long.toHexString(ptr) + ", bytes=" + bytes;
        enter("memSetAccess", args);
        needsContext(device, "memSetAccess");
        Long h = mappings.get(ptr);
        if (h == null || physical.get(h).length != bytes) {
            throw error(CUDA_ERROR_INVALID_VALUE, "memSetAccess", args);
        }
    }

    @Override
    public synchronized void memUnmap(int device, long ptr, long bytes) {
        String args = "ptr=0x" + Long.toHexString(ptr) + ", bytes=" + bytes;
        enter("memUnmap", args);
        needsContext(device, "memUnmap");
        Long h = mappings.get(ptr);
        if (h == null || physical.get(h).length != bytes) {
            throw error(CUDA_ERROR_INVALID_VALUE, "memUnmap", args);
        }
        mappings.remove(ptr);
    }

    @Override
    public synchronized void memRelease(int device, long handle) {
        enter("memRelease", "handle=" + handle);
        needsContext(device, "memRelease");
        if (mappings.containsValue(handle)) {
            // Real CUDA defers the release until unmapped; bfc-cuda always unmaps first.
            throw error(CUDA_ERROR_INVALID_VALUE, "memRelease (still mapped)", "handle=" + handle);
        }
        byte[] p = physical.remove(handle);
        if (p == null) {
            throw error(400, "memRelease", "handle=" + handle);
        }
        deviceBytesUsed -= p.length;
    }

    @Override
    public synchronized long eventCreate(int device) {
        enter("eventCreate", "device=" + device);
        needsContext(device, "eventCreate");
        long e = nextEvent++;
        events.put(e, EventState.CREATED);
        return e;
    }

    private void requireEvent(long event) {
        if (!events.containsKey(event)) {
            throw error(400, "event", "hEvent=0x" + Long.toHexString(event));
        }
    }

    @Override
    public void eventRecord(int device, long event, long stream) {
        Runnable inCall;
        synchronized (this) {
            StreamHandles.check(stream); // as the real driver's binding checks it
            enter("eventRecord", "event=0x" + Long.toHexString(event) + ", stream=" + stream);
            needsContext(device, "eventRecord");
            requireEvent(event);
            inCall = during.remove("eventRecord");
        }
        if (inCall != null) {
            inCall.run();
        }
        synchronized (this) {
            if (contexts.count(device) == 0) {
                // The real driver checked the retain, then made the call: here the last retain
                // was released in between, and the call ran into a destroyed context with an
                // event destroyed with it (in the driver, a use after free: it may kill the JVM).
                throw new AssertionError("eventRecord(event=0x" + Long.toHexString(event) + ") ran on into device "
                        + device + "'s primary context after its last retain was released");
            }
            requireEvent(event);
            events.put(event, EventState.PENDING);
        }
    }

    @Override
    public synchronized boolean eventQuery(int device, long event) {
        enter("eventQuery", "event=0x" + Long.toHexString(event));
        needsContext(device, "eventQuery");
        requireEvent(event);
        return events.get(event) != EventState.PENDING;
    }

    @Override
    public synchronized void eventSynchronize(int device, long event) {
        enter("eventSynchronize", "event=0x" + Long.toHexString(event));
        needsContext(device, "eventSynchronize");
        requireEvent(event);
        events.put(event, EventState.COMPLETE);
    }

    @Override
    public synchronized void eventDestroy(int device, long event) {
        enter("eventDestroy", "event=0x" + Long.toHexString(event));
        needsContext(device, "eventDestroy");
        requireEvent(event);
        events.remove(event);
    }

    @Override
    public synchronized void contextSynchronize(int device) {
        enter("contextSynchronize", "device=" + device);
        needsContext(device, "contextSynchronize");
        completeAllEvents();
    }

    @Override
    public synchronized void memcpyDtoH(int device, long hostPtr, long devicePtr, long bytes) {
        enter("memcpyDtoH", "host=0x" + Long.toHexString(hostPtr) + ", device=0x" + Long.toHexString(devicePtr)
                + ", bytes=" + bytes);
        needsContext(device, "memcpyDtoH");
        Slice dst = hostSlice(hostPtr, bytes);
        Slice src = deviceSlice(devicePtr, bytes, "memcpyDtoH");
        System.arraycopy(src.array, src.offset, dst.array, dst.offset, Math.toIntExact(bytes));
    }

    @Override
    public synchronized void memcpyHtoD(int device, long devicePtr, long hostPtr, long bytes) {
        enter("memcpyHtoD", "device=0x" + Long.toHexString(devicePtr) + ", host=0x" + Long.toHexString(hostPtr)
                + ", bytes=" + bytes);
        needsContext(device, "memcpyHtoD");
        Slice src = hostSlice(hostPtr, bytes);
        Slice dst = deviceSlice(devicePtr, bytes, "memcpyHtoD");
        System.arraycopy(src.array, src.offset, dst.array, dst.offset, Math.toIntExact(bytes));
    }

    private record Slice(byte[] array, int offset) {
    }

    private Slice hostSlice(long ptr, long bytes) {
        Map.Entry<Long, byte[]> e = hostBlocks.floorEntry(ptr);
        if (e == null || ptr + bytes > e.getKey() + e.getValue().length) {
            throw error(CUDA_ERROR_INVALID_VALUE, "host access", "ptr=0x" + Long.toHexString(ptr));
        }
        return new Slice(e.getValue(), (int) (ptr - e.getKey()));
    }

    private Slice deviceSlice(long ptr, long bytes, String method) {
        Map.Entry<Long, Long> m = mappings.floorEntry(ptr);
        if (m != null) {
            byte[] p = physical.get(m.getValue());
            if (ptr + bytes <= m.getKey() + p.length) {
                return new Slice(p, (int) (ptr - m.getKey()));
            }
        }
        Map.Entry<Long, byte[]> b = deviceBlocks.floorEntry(ptr);
        if (b != null && ptr + bytes <= b.getKey() + b.getValue().length) {
            return new Slice(b.getValue(), (int) (ptr - b.getKey()));
        }
        throw error(CUDA_ERROR_ILLEGAL_ADDRESS, method, "ptr=0x" + Long.toHexString(ptr) + ", bytes=" + bytes);
    }
}
