package upstream

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOutputTools(t *testing.T) {
	tests := []struct {
		name, out string
		want      []string // tool names
	}{
		{"functions", `{"functions":[{"name":"a","parameters":{"type":"object"}},{"type":"function","function":{"name":"b"}}]}`, []string{"a", "b"}},
		{"tools array", `{"tools":[{"name":"c","inputSchema":{"type":"object"}},{"nope":1}]}`, []string{"c"}},
		{"one per line", "starting server v1.2\n{\"name\":\"d\",\"description\":\"x\"}\nnot json {\n{\"name\":\"e\"}\n", []string{"d", "e"}},
		{"jsonrpc result", `{"jsonrpc":"2.0","id":9,"result":{"tools":[{"name":"f"}]}}`, []string{"f"}},
		{"mixed lines", "banner\n{\"tools\":[{\"name\":\"g\"}]}\n{\"name\":\"h\"}\n", []string{"g", "h"}},
		{"free text only", "available tools: create_issue, list_repos\nread_file is also there", nil},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, raw := range outputTools([]byte(tt.out)) {
				var v struct {
					Name string `json:"name"`
				}
				if err := json.Unmarshal(raw, &v); err != nil {
					t.Fatalf("not a tool: %s", raw)
				}
				got = append(got, v.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestFunctionToolsKeepsSchema(t *testing.T) {
	got := functionTools([]json.RawMessage{json.RawMessage(`{"name":"a","description":"d","parameters":{"type":"object","properties":{"x":{"type":"string"}}}}`)})
	want := `{"name":"a","description":"d","inputSchema":{"type":"object","properties":{"x":{"type":"string"}}}}`
	if len(got) != 1 || string(got[0]) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
