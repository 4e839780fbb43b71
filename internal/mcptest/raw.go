package mcptest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// RawToolsEnv holds the exact "tools" array the raw server lists, and
// RawProtocolEnv the protocol revision it answers initialize with.
const (
	RawToolsEnv    = "MCPTEST_RAW_TOOLS"
	RawProtocolEnv = "MCPTEST_RAW_PROTOCOL"
	// RawHostileEnv makes the raw server misbehave: "huge" lists 20,000
	// tools in one message; "deep" lists a tool whose schema is nested
	// 100,000 deep; "storm" sends 10,000 tools/list_changed once
	// initialized; "flood" prints 20 MB of lines that are not JSON-RPC
	// once initialized. The tool "listings" answers how many tools/list
	// requests it served.
	RawHostileEnv = "MCPTEST_RAW_HOSTILE"
)

// Sizes of the hostile behaviours.
const (
	HugeTools    = 20_000
	StormChanges = 10_000
	FloodBytes   = 20 << 20
)

// hostileTools is what a hostile raw server lists instead of its tools.
func hostileTools(kind, tools string) string {
	switch kind {
	case "huge":
		var b bytes.Buffer
		b.WriteString("[")
		desc := bytes.Repeat([]byte("a tool among very many "), 20)
		for i := range HugeTools {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"name":"tool_%d","description":"%s","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}}}`, i, desc)
		}
		b.WriteString("]")
		return b.String()
	case "deep":
		const depth = 100_000
		deep := strings.Repeat(`{"type":"object","properties":{"x":`, depth) + `{"type":"string"}` + strings.Repeat(`}}`, depth)
		return `[{"name":"deep","description":"A schema nested too deep.","inputSchema":` + deep + `},{"name":"shallow","description":"A plain tool.","inputSchema":{"type":"object"}}]`
	}
	return tools
}

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
	hostile := os.Getenv(RawHostileEnv)
	tools = hostileTools(hostile, tools)
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	defer out.Flush()
	listings := 0
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	for in.Scan() {
		if bytes.Contains(in.Bytes(), []byte(`"notifications/initialized"`)) {
			switch hostile {
			case "storm":
				for range StormChanges {
					fmt.Fprintln(out, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
				}
			case "flood":
				line := strings.Repeat("garbage that is not JSON-RPC ", 34) + "\n"
				for n := 0; n < FloodBytes; n += len(line) {
					out.WriteString(line)
				}
			}
			out.Flush()
		}
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
			listings++
			result = `{"tools":` + tools + `}`
		case "tools/call":
			b, _ := json.Marshal(Echo(req.Params.Name, req.Params.Arguments))
			if req.Params.Name == "listings" {
				b, _ = json.Marshal(Echo(req.Params.Name, json.RawMessage(strconv.Itoa(listings))))
			}
			result = string(b)
		case "ping":
			result = `{}`
		default:
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`+"\n", req.ID)
			out.Flush()
			continue
		}
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", req.ID, result)
		out.Flush()
	}
	return 0
}
