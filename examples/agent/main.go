// Command agent is an example of toolshelf's library face: an agent on the
// Anthropic Messages API that connects to MCP servers and sends the model
// only the tools it has found.
//
//	ANTHROPIC_API_KEY=... go run ./examples/agent --config examples/servers.json "Remember that ..."
//
// Each turn it decides deferral with package policy, prepares the request
// with package messages (deferred tools, the discovered set, the
// announcement), sends it with package anthropic to ANTHROPIC_BASE_URL
// (the real API by default), answers the model's searches with
// tool_reference blocks and its calls through an upstream.Pool, and
// compacts the conversation when the prompt grows past --compact-at
// tokens, keeping the discovered tools across the compaction.
//
// Behind a proxy (a non-Anthropic ANTHROPIC_BASE_URL), tool search stays
// off unless ENABLE_TOOL_SEARCH is set, as in Claude Code.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/anthropic"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/learn"
	"github.com/toolshelf/toolshelf/messages"
	"github.com/toolshelf/toolshelf/policy"
	"github.com/toolshelf/toolshelf/rules"
	"github.com/toolshelf/toolshelf/sandbox"
	"github.com/toolshelf/toolshelf/upstream"
)

func main() {
	sandbox.Main() // when this process is a run_code program's sandbox
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

type options struct {
	config    string
	model     string
	maxTurns  int
	compactAt int
	announce  string
	noLearn   bool
	code      bool
	task      string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.config, "config", "", "MCP servers configuration `FILE` (mcpServers JSON)")
	fs.StringVar(&o.model, "model", "claude-sonnet-4-5", "the `MODEL`")
	fs.IntVar(&o.maxTurns, "max-turns", 20, "stop after `N` model turns")
	fs.IntVar(&o.compactAt, "compact-at", 100000, "compact when a prompt reaches `TOKENS` input tokens")
	fs.StringVar(&o.announce, "announce", "delta", "how deferred tools are announced: list or delta")
	fs.BoolVar(&o.noLearn, "no-learn", false, "do not learn from use (toolshelf learned)")
	fs.BoolVar(&o.code, "code", false, "offer run_code: the model may compose tools in a sandboxed JavaScript program")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o.task = strings.Join(fs.Args(), " ")
	if o.config == "" || o.task == "" {
		fmt.Fprintln(stderr, "usage: agent --config FILE [flags] TASK...")
		return 2
	}
	if o.announce != "list" && o.announce != "delta" {
		fmt.Fprintln(stderr, "agent: --announce must be list or delta")
		return 2
	}
	a, err := newAgent(o, stderr, getenv)
	if err != nil {
		fmt.Fprintln(stderr, "agent:", err)
		return 2
	}
	// The agent owns its servers: they run until it has answered, and it
	// returns only once they have exited.
	pctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); a.pool.Run(pctx) }()
	defer func() { stop(); <-done }()
	answer, err := a.run(ctx)
	a.learn()
	if err != nil {
		fmt.Fprintln(stderr, "agent:", err)
		return 1
	}
	fmt.Fprintln(stdout, answer)
	return 0
}

// agent is one conversation.
type agent struct {
	opts     options
	log      *slog.Logger
	api      *anthropic.Client
	pool     *upstream.Pool
	scope    *upstream.Scope // every tool: its calls pass the pool's rules
	settings policy.Settings
	baseURL  string
	searcher *messages.Searcher
	// coder runs run_code's programs (--code); nil without.
	coder *sandbox.Runner
	// learned keeps what this conversation's searches led to, for later
	// ones (nil with --no-learn).
	learned *learn.Store
	history []messages.Message
	// lastInput is the input tokens of the last response, for compaction.
	lastInput int
	// known is what was derived from the last catalog seen: a new
	// snapshot comes only when servers change, so most turns reuse it.
	known *catalogState
}

// catalogState is what the agent derives from one catalog snapshot.
type catalogState struct {
	view     *policy.View
	deferred map[string]bool  // filled per decision
	pool     *catalog.Catalog // the deferred tools, for the searcher
	servers  []string         // what the pool's servers do, announced
}

func newAgent(o options, stderr io.Writer, getenv func(string) string) (*agent, error) {
	settings, err := policy.FromEnv(getenv)
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(o.config, getenv)
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	popts := &upstream.Options{Logger: log.With("component", "upstream")}
	if len(cfg.Policies) > 0 {
		// The configuration's rules on calls hold for the agent's calls
		// as they do for the gateway's: the same call path asks them.
		if popts.Policies, err = rules.Open(cfg.Policies...); err != nil {
			return nil, err
		}
	}
	pool := upstream.NewPool(cfg.Servers, popts)
	a := &agent{
		opts: o, log: log, pool: pool, scope: pool.Scope(nil), settings: settings,
		baseURL:  getenv("ANTHROPIC_BASE_URL"),
		api:      anthropic.NewClient(getenv("ANTHROPIC_API_KEY"), &anthropic.Options{BaseURL: getenv("ANTHROPIC_BASE_URL")}),
		searcher: &messages.Searcher{},
		history:  []messages.Message{{Role: "user", Content: []messages.Block{messages.TextBlock(o.task)}}},
	}
	if o.code {
		if a.coder, err = sandbox.New(nil); err != nil {
			return nil, err
		}
	}
	path := getenv("TOOLSHELF_LEARNED")
	if path == "" {
		path = learn.DefaultPath(getenv)
	}
	if !o.noLearn && path != "" {
		a.learned = learn.Open(path, log.With("component", "learn"))
		if pairs, err := a.learned.Pairs(); err != nil {
			log.Warn("cannot read what was learned from use", "error", err)
		} else {
			// One user's agent: a pair one conversation showed is
			// evidence (a gateway that clients share asks for more).
			a.searcher.Learned = learn.Queries(pairs, "", 1)
		}
	}
	return a, nil
}

// learn keeps the searches of the conversation that led to calls.
func (a *agent) learn() {
	if a.learned == nil {
		return
	}
	for _, p := range messages.Learned(a.history, a.searcher.Tool().Name) {
		for _, tool := range p.Tools {
			a.learned.Record("", p.Query, tool)
		}
	}
	if err := a.learned.Flush(); err != nil {
		a.log.Warn("cannot save what was learned from use", "error", err)
	}
}

// turnState is what one turn's request was built from.
type turnState struct {
	cat      *catalog.Catalog
	decision policy.Decision
	deferred map[string]bool
	pool     *catalog.Catalog // the deferred tools
	servers  []string
}

// run loops until the model stops asking for tools.
func (a *agent) run(ctx context.Context) (string, error) {
	// Give servers a moment; the search tool reports those still pending.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	a.pool.Wait(wctx)
	cancel()
	for turn := 1; turn <= a.opts.maxTurns; turn++ {
		if a.lastInput >= a.opts.compactAt {
			if err := a.compact(ctx); err != nil {
				return "", fmt.Errorf("compacting: %w", err)
			}
		}
		st := a.decide(ctx)
		prepared, err := a.prepare(st)
		if err != nil {
			return "", err
		}
		body, err := json.Marshal(prepared.Request)
		if err != nil {
			return "", err
		}
		raw, err := a.api.CreateMessage(ctx, body, prepared.Betas)
		if err != nil {
			return "", fmt.Errorf("turn %d: %w", turn, err)
		}
		if prepared.Delta != nil {
			a.history = append(a.history, *prepared.Delta)
		}
		// The response is a message (kept whole, unknown blocks and all)
		// with a stop reason and usage.
		var reply messages.Message
		var meta struct {
			StopReason string `json:"stop_reason"`
			Usage      struct {
				InputTokens int `json:"input_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(raw, &reply); err != nil {
			return "", fmt.Errorf("turn %d: reading the response: %w", turn, err)
		}
		if err := json.Unmarshal(raw, &meta); err != nil {
			return "", fmt.Errorf("turn %d: reading the response: %w", turn, err)
		}
		a.lastInput = meta.Usage.InputTokens
		reply = messages.Message{Role: "assistant", Content: reply.Content}
		a.history = append(a.history, reply)
		a.log.Info("turn", "n", turn, "search", st.decision.String(), "stop", meta.StopReason, "input_tokens", meta.Usage.InputTokens)
		if meta.StopReason != "tool_use" {
			return text(reply), nil
		}
		a.history = append(a.history, a.useTools(ctx, reply, st))
	}
	return "", fmt.Errorf("no answer after %d turns", a.opts.maxTurns)
}

// decide runs the deferral policy on the current catalog. What depends on
// the catalog alone (the checklist's view of each tool, the cost of the
// deferrable ones, the deferred pool) is computed once per snapshot.
func (a *agent) decide(ctx context.Context) turnState {
	cat := a.pool.Catalog()
	if a.known == nil || a.known.view.Catalog != cat {
		search, _ := json.Marshal(a.searcher.Tool())
		checklist := policy.Checklist{SearchTool: a.searcher.Tool().Name}
		a.known = &catalogState{view: policy.NewView(ctx, cat, checklist, []json.RawMessage{search}, nil)}
	}
	k := a.known
	optimistic, _ := policy.Optimistic(a.settings, policy.ProviderFirstParty, a.baseURL)
	d := k.view.Decide(policy.Request{
		Settings: a.settings, Model: a.opts.model, BaseURL: a.baseURL, Provider: policy.ProviderFirstParty,
		SearchAvailable: optimistic, Pending: a.pool.Pending(),
	})
	deferred := map[string]bool{}
	for _, n := range d.Deferred {
		deferred[n] = true
	}
	if k.pool == nil || !maps.Equal(k.deferred, deferred) {
		k.deferred = deferred
		k.pool = cat.Filter(func(e *catalog.Entry) bool { return deferred[e.Name] })
		k.servers = policy.Summaries(k.pool)
	}
	return turnState{cat: cat, decision: d, deferred: deferred, pool: k.pool, servers: k.servers}
}

func (a *agent) prepare(st turnState) (*messages.Prepared, error) {
	tools := []messages.Tool{a.searcher.Tool()}
	if a.coder != nil {
		// Never deferred: it is not in the catalog the policy decides on.
		tools = append(tools, messages.Tool{Name: sandbox.ToolName, Description: sandbox.Description(a.coder.Limits()), InputSchema: sandbox.InputSchema})
	}
	for e := range st.cat.All() {
		if e.Unverified {
			continue
		}
		schema, _ := catalog.NormalizeSchema(e.InputSchema)
		tools = append(tools, messages.Tool{Name: e.Name, Description: e.Description, InputSchema: schema})
	}
	announce := messages.AnnounceDelta
	if a.opts.announce == "list" {
		announce = messages.AnnounceList
	}
	return messages.Prepare(messages.Turn{
		Model: a.opts.model, Tools: tools, Decision: st.decision, SearchTool: a.searcher.Tool().Name,
		BetasDisabled: a.settings.BetasDisabled, History: a.history, Announce: announce, Servers: st.servers,
		ToolAdditions: messages.AddsToolsMidConversation(a.opts.model),
		Extra:         map[string]json.RawMessage{"max_tokens": json.RawMessage(`4096`)},
	})
}

// useTools answers every tool_use of a reply, in one user message.
func (a *agent) useTools(ctx context.Context, reply messages.Message, st turnState) messages.Message {
	discovered := messages.Discovered(a.history)
	out := messages.Message{Role: "user"}
	for _, b := range reply.Content {
		if b.Type != "tool_use" {
			continue
		}
		id, name, input := b.String("id"), b.String("name"), b.Raw("input")
		if name == a.searcher.Tool().Name {
			out.Content = append(out.Content, a.searcher.Handle(ctx, id, input, messages.SearchState{
				Deferred: st.pool, All: st.cat, Discovered: discovered, Pending: a.pool.Pending(), NotConnected: a.notConnected(),
			}))
			continue
		}
		if name == sandbox.ToolName && a.coder != nil {
			out.Content = append(out.Content, a.runCode(ctx, id, input, st.cat))
			continue
		}
		if hint := messages.SchemaHint(name, st.deferred, discovered, a.searcher.Tool().Name); hint != "" {
			// The model called a tool whose schema it never saw.
			out.Content = append(out.Content, messages.ToolResult(id, []messages.Block{messages.TextBlock(hint)}, true))
			continue
		}
		res, err := a.call(ctx, name, input)
		if err != nil {
			out.Content = append(out.Content, messages.ToolResult(id, []messages.Block{messages.TextBlock(err.Error())}, true))
			continue
		}
		out.Content = append(out.Content, messages.ToolResult(id, contentBlocks(res), res.IsError))
	}
	return out
}

// call calls a tool the model named: through the scope's one call path,
// which asks the same rules as the gateway's.
func (a *agent) call(ctx context.Context, name string, input json.RawMessage) (*mcp.CallToolResult, error) {
	e, err := a.scope.Resolve(name)
	if err != nil {
		return nil, err
	}
	return a.scope.Reach(ctx, &upstream.Call{Tool: e, Args: input, Via: "library"})
}

// runCode runs a program of the model's: its calls go to the servers as
// the model's own calls do, and only what it prints or returns comes back.
func (a *agent) runCode(ctx context.Context, id string, input json.RawMessage, cat *catalog.Catalog) messages.Block {
	program, err := sandbox.ParseInput(input)
	if err != nil {
		return messages.ToolResult(id, []messages.Block{messages.TextBlock(err.Error())}, true)
	}
	res, err := a.coder.Run(ctx, program, func(ctx context.Context, server, tool string, args json.RawMessage) (json.RawMessage, error) {
		e, ok := cat.Tool(server, tool)
		if !ok || e.Unverified {
			return nil, fmt.Errorf("there is no tool %s", sandbox.Accessor(server, tool))
		}
		res, err := a.scope.Reach(ctx, &upstream.Call{Tool: e, Args: args, Via: "code"})
		if err != nil {
			return nil, err
		}
		return sandbox.Value(res)
	})
	if err != nil {
		return messages.ToolResult(id, []messages.Block{messages.TextBlock(sandbox.ToolName + ": " + err.Error())}, true)
	}
	return messages.ToolResult(id, []messages.Block{messages.TextBlock(res.Text())}, res.Error != "")
}

// contentBlocks converts an MCP tool result to Messages API blocks.
func contentBlocks(res *mcp.CallToolResult) []messages.Block {
	var blocks []messages.Block
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			blocks = append(blocks, messages.TextBlock(c.Text))
		case *mcp.ImageContent:
			blocks = append(blocks, messages.Block{Type: "image"}.With("source", map[string]string{
				"type": "base64", "media_type": c.MIMEType, "data": string(c.Data),
			}))
		default:
			b, _ := json.Marshal(c)
			blocks = append(blocks, messages.TextBlock(string(b)))
		}
	}
	if len(blocks) == 0 && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		blocks = append(blocks, messages.TextBlock(string(b)))
	}
	if len(blocks) == 0 {
		blocks = append(blocks, messages.TextBlock("(no output)"))
	}
	return blocks
}

// compact replaces the history with a summary, keeping the discovered
// tools on the boundary so that compaction loses none.
func (a *agent) compact(ctx context.Context) error {
	a.learn() // before the history it learns from is summarised away
	discovered := messages.DiscoveredNames(a.history)
	req := messages.Request{Model: a.opts.model, Extra: map[string]json.RawMessage{"max_tokens": json.RawMessage(`2048`)}}
	for _, m := range a.history {
		m.Boundary, m.Delta = nil, nil
		req.Messages = append(req.Messages, stripRefs(m))
	}
	req.Messages = append(req.Messages, messages.Message{Role: "user", Content: []messages.Block{messages.TextBlock(summarizePrompt)}})
	body, _ := json.Marshal(req)
	raw, err := a.api.CreateMessage(ctx, body, nil)
	if err != nil {
		return err
	}
	var resp messages.Message
	if err := json.Unmarshal(raw, &resp); err != nil {
		return err
	}
	summary := text(resp)
	if summary == "" {
		return errors.New("the summary is empty")
	}
	a.log.Info("compacted", "messages", len(a.history), "discovered", len(discovered))
	a.history = []messages.Message{messages.NewBoundary(summary+"\n\nContinue the task.", discovered)}
	a.lastInput = 0
	return nil
}

// summarizePrompt asks for the summary that replaces the history.
const summarizePrompt = "Summarize the conversation so far for yourself: the task, what was done, what the tools returned, and what is left. It will replace the conversation."

// stripRefs turns tool_reference blocks into text for the summary
// request, which has no tools.
func stripRefs(m messages.Message) messages.Message {
	p, _ := messages.Prepare(messages.Turn{History: []messages.Message{m}})
	return p.Request.Messages[0]
}

func text(m messages.Message) string {
	var parts []string
	for _, b := range m.Content {
		if b.Type == "text" {
			parts = append(parts, b.String("text"))
		}
	}
	return strings.Join(parts, "\n")
}

// notConnected names the servers whose tools a search cannot see, with
// why, for the search tool's answer.
func (a *agent) notConnected() []string {
	var out []string
	for _, u := range a.pool.Unavailable() {
		out = append(out, u.String())
	}
	return out
}
