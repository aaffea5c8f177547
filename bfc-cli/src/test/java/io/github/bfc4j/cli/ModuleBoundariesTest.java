/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.module.Configuration;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.lang.module.ResolvedModule;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.spi.ToolProvider;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The published modules on a module path, built from this test's class path (which holds every
 * module bfc-cli depends on, as jars or as target/classes): each exports its API packages only
 * (and bfc-core its internal package to bfc-cli alone), they resolve, their classes use only
 * modules they read (jdeps), and an allocator runs from them in a module layer. The tests
 * themselves run on the class path (the parent pom says why).
 */
class ModuleBoundariesTest {

    /** Each module of bfc-cli's dependencies and bfc-cli, with the packages it must export. */
    private static final Map<String, Set<String>> EXPORTS = new LinkedHashMap<>();

    static {
        EXPORTS.put("io.github.bfc4j.core", Set.of("io.github.bfc4j.core", "io.github.bfc4j.core.sim",
                "io.github.bfc4j.trace"));
        EXPORTS.put("io.github.bfc4j.cpu", Set.of("io.github.bfc4j.cpu"));
        EXPORTS.put("io.github.bfc4j.cuda", Set.of("io.github.bfc4j.cuda"));
        EXPORTS.put("io.github.bfc4j.micrometer", Set.of("io.github.bfc4j.micrometer"));
        EXPORTS.put("io.github.bfc4j.cli", Set.of());
    }

    /**
     * The one export to a module only: bfc-cli writes its {@code -o} files with bfc-core's
     * internal ReplacingFile, as bfc-core writes its traces and pickles, and reads gzip logs with
     * its GzipMembers, as bfc-core reads gzip traces; no other module reads the internal package.
     */
    private static final String QUALIFIED_EXPORT = "io.github.bfc4j.core exports io.github.bfc4j.core.internal"
            + " to [io.github.bfc4j.cli]";

    /** JavaCPP's natives for this platform: a module nothing requires (users add it). */
    private static final String JAVACPP_NATIVES = "org.bytedeco.javacpp.linux.x86_64";

    private static List<Path> modulePath;
    private static ModuleFinder finder;

    @BeforeAll
    static void findModules() throws IOException {
        modulePath = new ArrayList<>();
        for (Path entry : TestClassPath.entries()) {
            // The test classes and the test-only libraries stay out: they are no modules of ours.
            String name = entry.getFileName() == null ? "" : entry.getFileName().toString();
            if (Files.exists(entry) && !name.equals("test-classes") && !name.endsWith("-tests.jar")
                    && !name.startsWith("surefire")) {
                modulePath.add(entry);
            }
        }
        finder = ModuleFinder.of(modulePath.toArray(Path[]::new));
    }

    @Test
    void eachModuleExportsItsApiPackagesOnly() {
        List<String> qualified = new ArrayList<>();
        for (Map.Entry<String, Set<String>> e : EXPORTS.entrySet()) {
            ModuleReference ref = finder.find(e.getKey()).orElseThrow(
                    () -> new AssertionError("module " + e.getKey() + " not found on " + modulePath));
            ModuleDescriptor d = ref.descriptor();
            assertThat(d.isAutomatic()).as("%s has a module-info", e.getKey()).isFalse();
            Set<String> exported = new TreeSet<>();
            for (ModuleDescriptor.Exports x : d.exports()) {
                if (x.isQualified()) {
                    qualified.add(e.getKey() + " exports " + x.source() + " to " + new TreeSet<>(x.targets()));
                } else {
                    exported.add(x.source());
                }
            }
            assertThat(exported).as("%s exports", e.getKey()).isEqualTo(new TreeSet<>(e.getValue()));
        }
        // Without it, bfc on a module path fails writing its -o file (IllegalAccessError).
        assertThat(qualified).as("the exports to a module only").containsExactly(QUALIFIED_EXPORT);
        assertThat(finder.find("io.github.bfc4j.core").orElseThrow().descriptor().packages())
                .as("the internal package is in the module, not exported")
                .contains("io.github.bfc4j.core.internal", "io.github.bfc4j.core.jfr");
    }

    @Test
    void theModulesResolveAndTheirClassesUseOnlyWhatTheyRead() {
        Configuration cf = ModuleLayer.boot().configuration().resolve(finder, ModuleFinder.of(), EXPORTS.keySet());
        // jdeps --check prints, per module, the descriptor its classes need.
        ToolProvider jdeps = ToolProvider.findFirst("jdeps").orElseThrow();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        List<String> args = List.of("--multi-release", "17", "--module-path", join(modulePath),
                "--check", String.join(",", EXPORTS.keySet()));
        int rc = jdeps.run(new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), args.toArray(String[]::new));
        String report = out.toString(StandardCharsets.UTF_8);
        assertThat(rc).as("jdeps %s\n%s%s", args, report, err).isZero();
        Matcher section = Pattern.compile("\\[Suggested module descriptor for ([\\w.]+)\\]\\n((?:    requires .*\\n)+)")
                .matcher(report);
        Set<String> checked = new TreeSet<>();
        while (section.find()) {
            String module = section.group(1);
            ResolvedModule resolved = cf.findModule(module).orElseThrow();
            Set<String> reads = new TreeSet<>();
            resolved.reads().forEach(r -> reads.add(r.name()));
            Matcher needed = Pattern.compile("requires (?:transitive |mandated )?([\\w.]+);").matcher(section.group(2));
            while (needed.find()) {
                if (!needed.group(1).equals("java.base")) {
                    assertThat(reads).as("%s uses %s: its module-info must require it (jdeps:\n%s)",
                            module, needed.group(1), report).contains(needed.group(1));
                }
            }
            checked.add(module);
        }
        assertThat(checked).as("jdeps analysed\n%s", report).isEqualTo(new TreeSet<>(EXPORTS.keySet()));
    }

    @Test
    void anAllocatorRunsFromTheModulesInALayer() throws Exception {
        Set<String> roots = Set.of("io.github.bfc4j.cpu", JAVACPP_NATIVES);
        Configuration cf = ModuleLayer.boot().configuration().resolve(finder, ModuleFinder.of(), roots);
        ModuleLayer.Controller controller = ModuleLayer.defineModulesWithOneLoader(cf, List.of(ModuleLayer.boot()),
                ClassLoader.getPlatformClassLoader());
        ModuleLayer layer = controller.layer();
        enableNativeAccess(controller, layer.findModule("org.bytedeco.javacpp").orElseThrow());
        ClassLoader loader = layer.findLoader("io.github.bfc4j.cpu");
        Class<?> bfc = loader.loadClass("io.github.bfc4j.core.BfcAllocator");
        Class<?> subAllocator = loader.loadClass("io.github.bfc4j.core.SubAllocator");
        Class<?> host = loader.loadClass("io.github.bfc4j.cpu.AlignedHostSubAllocator");
        assertThat(bfc.getModule().getName()).isEqualTo("io.github.bfc4j.core");
        assertThat(host.getModule().getName()).isEqualTo("io.github.bfc4j.cpu");
        assertThat(bfc.getModule().isExported("io.github.bfc4j.core.internal")).isFalse();

        // README's host example, through reflection on the layer's classes.
        Object builder = bfc.getMethod("builder").invoke(null);
        Class<?> builderType = builder.getClass();
        builderType.getMethod("name", String.class).invoke(builder, "cpu_bfc");
        builderType.getMethod("memoryLimit", long.class).invoke(builder, 1L << 30);
        builderType.getMethod("subAllocator", subAllocator).invoke(builder, host.getConstructor().newInstance());
        try (AutoCloseable cpu = (AutoCloseable) builderType.getMethod("build").invoke(builder)) {
            Method allocate = bfc.getMethod("allocate", long.class);
            try (AutoCloseable a = (AutoCloseable) allocate.invoke(cpu, 1000L)) {
                Class<?> allocation = a.getClass();
                ByteBuffer buf = (ByteBuffer) allocation.getMethod("asByteBuffer").invoke(a);
                buf.putLong(0, 42);
                assertThat(buf.getLong(0)).isEqualTo(42);
                assertThat(allocation.getMethod("size").invoke(a)).isEqualTo(1024L);
            }
        }
    }

    /**
     * From JDK 22 on, lets the layer's JavaCPP load its native libraries without the JVM's
     * warning, as an application that defines a layer does ({@code enableNativeAccess} is not in
     * JDK 17; the command-line equivalent is {@code --enable-native-access}).
     */
    private static void enableNativeAccess(ModuleLayer.Controller controller, Module module) throws Exception {
        if (Runtime.version().feature() >= 22) {
            ModuleLayer.Controller.class.getMethod("enableNativeAccess", Module.class).invoke(controller, module);
        }
    }

    private static String join(List<Path> paths) {
        StringBuilder sb = new StringBuilder();
        for (Path p : paths) {
            sb.append(sb.length() == 0 ? "" : File.pathSeparator).append(p);
        }
        return sb.toString();
    }
}
