/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import java.util.Map;
import org.bytedeco.cuda.cudart.CUfunc_st;
import org.bytedeco.cuda.cudart.CUmod_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;

/**
 * The process {@link RealGpuFaultTest} starts on a machine with a GPU: a kernel that fails (an
 * assert, or a store to address 0) behind a stream-ordered free on device 0, then the
 * allocator's close, then a new allocator. A kernel's failure is fatal to the CUDA state of its
 * process, hence a process of its own. Prints {@code key=value} lines.
 */
final class FaultingKernelRun {

    /** Spins about 100 million clocks, so that the free's event is recorded before the failure. */
    private static final String SPIN = spin(100_000_000L);

    /** The start of a PTX module. */
    static final String HEADER = ".version 7.0\n.target sm_50\n.address_size 64\n";

    /**
     * PTX that spins for {@code clocks} of the SM's clock; declares nothing, uses the registers
     * {@code %p} (pred) and {@code %t0}, {@code %t1}, {@code %d} (b64), and the label {@code SPIN}.
     */
    static String spin(long clocks) {
        return String.join("\n",
                "  mov.u64 %t0, %clock64;",
                "SPIN:",
                "  mov.u64 %t1, %clock64;", "  sub.s64 %d, %t1, %t0;", "  setp.lt.s64 %p, %d, " + clocks + ";",
                "  @%p bra SPIN;");
    }

    /** A store to address 0: CUDA_ERROR_ILLEGAL_ADDRESS. */
    static final String STORE_TO_NULL = HEADER + String.join("\n",
            ".visible .entry fail()", "{",
            "  .reg .pred %p;", "  .reg .b64 %t0, %t1, %d, %a;", "  .reg .b32 %v;",
            SPIN,
            "  mov.u64 %a, 0;", "  mov.u32 %v, 1;", "  st.global.u32 [%a], %v;",
            "  ret;", "}", "");

    /** A failed assert (what CUDA C's assert calls): CUDA_ERROR_ASSERT. */
    static final String FAILED_ASSERT = HEADER + String.join("\n",
            ".extern .func __assertfail (.param .b64 a0, .param .b64 a1, .param .b32 a2, .param .b64 a3,"
                    + " .param .b64 a4);",
            ".global .align 1 .b8 what[6] = {102, 97, 117, 108, 116, 0};",
            ".visible .entry fail()", "{",
            "  .reg .pred %p;", "  .reg .b64 %t0, %t1, %d, %m;",
            SPIN,
            "  mov.u64 %m, what;", "  cvta.global.u64 %m, %m;",
            "  {",
            "  .param .b64 p0;", "  st.param.b64 [p0+0], %m;",
            "  .param .b64 p1;", "  st.param.b64 [p1+0], %m;",
            "  .param .b32 p2;", "  st.param.b32 [p2+0], 1;",
            "  .param .b64 p3;", "  st.param.b64 [p3+0], %m;",
            "  .param .b64 p4;", "  st.param.b64 [p4+0], 1;",
            "  call.uni __assertfail, (p0, p1, p2, p3, p4);",
            "  }",
            "  ret;", "}", "");

    private FaultingKernelRun() {
    }

    private static GpuBfcOptions options() {
        return GpuBfcOptions.builder().memoryLimitBytes(256L << 20).environment(Map.<String, String>of()::get)
                .build();
    }

    /**
     * Runs the scenario.
     *
     * @param args {@code assert} or {@code store}
     */
    public static void main(String[] args) throws Exception {
        String ptx = args[0].equals("assert") ? FAILED_ASSERT : STORE_TO_NULL;
        LogCapture log = new LogCapture(GpuBfcAllocator.class, false); // open until the process ends
        CudaDriver d = CudaProbe.driver();
        GpuBfcAllocator gpu = GpuBfcAllocators.create(0, options());
        gpu.allocateRaw(256, 64 << 20);
        long p = gpu.allocateRaw(256, 1 << 20);
        // The allocator's calls leave device 0's primary context current on this thread.
        CUmod_st module = new CUmod_st();
        CUfunc_st function = new CUfunc_st();
        try (BytePointer image = new BytePointer(ptx)) {
            System.out.println("load=" + cudart.cuModuleLoadData(module, image));
        }
        System.out.println("function=" + cudart.cuModuleGetFunction(function, module, "fail"));
        System.out.println("launch=" + cudart.cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, (CUstream_st) null,
                (Pointer) null, (Pointer) null));
        gpu.deallocateRaw(p, 0); // its event is recorded behind the kernel
        Thread.sleep(1000);
        System.out.println("warnings=" + log.messages().size());
        try {
            gpu.close();
            System.out.println("close=ok");
        } catch (CudaException e) {
            System.out.println("close=" + e.getMessage());
        }
        int[] flags = new int[1];
        int[] active = new int[1];
        cudart.cuDevicePrimaryCtxGetState(0, flags, active);
        System.out.println("active=" + active[0]);
        try (GpuBfcAllocator again = GpuBfcAllocators.create(0, options());
                BytePointer host = new BytePointer(8)) {
            long q = again.allocateRaw(256, 1 << 20);
            host.putLong(0, 0x5eedL);
            d.memcpyHtoD(0, q, host.address(), 8);
            host.putLong(0, 0);
            d.memcpyDtoH(0, host.address(), q, 8);
            System.out.println("again=" + (host.getLong(0) == 0x5eedL ? "ok" : "wrong data"));
            again.deallocateRaw(q);
        } catch (RuntimeException e) {
            System.out.println("again=" + e.getMessage());
        }
        System.out.flush();
        Runtime.getRuntime().halt(0); // no shutdown work in a process whose CUDA state may be broken
    }
}
