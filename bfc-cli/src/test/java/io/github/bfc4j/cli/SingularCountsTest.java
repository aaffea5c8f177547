/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** One of a thing is printed as one, not "1 calls", by every command that counts. */
class SingularCountsTest {
    private final Cli cli = new Cli();

    @TempDir
    Path dir;

    /** A workload trace of one call: an allocation of the whole 1 MiB limit, one chunk in one region. */
    static Path oneCall(Path dir, String name, long bytes) throws IOException {
        return Files.writeString(dir.resolve(name), "bfctrace 1\nname " + name + ": one call\nsource workload: a test\n"
                + "options memory_limit=1048576 allow_growth=false garbage_collection=false fragmentation_fraction=0"
                + " timing_counter=false\nsuballocator sim base=0x7f0000000000 capacity=69206016 gap=0"
                + " coalescing=true\nalloc 1 " + bytes + "\n");
    }

    @Test
    void replayVerifyReportExportAndGenerate() throws IOException {
        Path one = oneCall(dir, "one.bfctrace", 1 << 20);
        Path oom = oneCall(dir, "oom.bfctrace", 2 << 20);

        assertThat(cli.run("replay", one)).as(cli.err).isZero();
        assertThat(cli.out).contains("trace          " + one + " (1 call)\n");
        assertThat(cli.run("replay", "--check-invariants", one)).as(cli.err).isZero();
        assertThat(cli.out).contains("invariants     held after the 1 call\n");

        assertThat(cli.run("verify", one)).as(cli.err).isZero();
        assertThat(cli.out).startsWith("PASS " + one + " 1 call (a workload trace");

        Path html = dir.resolve("one.html");
        assertThat(cli.run("report", one, "-o", html)).as(cli.err).isZero();
        assertThat(cli.out).endsWith("): 1 call, 1 timeline step, 1 occupancy map, 0 out-of-memory failures marked\n");
        assertThat(Files.readString(html)).contains("one.bfctrace \u2014 1 call<")
                .contains("<td>calls</td><td>1 (1 successful allocation)</td>");
        assertThat(cli.run("report", oom, "-o", dir.resolve("oom.html"))).as(cli.err).isZero();
        assertThat(cli.out).endsWith(", 1 out-of-memory failure marked\n");

        assertThat(cli.run("export-snapshot", one, "-o", dir.resolve("one.pickle"), "--max-entries", "1"))
                .as(cli.err).isZero();
        assertThat(cli.out).contains("): 1 segment, 1 block, 1 event (the latest; 1 older dropped, see"
                + " --max-entries), at the end (1 call)\n");

        assertThat(cli.run("generate", "--seed", "1", "--calls", "1", "-o", dir.resolve("g.bfctrace")))
                .as(cli.err).isZero();
        assertThat(cli.out).startsWith("wrote " + dir.resolve("g.bfctrace") + ": seed 1, 1 call, memory_limit=");
    }

    @Test
    void importTfLog() throws IOException {
        String p = "I0000 00:00:1.0 1 bfc_allocator.cc:";
        Path log = Files.writeString(dir.resolve("one.log"),
                p + "171] Extending allocation by 2.00MiB bytes for GPU_0_bfc.\n"
                + p + "181] Allocated memory at 0x7f0000001000 to 0x7f0000201000\n"
                + p + "323] AllocateRaw GPU_0_bfc  1000 0x7f0000001000\n"
                + p + "324] [mem-debug] AllocateRaw,GPU_0_bfc,1000,0x7f0000001000,*** Begin stack trace ***\n"
                + "\ttensorflow::MatMulOp::Compute(tensorflow::OpKernelContext*)\n"
                + "*** End stack trace ***\n"
                + p + "1090] InUse at 7f0000001000 of size 1024 by op dense/MatMul action_count 1 step 7 next 2\n");
        Path trace = dir.resolve("one.bfctrace");
        assertThat(cli.run("import-tf-log", log, "--allocator", "GPU_0_bfc", "-o", trace, "--memory-limit", "1GiB"))
                .as(cli.err).isZero();
        assertThat(cli.out.lines()).startsWith("wrote " + trace + ": workload trace, 1 call (1 alloc, 0 frees), 1 region"
                + " in the log", "provenance: 1 alloc with its stack trace, 1 with its op name (#@ lines,"
                + " docs/trace-format.md)");
        assertThat(Files.readString(trace)).contains("# imported by bfc import-tf-log from one.log: 1 alloc, 0 frees,"
                + " 0 DeallocateRaw(nullptr) dropped, 1 region\n");

        Path oneLine = Files.writeString(dir.resolve("other.log"), "a log of something else\n");
        assertThat(cli.run("import-tf-log", oneLine, "--allocator", "GPU_0_bfc", "-o", dir.resolve("x.bfctrace")))
                .isEqualTo(2);
        assertThat(cli.err).startsWith("bfc import-tf-log: " + oneLine + ": none of its 1 line names a BFC allocator");
    }

    @Test
    void serve() throws Exception {
        Path one = oneCall(dir, "one.bfctrace", 1 << 20);
        try (ServeProcess serve = new ServeProcess("--port", "0", "--trace", one.toString())) {
            serve.awaitPort();
            assertThat(serve.awaitReplayed()[0]).isEqualTo(1);
            assertThat(serve.output()).contains("replayed 1 call: live=1 ");
        }
    }
}
