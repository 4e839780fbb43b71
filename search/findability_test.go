package search

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/toolshelf/toolshelf/catalog"
)

// Each problem of a tool's words is named for the tool that has it, and
// for no well-described tool.
func TestFindability(t *testing.T) {
	tool := func(server, name, desc string, params map[string]string) catalog.Entry {
		props := map[string]any{}
		for p, d := range params {
			props[p] = map[string]any{"type": "string", "description": d}
		}
		raw, _ := json.Marshal(map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object", "properties": props}})
		e, err := catalog.ParseTool(server, raw)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	c := catalog.New([]catalog.Entry{
		tool("mail", "send_email", "Send an email to one or more recipients, with a subject and a body.", map[string]string{"to": "Who receives it"}),
		tool("mail", "list_folders", "List the folders of the mailbox, with how many messages each holds.", nil),
		tool("mail", "archive", "Archive.", nil),
		tool("mail", "mailbox_quota", "The quota of the mailbox in bytes, and how much of it is used now.", nil),
		tool("mail", "export_folder", "Export the messages of a folder of the mailbox as a zip archive file.", nil),
		tool("mail", "export_folder_v2", "Export the messages of a folder of the mailbox as a zip archive file now.", nil),
		tool("mail", "move_message", "Move a message from one folder to another folder of the mailbox.", map[string]string{"id": "", "folder": ""}),
		tool("mail", "buscar_correo", "Busca los mensajes de la bandeja que contienen una palabra y los devuelve con su fecha.", nil),
		tool("mail", "search_mail", "Search the messages of the mailbox for a word, and return them with their dates.", nil),
		tool("mail", "create_rule", "Create a rule that files incoming messages into a folder by their sender.", nil),
	}, nil)
	got := map[string][]string{}
	for _, h := range Findability(c) {
		got[h.Tool] = append(got[h.Tool], h.Problem)
		if h.Suggestion == "" || h.Detail == "" {
			t.Errorf("%+v: no detail or suggestion", h)
		}
	}
	for tool, want := range map[string][]string{
		"mcp__mail__archive":          {ProblemShort},
		"mcp__mail__mailbox_quota":    {ProblemNoVerb},
		"mcp__mail__export_folder":    {ProblemSibling},
		"mcp__mail__export_folder_v2": {ProblemSibling},
		"mcp__mail__move_message":     {ProblemParams},
		"mcp__mail__buscar_correo":    {ProblemLanguage},
		"mcp__mail__send_email":       nil,
		"mcp__mail__list_folders":     nil,
		"mcp__mail__search_mail":      nil,
		"mcp__mail__create_rule":      nil,
	} {
		if !slices.Equal(got[tool], want) {
			t.Errorf("%s: %v, want %v", tool, got[tool], want)
		}
	}
}
