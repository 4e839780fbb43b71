package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"github.com/toolshelf/toolshelf/rules"
	"github.com/toolshelf/toolshelf/upstream"
)

var policyCommand = &command{
	name:    "policy",
	summary: "check what the rules say of a call",
	usage:   "check [--config FILE] [--profile NAME] --tool NAME [--args JSON] [--client NAME] [--via HOW]",
	help: `
'policy check' asks the rules about a call without making it, and prints
the decision and the rule that made it: the profile, the server's tool
filter and the lock file, then the configuration's "policies" (rules in
Cedar: see the README's "Rules on calls"). It exits 0 when the call would
go, 1 when it would be refused (by the profile's filter, the lock file, a
rule, or a rule that cannot decide on these arguments), and 3 when it
would ask the person first. It runs the gateway's own checks on the exact
arguments given.

  toolshelf policy check --profile ci --tool mcp__filesystem__write_file \
      --args '{"path": "/etc/passwd", "content": "x"}'

The servers are started (or their cached tool lists used) to know the
tool and its annotations.

` + configHelp,
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		config := fs.String("config", "", "servers configuration `FILE` (mcpServers JSON)")
		profile := fs.String("profile", "", "the caller's profile `NAME` (default: every tool)")
		tool := fs.String("tool", "", "the qualified `NAME` of the tool called (required)")
		args := fs.String("args", "{}", "the call's arguments, a JSON `OBJECT`")
		client := fs.String("client", "", "the client's `NAME`, as rules see it")
		via := fs.String("via", "call_tool", "how the tool is reached (`HOW`): call_tool, direct, code or library")
		return func(ctx context.Context, e *env, rest []string) error {
			if len(rest) != 1 || rest[0] != "check" {
				return usagef("want: toolshelf policy check --tool NAME [...]")
			}
			if *tool == "" {
				return usagef("--tool is required: the qualified name of a tool (toolshelf list shows them)")
			}
			var obj map[string]any
			if err := json.Unmarshal([]byte(*args), &obj); err != nil {
				return usagef("--args must be a JSON object: %v", err)
			}
			src, err := openCatalog(ctx, e, "", *config, "")
			if err != nil {
				return err
			}
			defer src.close()
			if *profile != "" {
				if err := src.narrow(*profile); err != nil {
					return err
				}
			}
			entry, err := src.scope.Resolve(*tool)
			if err != nil && src.profile != nil {
				// A tool the profile's filter hides is refused by the
				// filter, not unknown: say which part of it.
				if hidden, ok := src.up.Catalog().Lookup(*tool); ok {
					if why := src.profile.Excludes(hidden); why != "" {
						fmt.Fprintf(e.stdout, "FORBID: %s\n  by profile %s\n  %s\n", hidden.Name, src.profile.Name, why)
						return exitStatus(exitFailure)
					}
				}
			}
			if err != nil {
				return badInput(fmt.Errorf("--tool: %v", err))
			}
			if src.policies != nil {
				// The warnings of the rules the check below reads, not
				// of the files read again.
				for _, w := range src.policies.Current().Warnings {
					fmt.Fprintln(e.stderr, "toolshelf: warning:", w)
				}
			}
			v := src.scope.Check(ctx, &upstream.Call{Tool: entry, Args: json.RawMessage(*args), Client: *client, Via: *via})
			fmt.Fprintf(e.stdout, "%s: %s\n", strings.ToUpper(v.Effect.String()), entry.Name)
			if len(v.Rules) > 0 {
				fmt.Fprintf(e.stdout, "  by %s\n", strings.Join(v.Rules, ", "))
			}
			if v.Message != "" {
				fmt.Fprintf(e.stdout, "  %s\n", v.Message)
			}
			switch v.Effect {
			case rules.Forbid:
				return exitStatus(exitFailure)
			case rules.Ask:
				return exitStatus(exitAsk)
			}
			return nil
		}
	},
}

// exitAsk is policy check's exit status for a call that asks first.
const exitAsk = 3
