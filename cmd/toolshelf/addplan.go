package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/toolshelf/toolshelf/registry"
)

// describePlan says what add is about to write for a server, everything
// it will get on the host: its command and arguments, every variable
// (the registry's fixed values marked), what it may write and read, its
// network and the ports of the host it reaches.
func describePlan(p *registry.Plan, local, path string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "toolshelf will add %s to %s, running %s:\n", local, path, p.Chose)
	if url, ok := p.Server["url"].(string); ok {
		fmt.Fprintf(&b, "  reaches   %s\n", url)
	}
	if cmd, ok := p.Server["command"].(string); ok {
		args, _ := p.Server["args"].([]string)
		fmt.Fprintf(&b, "  runs      %s\n", strings.Join(append([]string{cmd}, quoteArgs(args)...), " "))
	}
	for i, kv := range planPairs(p.Server["env"]) {
		label := "env"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(&b, "  %-9s %s\n", label, kv)
	}
	for i, kv := range planPairs(p.Server["headers"]) {
		label := "headers"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(&b, "  %-9s %s\n", label, kv)
	}
	paths, _ := p.Server["paths"].(map[string]any)
	if w, _ := paths["write"].([]string); len(w) > 0 {
		fmt.Fprintf(&b, "  writes    %s\n", strings.Join(w, ", "))
	}
	if _, ok := p.Server["command"]; ok {
		network := "a network of its own, without the host's loopback"
		if n, ok := p.Server["network"].(map[string]any); ok {
			network += fmt.Sprintf("; the host's loopback ports %v", n["hostPorts"])
		}
		fmt.Fprintf(&b, "  network   %s\n", network)
		fmt.Fprintf(&b, "  contained its home, /tmp and cache its own; nothing else of the host\n")
	}
	for _, name := range p.Fixed {
		fmt.Fprintf(&b, "  note      %s is fixed by the registry's entry, not asked of you\n", name)
	}
	fmt.Fprintf(&b, "  held      its tools are served once you approve them\n")
	return b.String()
}

// planPairs lists a map of names and values as NAME=VALUE, in order.
func planPairs(m any) []string {
	vars, _ := m.(map[string]string)
	var out []string
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// quoteArgs quotes the arguments a shell would split.
func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"$`\\") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return out
}

// askConfirm asks a yes-or-no question with confirm; with nobody to ask
// (confirm nil) the answer is no.
func askConfirm(confirm func(string) (bool, error), question string) (bool, error) {
	if confirm == nil {
		return false, nil
	}
	return confirm(question)
}

// errNoAnswer is a question stdin did not answer.
var errNoAnswer = errors.New("no answer on stdin (--yes confirms for a script)")

// askYes asks a question on the terminal: y or yes is yes; anything
// else, or no answer, is no.
func askYes(e *env, in *bufio.Reader, question string) (bool, error) {
	fmt.Fprintf(e.stderr, "%s [y/N]: ", question)
	line, err := in.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	if errors.Is(err, io.EOF) && line == "" {
		return false, errNoAnswer
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}
