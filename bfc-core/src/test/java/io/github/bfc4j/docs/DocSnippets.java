/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.docs;

import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.jar.Manifest;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.StandardLocation;
import javax.tools.ToolProvider;

/**
 * The Java snippets of README.md and docs/*.md, compiled as shown, so that no snippet a user
 * copies can have drifted from the API.
 *
 * <p>A snippet is a fenced block opened by a line {@code ```java} (or {@code ~~~java}, in any
 * case, indented as in a list item: its lines lose the fence's indentation), optionally followed
 * by the module whose tests compile it ({@code ```java bfc-onnxruntime}; without one, bfc-cli's, whose
 * class path holds bfc-core, bfc-cpu, bfc-cuda and bfc-micrometer). Markdown shows only the
 * language. Its {@code import} lines go first; the rest is the body of a method that may throw.
 * A snippet that uses names it does not declare (an allocator made earlier on the page, say)
 * says where they come from in an HTML comment on the lines just above the fence, which
 * Markdown does not show:
 *
 * <pre>
 * &lt;!-- compiled in:
 * import io.github.bfc4j.core.BfcAllocator;
 * class Snippet {
 *     void run(BfcAllocator allocator, long bytes) throws Exception {
 * --&gt;
 * </pre>
 *
 * <p>The comment opens a class and a method (both left open); the snippet is the method's body.
 * Each snippet is its own package, so that every comment may call its class {@code Snippet}.
 */
public final class DocSnippets {

    /** The module whose tests compile a snippet that names none. */
    public static final String DEFAULT_MODULE = "bfc-cli";

    /**
     * A fence that opens a Java block: backticks or tildes, indented as in a list item (which
     * Markdown still shows as Java), the language in any case, then optionally the module.
     */
    private static final Pattern FENCE = Pattern.compile("([ \\t]*)(```|~~~)[ \\t]*(?i:java)(?:[ \\t]+(\\S+))?[ \\t]*");
    private static final String CONTEXT_START = "<!-- compiled in:";
    private static final String CONTEXT_END = "-->";

    private DocSnippets() {
    }

    /**
     * One snippet.
     *
     * @param file the Markdown file, relative to the repository's root
     * @param line the line of its fence (1-based)
     * @param module the module whose tests compile it
     * @param context the comment's Java text (its lines), or empty for the default: a static
     *     method of a class of its own
     * @param contextLine the line of the comment's first Java line
     * @param code its lines
     */
    public record Snippet(String file, int line, String module, List<String> context, int contextLine,
            List<String> code) {

        /** @return where it is, as {@code docs/x.md line N} */
        public String where() {
            return file + " line " + line;
        }
    }

    /**
     * The snippets of README.md and of every Markdown file under docs/.
     *
     * @param root the repository's root
     * @return them, in file order then line order
     * @throws IOException if a file cannot be read
     */
    public static List<Snippet> all(Path root) throws IOException {
        List<Path> files = new ArrayList<>();
        files.add(root.resolve("README.md"));
        try (Stream<Path> docs = Files.list(root.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(files::add);
        }
        List<Snippet> out = new ArrayList<>();
        for (Path f : files) {
            out.addAll(parse(root.relativize(f).toString().replace(File.separatorChar, '/'),
                    Files.readAllLines(f, StandardCharsets.UTF_8)));
        }
        return out;
    }

    /**
     * The snippets of README.md and docs/ that a module's tests compile.
     *
     * @param root the repository's root
     * @param module the module, e.g. {@code bfc-onnxruntime} ({@link #DEFAULT_MODULE} for those
     *     that name none)
     * @return them, in file order then line order
     * @throws IOException if a file cannot be read
     */
    public static List<Snippet> of(Path root, String module) throws IOException {
        List<Snippet> out = new ArrayList<>();
        for (Snippet s : all(root)) {
            if (s.module().equals(module)) {
                out.add(s);
            }
        }
        return out;
    }

    /**
     * The snippets of one Markdown text.
     *
     * @param file its name, for messages
     * @param lines its lines
     * @return its snippets
     * @throws IllegalArgumentException if a Java block is not closed, or a comment above a fence
     *     is not closed
     */
    public static List<Snippet> parse(String file, List<String> lines) {
        List<Snippet> out = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            Matcher m = FENCE.matcher(lines.get(i));
            if (!m.matches()) {
                continue;
            }
            int fence = i;
            String indent = m.group(1);
            String marker = m.group(2);
            List<String> code = new ArrayList<>();
            for (i++; i < lines.size() && !lines.get(i).strip().startsWith(marker); i++) {
                code.add(unindent(lines.get(i), indent.length()));
            }
            if (i == lines.size()) {
                throw new IllegalArgumentException(file + " line " + (fence + 1) + ": the ```java block is not closed");
            }
            List<String> context = new ArrayList<>();
            int contextLine = 0;
            if (fence > 0 && lines.get(fence - 1).trim().equals(CONTEXT_END)) {
                int start = fence - 2;
                while (start >= 0 && !lines.get(start).trim().equals(CONTEXT_START)) {
                    start--;
                }
                if (start < 0) {
                    throw new IllegalArgumentException(file + " line " + (fence + 1)
                            + ": the comment above the fence does not start with a line '" + CONTEXT_START + "'");
                }
                context.addAll(lines.subList(start + 1, fence - 1));
                contextLine = start + 2;
            }
            out.add(new Snippet(file, fence + 1, m.group(3) == null ? DEFAULT_MODULE : m.group(3), context,
                    contextLine, code));
        }
        return out;
    }

    /** {@code line} without up to {@code n} leading blanks: a block's lines are indented as its fence is. */
    private static String unindent(String line, int n) {
        int i = 0;
        while (i < n && i < line.length() && (line.charAt(i) == ' ' || line.charAt(i) == '\t')) {
            i++;
        }
        return line.substring(i);
    }

    /**
     * Compiles snippets against this JVM's class path (for Java 17).
     *
     * @param snippets the snippets
     * @param classes a directory for the class files
     * @return one line per error, naming the Markdown file and line; empty if all compiled
     * @throws IOException if the class path cannot be read
     */
    public static String compile(List<Snippet> snippets, Path classes) throws IOException {
        if (snippets.isEmpty()) {
            return "";
        }
        List<JavaFileObject> sources = new ArrayList<>();
        List<List<String>> lineOrigins = new ArrayList<>();
        for (int i = 0; i < snippets.size(); i++) {
            List<String> origins = new ArrayList<>();
            String src = source(i, snippets.get(i), origins);
            lineOrigins.add(origins);
            sources.add(new SimpleJavaFileObject(URI.create("string:///docsnippet" + i + "/Snippet.java"),
                    JavaFileObject.Kind.SOURCE) {
                @Override
                public CharSequence getCharContent(boolean ignoreEncodingErrors) {
                    return src;
                }
            });
        }
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        StringBuilder report = new StringBuilder();
        try (StandardJavaFileManager files = javac.getStandardFileManager(diagnostics, null, StandardCharsets.UTF_8)) {
            files.setLocationFromPaths(StandardLocation.CLASS_OUTPUT, List.of(classes));
            List<String> options = List.of("-classpath", String.join(File.pathSeparator, classPath()),
                    "-proc:none", "--release", "17", "-implicit:none");
            boolean compiled = javac.getTask(null, files, diagnostics, options, null, sources).call();
            for (Diagnostic<? extends JavaFileObject> d : diagnostics.getDiagnostics()) {
                if (d.getKind() == Diagnostic.Kind.ERROR) {
                    String name = d.getSource() == null ? "" : d.getSource().toUri().toString();
                    Matcher n = Pattern.compile("docsnippet(\\d+)/").matcher(name);
                    String where = n.find()
                            ? lineOrigins.get(Integer.parseInt(n.group(1))).get((int) d.getLineNumber() - 1)
                            : "(no snippet)";
                    report.append(where).append(": ").append(d.getMessage(null)).append('\n');
                }
            }
            if (!compiled && report.length() == 0) {
                report.append("javac failed without an error of a snippet\n");
            }
        }
        return report.toString();
    }

    /**
     * A snippet as a compilation unit of its own package: its imports, the context (or a class
     * and a static method), its other lines, the closing braces. {@code origins} gets, for each
     * line, where it comes from.
     */
    static String source(int index, Snippet s, List<String> origins) {
        StringBuilder src = new StringBuilder();
        line(src, origins, "package docsnippet" + index + ";", s.where());
        for (int i = 0; i < s.code().size(); i++) {
            String l = s.code().get(i);
            if (l.startsWith("import ")) {
                line(src, origins, l, s.file() + " line " + (s.line() + 1 + i));
            }
        }
        if (s.context().isEmpty()) {
            line(src, origins, "class Snippet { static void run() throws Exception {", s.where());
        } else {
            for (int i = 0; i < s.context().size(); i++) {
                line(src, origins, s.context().get(i), s.file() + " line " + (s.contextLine() + i));
            }
        }
        for (int i = 0; i < s.code().size(); i++) {
            String l = s.code().get(i);
            line(src, origins, l.startsWith("import ") ? "" : l, s.file() + " line " + (s.line() + 1 + i));
        }
        line(src, origins, "} }", s.where() + " (end)");
        return src.toString();
    }

    private static void line(StringBuilder src, List<String> origins, String text, String origin) {
        src.append(text).append('\n');
        origins.add(origin);
    }

    /**
     * This JVM's class path, with the manifest {@code Class-Path} of each jar on it expanded
     * (Surefire may put only a manifest jar there).
     *
     * @return the entries, in order, each once
     * @throws IOException if a jar cannot be read
     */
    public static List<String> classPath() throws IOException {
        Set<String> out = new LinkedHashSet<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            out.add(entry);
            if (entry.endsWith(".jar") && new File(entry).isFile()) {
                try (JarFile jar = new JarFile(entry)) {
                    Manifest manifest = jar.getManifest();
                    String classPath = manifest == null ? null
                            : manifest.getMainAttributes().getValue(Attributes.Name.CLASS_PATH);
                    if (classPath != null) {
                        for (String element : classPath.trim().split("\\s+")) {
                            out.add(Path.of(new File(entry).toURI().resolve(element)).toString());
                        }
                    }
                }
            }
        }
        return new ArrayList<>(out);
    }
}
