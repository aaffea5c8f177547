/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.bfc4j.core.ChildProcess;
import io.github.bfc4j.core.SourceTree;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bin/bfc} builds {@code bfc-cli/target/bfc.jar} when it is missing and again when a
 * source of it is newer than the jar, and not otherwise. Runs the real script in a copy of the
 * repository's layout, with stand-ins for {@code mvn} (it logs its call and writes the jar) and
 * {@code java} (it logs its call) first on the {@code PATH}.
 */
class LauncherRebuildTest {
    /** The repository, found whatever the working directory (SourceTree). */
    private static final Path REPO = SourceTree.root();
    private static final Instant BUILT = Instant.parse("2026-01-02T00:00:00Z");
    /** How long one bin/bfc may run here (its Maven and java are stand-ins that return within seconds). */
    private static final long RUN_LIMIT_SECONDS = 30;

    @TempDir
    Path root;
    private Path log;
    private Path jar;
    private Path fakeBin;

    @BeforeEach
    void layOut() throws IOException {
        assumeTrue(Files.isExecutable(Path.of("/bin/sh")), "bin/bfc is a POSIX shell script: no /bin/sh here");
        Files.createDirectories(root.resolve("bin"));
        Files.copy(REPO.resolve("bin/bfc"), root.resolve("bin/bfc"));
        for (String m : List.of("bfc-core", "bfc-cpu", "bfc-cuda", "bfc-micrometer", "bfc-cli", "bfc-bench")) {
            write(root.resolve(m).resolve("src/main/java/A.java"), "class A {}");
            write(root.resolve(m).resolve("pom.xml"), "<project/>");
        }
        write(root.resolve("pom.xml"), "<project/>");
        jar = root.resolve("bfc-cli/target/bfc.jar");
        log = root.resolve("calls.log");
        fakeBin = root.resolve("fake-bin");
        script(fakeBin.resolve("mvn"), "echo \"mvn $*\" >> '" + log + "'\nmkdir -p '" + jar.getParent()
                + "'\n: > '" + jar + "'\n");
        script(fakeBin.resolve("java"), "echo \"java $*\" >> '" + log + "'\n");
        // Every source and folder older than BUILT; a jar written later is newer than all of
        // them. (A folder counts too: adding or deleting a source changes its folder's time.)
        try (var files = Files.walk(root)) {
            for (Path p : files.toList()) {
                Files.setLastModifiedTime(p, FileTime.from(BUILT.minusSeconds(3600)));
            }
        }
    }

    @Test
    void buildsOnFirstUseThenRunsTheJar() throws Exception {
        Run r = bfc("--version");
        assertThat(r.err).contains("first run");
        assertThat(r.calls).containsExactly("mvn -B -q -DskipTests -pl bfc-cli -am package",
                "java -jar " + jar + " --version");
    }

    @Test
    void findsTheRepositoryThroughASymbolicLinkOnThePath() throws Exception {
        // ln -s ~/bfc4j/bin/bfc ~/.local/bin/bfc: the script's own directory is the link's.
        Path elsewhere = Files.createDirectories(root.resolve("home/.local/bin"));
        Path relative = Files.createSymbolicLink(elsewhere.resolve("bfc"), elsewhere.relativize(root.resolve("bin/bfc")));
        Run first = run(relative, "--version");
        assertThat(first.status).as("exit status; stderr:%n%s", first.err).isZero();
        assertThat(first.err).contains("building " + jar + " (first run");
        assertThat(first.calls).containsExactly("mvn -B -q -DskipTests -pl bfc-cli -am package in " + root.toRealPath(),
                "java -jar " + jar + " --version");

        // A link to that link, by absolute path: up to date now, so no build.
        Path chained = Files.createSymbolicLink(root.resolve("home/bfc"), relative.toAbsolutePath());
        Run second = run(chained, "demo");
        assertThat(second.status).as("exit status; stderr:%n%s", second.err).isZero();
        assertThat(second.calls).containsExactly("java -jar " + jar + " demo");
    }

    @Test
    void showsMavensOutputOnlyWhenTheBuildFails() throws Exception {
        // Maven prints colour codes even with -B -q: a build that succeeds shows none of its output.
        script(fakeBin.resolve("mvn"), "echo \"mvn $*\" >> '" + log + "'\nprintf '\\033[0m\\033[0m'\n"
                + "echo 'maven says' >&2\nmkdir -p '" + jar.getParent() + "'\n: > '" + jar + "'\n");
        Run ok = bfc("--version");
        assertThat(ok.err).isEqualTo("bfc: building " + jar + " (first run; takes a minute)...\n");
        assertThat(ok.calls).containsExactly("mvn -B -q -DskipTests -pl bfc-cli -am package",
                "java -jar " + jar + " --version");

        Files.delete(jar);
        script(fakeBin.resolve("mvn"), "echo \"mvn $*\" >> '" + log + "'\necho '[ERROR] COMPILATION ERROR'\n"
                + "echo 'on stderr' >&2\nexit 1\n");
        Run failed = run("--version");
        assertThat(failed.status).isEqualTo(2);
        assertThat(failed.err).contains("[ERROR] COMPILATION ERROR\n").contains("on stderr\n")
                .contains("bfc: the build failed (Maven's output above)");
        assertThat(failed.calls).containsExactly("mvn -B -q -DskipTests -pl bfc-cli -am package");
    }

    @Test
    void aBuildThatCouldNotDownloadSaysWhatItNeeds() throws Exception {
        // Maven 3.8's words with no network and a plugin or library missing from ~/.m2.
        script(fakeBin.resolve("mvn"), "echo \"mvn $*\" >> '" + log + "'\n"
                + "echo '[ERROR] Non-resolvable import POM: Could not transfer artifact org.junit:junit-bom:pom:5.13.4"
                + " from/to central (https://repo.maven.apache.org/maven2): transfer failed for"
                + " https://repo.maven.apache.org/maven2/org/junit/junit-bom/5.13.4/junit-bom-5.13.4.pom:"
                + " Unknown host repo.maven.apache.org'\nexit 1\n");
        Run failed = run("--version");
        assertThat(failed.status).isEqualTo(2);
        assertThat(failed.err).contains("Unknown host repo.maven.apache.org\n")
                .contains("bfc: the build failed (Maven's output above)")
                .contains("bfc: Maven could not download a plugin or library the build needs")
                .contains("The build needs no network once Maven's local repository (~/.m2/repository) holds them");
        assertThat(failed.calls).containsExactly("mvn -B -q -DskipTests -pl bfc-cli -am package");

        // The same in offline mode (mvn -o, or <offline> in settings.xml).
        script(fakeBin.resolve("mvn"), "echo \"mvn $*\" >> '" + log + "'\n"
                + "echo '[ERROR] Plugin org.apache.maven.plugins:maven-shade-plugin:3.5.3 or one of its dependencies"
                + " could not be resolved: Cannot access central (https://repo.maven.apache.org/maven2) in offline mode"
                + " and the artifact org.apache.maven.plugins:maven-shade-plugin:jar:3.5.3 has not been downloaded"
                + " from it before.'\nexit 1\n");
        assertThat(run("--version").err).contains("bfc: Maven could not download a plugin or library the build needs");
    }

    @Test
    void aBuildThatFailedForAnotherReasonSaysNothingOfDownloads() throws Exception {
        script(fakeBin.resolve("mvn"), "echo \"mvn $*\" >> '" + log + "'\necho '[ERROR] COMPILATION ERROR'\nexit 1\n");
        Run failed = run("--version");
        assertThat(failed.status).isEqualTo(2);
        assertThat(failed.err).contains("bfc: the build failed (Maven's output above)").doesNotContain("download");
    }

    @Test
    void twoCommandsStartedTogetherBuildOnce() throws Exception {
        // Two Mavens in the same target directories break each other's build (compilation
        // errors in whichever module they meet): the second command waits, then finds the jar made.
        script(fakeBin.resolve("mvn"), "echo \"mvn $*\" >> '" + log + "'\nsleep 2\nmkdir -p '" + jar.getParent()
                + "'\n: > '" + jar + "'\n");
        // Their standard error in files, not pipes: a command that never ended would block the
        // reading of a pipe to its end, and the limit below would never be reached.
        List<String> commands = List.of("verify", "demo");
        List<Process> both = new ArrayList<>();
        for (String command : commands) {
            ProcessBuilder pb = new ProcessBuilder("/bin/sh", root.resolve("bin/bfc").toString(), command)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .redirectError(root.resolve("err-" + command + ".txt").toFile());
            pb.environment().put("PATH", fakeBin + ":" + System.getenv("PATH"));
            both.add(pb.start());
        }
        List<String> errs = new ArrayList<>();
        try {
            for (int i = 0; i < both.size(); i++) {
                Process p = both.get(i);
                Path err = root.resolve("err-" + commands.get(i) + ".txt");
                if (!p.waitFor(RUN_LIMIT_SECONDS, TimeUnit.SECONDS)) {
                    throw new AssertionError("bin/bfc " + commands.get(i) + " still running after "
                            + RUN_LIMIT_SECONDS + " s (ended with the other); stderr:\n" + Files.readString(err));
                }
                errs.add(Files.readString(err));
                assertThat(p.exitValue()).as("exit status; stderr:%n%s", errs.get(i)).isZero();
            }
        } finally {
            for (Process p : both) {
                if (p.isAlive()) {
                    ChildProcess.end(p);
                }
            }
        }
        assertThat(Files.readAllLines(log)).as("stderr:%n%s", errs).containsExactlyInAnyOrder(
                "mvn -B -q -DskipTests -pl bfc-cli -am package", "java -jar " + jar + " verify",
                "java -jar " + jar + " demo");
        assertThat(String.join("", errs)).contains("bfc: waiting for another bfc command to finish building " + jar);
        assertThat(jar.resolveSibling("bfc-build.lock")).doesNotExist();
    }

    @Test
    void aLockLeftByAKilledBuildIsTakenOver() throws Exception {
        Process gone = new ProcessBuilder("true").start();
        assertThat(gone.waitFor(10, TimeUnit.SECONDS)).isTrue();
        Path lock = Files.createDirectories(jar.resolveSibling("bfc-build.lock"));
        Files.writeString(lock.resolve("pid"), gone.pid() + "\n");
        Run r = bfc("--version");
        assertThat(r.calls).containsExactly("mvn -B -q -DskipTests -pl bfc-cli -am package",
                "java -jar " + jar + " --version");
        assertThat(lock).doesNotExist();
    }

    /**
     * Several commands that find the same dead builder's lock at once take it over one at a time:
     * one builds, the others wait for it. Each removed the lock it had found dead, so one that
     * came second removed the lock the first had made by then, and built beside it.
     */
    @Test
    void commandsTakingOverOneDeadLockTogetherBuildOnce() throws Exception {
        Path builds = root.resolve("builds.log");
        // A build that says when it begins and ends: two builds overlap if one begins before the
        // other ends.
        script(fakeBin.resolve("mvn"), "echo \"begin $$\" >> '" + builds + "'\nsleep 1\nmkdir -p '" + jar.getParent()
                + "'\n: > '" + jar + "'\necho \"end $$\" >> '" + builds + "'\n");
        Process gone = new ProcessBuilder("true").start();
        assertThat(gone.waitFor(10, TimeUnit.SECONDS)).isTrue();
        int commands = 6;
        for (int round = 0; round < 5; round++) {
            Files.deleteIfExists(jar);
            Files.deleteIfExists(builds);
            Path lock = Files.createDirectories(jar.resolveSibling("bfc-build.lock"));
            Files.writeString(lock.resolve("pid"), gone.pid() + "\n");
            List<Process> all = new ArrayList<>();
            for (int i = 0; i < commands; i++) {
                ProcessBuilder pb = new ProcessBuilder("/bin/sh", root.resolve("bin/bfc").toString(), "--version")
                        .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                        .redirectError(root.resolve("err-" + i + ".txt").toFile());
                pb.environment().put("PATH", fakeBin + ":" + System.getenv("PATH"));
                all.add(pb.start());
            }
            for (int i = 0; i < commands; i++) {
                Process p = all.get(i);
                assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("round %d: bin/bfc returned", round).isTrue();
                assertThat(p.exitValue()).as("round %d: exit status; stderr:%n%s", round,
                        Files.readString(root.resolve("err-" + i + ".txt"))).isZero();
            }
            assertThat(Files.readAllLines(builds)).as("round %d: the builds of %d commands", round, commands)
                    .hasSize(2).first().asString().startsWith("begin ");
            assertThat(lock).as("round %d: the lock", round).doesNotExist();
        }
    }

    /**
     * Stopped with kill (SIGTERM), and with Ctrl-C (SIGINT) where it can arrive: a process started
     * in the background of a shell (`mvn verify &`, nohup) has SIGINT ignored, and so have its
     * children, the script and Maven alike, which no trap can then change.
     */
    @Test
    void aBuildStoppedWithCtrlCOrKillLeavesNoLogBehind() throws Exception {
        // Ctrl-C reaches the terminal's foreground process group: the script and Maven alike.
        Path setsid = Path.of("/usr/bin/setsid");
        assumeTrue(Files.isExecutable(setsid), "needs setsid to give the script a process group of its own");
        stopBuildWith("TERM");
        if (signalIgnoredHere(2)) {
            System.out.println("aBuildStoppedWithCtrlCOrKillLeavesNoLogBehind: SIGINT is ignored in this process"
                    + " (started in a shell's background), so its children cannot be stopped with it; tested"
                    + " with SIGTERM only");
        } else {
            stopBuildWith("INT");
        }
    }

    /** Whether signal {@code signal} is ignored in this process (its children inherit that). */
    private static boolean signalIgnoredHere(int signal) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("SigIgn:")) {
                return (Long.parseUnsignedLong(line.substring(7).trim(), 16) & (1L << (signal - 1))) != 0;
            }
        }
        return false;
    }

    private void stopBuildWith(String signal) throws Exception {
        Path tmp = Files.createDirectories(root.resolve("tmp-" + signal));
        Path started = root.resolve("mvn-started-" + signal);
        script(fakeBin.resolve("mvn"), ": > '" + started + "'\nsleep 30\n");
        ProcessBuilder pb = new ProcessBuilder("/usr/bin/setsid", "/bin/sh", root.resolve("bin/bfc").toString(),
                "--version").redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .redirectError(ProcessBuilder.Redirect.DISCARD);
        pb.environment().put("PATH", fakeBin + ":" + System.getenv("PATH"));
        pb.environment().put("TMPDIR", tmp.toString());
        Process p = pb.start();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (!Files.exists(started) && System.nanoTime() - deadline < 0) {
                Thread.sleep(20);
            }
            assertThat(started).as("the stand-in for mvn started").exists();
            // And reached its sleep: its shell (dash catches SIGINT in a script) keeps a SIGINT
            // that comes between the marker and the start of sleep until its child ends, and that
            // sleep, started after the signal, runs its 30 s.
            while (p.descendants().noneMatch(LauncherRebuildTest::isSleep) && System.nanoTime() - deadline < 0) {
                Thread.sleep(20);
            }
            assertThat(p.descendants().anyMatch(LauncherRebuildTest::isSleep)).as("the stand-in for mvn sleeps")
                    .isTrue();
            try (var during = Files.list(tmp)) {
                assertThat(during.map(f -> f.getFileName().toString()).toList())
                        .as("the build's log, while Maven runs").hasSize(1).allMatch(n -> n.startsWith("bfc-build."));
            }
            // setsid made the script the leader of a new process group: its id is the script's.
            Process kill = new ProcessBuilder("kill", "-" + signal, "--", "-" + p.pid()).inheritIO().start();
            assertThat(kill.waitFor(10, TimeUnit.SECONDS)).isTrue();
            assertThat(p.waitFor(20, TimeUnit.SECONDS)).as("bin/bfc stopped by SIG%s", signal).isTrue();
        } finally {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
        }
        assertThat(p.exitValue()).as("exit status after SIG%s", signal).isNotZero();
        try (var after = Files.list(tmp)) {
            assertThat(after.map(f -> f.getFileName().toString()).toList()).as("left in TMPDIR after SIG%s", signal)
                    .isEmpty();
        }
        assertThat(jar).as("no jar from a stopped build").doesNotExist();
        assertThat(jar.resolveSibling("bfc-build.lock")).as("the build's lock after SIG%s", signal).doesNotExist();
    }

    private static boolean isSleep(ProcessHandle h) {
        return h.info().command().map(c -> Path.of(c).getFileName().toString().equals("sleep")).orElse(false);
    }

    @Test
    void runsAnUpToDateJarWithoutBuilding() throws Exception {
        builtAt(BUILT);
        Run r = bfc("verify", "x.bfctrace");
        assertThat(r.err).doesNotContain("building");
        assertThat(r.calls).containsExactly("java -jar " + jar + " verify x.bfctrace");
    }

    @Test
    void rebuildsWhenASourceOfTheJarChanged() throws Exception {
        for (String changed : List.of("bfc-core/src/main/java/A.java", "bfc-cli/pom.xml", "pom.xml",
                "bfc-micrometer/src/main/java/A.java")) {
            builtAt(BUILT);
            Files.setLastModifiedTime(root.resolve(changed), FileTime.from(BUILT.plusSeconds(60)));
            Run r = bfc("demo");
            assertThat(r.err).as("after %s changed", changed).contains("its sources changed");
            assertThat(r.calls).as("after %s changed", changed)
                    .containsExactly("mvn -B -q -DskipTests -pl bfc-cli -am package", "java -jar " + jar + " demo");
            Files.setLastModifiedTime(root.resolve(changed), FileTime.from(BUILT.minusSeconds(3600)));
        }
    }

    @Test
    void ignoresChangesOutsideTheJar() throws Exception {
        builtAt(BUILT);
        Files.setLastModifiedTime(root.resolve("bfc-bench/src/main/java/A.java"), FileTime.from(BUILT.plusSeconds(60)));
        assertThat(bfc("demo").calls).containsExactly("java -jar " + jar + " demo");
    }

    @Test
    void theLauncherWatchesEveryModuleTheCliDependsOn() throws IOException {
        // The script's module list must follow bfc-cli/pom.xml, or a change in a new dependency
        // would leave a stale jar.
        String pom = Files.readString(REPO.resolve("bfc-cli/pom.xml"));
        Set<String> deps = new LinkedHashSet<>();
        Matcher m = Pattern.compile("<artifactId>(bfc-[a-z0-9-]+)</artifactId>").matcher(pom);
        while (m.find()) {
            deps.add(m.group(1));
        }
        Matcher line = Pattern.compile("(?m)^modules=\"([^\"]*)\"$").matcher(Files.readString(REPO.resolve("bin/bfc")));
        assertThat(line.find()).as("bin/bfc has a modules=\"...\" line").isTrue();
        assertThat(Set.of(line.group(1).split(" "))).containsExactlyInAnyOrderElementsOf(deps);
    }

    private void builtAt(Instant when) throws IOException {
        Files.createDirectories(jar.getParent());
        Files.write(jar, new byte[0]);
        Files.setLastModifiedTime(jar, FileTime.from(when));
        Files.deleteIfExists(log);
    }

    private record Run(List<String> calls, String err, int status) { }

    /** Runs bin/bfc, which must exit with 0. */
    private Run bfc(String... args) throws Exception {
        Run r = run(args);
        assertThat(r.status).as("bin/bfc's exit status; stderr:%n%s", r.err).isZero();
        return r;
    }

    private Run run(String... args) throws Exception {
        return run(root.resolve("bin/bfc"), args);
    }

    /** Runs the script as {@code launcher} names it, with {@code mvn} also logging the directory it ran in. */
    private Run run(Path launcher, String... args) throws Exception {
        if (!launcher.equals(root.resolve("bin/bfc"))) {
            script(fakeBin.resolve("mvn"), "echo \"mvn $* in $(pwd -P)\" >> '" + log + "'\nmkdir -p '"
                    + jar.getParent() + "'\n: > '" + jar + "'\n");
        }
        Files.deleteIfExists(log);
        // Its standard error in a file, read once it has ended (or been ended at the limit, the
        // failure giving what it wrote), not a pipe read to its end before the wait.
        List<String> cmd = new ArrayList<>(List.of("env", "-u", "BFC_JAVA_OPTS",
                "PATH=" + fakeBin + ":" + System.getenv("PATH"), "/bin/sh", launcher.toString()));
        cmd.addAll(List.of(args));
        ChildProcess.Apart p = ChildProcess.runApart(cmd, new File("/dev/null"), Duration.ofSeconds(RUN_LIMIT_SECONDS));
        List<String> calls = Files.exists(log) ? Files.readAllLines(log) : List.of();
        return new Run(calls, p.error(), p.status());
    }

    private static void write(Path file, String text) throws IOException {
        Files.createDirectories(file.getParent());
        Files.writeString(file, text);
    }

    private static void script(Path file, String body) throws IOException {
        write(file, "#!/bin/sh\n" + body);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwxr-xr-x"));
    }
}
