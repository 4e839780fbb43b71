// Command toolshelf keeps MCP tool definitions out of a model's context
// until the model asks for them.
//
// Usage:
//
//	toolshelf <command> [flags] [arguments]
//
// Run "toolshelf help" for the list of commands and "toolshelf help
// <command>" for one command's flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/toolshelf/toolshelf/internal/fuzzy"
	"github.com/toolshelf/toolshelf/sandbox"
)

func main() {
	sandbox.Main() // when this process is a code-mode program's sandbox
	if err := hideFromSameUser(); err != nil {
		fmt.Fprintf(os.Stderr, "toolshelf: warning: could not make the process non-dumpable (%v): a server running as the same user could read its environment\n", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // something went wrong while working
	exitUsage   = 2 // bad flags, arguments or input files
)

// env is what a command gets from the process.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// held are the files toolshelf holds secret or writes (secret files
	// read, the audit log, the journal): each is added where it enters
	// the program, and covered in every contained server's sandbox.
	held *heldPaths
}

// command is one subcommand.
type command struct {
	name    string
	aliases []string // earlier names that keep working, unlisted
	summary string
	usage   string // arguments after the command name
	help    string // paragraphs after the usage line
	flags   func(fs *flag.FlagSet) func(ctx context.Context, e *env, args []string) error
}

// commands are the subcommands, each defined in a file of its own.
var commands = byName([]*command{
	searchCommand,
	listCommand,
	doctorCommand,
	serveCommand,
	proxyCommand,
	usageCommand,
	importCommand,
	addCommand,
	removeCommand,
	searchRegistryCommand,
	outdatedCommand,
	updateCommand,
	catalogCommand,
	authCommand,
	toolsCommand,
	auditCommand,
	learnedCommand,
	evalCommand,
	policyCommand,
	storeCommand,
})

// byName indexes commands by name.
func byName(list []*command) map[string]*command {
	m := make(map[string]*command, len(list))
	for _, c := range list {
		m[c.name] = c
		for _, a := range c.aliases {
			m[a] = c
		}
	}
	return m
}

// run is main without the process: tests call it in-process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runEnv(ctx, &env{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}, args)
}

// runEnv is run with the environment given: tests that run in parallel
// give each command variables of its own.
func runEnv(ctx context.Context, e *env, args []string) int {
	stdout, stderr := e.stdout, e.stderr
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "version", "-version", "--version":
		printVersion(stdout)
		return exitOK
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 {
			if c := commands[rest[0]]; c != nil {
				fs := newFlagSet(c)
				c.flags(fs)
				printCommandUsage(stdout, c, fs)
				return exitOK
			}
			fmt.Fprintf(stderr, "toolshelf: unknown command %q\n", rest[0])
			return exitUsage
		}
		printUsage(stdout)
		return exitOK
	}
	c := commands[name]
	if c == nil {
		fmt.Fprintf(stderr, "toolshelf: unknown command %q%s\nRun 'toolshelf help' for the list of commands.\n", name, suggest(name))
		return exitUsage
	}
	fs := newFlagSet(c)
	action := c.flags(fs)
	positional, err := parseFlags(fs, rest)
	if errors.Is(err, flag.ErrHelp) {
		printCommandUsage(stdout, c, fs)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "toolshelf %s: %v\nRun 'toolshelf help %s' for usage.\n", name, err, name)
		return exitUsage
	}
	held := &heldPaths{}
	getenv, err := withSecretFiles(e.getenv, held)
	if err == nil {
		ee := *e
		ee.getenv, ee.held = getenv, held
		err = action(ctx, &ee, positional)
	}
	var status exitStatus
	if errors.As(err, &status) {
		return int(status) // the command said what it had to
	}
	if err != nil {
		fmt.Fprintf(stderr, "toolshelf %s: %v\n", name, err)
		var ue *usageError
		if errors.As(err, &ue) {
			return exitUsage
		}
		return exitFailure
	}
	return exitOK
}

// exitStatus ends a command with a status and no message: it has said
// what it had to on stdout.
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// usageError marks an error caused by the user's input: flags, arguments,
// or the content of files they named. It exits with status 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

func badInput(err error) error {
	if err == nil {
		return nil
	}
	return &usageError{err}
}

func newFlagSet(c *command) *flag.FlagSet {
	fs := flag.NewFlagSet("toolshelf "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run prints errors and usage itself
	return fs
}

// parseFlags parses flags that may come before, between or after
// positional arguments, as in "toolshelf search create issue --json".
// Everything after "--" is positional.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		// fs.Parse stops at the first non-flag, or after a "--".
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `toolshelf keeps MCP tool definitions out of a model's context until the
model asks for them: one search tool instead of hundreds of tool schemas.

Usage:
  toolshelf <command> [flags] [arguments]

Commands:
`)
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if n == c.name {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(w, `
Run 'toolshelf help <command>' for a command's flags, and
'toolshelf --version' for the version.
`)
}

func printCommandUsage(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: toolshelf %s %s\n\n%s\n", c.name, c.usage, strings.TrimSpace(c.help))
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprint(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
}

// suggest returns a hint naming the closest command to a mistyped one.
func suggest(name string) string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	return didYouMean(name, names)
}

// didYouMean returns a hint naming the closest of known to a mistyped
// word, or "".
func didYouMean(word string, known []string) string {
	if c := fuzzy.Closest(word, known, 1, 2); len(c) > 0 {
		return fmt.Sprintf(" (did you mean %q?)", c[0])
	}
	return ""
}

// checkPositive rejects a numeric flag that was given a value below 1; an
// unset flag keeps its default.
func checkPositive(fs *flag.FlagSet, name string, v int) error {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	if set && v < 1 {
		return usagef("--%s must be a positive integer, got %d", name, v)
	}
	return nil
}
