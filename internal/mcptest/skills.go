package mcptest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SkillsServer is a server of the skills extension (SEP-2640), written by
// hand over an in-memory transport because the go-sdk has no methods for
// it: it lists Entries with skills/list and answers resources/read from
// Files at the time of the read, so that a test can make it lie (list
// one file and serve another) or change. Real skills servers are tested
// end to end with testdata/servers/skills-server.mjs.
type SkillsServer struct {
	// ListFiles lists every file it serves in resources/list too (and
	// a template of its skill:// URIs), as a server that offers its
	// skills' files as plain resources does.
	ListFiles bool
	mu        sync.Mutex
	entries   []map[string]any
	files     map[string]string
}

// Digest is a file's digest as the extension writes it.
func Digest(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Add lists a skill at skill://PATH/SKILL.md (PATH's last segment its
// name) with its frontmatter (name and description at least) and files
// (paths relative to the skill's folder → content; SKILL.md among them),
// each listed with its digest and size.
func (s *SkillsServer) Add(path string, frontmatter map[string]any, files map[string]string) {
	root := "skill://" + path
	var resources []any
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files == nil {
		s.files = map[string]string{}
	}
	for _, rel := range sortedKeys(files) {
		uri := root + "/" + rel
		resources = append(resources, map[string]any{"uri": uri, "digest": Digest(files[rel]), "size": len(files[rel])})
		s.files[uri] = files[rel]
	}
	s.entries = append(s.entries, map[string]any{"uri": root + "/SKILL.md", "frontmatter": frontmatter, "resources": resources})
}

// AddEntry lists an entry as given (for entries the extension calls
// invalid).
func (s *SkillsServer) AddEntry(entry map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = append(s.entries, entry)
}

// SetFile serves text at uri from now on, whatever the listing says.
func (s *SkillsServer) SetFile(uri, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files == nil {
		s.files = map[string]string{}
	}
	s.files[uri] = text
}

// Dial connects a new session to the server, for config.ServerConfig's
// Dial.
func (s *SkillsServer) Dial(context.Context) (mcp.Transport, error) {
	st, ct := mcp.NewInMemoryTransports()
	conn, err := st.Connect(context.Background())
	if err != nil {
		return nil, err
	}
	go s.serve(conn)
	return ct, nil
}

func (s *SkillsServer) serve(conn mcp.Connection) {
	defer conn.Close()
	ctx := context.Background()
	for {
		msg, err := conn.Read(ctx)
		if err != nil {
			return
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			continue
		}
		result, rpcErr := s.answer(req)
		if rpcErr != nil {
			conn.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: rpcErr})
			continue
		}
		b, _ := json.Marshal(result)
		conn.Write(ctx, &jsonrpc.Response{ID: req.ID, Result: b})
	}
}

func (s *SkillsServer) answer(req *jsonrpc.Request) (any, *jsonrpc.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch req.Method {
	case "initialize":
		return map[string]any{"protocolVersion": "2025-11-25", "serverInfo": map[string]any{"name": "skills", "version": "1"},
			"capabilities": map[string]any{"tools": map[string]any{}, "resources": map[string]any{},
				"extensions": map[string]any{"io.modelcontextprotocol/skills": map[string]any{}}}}, nil
	case "tools/list":
		return map[string]any{"tools": []any{}}, nil
	case "resources/list":
		list := []any{}
		if s.ListFiles {
			for _, uri := range sortedKeys(s.files) {
				list = append(list, map[string]any{"uri": uri, "name": uri})
			}
		}
		return map[string]any{"resources": list}, nil
	case "resources/templates/list":
		list := []any{}
		if s.ListFiles {
			list = append(list, map[string]any{"uriTemplate": "skill://{path}", "name": "skill files"})
		}
		return map[string]any{"resourceTemplates": list}, nil
	case "skills/list":
		return map[string]any{"skills": s.entries}, nil
	case "resources/read":
		var p struct {
			URI string `json:"uri"`
		}
		json.Unmarshal(req.Params, &p)
		text, ok := s.files[p.URI]
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no such file"}
		}
		return map[string]any{"contents": []any{map[string]any{"uri": p.URI, "mimeType": "text/markdown", "text": text}}}, nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
