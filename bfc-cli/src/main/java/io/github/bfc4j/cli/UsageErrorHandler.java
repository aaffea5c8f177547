/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import java.math.BigInteger;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;
import picocli.CommandLine;
import picocli.CommandLine.IParameterExceptionHandler;
import picocli.CommandLine.MissingParameterException;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * Reports a command-line error (unknown option, missing parameter, bad boolean) as one line,
 * {@code bfc replay: Unknown option: '--x' (see 'bfc replay --help')}, with exit status 2,
 * instead of picocli's message followed by the whole usage text.
 *
 * <p>An option whose boolean value is optional ({@code --allow-growth}, {@code --allow-growth
 * false}) takes the next word only when it is {@code true} or {@code false}; any other word is
 * left for the positional parameters, where picocli reports it as an "unmatched argument". That
 * case is reported as the bad option value it is: {@code --allow-growth maybe (expected: true or
 * false ...)}. Other unmatched words: a misspelt command gets the nearest command's name
 * ({@code bfc: unknown command 'repaly' (did you mean replay?)}; {@code bfc help repaly} says it
 * the same way, as {@code bfc help: unknown command ...}), an argument too many gets
 * what the command takes ({@code unexpected argument 'b' (expected: TRACE only)}, or {@code
 * (expected: options only)} where it takes none). A value of the wrong type is named as the
 * commands name theirs: {@code --allow-growth=maybe (expected: true or false)}, {@code
 * --port=abc (expected: a whole number)}.
 */
final class UsageErrorHandler implements IParameterExceptionHandler {

    @Override
    public int handleParseException(ParameterException ex, String[] args) {
        CommandLine c = ex.getCommandLine();
        String name = c.getCommandSpec().qualifiedName(" ");
        String message = ex.getMessage() == null ? ex.toString() : ex.getMessage().replace('\n', ' ').trim();
        String hint = "";
        String expected = ex instanceof UnmatchedArgumentException || !(ex.getArgSpec() instanceof OptionSpec o)
                || ex.getValue() == null || !message.startsWith("Invalid value for option") ? null
                : expected(o.type(), ex.getValue());
        if (isUnknownHelpTopic(ex, message)) {
            // picocli's HelpCommand: "Unknown subcommand 'x'." on bfc itself; said as an unknown
            // command is said without help, by the command that was given.
            String word = ex.getValue();
            name = name + " help";
            message = "unknown command '" + word + "'";
            String near = nearest(word, c.getSubcommands().keySet());
            hint = near == null ? "" : " (did you mean " + near + "?)";
            c.getErr().println(CommandRunner.visible(Words.cutIn(name + ": " + message + hint + " (see 'bfc --help')",
                    args)));
            c.getErr().flush();
            return CommandRunner.EXIT_USAGE;
        }
        if (expected != null) {
            // picocli's "Invalid value for option '--x': 'y' is not a boolean": the value, and
            // what it takes, in the shape of the commands' own messages.
            message = ((OptionSpec) ex.getArgSpec()).longestName() + "=" + ex.getValue() + " (expected: " + expected
                    + ")";
        } else if (ex instanceof MissingParameterException && dashWord(c, args) != null) {
            // "bfc verify -x.bfctrace": picocli took the file for an unknown option, then found
            // no FILE.
            String w = dashWord(c, args);
            message = message + " ('" + w + "' was read as an option: give a file whose name starts with '-' as ./"
                    + w + ", or after --)";
        } else if (ex instanceof UnmatchedArgumentException u) {
            String value = optionalBooleanValue(c, args, u.getUnmatched());
            String word = u.getUnmatched().isEmpty() ? "-" : u.getUnmatched().get(0);
            // After '--' every word is an argument, whatever it starts with.
            boolean argument = !word.startsWith("-") || afterEndOfOptions(args, word);
            if (value != null) {
                message = value.startsWith("(") ? message + " " + value : value;
            } else if (argument && c.getCommandSpec().parent() == null) {
                // picocli suggests commands by prefix ('repaly': report); a typo is nearer.
                message = "unknown command '" + word + "'";
                String near = nearest(word, c.getSubcommands().keySet());
                hint = near == null ? "" : " (did you mean " + near + "?)";
            } else if (argument && c.getCommandSpec().positionalParameters().isEmpty()) {
                message = "unexpected argument '" + word + "' (expected: options only)";
            } else if (argument) {
                message = "unexpected argument '" + word + "' (expected: "
                        + c.getCommandSpec().positionalParameters().stream()
                                .map(p -> p.paramLabel() + (p.arity().max() > 1 ? "..." : ""))
                                .collect(Collectors.joining(" ")) + " only)";
            } else if (!u.getSuggestions().isEmpty()) {
                hint = " (did you mean " + String.join(" or ", u.getSuggestions()) + "?)";
            }
        }
        // The words quoted come from the command line: their control characters are shown escaped,
        // and a long one is cut as a quoted line of a file is.
        c.getErr().println(CommandRunner.visible(Words.cutIn(name + ": " + message + hint + " (see '" + name
                + " --help')", args)));
        c.getErr().flush();
        return CommandRunner.EXIT_USAGE;
    }

    /** Whether this is picocli's {@code HelpCommand} refusing {@code help WORD} for an unknown WORD. */
    private static boolean isUnknownHelpTopic(ParameterException ex, String message) {
        return ex.getClass() == ParameterException.class && ex.getValue() != null
                && ex.getCommandLine().getCommandSpec().parent() == null
                && message.equals("Unknown subcommand '" + ex.getValue() + "'.");
    }

    /** Whether {@code word} is among the words after the first {@code --} of the command line. */
    private static boolean afterEndOfOptions(String[] args, String word) {
        boolean after = false;
        for (String a : args) {
            if (after && a.equals(word)) {
                return true;
            }
            after |= a.equals("--");
        }
        return false;
    }

    /** The first argument that starts with '-' and is no option of the command, or null. */
    private static String dashWord(CommandLine c, String[] args) {
        for (String a : args) {
            if (a.equals("--")) {
                return null;
            }
            if (a.length() > 1 && a.startsWith("-") && c.getCommandSpec().findOption(a.split("=", 2)[0]) == null
                    && !c.getCommandSpec().name().equals(a)) {
                return a;
            }
        }
        return null;
    }

    /** What an option of this type takes, given {@code value}; null to keep picocli's message. */
    private static String expected(Class<?> type, String value) {
        if (type == boolean.class || type == Boolean.class) {
            return "true or false";
        }
        boolean isInt = type == int.class || type == Integer.class;
        if (type == BigInteger.class) {
            // Any integer fits: only a word that is none gets here (WholeNumbers checks the range).
            return "a whole number";
        }
        if (!isInt && type != long.class && type != Long.class) {
            return null;
        }
        if (value.matches("[+-]?[0-9]+")) {
            // A whole number, but past what the option's type holds.
            return "a number from " + (isInt ? Integer.MIN_VALUE : Long.MIN_VALUE) + " to "
                    + (isInt ? Integer.MAX_VALUE : Long.MAX_VALUE);
        }
        return "a whole number";
    }

    /** The name nearest {@code word} by edit distance (a swap of two letters counts one), if near. */
    private static String nearest(String word, Collection<String> names) {
        String best = null;
        int bestDistance = Math.max(1, word.length() / 3) + 1;
        for (String n : names) {
            int d = editDistance(word.toLowerCase(Locale.ROOT), n);
            if (d < bestDistance) {
                best = n;
                bestDistance = d;
            }
        }
        return best;
    }

    /** Levenshtein distance, with a swap of two adjacent letters as one edit. */
    private static int editDistance(String a, String b) {
        int[][] d = new int[a.length() + 1][b.length() + 1];
        for (int i = 0; i <= a.length(); i++) {
            for (int j = 0; j <= b.length(); j++) {
                if (i == 0 || j == 0) {
                    d[i][j] = i + j;
                    continue;
                }
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                d[i][j] = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
                if (i > 1 && j > 1 && a.charAt(i - 1) == b.charAt(j - 2) && a.charAt(i - 2) == b.charAt(j - 1)) {
                    d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
                }
            }
        }
        return d[a.length()][b.length()];
    }

    /**
     * For a word after an optional-boolean option that is not a boolean: the message when that
     * word was left unmatched, a note in parentheses when it filled a positional parameter (so a
     * later word was left unmatched), null if there is no such word.
     */
    private static String optionalBooleanValue(CommandLine c, String[] args, List<String> unmatched) {
        for (int i = 0; i + 1 < args.length; i++) {
            OptionSpec o = c.getCommandSpec().findOption(args[i]);
            if (o == null || o.arity().min() != 0 || o.arity().max() != 1
                    || (o.type() != Boolean.class && o.type() != boolean.class)) {
                continue;
            }
            String next = args[i + 1];
            String lower = next.toLowerCase(Locale.ROOT);
            if (next.startsWith("-") || lower.equals("true") || lower.equals("false")) {
                continue;
            }
            if (unmatched.contains(next)) {
                return args[i] + " " + next + " (expected: true or false, or nothing for true: " + args[i] + ", "
                        + args[i] + "=false)";
            }
            return "('" + next + "' after " + args[i] + " is not its value: " + args[i] + " takes true or false, or"
                    + " nothing for true)";
        }
        return null;
    }
}
