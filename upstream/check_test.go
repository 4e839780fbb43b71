package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/rules"
)

// policy check (Scope.Check) and the gateway's call path (Scope.Reach)
// agree on every call: generated arguments of every shape (numbers whole,
// fractional, huge; paths reworded; values of another type; fields
// missing; padding), against rules that forbid, ask and limit.
func TestCheckAgreesWithReach(t *testing.T) {
	file := filepath.Join(t.TempDir(), "team.cedar")
	os.WriteFile(file, []byte(`
forbid (principal, action, resource) when { resource.name == "pay" && context.args.amount > 100 };
forbid (principal, action, resource) when { resource.name == "write" && !(context.clean.path like "/srv/ci/*") };
@ask("Really?") forbid (principal, action, resource) when { resource.name == "pay" && context.args has note && context.args.note like "*urgent*" };
@limit("1000000/minute") permit (principal, action, resource) when { resource.name == "write" && context.args.size > 10 };
`), 0o644)
	live, err := rules.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcptest.NewServer("s", mcptest.SimpleTools("pay", "write"), nil)
	if err != nil {
		t.Fatal(err)
	}
	dial := func(context.Context) (mcp.Transport, error) {
		st, ct := mcp.NewInMemoryTransports()
		go srv.Run(context.Background(), st) // the dial's context ends with the dial
		return ct, nil
	}
	p := startPool(t, []config.ServerConfig{{Name: "s", Dial: dial}}, &Options{Policies: live})
	sc := p.Scope(nil)
	rng := rand.New(rand.NewPCG(51, 50))
	numbers := []any{0, 5, 100, 101, 100.5, 99.9999, 1e300, -1e308, json.Number("9007199254740993"), json.Number("18446744073709551616"), "150", nil, []any{500}, map[string]any{"v": 1}}
	paths := []any{"/srv/ci/a", "/srv/ci/../../etc/passwd", "/srv/ci/%2e%2e/x", "/srv//ci/./b", "file:///srv/ci/c", "srv/ci/d", "/etc/shadow", 42, nil, []any{"/srv/ci/a"}}
	notes := []any{"urgent: now", "later", 7}
	counts := map[string]int{}
	for i := range 400 {
		args := map[string]any{}
		tool := "pay"
		if rng.IntN(2) == 0 {
			tool = "write"
			if rng.IntN(8) > 0 {
				args["path"] = paths[rng.IntN(len(paths))]
			}
			if rng.IntN(3) > 0 {
				args["size"] = numbers[rng.IntN(len(numbers))]
			}
		} else {
			if rng.IntN(8) > 0 {
				args["amount"] = numbers[rng.IntN(len(numbers))]
			}
			if rng.IntN(3) == 0 {
				args["note"] = notes[rng.IntN(len(notes))]
			}
		}
		for k := range rng.IntN(3) * 10 {
			args[fmt.Sprintf("pad%d", k)] = k
		}
		raw, _ := json.Marshal(args)
		e, err := sc.Resolve("mcp__s__" + tool)
		if err != nil {
			t.Fatal(err)
		}
		v := sc.Check(context.Background(), &Call{Tool: e, Args: raw})
		_, reachErr := sc.Reach(context.Background(), &Call{Tool: e, Args: raw})
		var refusal *Refusal
		got := "permit"
		switch {
		case reachErr == nil:
		case errors.As(reachErr, &refusal) && refusal.Decision == "declined":
			got = "ask" // no one to ask here: the call waits for a yes it cannot get
		case errors.Is(reachErr, ErrForbidden), strings.Contains(reachErr.Error(), "cannot decide"):
			got = "forbid"
		default:
			t.Fatalf("call %d (%s %s): %v", i, tool, raw, reachErr)
		}
		counts[got]++
		if v.Effect.String() != got {
			t.Errorf("call %d, %s %s: policy check says %v (%s), the call path %s (%v)", i, tool, raw, v.Effect, v.Message, got, reachErr)
		}
	}
	t.Logf("400 generated calls: %v", counts)
	if counts["permit"] == 0 || counts["forbid"] == 0 || counts["ask"] == 0 {
		t.Errorf("the generated calls do not reach every effect: %v", counts)
	}
}
