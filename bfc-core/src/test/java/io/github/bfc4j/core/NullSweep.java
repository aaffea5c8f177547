/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Parameter;
import java.lang.reflect.RecordComponent;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Calls every public constructor and method of a module's exported packages once per reference
 * parameter, with that one argument null and every other argument valid, and lists what does
 * not refuse the null as bfc4j does. A parameter that holds elements (a list, collection or
 * other iterable but a {@link Path}, an array of objects) is called once more with a valid
 * value that holds a null after its elements, which must be refused as {@code NAME[i]=null
 * (expected: ...)}, {@code i} that null's index, before anything changes; its allow-list key is
 * the parameter's with {@code []} appended.
 *
 * <p>The rule, taken from what the public API says today ({@code Objects.requireNonNull(x,
 * "x=null (expected: ...)")}, and {@link IllegalArgumentException} in the builders that already
 * throw it): the call throws a {@link NullPointerException} or an
 * {@link IllegalArgumentException} whose message starts with {@code NAME=null (expected: },
 * where {@code NAME} (or, for {@code NAME.x()} or {@code NAME[i]}, its first identifier) is that
 * parameter's name. The class files carry no parameter names (no {@code -parameters}), so the
 * name is checked against what does carry it: a record's canonical constructor against the
 * component's name; anything else against the {@code @param} tags of the javadoc that
 * precedes a declaration of that method (or constructor) in the declaring class's source, an
 * overload's included, and the names one executable gives for its parameters must all differ.
 * Afterwards
 * the receiver is unchanged ({@link Subject#state}) and still works ({@link Subject#use}), no
 * sample file was created and nothing was written to a sample stream.
 *
 * <p>Anything else is a finding: another exception (the JDK's "Cannot invoke ... because ... is
 * null" from inside), a call that returns normally where no javadoc allows null (the
 * {@link #nullable allow-list} says which do, with the reason), a receiver changed or broken.
 * A parameter type with no sample, or a receiver type with no factory, is a finding too, so
 * that new API cannot escape the sweep.
 */
public final class NullSweep {

    /**
     * A receiver for instance methods, with what must not change when a call refuses a null
     * and what must still work afterwards.
     *
     * @param receiver the object called
     * @param state what the refused call must leave as it was, compared with {@code equals}
     * @param use what must still work after the refused call
     */
    public record Subject(Object receiver, Supplier<Object> state, Runnable use) {

        /**
         * A receiver that holds no state that a call could change (an immutable value).
         *
         * @param receiver the object
         * @return the subject
         */
        public static Subject value(Object receiver) {
            return new Subject(receiver, receiver::toString, () -> { });
        }
    }

    /** The message a refused null carries: {@code name=null (expected: ...}. */
    private static final Pattern HOUSE = Pattern.compile(
            "^([A-Za-z_][A-Za-z0-9_]*)((\\[[0-9]+\\])|(\\.[A-Za-z_][A-Za-z0-9_]*(\\(\\))?))*=null \\(expected: .+",
            Pattern.DOTALL);

    /** What follows a javadoc: annotations, then a declaration whose name is the group. */
    private static final Pattern DECLARATION = Pattern.compile(
            "(?:\\s*@[\\w.]+(?:\\([^)]*\\))?)*[^(;{}]*?(\\w+)\\s*\\(");

    private final Map<String, Function<NullSweep, Object>> samples = new HashMap<>();
    private final Map<Class<?>, Function<Executable, Subject>> receivers = new HashMap<>();
    private final Map<String, String> nullable = new LinkedHashMap<>();
    private final Map<String, String> skipped = new LinkedHashMap<>();
    private final Map<String, String> known = new LinkedHashMap<>();
    private final Map<String, String> names = new LinkedHashMap<>();
    private final Set<String> allowUsed = new HashSet<>();
    private final Deque<AutoCloseable> open = new ArrayDeque<>();
    private final Path tmp;
    private final Path sourceRoot;
    private final Map<Class<?>, String> sources = new HashMap<>();
    private int calls;
    private int tmpFiles;

    /**
     * A sweep.
     *
     * @param tmp a directory for the sample files
     * @param sourceRoot the module's {@code src/main/java}, for the {@code @param} names
     */
    public NullSweep(Path tmp, Path sourceRoot) {
        this.tmp = tmp;
        this.sourceRoot = sourceRoot;
    }

    /**
     * Adds a sample value for a parameter type.
     *
     * @param typeName the type as {@link java.lang.reflect.Type#getTypeName()} spells it
     *     ({@code java.util.List<io.github.bfc4j.core.StackFrame>})
     * @param sample makes a fresh valid value (each call gets its own)
     * @return this
     */
    public NullSweep sample(String typeName, Function<NullSweep, Object> sample) {
        samples.put(typeName, sample);
        return this;
    }

    /**
     * Adds a sample value for a parameter type.
     *
     * @param type the type
     * @param sample makes a fresh valid value (each call gets its own)
     * @return this
     */
    public NullSweep sample(Class<?> type, Function<NullSweep, Object> sample) {
        return sample(type.getTypeName(), sample);
    }

    /**
     * Adds a receiver factory for the instance methods of a class.
     *
     * @param type the class
     * @param subject makes a fresh receiver for the method given
     * @return this
     */
    public NullSweep receiver(Class<?> type, Function<Executable, Subject> subject) {
        receivers.put(type, subject);
        return this;
    }

    /**
     * Allows a parameter to be null: its javadoc says so.
     *
     * @param key {@code Class.method(Type,Type)[index]}, the class by its binary simple name
     *     ({@code BfcOptions$Builder}), the types by their simple names
     * @param reason what the javadoc says null means
     * @return this
     */
    public NullSweep nullable(String key, String reason) {
        nullable.put(key, reason);
        return this;
    }

    /**
     * Leaves an executable out of the sweep.
     *
     * @param key {@code Class.method(Type,Type)}
     * @param reason why
     * @return this
     */
    public NullSweep skip(String key, String reason) {
        skipped.put(key, reason);
        return this;
    }

    /**
     * Gives a parameter's name where neither the class file nor a {@code @param} of ours says
     * it: a method of a class that is not public, overriding a library's (JavaCPP's), reached
     * through the library's public type.
     *
     * @param key {@code Class.method(Type,Type)[index]}
     * @param name the parameter's name, as the overridden method's javadoc gives it
     * @return this
     */
    public NullSweep name(String key, String name) {
        names.put(key, name);
        return this;
    }

    /**
     * Expects a finding not fixed yet: the sweep passes while the call does what is said, and
     * fails once it no longer does, so that the entry goes with the fix.
     *
     * @param key {@code Class.method(Type,Type)[index]}
     * @param what what the call does wrong
     * @return this
     */
    public NullSweep known(String key, String what) {
        known.put(key, what);
        return this;
    }

    /**
     * Closes {@code c} when the current call is done.
     *
     * @param <T> its type
     * @param c what to close
     * @return {@code c}
     */
    public <T extends AutoCloseable> T closeLater(T c) {
        open.push(c);
        return c;
    }

    /**
     * A path in the sample directory that does not exist yet.
     *
     * @return the path
     */
    public Path newPath() {
        return tmp.resolve("sample-" + (tmpFiles++) + ".out");
    }

    /**
     * The number of calls made with a null so far.
     *
     * @return the count
     */
    public int calls() {
        return calls;
    }

    /**
     * A fresh sample of a type.
     *
     * @param <T> the type
     * @param type the type
     * @return the sample
     * @throws IllegalStateException if there is none
     */
    @SuppressWarnings("unchecked")
    public <T> T sampleOf(Class<T> type) {
        return (T) sampleOf(type.getTypeName());
    }

    private Object sampleOf(String typeName) {
        Function<NullSweep, Object> s = samples.get(typeName);
        if (s == null) {
            throw new IllegalStateException("no sample of " + typeName);
        }
        return s.apply(this);
    }

    /**
     * The public classes of a package (not its subpackages) of the class path, top-level and
     * nested, in name order: those of the class-path root (directory or jar) that holds
     * {@code anchor}.
     *
     * @param anchor a class of the package, which tells where the package's classes are
     * @return the public classes
     */
    public static List<Class<?>> publicClassesOf(Class<?> anchor) {
        String pkg = anchor.getPackageName();
        List<Class<?>> out = new ArrayList<>();
        for (String n : ClassPathDirectory.files(anchor, pkg.replace('.', '/')).keySet()) {
            if (!n.endsWith(".class") || n.equals("package-info.class") || n.equals("module-info.class")) {
                continue;
            }
            Class<?> c;
            try {
                c = Class.forName(pkg + "." + n.substring(0, n.length() - 6), false, anchor.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException(e);
            }
            if (isPublicApi(c)) {
                out.add(c);
            }
        }
        return out;
    }

    /**
     * The parameters of the public constructors and methods of {@code classes} that hold
     * elements a caller could leave null (a list, collection or other iterable but a
     * {@link Path}, an array of objects), as {@code Class.method(Type,Type)[index]}: for a module
     * whose API the sweep does not call (its receivers need a device or a runtime), so that a
     * test lists them, each checked by a test of its own, and new ones cannot go unnoticed.
     *
     * @param classes the public classes
     * @return the keys, in order
     */
    public static List<String> elementParameters(List<Class<?>> classes) {
        List<String> out = new ArrayList<>();
        for (Class<?> c : classes) {
            for (Executable e : executables(c, new ArrayList<>())) {
                Class<?>[] types = e.getParameterTypes();
                for (int i = 0; i < types.length; i++) {
                    if (holdsElements(types[i])) {
                        out.add(key(e) + "[" + i + "]");
                    }
                }
            }
        }
        return out;
    }

    private static boolean isPublicApi(Class<?> c) {
        if (c.isSynthetic() || c.isAnonymousClass() || c.isLocalClass()) {
            return false;
        }
        for (Class<?> k = c; k != null; k = k.getEnclosingClass()) {
            if (!Modifier.isPublic(k.getModifiers())) {
                return false;
            }
        }
        return true;
    }

    /**
     * Sweeps the classes.
     *
     * @param classes the public classes
     * @return the findings, one line each; empty if none
     */
    public List<String> run(List<Class<?>> classes) {
        List<String> problems = new ArrayList<>();
        for (Class<?> c : classes) {
            for (Executable e : executables(c, problems)) {
                String key = key(e);
                if (skipped.containsKey(key)) {
                    allowUsed.add(key);
                    continue;
                }
                sweep(e, key, problems);
            }
        }
        Set<String> knownSeen = new HashSet<>();
        problems.removeIf(p -> {
            int colon = p.indexOf(": ");
            String at = colon < 0 ? p : p.substring(0, colon);
            if (known.containsKey(at)) {
                knownSeen.add(at);
                return true;
            }
            return false;
        });
        for (String k : known.keySet()) {
            if (!knownSeen.contains(k)) {
                problems.add("known finding no longer found (fixed? remove it from the known list): " + k);
            }
        }
        for (String k : nullable.keySet()) {
            if (!allowUsed.contains(k)) {
                problems.add("allow-list entry matches no nullable parameter any more: " + k);
            }
        }
        for (String k : names.keySet()) {
            if (!allowUsed.contains(k)) {
                problems.add("name-table entry matches no refused null any more: " + k);
            }
        }
        for (String k : skipped.keySet()) {
            if (!allowUsed.contains(k)) {
                problems.add("skip-list entry matches no executable any more: " + k);
            }
        }
        return problems;
    }

    private static List<Executable> executables(Class<?> c, List<String> problems) {
        List<Executable> out = new ArrayList<>();
        if (!Modifier.isAbstract(c.getModifiers())) {
            for (Constructor<?> k : c.getConstructors()) {
                out.add(k);
            }
        }
        for (Method m : c.getDeclaredMethods()) {
            if (!Modifier.isPublic(m.getModifiers()) || m.isSynthetic() || m.isBridge()) {
                continue;
            }
            if (Modifier.isAbstract(m.getModifiers())) {
                continue; // what a user implements (a callback, an interface): nothing of ours to call
            }
            if (m.getName().equals("equals") && m.getParameterCount() == 1
                    && m.getParameterTypes()[0] == Object.class) {
                continue; // Object's contract: equals(null) is false
            }
            if (c.isEnum() && m.getName().equals("valueOf") && Modifier.isStatic(m.getModifiers())
                    && Arrays.equals(m.getParameterTypes(), new Class<?>[] {String.class})) {
                continue; // the compiler's Enum.valueOf: the JDK's contract ("Name is null")
            }
            out.add(m);
        }
        // A public method inherited from a superclass that is not public is API too: none may hide there.
        for (Class<?> s = c.getSuperclass(); s != null && s.getPackageName().startsWith("io.github.bfc4j"); s = s.getSuperclass()) {
            if (!Modifier.isPublic(s.getModifiers())) {
                for (Method m : s.getDeclaredMethods()) {
                    if (Modifier.isPublic(m.getModifiers()) && !m.isSynthetic() && m.getParameterCount() > 0) {
                        problems.add("not swept: " + c.getSimpleName() + " inherits " + m + " from a class that is not public");
                    }
                }
            }
        }
        out.sort(Comparator.comparing(NullSweep::key));
        return out;
    }

    /**
     * The key of an executable: {@code Class.method(Type,Type)}, the class by its binary simple
     * name ({@code BfcOptions$Builder}), a constructor as {@code <init>}, the types by their
     * simple names.
     *
     * @param e the executable
     * @return the key
     */
    public static String key(Executable e) {
        String cls = e.getDeclaringClass().getName();
        cls = cls.substring(cls.lastIndexOf('.') + 1);
        String name = e instanceof Constructor ? "<init>" : e.getName();
        return cls + "." + name + Arrays.stream(e.getParameterTypes()).map(Class::getSimpleName)
                .collect(Collectors.joining(",", "(", ")"));
    }

    private void sweep(Executable e, String key, List<String> problems) {
        Parameter[] params = e.getParameters();
        boolean isStatic = e instanceof Method && Modifier.isStatic(e.getModifiers());
        boolean isCtor = e instanceof Constructor;
        Map<String, Integer> namesGiven = new HashMap<>();
        for (int i = 0; i < params.length; i++) {
            if (params[i].getType().isPrimitive()) {
                continue;
            }
            // Once with the argument null; for a list, collection, iterable or array, once more with a
            // valid one that holds a null after its elements: both must be refused by name (the
            // element by name and index, name[i]=null), before anything changes.
            for (int variant = 0; variant < (holdsElements(params[i].getType()) ? 2 : 1); variant++) {
                boolean element = variant == 1;
                String at = key + "[" + i + "]" + (element ? "[]" : "");
                boolean mayBeNull = nullable.containsKey(at);
                if (mayBeNull) {
                    allowUsed.add(at);
                }
                Object[] args = new Object[params.length];
                Subject subject = null;
                int nullAt = -1;
                try {
                    for (int j = 0; j < params.length; j++) {
                        if (j != i || element) {
                            args[j] = params[j].getType().isPrimitive() ? primitive(params[j].getType())
                                    : sampleOf(params[j].getParameterizedType().getTypeName());
                        }
                    }
                    if (element) {
                        nullAt = sizeOf(args[i]);
                        args[i] = withNullElement(args[i], params[i].getType());
                    }
                    if (!isStatic && !isCtor) {
                        Function<Executable, Subject> f = receivers.get(e.getDeclaringClass());
                        if (f == null) {
                            problems.add("no receiver for " + e.getDeclaringClass().getName() + " (for " + key + ")");
                            return;
                        }
                        subject = f.apply(e);
                    }
                } catch (IllegalStateException noSample) {
                    problems.add(at + ": " + noSample.getMessage() + " (add one to the sweep)");
                    closeAll(problems, at);
                    continue;
                }
                List<Object> argSnapshot = Arrays.asList(args.clone());
                Object before = subject == null ? null : subject.state().get();
                calls++;
                Throwable thrown = null;
                try {
                    if (!Modifier.isPublic(e.getDeclaringClass().getModifiers())) {
                        e.setAccessible(true); // a public method of a class that is not, reached through a public type
                    }
                    Object result = isCtor ? ((Constructor<?>) e).newInstance(args)
                            : ((Method) e).invoke(subject == null ? null : subject.receiver(), args);
                    if (result instanceof AutoCloseable c) {
                        closeLater(c); // what a call that took the null opened (a MemoryAnnotation scope)
                    }
                } catch (InvocationTargetException ite) {
                    thrown = ite.getCause();
                } catch (ReflectiveOperationException | IllegalArgumentException reflect) {
                    problems.add(at + ": could not be called: " + reflect);
                    closeAll(problems, at);
                    continue;
                }
                if (thrown == null) {
                    if (!mayBeNull) {
                        problems.add(at + ": accepted " + (element ? "a null element" : "null")
                                + " (no exception) though no javadoc allows it");
                    }
                } else if (mayBeNull) {
                    problems.add(at + ": null is allowed (" + nullable.get(at) + ") but the call threw " + describe(thrown));
                } else if (!(thrown instanceof NullPointerException || thrown instanceof IllegalArgumentException)) {
                    problems.add(at + ": threw " + describe(thrown));
                } else {
                    String msg = String.valueOf(thrown.getMessage());
                    Matcher m = HOUSE.matcher(msg);
                    if (!m.matches()) {
                        problems.add(at + ": message not 'name=null (expected: ...)': " + describe(thrown));
                    } else {
                        String name = m.group(1);
                        String expected = names.containsKey(at) ? names.get(at) : expectedName(e, i);
                        if (names.containsKey(at)) {
                            allowUsed.add(at);
                        }
                        if (expected != null && !expected.equals(name)) {
                            problems.add(at + ": names '" + name + "', the parameter is '" + expected + "': " + msg);
                        } else if (expected == null && !documented(e, name)) {
                            problems.add(at + ": names '" + name + "', which no @param of a "
                                    + e.getDeclaringClass().getSimpleName() + "." + declaredName(e)
                                    + " in the source documents: " + msg);
                        } else if (element && !msg.startsWith(name + "[" + nullAt + "]=null (expected: ")) {
                            problems.add(at + ": does not name the null element '" + name + "[" + nullAt + "]': " + msg);
                        } else if (!element && namesGiven.containsKey(name)) {
                            problems.add(at + ": names '" + name + "', as parameter " + namesGiven.get(name) + " does: " + msg);
                        }
                        if (!element) {
                            namesGiven.put(name, i);
                        }
                    }
                }
                if (subject != null) {
                    try {
                        Object after = subject.state().get();
                        if (thrown != null && !String.valueOf(before).equals(String.valueOf(after))) {
                            problems.add(at + ": the refused call changed the receiver: " + before + " -> " + after);
                        }
                        subject.use().run();
                    } catch (RuntimeException | AssertionError broken) {
                        problems.add(at + ": the receiver no longer works after the call: " + describe(broken));
                    }
                }
                if (thrown != null) {
                    for (Object a : argSnapshot) {
                        if (a instanceof Path p && Files.exists(p)) {
                            problems.add(at + ": the refused call created " + p.getFileName());
                        } else if (a instanceof ByteArrayOutputStream b && b.size() != 0) {
                            problems.add(at + ": the refused call wrote " + b.size() + " bytes to the stream");
                        }
                    }
                }
                closeAll(problems, at);
            }
        }
    }

    /** Whether a parameter of this type holds elements a caller could leave null. */
    private static boolean holdsElements(Class<?> t) {
        return (t.isArray() && !t.getComponentType().isPrimitive())
                || (Iterable.class.isAssignableFrom(t) && !Path.class.isAssignableFrom(t));
    }

    private static int sizeOf(Object sample) {
        if (sample instanceof Object[] a) {
            return a.length;
        }
        int n = 0;
        for (Object ignored : (Iterable<?>) sample) {
            n++;
        }
        return n;
    }

    /** The sample's elements and then a null, as an array of the sample's type or an ArrayList. */
    private static Object withNullElement(Object sample, Class<?> type) {
        if (sample instanceof Object[] a) {
            return Arrays.copyOf(a, a.length + 1);
        }
        List<Object> l = new ArrayList<>();
        ((Iterable<?>) sample).forEach(l::add);
        l.add(null);
        if (!type.isInstance(l)) {
            throw new IllegalStateException("no sample of " + type.getName() + " with a null element");
        }
        return l;
    }

    private void closeAll(List<String> problems, String at) {
        while (!open.isEmpty()) {
            try {
                open.pop().close();
            } catch (Exception | AssertionError e) {
                problems.add(at + ": closing a sample failed: " + describe(e));
            }
        }
    }

    private static Object primitive(Class<?> t) {
        if (t == boolean.class) {
            return false;
        } else if (t == int.class) {
            return 1;
        } else if (t == long.class) {
            return 1L;
        } else if (t == double.class) {
            return 0.5;
        }
        throw new IllegalStateException("no sample of " + t);
    }

    private static String expectedName(Executable e, int i) {
        Parameter p = e.getParameters()[i];
        if (p.isNamePresent()) {
            return p.getName();
        }
        Class<?> c = e.getDeclaringClass();
        if (e instanceof Constructor && c.isRecord()) {
            RecordComponent[] rc = c.getRecordComponents();
            if (Arrays.equals(Arrays.stream(rc).map(RecordComponent::getType).toArray(), e.getParameterTypes())) {
                return rc[i].getName();
            }
        }
        return null;
    }

    private static String declaredName(Executable e) {
        return e instanceof Constructor ? e.getDeclaringClass().getSimpleName() : e.getName();
    }

    /** Whether an {@code @param name} documents a declaration named as {@code e} is. */
    private boolean documented(Executable e, String name) {
        Class<?> top = e.getDeclaringClass();
        while (top.getEnclosingClass() != null) {
            top = top.getEnclosingClass();
        }
        String src = sources.computeIfAbsent(top, t -> {
            Path f = sourceRoot.resolve(t.getName().replace('.', File.separatorChar) + ".java");
            try {
                return Files.readString(f);
            } catch (IOException x) {
                throw new UncheckedIOException("the source of " + t.getName() + " is not at " + f, x);
            }
        });
        Matcher m = Pattern.compile("@param\\s+" + Pattern.quote(name) + "\\s").matcher(src);
        while (m.find()) {
            int end = src.indexOf("*/", m.end());
            if (end < 0) {
                break;
            }
            // The declaration after the javadoc: past its annotations, the name before the first '('.
            Matcher d = DECLARATION.matcher(src).region(end + 2, src.length());
            if (d.lookingAt() && d.group(1).equals(declaredName(e))) {
                return true;
            }
        }
        return false;
    }

    private static String describe(Throwable t) {
        StackTraceElement[] st = t.getStackTrace();
        return t.getClass().getName() + ": " + t.getMessage() + (st.length == 0 ? "" : " at " + st[0]);
    }
}
