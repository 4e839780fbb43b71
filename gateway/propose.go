package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/upstream"
)

// propose_server (Options.Proposer; off unless serve is given
// --propose-servers): the model asks for a server by what it needs;
// toolshelf finds candidates in the registries, asks the person through
// their client (elicitation) with what each would install and its status,
// and installs the one they choose as toolshelf add does (held until its
// tools are approved). Nothing is installed before a yes. The rules see
// each candidate as Action::"install": a forbidden one is not offered.

const toolPropose = "propose_server"

// Proposer finds and installs servers for propose_server: toolshelf
// add's, in the CLI.
type Proposer interface {
	// Candidates are a registry's servers for a need, best first.
	Candidates(ctx context.Context, need string) ([]Candidate, error)
	// Install adds one (a registry name) to the configuration, held until
	// its tools are approved, and says what it did.
	Install(ctx context.Context, name string) (string, error)
}

// Candidate is a server propose_server may offer.
type Candidate struct {
	Name, Version, Description string
	// Status is the registry's (active, deprecated: message).
	Status string
	// Runs says what would run: a package at its version, or a remote.
	Runs string
	// Install is what the rules read of the install (context.args: the
	// registry, the version, the status).
	Install json.RawMessage
}

// maxProposed bounds the candidates a person is asked about.
const maxProposed = 5

var proposeTool = &mcp.Tool{
	Name:  toolPropose,
	Title: "Propose a server",
	Description: "Ask the person to install an MCP server from the registry when no tool search_tools finds does what you need. " +
		"Say what you need; the person is shown the candidates and decides. Nothing is installed without their yes, " +
		"and an installed server's tools are usable only after the person approves them.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"need":{"type":"string","description":"What you need a server for, in a few words."}},"required":["need"],"additionalProperties":false}`),
	Meta:        alwaysLoad,
}

// addProposeTool lists propose_server.
func (s *Server) addProposeTool(x *exposure) {
	x.server.AddTool(proposeTool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return s.audited(ctx, req, "call", toolPropose, func(ctx context.Context) *mcp.CallToolResult {
			return s.forClient(ctx, req, func(ctx context.Context) *mcp.CallToolResult {
				return s.propose(ctx, req.Session, req.Params.Arguments)
			})
		}), nil
	})
	x.listed[toolPropose] = "meta"
}

// propose answers one call of propose_server.
func (s *Server) propose(ctx context.Context, ss *mcp.ServerSession, raw json.RawMessage) *mcp.CallToolResult {
	var in struct {
		Need string `json:"need"`
	}
	if err := json.Unmarshal(orEmpty(raw), &in); err != nil || strings.TrimSpace(in.Need) == "" {
		return toolError(`propose_server: "need" is required: what you need a server for`)
	}
	// A 2026-07-28 client is asked in an input-required round (the
	// call's client, see forClient), an earlier one on its session; one
	// that does not take elicitation cannot be asked.
	var asked upstream.Client
	if ss != nil {
		if ip := ss.InitializeParams(); ip != nil && ip.Capabilities != nil && ip.Capabilities.Elicitation != nil {
			asked = ss
			if c := upstream.ClientOf(ctx); c != nil {
				asked = c
			}
		}
	}
	if asked == nil {
		return toolError("propose_server: this client cannot ask its person (it does not take elicitation), and nothing is installed without their yes: ask them to run toolshelf add")
	}
	found, err := s.opts.Proposer.Candidates(ctx, cut(in.Need, echoLimit))
	if err != nil {
		return toolError("propose_server: the registry could not be searched: %v", err)
	}
	var offered []Candidate
	var refused []string
	for _, c := range found {
		if len(offered) == maxProposed {
			break
		}
		if err := s.up.Offered(ctx, "install", "", c.Name, c.Install); err != nil {
			refused = append(refused, c.Name)
			continue
		}
		offered = append(offered, c)
	}
	if len(offered) == 0 {
		msg := "No server in the registry matches " + quoteClipped(in.Need) + "."
		if len(refused) > 0 {
			msg = "The rules forbid installing the servers that match: " + strings.Join(refused, ", ") + "."
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: msg + " Nothing was installed."}}}
	}
	var lines []string
	names := make([]string, 0, len(offered)+1)
	for _, c := range offered {
		lines = append(lines, fmt.Sprintf("- %s@%s (%s): %s. Runs %s.", c.Name, c.Version, c.Status, c.Description, c.Runs))
		names = append(names, c.Name)
	}
	names = append(names, "none")
	msg := fmt.Sprintf("The model asks for a server to %s. Install one? It is added held: its tools are usable only after you approve them (toolshelf tools approve).\n%s",
		cut(in.Need, echoLimit), strings.Join(lines, "\n"))
	schema := map[string]any{"type": "object", "required": []string{"server"}, "properties": map[string]any{
		"server": map[string]any{"type": "string", "enum": names, "description": "The server to install, or none"}}}
	res, err := asked.Elicit(ctx, &mcp.ElicitParams{Message: msg, RequestedSchema: schema})
	if err != nil {
		return toolError("propose_server: the person could not be asked: %v. Nothing was installed.", err)
	}
	choice, _ := res.Content["server"].(string)
	if res.Action != "accept" || choice == "" || choice == "none" || !slices.Contains(names, choice) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "The person declined. Nothing was installed."}}}
	}
	said, err := s.opts.Proposer.Install(ctx, choice)
	if err != nil {
		return toolError("propose_server: %s was not installed: %v", choice, err)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: said}}}
}
