package gateway

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// headerLog records the headers of the requests a client sends.
type headerLog struct {
	mu   sync.Mutex
	seen []http.Header
}

func (l *headerLog) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.seen = append(l.seen, r.Header.Clone())
	l.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// TestCallCarriesItsTarget: a client on MCP 2026-07-28 calling through
// call_tool sends the real tool in Mcp-Param-Tool (call_tool's name is an
// x-mcp-header), where infrastructure in front of the gateway can see it;
// a request whose header says another tool than its body is refused with
// -32020.
func TestCallCarriesItsTarget(t *testing.T) {
	g, _ := gatewayFor(t, nil, standardUpstreams(t)...)
	url := httpGateway(t, g, &HTTPOptions{Stateless: true})
	log := &headerLog{}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: log}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	listNames(t, cs) // the client learns call_tool's schema
	res := call(t, cs, toolCall, map[string]any{"name": "mcp__github__create_issue", "arguments": map[string]any{"text": "x"}})
	if res.IsError {
		t.Fatalf("call: %s", text(res))
	}
	log.mu.Lock()
	var found bool
	for _, h := range log.seen {
		if h.Get("Mcp-Name") == toolCall && h.Get("Mcp-Param-Tool") == "mcp__github__create_issue" {
			found = true
		}
	}
	log.mu.Unlock()
	if !found {
		t.Errorf("no request carried Mcp-Param-Tool: mcp__github__create_issue")
	}
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"call_tool","arguments":{"name":"mcp__github__create_issue","arguments":{}}}}`
	req, _ := http.NewRequest("POST", url+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", toolCall)
	req.Header.Set("Mcp-Param-Tool", "mcp__slack__post_message")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b := new(strings.Builder)
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	b.Write(buf[:n])
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(b.String(), "-32020") {
		t.Errorf("a header that says another tool: %d %s", resp.StatusCode, b.String())
	}
}
