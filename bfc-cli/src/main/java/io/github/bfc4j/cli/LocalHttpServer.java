/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * The HTTP server of {@code bfc serve}: GET and HEAD of a few fixed paths on 127.0.0.1, one
 * request per connection ({@code Connection: close}), as a Prometheus scrape makes them.
 *
 * <p>Every resource is bounded, so that no client can stop the others (the JDK's
 * {@code HttpServer} reads a request on its one dispatcher thread by default, and its timeouts are
 * JDK-internal properties): at most {@value #WORKERS} requests are served at once, at most
 * {@value #QUEUE} more connections wait for a worker (beyond that a connection gets 503 without
 * waiting for one), a request head holds at most {@value #MAX_HEAD_BYTES} bytes (else 431), and a
 * client has the timeout, from the moment its connection is accepted, to send its request head, after which it
 * gets 408 and is closed: a client that sends {@code GET /metrics HTTP/1.1\r\n} and nothing more
 * holds one worker at most that long, and stalled clients waiting in the queue time out while
 * they wait. A client
 * that does not take its response is closed a second after the timeout.
 *
 * <p>A connection turned away with 503 is answered by a thread of its own, which reads its
 * request head first (for at most {@value #LINGER_MILLIS} ms) and what follows the answer (as
 * long again): closing a socket with unread input resets the connection, and the client could
 * lose the 503. When {@value #QUEUE} connections already wait for that thread, a further one is
 * closed at once.
 *
 * <p>As RFC 9112 has it, empty lines (CRLF, or LF alone) before the request line are ignored
 * (they count towards the head's bytes), a CR not followed by LF anywhere in the head (a bare CR,
 * which ends no line) gets 400, a {@code HEAD} request's answer has headers only, whatever its
 * status, and a path's percent-escapes are decoded before it is looked up ({@code /%6detrics} is
 * {@code /metrics}); a malformed escape, or one that encodes {@code /} or NUL, gets 400.
 */
final class LocalHttpServer implements Closeable {

    /** Requests served at once. */
    static final int WORKERS = 4;
    /** Connections waiting for a worker. */
    static final int QUEUE = 32;
    /** The longest request head (request line and headers). */
    static final int MAX_HEAD_BYTES = 8192;
    /** How long after the timeout a connection is closed whatever it is doing. */
    private static final long GRACE_MILLIS = 1000;
    /** How long, and how much, a response waits for the client's unread bytes before closing. */
    private static final long LINGER_MILLIS = 200;
    private static final long MAX_LINGER_BYTES = 1 << 16;

    /**
     * What a path serves.
     *
     * @param contentType the {@code Content-Type}
     * @param body the body, made for each request (requests that ask at once share one build, begun
     *     after they arrived: {@link SharedBuild})
     */
    record Route(String contentType, Supplier<String> body) {
    }

    private final ServerSocket socket;
    private final Map<String, Route> routes;
    /** Each path's body as UTF-8, built once for the requests that ask at once. */
    private final Map<String, SharedBuild<byte[]>> bodies;
    private final long timeoutMillis;
    private final ThreadPoolExecutor workers;
    /** Answers the connections turned away, 503, one at a time. */
    private final ThreadPoolExecutor refusals;
    private final ScheduledThreadPoolExecutor closer;
    private final Thread acceptor;
    private volatile boolean closed;

    /**
     * Binds to 127.0.0.1 and starts serving.
     *
     * @param port the TCP port, 0 for any free one
     * @param routes what each path serves (exact paths, e.g. {@code /metrics}; a query string is
     *     ignored, and a target in absolute form, {@code http://127.0.0.1:9464/metrics}, is its path)
     * @param timeoutMillis how long a client has to send its request head
     * @throws IOException if the port cannot be bound
     */
    LocalHttpServer(int port, Map<String, Route> routes, long timeoutMillis) throws IOException {
        this.routes = Map.copyOf(routes);
        Map<String, SharedBuild<byte[]>> shared = new java.util.HashMap<>();
        this.routes.forEach((path, route) -> shared.put(path,
                new SharedBuild<>(() -> route.body().get().getBytes(StandardCharsets.UTF_8))));
        bodies = Map.copyOf(shared);
        this.timeoutMillis = timeoutMillis;
        socket = new ServerSocket();
        try {
            socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), QUEUE);
        } catch (IOException e) {
            socket.close();
            throw e;
        }
        workers = new ThreadPoolExecutor(WORKERS, WORKERS, 0, TimeUnit.MILLISECONDS,
                new ArrayBlockingQueue<>(QUEUE), daemons("bfc-serve-http-"));
        refusals = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new ArrayBlockingQueue<>(QUEUE),
                daemons("bfc-serve-busy-"));
        closer = new ScheduledThreadPoolExecutor(1, daemons("bfc-serve-timeout-"));
        closer.setRemoveOnCancelPolicy(true);
        acceptor = daemons("bfc-serve-accept-").newThread(this::accept);
        acceptor.start();
    }

    /** The port it listens on. */
    int port() {
        return socket.getLocalPort();
    }

    /** Stops accepting, and ends the requests being served. */
    @Override
    public void close() throws IOException {
        closed = true;
        socket.close();
        workers.shutdownNow();
        refusals.shutdownNow();
        closer.shutdownNow();
    }

    private void accept() {
        while (!closed) {
            Socket client;
            try {
                client = socket.accept();
            } catch (IOException e) {
                if (closed) {
                    return;
                }
                // E.g. too many open files: keep serving the others, without spinning on the error.
                try {
                    Thread.sleep(10);
                } catch (InterruptedException ie) {
                    return;
                }
                continue;
            }
            // The client's time to send its request runs from here, not from when a worker is
            // free: clients that stall in the queue do not hold it for a timeout each.
            final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
            try {
                workers.execute(() -> serve(client, deadline));
            } catch (RejectedExecutionException e) {
                // Every worker busy and the queue full: say so now rather than make it wait.
                try {
                    refusals.execute(() -> refuse(client));
                } catch (RejectedExecutionException alsoFull) {
                    closeQuietly(client);
                }
            }
        }
    }

    /** Answers 503 to a connection for which there is no room, reading its request head first. */
    private void refuse(Socket client) {
        try (client) {
            Head head = readHead(client, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(LINGER_MILLIS));
            respond(client.getOutputStream(), 503, "Service Unavailable", "text/plain; charset=utf-8",
                    ("busy: " + WORKERS + " requests served and " + QUEUE + " waiting\n").getBytes(StandardCharsets.UTF_8),
                    head.isHead());
            lingeringClose(client);
        } catch (IOException ignored) {
            // the client is gone
        }
    }

    /** Serves one connection: one request, one response; its request head is due by {@code deadline}. */
    private void serve(Socket client, long deadline) {
        ScheduledFuture<?> backstop = closer.schedule(() -> closeQuietly(client), timeoutMillis + GRACE_MILLIS,
                TimeUnit.MILLISECONDS);
        try (client) {
            client.setTcpNoDelay(true);
            Response r = answer(client, deadline);
            respond(client.getOutputStream(), r.status, r.reason, r.contentType, r.body, r.headOnly);
            lingeringClose(client);
        } catch (IOException e) {
            // The client went away, or was closed for taking too long.
        } finally {
            backstop.cancel(false);
        }
    }

    /** A response to send; {@code headOnly} for a {@code HEAD} request, whose answer has no body. */
    private record Response(int status, String reason, String contentType, byte[] body, boolean headOnly) {
        static Response text(int status, String reason, String body, boolean headOnly) {
            return new Response(status, reason, "text/plain; charset=utf-8", body.getBytes(StandardCharsets.UTF_8),
                    headOnly);
        }
    }

    /** Reads the request head and answers it. */
    private Response answer(Socket client, long deadline) throws IOException {
        Head head = readHead(client, deadline);
        // Known from the first word, so that a HEAD request's error answers have no body either.
        boolean headOnly = head.isHead();
        if (head.end() == Head.End.TIMED_OUT) {
            return Response.text(408, "Request Timeout", "no complete request within " + timeoutMillis + " ms\n",
                    headOnly);
        }
        if (head.end() == Head.End.TOO_LARGE) {
            return Response.text(431, "Request Header Fields Too Large",
                    "request head longer than " + MAX_HEAD_BYTES + " bytes\n", headOnly);
        }
        if (head.end() == Head.End.BARE_CR) {
            return Response.text(400, "Bad Request", "a CR not followed by LF in the request head (expected: lines"
                    + " that end with CRLF, such as 'GET /metrics HTTP/1.1\\r\\n')\n", headOnly);
        }
        String text = head.text();
        // Whitespace around the request line may be ignored (RFC 9112, section 3: SP, HTAB, VT,
        // FF; the line's CR too); any other control character makes it no request line.
        String line = text.substring(0, text.indexOf('\n')).replaceAll("^[ \t\u000B\f]+|[ \t\u000B\f\r]+$", "");
        String[] requestLine = line.split(" ");
        headOnly = requestLine[0].equals("HEAD");
        if (requestLine.length != 3 || !requestLine[2].startsWith("HTTP/1.")
                || line.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
            return Response.text(400, "Bad Request", "expected a request line like 'GET /metrics HTTP/1.1'\n",
                    headOnly);
        }
        String method = requestLine[0];
        if (!method.equals("GET") && !headOnly) {
            return Response.text(405, "Method Not Allowed", "only GET and HEAD\n", false);
        }
        String target = originForm(requestLine[1]);
        int query = target.indexOf('?');
        String path;
        try {
            path = decodePath(query < 0 ? target : target.substring(0, query));
        } catch (IllegalArgumentException e) {
            return Response.text(400, "Bad Request", e.getMessage() + "\n", headOnly);
        }
        Route route = routes.get(path);
        if (route == null) {
            return Response.text(404, "Not Found",
                    "no such path; try " + String.join(", ", routes.keySet().stream().sorted().toList()) + "\n",
                    headOnly);
        }
        try {
            return new Response(200, "OK", route.contentType(), bodies.get(path).get(), headOnly);
        } catch (RuntimeException | OutOfMemoryError | StackOverflowError e) {
            // A page too large for the heap, too: the client is told, and the worker lives on.
            return Response.text(500, "Internal Server Error", e + "\n", headOnly);
        }
    }

    /**
     * The path and query of a request target: the target itself, or, for one in absolute form
     * ({@code http://127.0.0.1:9464/metrics}, as a client sends it to a proxy), what follows its
     * scheme and authority ({@code /metrics}; {@code /} when nothing does). RFC 9112, section
     * 3.2.2: a server accepts the absolute form.
     */
    static String originForm(String target) {
        int authority;
        if (target.regionMatches(true, 0, "http://", 0, 7)) {
            authority = 7;
        } else if (target.regionMatches(true, 0, "https://", 0, 8)) {
            authority = 8;
        } else {
            return target;
        }
        for (int i = authority; i < target.length(); i++) {
            char c = target.charAt(i);
            if (c == '/') {
                return target.substring(i);
            }
            if (c == '?') {
                return "/" + target.substring(i);
            }
        }
        return "/";
    }

    /**
     * A path with its percent-escapes decoded ({@code /%6detrics} is {@code /metrics}): the path's
     * characters are its bytes as read (ISO-8859-1), and the bytes with the escapes' are read as
     * UTF-8. RFC 3986, section 2.1.
     *
     * @throws IllegalArgumentException if a {@code %} is not followed by two hexadecimal digits,
     *     or an escape encodes {@code /} or NUL (the one would make a path of another shape, the
     *     other cuts a name short where C reads it)
     */
    static String decodePath(String path) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(path.length());
        for (int i = 0; i < path.length(); i++) {
            char c = path.charAt(i);
            if (c != '%') {
                bytes.write(c);
                continue;
            }
            int hi = i + 2 < path.length() ? Character.digit(path.charAt(i + 1), 16) : -1;
            int lo = hi >= 0 ? Character.digit(path.charAt(i + 2), 16) : -1;
            if (lo < 0 || path.charAt(i + 1) > 0x7f || path.charAt(i + 2) > 0x7f) {
                throw new IllegalArgumentException("malformed percent-escape in the path at '"
                        + path.substring(i, Math.min(path.length(), i + 3)) + "' (expected: % and two hexadecimal"
                        + " digits, such as %20)");
            }
            int b = hi << 4 | lo;
            if (b == '/' || b == 0) {
                throw new IllegalArgumentException("the path holds " + path.substring(i, i + 3) + ", an encoded "
                        + (b == 0 ? "NUL" : "'/'") + " (expected: a path such as /metrics)");
            }
            bytes.write(b);
            i += 2;
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }

    /**
     * Ends the response and reads what the client may still send (a request body, the rest of
     * an oversized head) for a moment before closing: closing a socket with unread input resets
     * the connection, and the client could lose the response.
     */
    private static void lingeringClose(Socket client) throws IOException {
        client.shutdownOutput();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(LINGER_MILLIS);
        InputStream in = client.getInputStream();
        byte[] sink = new byte[4096];
        long drained = 0;
        try {
            while (drained < MAX_LINGER_BYTES) {
                long leftMillis = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                if (leftMillis <= 0) {
                    return; // the client keeps sending, or keeps the connection open: close it anyway
                }
                client.setSoTimeout((int) leftMillis);
                int n = in.read(sink);
                if (n < 0) {
                    return;
                }
                drained += n;
            }
        } catch (SocketTimeoutException e) {
            // the client keeps the connection open: close it anyway
        }
    }

    /**
     * What was read of a request head.
     *
     * @param text the bytes read, as ISO-8859-1 (the whole head when {@code end} is
     *     {@link End#COMPLETE}), without the empty lines before the request line
     * @param end how the reading ended
     */
    private record Head(String text, End end) {
        enum End {
            /** Up to the blank line that ends it. */
            COMPLETE,
            /** Longer than {@link LocalHttpServer#MAX_HEAD_BYTES}. */
            TOO_LARGE,
            /**
             * At a CR not followed by LF: RFC 9112, section 2.2, makes it invalid (or a space), so
             * that it neither ends a line nor is skipped as one.
             */
            BARE_CR,
            /** The deadline passed first. */
            TIMED_OUT
        }

        /** Whether it is a {@code HEAD} request, as far as it was read. */
        boolean isHead() {
            return text.startsWith("HEAD ");
        }
    }

    /**
     * Reads the request head (up to the blank line), giving the client until the deadline; what
     * the client sent before the deadline is read even after it. Empty lines before the request
     * line are skipped (RFC 9112, section 2.2: CRLF, or LF alone), counted towards
     * {@link #MAX_HEAD_BYTES}; the reading stops at a CR that no LF follows (a bare CR is no
     * empty line, nor the end of one).
     *
     * @throws IOException if the client closed the connection before the end of the head
     */
    private static Head readHead(Socket client, long deadline) throws IOException {
        InputStream in = new BufferedInputStream(client.getInputStream(), 1024);
        ByteArrayOutputStream head = new ByteArrayOutputStream(256);
        int read = 0;
        int state = 0; // bytes of "\r\n\r\n" (or "\n\n") seen at the end so far
        boolean afterCr = false;
        while (true) {
            long leftMillis = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (leftMillis <= 0 && in.available() == 0) {
                return new Head(head.toString(StandardCharsets.ISO_8859_1), Head.End.TIMED_OUT);
            }
            client.setSoTimeout((int) Math.max(1, Math.min(Integer.MAX_VALUE, leftMillis)));
            int b;
            try {
                b = in.read();
            } catch (SocketTimeoutException e) {
                return new Head(head.toString(StandardCharsets.ISO_8859_1), Head.End.TIMED_OUT);
            }
            if (b < 0) {
                throw new IOException("connection closed before the end of the request head");
            }
            if (read == MAX_HEAD_BYTES) {
                return new Head(head.toString(StandardCharsets.ISO_8859_1), Head.End.TOO_LARGE);
            }
            read++;
            if (afterCr && b != '\n') {
                return new Head(head.toString(StandardCharsets.ISO_8859_1), Head.End.BARE_CR);
            }
            afterCr = b == '\r';
            if (head.size() == 0 && (b == '\r' || b == '\n')) {
                continue; // an empty line before the request line
            }
            head.write(b);
            if (b == '\n') {
                if (state >= 1) {
                    return new Head(head.toString(StandardCharsets.ISO_8859_1), Head.End.COMPLETE);
                }
                state = 1;
            } else if (b != '\r') {
                state = 0;
            }
        }
    }

    private static void respond(OutputStream out, int status, String reason, String contentType, byte[] bytes,
            boolean headOnly) throws IOException {
        String head = "HTTP/1.1 " + status + " " + reason + "\r\n"
                + "Content-Type: " + contentType + "\r\n"
                + "Content-Length: " + bytes.length + "\r\n"
                + (status == 405 ? "Allow: GET, HEAD\r\n" : "")
                + "Connection: close\r\n\r\n";
        out.write(head.getBytes(StandardCharsets.ISO_8859_1));
        if (!headOnly) {
            out.write(bytes);
        }
        out.flush();
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    private static ThreadFactory daemons(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, prefix + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }
}
