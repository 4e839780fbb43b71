package mcptest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// RawToolsEnv holds the exact "tools" array the raw server lists, and
// RawProtocolEnv the protocol revision it answers initialize with.
const (
	RawToolsEnv    = "MCPTEST_RAW_TOOLS"
	RawProtocolEnv = "MCPTEST_RAW_PROTOCOL"
)

// DefaultRawTools is what the raw server lists unless RawToolsEnv says
// otherwise: fields the go-sdk does not model ("execution"), a schema
// without "type", $defs/$ref, and _meta.
const DefaultRawTools = `[
 {"name":"create_issue","title":"Create issue","description":"Create a new issue in a project.","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"title":{"type":"string"}}},"execution":{"taskSupport":"optional"},"annotations":{"readOnlyHint":false},"outputSchema":{"type":"object","properties":{"id":{"type":"number"}}}},
 {"name":"query","description":"Run a read-only query.","inputSchema":{"type":"object","$defs":{"q":{"type":"string"}},"properties":{"sql":{"$ref":"#/$defs/q"}}},"_meta":{"anthropic/alwaysLoad":true,"vendor/x":1}}
]`

// serveRaw is a minimal JSON-RPC server written by hand, so that it sends
// exactly the bytes a test wants: an older protocol revision, and tool
// fields that SDK types would drop. It knows initialize, tools/list and
// tools/call (an echo), and answers other requests with -32601.
func serveRaw() int {
	tools := os.Getenv(RawToolsEnv)
	if tools == "" {
		tools = DefaultRawTools
	}
	// One message per line: the tools must be compact.
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(tools)); err != nil {
		fmt.Fprintln(os.Stderr, "bad", RawToolsEnv, err)
		return 1
	}
	tools = compact.String()
	proto := os.Getenv(RawProtocolEnv)
	if proto == "" {
		proto = "2024-11-05"
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue // notifications need no answer
		}
		var result string
		switch req.Method {
		case "initialize":
			result = fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1.0.0"}}`, proto)
		case "tools/list":
			result = `{"tools":` + tools + `}`
		case "tools/call":
			b, _ := json.Marshal(Echo(req.Params.Name, req.Params.Arguments))
			result = string(b)
		case "ping":
			result = `{}`
		default:
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`+"\n", req.ID)
			continue
		}
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", req.ID, result)
	}
	return 0
}
