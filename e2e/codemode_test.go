package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/policy"
)

// Code mode against step-by-step calls, on real npm servers
// (server-filesystem over a generated project, server-memory over a
// generated graph, server-everything): each task is done by a scripted
// model both ways, through two gateways over the same servers, and the
// tokens that pass through the model's context are counted either way:
// the searches' results (schemas, or declarations), the calls the model
// writes (arguments, or the program) and what comes back (every result,
// or the program's output). Both ways must give the answer computed from
// the fixture itself.

// codeTask is one task: its question, the searches the model makes, the
// steps it takes call by call (returning its answer), and the program it
// writes instead.
type codeTask struct {
	name, question string
	searches       []string
	steps          func(s *stepper) string
	program        string
	want           func(f *fixture) string
}

// fixture is the generated project and graph, and what the answers are.
type fixture struct {
	root   string
	files  map[string]string // relative path → text
	people []person
}

type person struct {
	name, city, company, manager string
}

var cities = []string{"Berlin", "Lisbon", "Osaka", "Austin", "Nairobi"}
var companies = []string{"Acme", "Globex", "Initech", "Umbrella"}

// newFixture writes a project of Go sources, documents and tests, and a
// knowledge graph of people, their cities, employers and managers.
func newFixture(t *testing.T) *fixture {
	// Folders a contained server may use, as nobody when the tests run
	// as root.
	f := &fixture{root: testenv.WritableDir(t), files: map[string]string{}}
	line := func(i int) string {
		return fmt.Sprintf("\tresult = append(result, compute(input[%d], weights[%d%%len(weights)])) // step %d of the pipeline", i, i, i)
	}
	for i := range 14 {
		var b strings.Builder
		fmt.Fprintf(&b, "package pipeline\n\n")
		if i%3 == 0 {
			b.WriteString("import \"fmt\"\n\n")
		}
		fmt.Fprintf(&b, "func stage%d(input []float64) []float64 {\n\tvar result []float64\n", i)
		for j := range 30 + 11*i {
			b.WriteString(line(j) + "\n")
			if (i+j)%23 == 0 && i%2 == 1 {
				fmt.Fprintf(&b, "\t// TODO: cache stage %d step %d\n", i, j)
			}
		}
		b.WriteString("\treturn result\n}\n")
		f.files[fmt.Sprintf("src/stage%02d.go", i)] = b.String()
	}
	for i := range 6 {
		var b strings.Builder
		fmt.Fprintf(&b, "# Design note %d: %s\n\n", i, []string{"ingest", "storage", "queries", "limits", "upgrades", "ops"}[i])
		for j := range 20 + 9*i {
			fmt.Fprintf(&b, "Paragraph %d explains one more consideration of this part of the system, in some detail.\n", j)
		}
		f.files[fmt.Sprintf("docs/note%d.md", i)] = b.String()
	}
	for i := range 8 {
		var b strings.Builder
		fmt.Fprintf(&b, "package pipeline\n\nimport \"testing\"\n\nfunc TestStage%d(t *testing.T) {\n", i)
		for j := range 25 + 5*i {
			if (i*7+j)%9 == 0 {
				fmt.Fprintf(&b, "\t// FIXME: flaky on slow machines (%d)\n", j)
			}
			fmt.Fprintf(&b, "\tif got := stage%d(fixtureInput(%d)); len(got) == 0 {\n\t\tt.Fatal(\"empty\")\n\t}\n", i, j)
		}
		b.WriteString("}\n")
		f.files[fmt.Sprintf("tests/stage%d_test.go", i)] = b.String()
	}
	for path, text := range f.files {
		full := filepath.Join(f.root, path)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	first := []string{"Ada", "Bo", "Chen", "Dara", "Emil", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lea"}
	for i := range 48 {
		p := person{name: fmt.Sprintf("%s %c.", first[i%len(first)], 'A'+i/len(first)), city: cities[(i*7)%len(cities)], company: companies[(i*5)%len(companies)]}
		if i >= 4 {
			p.manager = f.people[(i*3)%4].name
		}
		f.people = append(f.people, p)
	}
	return f
}

// memoryFile is the graph in server-memory's file format.
func (f *fixture) memoryFile(t *testing.T) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	for _, c := range companies {
		enc.Encode(map[string]any{"type": "entity", "name": c, "entityType": "organization", "observations": []string{"a company"}})
	}
	for _, p := range f.people {
		enc.Encode(map[string]any{"type": "entity", "name": p.name, "entityType": "person",
			"observations": []string{"lives in " + p.city, "joined in " + strconv.Itoa(2010+len(p.name)%12), "likes long walks and board games"}})
		enc.Encode(map[string]any{"type": "relation", "from": p.name, "to": p.company, "relationType": "works_at"})
		if p.manager != "" {
			enc.Encode(map[string]any{"type": "relation", "from": p.manager, "to": p.name, "relationType": "manages"})
		}
	}
	path := filepath.Join(testenv.WritableDir(t), "memory.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o666); err != nil {
		t.Fatal(err)
	}
	return path
}

// stepper is the scripted model calling tools one by one through
// call_tool, counting what passes through its context.
type stepper struct {
	t      *testing.T
	ctx    context.Context
	cs     *mcp.ClientSession
	tokens int
	calls  int
}

// tokens counts a text as it would sit in the model's context.
func tokens(t *testing.T, s string) int {
	raw, _ := json.Marshal(s)
	n, err := policy.Tokenizer{}.CountTokens(context.Background(), []json.RawMessage{raw})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// tool calls a meta tool, counting its arguments and its result.
func (s *stepper) tool(name string, args map[string]any) string {
	s.t.Helper()
	raw, _ := json.Marshal(args)
	res, err := s.cs.CallTool(s.ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		s.t.Fatalf("%s %s: %v", name, raw, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError {
		s.t.Fatalf("%s %s: %s", name, raw, text.String())
	}
	s.tokens += tokens(s.t, string(raw)) + tokens(s.t, text.String())
	s.calls++
	return text.String()
}

// call calls a tool found by search, as the model would with call_tool.
func (s *stepper) call(tool string, args map[string]any) string {
	return s.tool("call_tool", map[string]any{"name": tool, "arguments": args})
}

// entries are the names a list_directory result lists as files.
func entries(listing string) []string {
	var names []string
	for _, line := range strings.Split(listing, "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "[FILE] "); ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

func lines(text string) int { return len(strings.Split(strings.TrimRight(text, "\n"), "\n")) }

var sizeLine = regexp.MustCompile(`(?m)^size: (\d+)`)

// graph is read_graph's answer.
type graph struct {
	Entities []struct {
		Name, EntityType string
		Observations     []string
	}
	Relations []struct{ From, To, RelationType string }
}

func codeTasks(root string) []codeTask {
	src, docs, tests := filepath.Join(root, "src"), filepath.Join(root, "docs"), filepath.Join(root, "tests")
	js := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	listJS := `const names = (await tools.filesystem.list_directory({path: DIR})).content.split("\n").filter(l => l.startsWith("[FILE] ")).map(l => l.slice(7)).sort();`
	return []codeTask{{
		name: "TODO files and their lines", question: "Which files under src mention TODO, and how many lines has each?",
		searches: []string{"list the files in a directory", "read a text file"},
		steps: func(s *stepper) string {
			var out []string
			for _, n := range entries(s.call("mcp__filesystem__list_directory", map[string]any{"path": src})) {
				text := s.call("mcp__filesystem__read_text_file", map[string]any{"path": filepath.Join(src, n)})
				if strings.Contains(text, "TODO") {
					out = append(out, fmt.Sprintf("%s:%d", n, lines(text)))
				}
			}
			return strings.Join(out, " ")
		},
		program: strings.ReplaceAll(listJS, "DIR", js(src)) + `
			const out = [];
			for (const n of names) {
				const text = (await tools.filesystem.read_text_file({path: ` + js(src) + ` + "/" + n})).content;
				if (text.includes("TODO")) out.push(n + ":" + text.replace(/\n$/, "").split("\n").length);
			}
			return out.join(" ");`,
		want: func(f *fixture) string {
			var out []string
			for _, p := range sortedFiles(f, "src/") {
				if strings.Contains(f.files[p], "TODO") {
					out = append(out, fmt.Sprintf("%s:%d", filepath.Base(p), lines(f.files[p])))
				}
			}
			return strings.Join(out, " ")
		},
	}, {
		name: "the longest source", question: "Which file under src has the most lines?",
		searches: []string{"list the files in a directory", "read a text file"},
		steps: func(s *stepper) string {
			best, most := "", 0
			for _, n := range entries(s.call("mcp__filesystem__list_directory", map[string]any{"path": src})) {
				if l := lines(s.call("mcp__filesystem__read_text_file", map[string]any{"path": filepath.Join(src, n)})); l > most {
					best, most = n, l
				}
			}
			return best
		},
		program: strings.ReplaceAll(listJS, "DIR", js(src)) + `
			let best = "", most = 0;
			for (const n of names) {
				const l = (await tools.filesystem.read_text_file({path: ` + js(src) + ` + "/" + n})).content.replace(/\n$/, "").split("\n").length;
				if (l > most) { best = n; most = l; }
			}
			return best;`,
		want: func(f *fixture) string {
			best, most := "", 0
			for _, p := range sortedFiles(f, "src/") {
				if l := lines(f.files[p]); l > most {
					best, most = filepath.Base(p), l
				}
			}
			return best
		},
	}, {
		name: "sources that import fmt", question: "Which Go files under src import fmt?",
		searches: []string{"list the files in a directory", "read the first lines of a file"},
		steps: func(s *stepper) string {
			var out []string
			for _, n := range entries(s.call("mcp__filesystem__list_directory", map[string]any{"path": src})) {
				if strings.Contains(s.call("mcp__filesystem__read_text_file", map[string]any{"path": filepath.Join(src, n), "head": 5}), `import "fmt"`) {
					out = append(out, n)
				}
			}
			return strings.Join(out, " ")
		},
		program: strings.ReplaceAll(listJS, "DIR", js(src)) + `
			const out = [];
			for (const n of names) {
				const head = (await tools.filesystem.read_text_file({path: ` + js(src) + ` + "/" + n, head: 5})).content;
				if (head.includes('import "fmt"')) out.push(n);
			}
			return out.join(" ");`,
		want: func(f *fixture) string {
			var out []string
			for _, p := range sortedFiles(f, "src/") {
				if strings.Contains(f.files[p], `import "fmt"`) {
					out = append(out, filepath.Base(p))
				}
			}
			return strings.Join(out, " ")
		},
	}, {
		name: "bytes of the documents", question: "How many bytes do the Markdown files under docs take in all?",
		searches: []string{"list the files in a directory", "get a file's size and metadata"},
		steps: func(s *stepper) string {
			total := 0
			for _, n := range entries(s.call("mcp__filesystem__list_directory", map[string]any{"path": docs})) {
				m := sizeLine.FindStringSubmatch(s.call("mcp__filesystem__get_file_info", map[string]any{"path": filepath.Join(docs, n)}))
				if m != nil {
					v, _ := strconv.Atoi(m[1])
					total += v
				}
			}
			return strconv.Itoa(total)
		},
		program: strings.ReplaceAll(listJS, "DIR", js(docs)) + `
			let total = 0;
			for (const n of names) {
				const info = (await tools.filesystem.get_file_info({path: ` + js(docs) + ` + "/" + n})).content;
				total += Number(/^size: (\d+)/m.exec(info)[1]);
			}
			return String(total);`,
		want: func(f *fixture) string {
			total := 0
			for _, p := range sortedFiles(f, "docs/") {
				total += len(f.files[p])
			}
			return strconv.Itoa(total)
		},
	}, {
		name: "titles of the documents", question: "What is the title (first line) of each document under docs?",
		searches: []string{"list the files in a directory", "read the first lines of a file"},
		steps: func(s *stepper) string {
			var out []string
			for _, n := range entries(s.call("mcp__filesystem__list_directory", map[string]any{"path": docs})) {
				out = append(out, strings.TrimSpace(strings.Split(s.call("mcp__filesystem__read_text_file", map[string]any{"path": filepath.Join(docs, n), "head": 1}), "\n")[0]))
			}
			return strings.Join(out, "|")
		},
		program: strings.ReplaceAll(listJS, "DIR", js(docs)) + `
			const out = [];
			for (const n of names) out.push((await tools.filesystem.read_text_file({path: ` + js(docs) + ` + "/" + n, head: 1})).content.split("\n")[0].trim());
			return out.join("|");`,
		want: func(f *fixture) string {
			var out []string
			for _, p := range sortedFiles(f, "docs/") {
				out = append(out, strings.Split(f.files[p], "\n")[0])
			}
			return strings.Join(out, "|")
		},
	}, {
		name: "FIXMEs in the tests", question: "How many FIXME comments are there under tests?",
		searches: []string{"list the files in a directory", "read a text file"},
		steps: func(s *stepper) string {
			n := 0
			for _, name := range entries(s.call("mcp__filesystem__list_directory", map[string]any{"path": tests})) {
				n += strings.Count(s.call("mcp__filesystem__read_text_file", map[string]any{"path": filepath.Join(tests, name)}), "FIXME")
			}
			return strconv.Itoa(n)
		},
		program: strings.ReplaceAll(listJS, "DIR", js(tests)) + `
			let n = 0;
			for (const name of names) n += (await tools.filesystem.read_text_file({path: ` + js(tests) + ` + "/" + name})).content.split("FIXME").length - 1;
			return String(n);`,
		want: func(f *fixture) string {
			n := 0
			for _, p := range sortedFiles(f, "tests/") {
				n += strings.Count(f.files[p], "FIXME")
			}
			return strconv.Itoa(n)
		},
	}, {
		name: "staff of a company", question: "How many people work at Acme?",
		searches: []string{"read the whole knowledge graph"},
		steps: func(s *stepper) string {
			var g graph
			json.Unmarshal([]byte(s.call("mcp__memory__read_graph", map[string]any{})), &g)
			n := 0
			for _, r := range g.Relations {
				if r.RelationType == "works_at" && r.To == "Acme" {
					n++
				}
			}
			return strconv.Itoa(n)
		},
		program: `const g = await tools.memory.read_graph();
			return String(g.relations.filter(r => r.relationType === "works_at" && r.to === "Acme").length);`,
		want: func(f *fixture) string {
			n := 0
			for _, p := range f.people {
				if p.company == "Acme" {
					n++
				}
			}
			return strconv.Itoa(n)
		},
	}, {
		name: "people of a city", question: "Which people live in Osaka?",
		searches: []string{"search the knowledge graph's nodes"},
		steps: func(s *stepper) string {
			var g graph
			json.Unmarshal([]byte(s.call("mcp__memory__search_nodes", map[string]any{"query": "Osaka"})), &g)
			var out []string
			for _, e := range g.Entities {
				if slices.Contains(e.Observations, "lives in Osaka") {
					out = append(out, e.Name)
				}
			}
			slices.Sort(out)
			return strings.Join(out, ", ")
		},
		program: `const g = await tools.memory.search_nodes({query: "Osaka"});
			return g.entities.filter(e => e.observations.includes("lives in Osaka")).map(e => e.name).sort().join(", ");`,
		want: func(f *fixture) string {
			var out []string
			for _, p := range f.people {
				if p.city == "Osaka" {
					out = append(out, p.name)
				}
			}
			slices.Sort(out)
			return strings.Join(out, ", ")
		},
	}, {
		name: "the busiest manager", question: "Who manages the most people, and how many?",
		searches: []string{"read the whole knowledge graph"},
		steps: func(s *stepper) string {
			var g graph
			json.Unmarshal([]byte(s.call("mcp__memory__read_graph", map[string]any{})), &g)
			count := map[string]int{}
			for _, r := range g.Relations {
				if r.RelationType == "manages" {
					count[r.From]++
				}
			}
			return busiest(count)
		},
		program: `const g = await tools.memory.read_graph();
			const count = {};
			for (const r of g.relations) if (r.relationType === "manages") count[r.from] = (count[r.from] || 0) + 1;
			const [name, n] = Object.entries(count).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0];
			return name + " " + n;`,
		want: func(f *fixture) string {
			count := map[string]int{}
			for _, p := range f.people {
				if p.manager != "" {
					count[p.manager]++
				}
			}
			return busiest(count)
		},
	}, {
		name: "a sum, two numbers at a time", question: "Using the tool that adds two numbers, what is 1 + 2 + ... + 12?",
		searches: []string{"add two numbers"},
		steps: func(s *stepper) string {
			sum := 1
			for i := 2; i <= 12; i++ {
				sum = lastNumber(s.call("mcp__everything__get-sum", map[string]any{"a": sum, "b": i}))
			}
			return strconv.Itoa(sum)
		},
		program: `let sum = 1;
			for (let i = 2; i <= 12; i++) {
				const r = await tools.everything["get-sum"]({a: sum, b: i});
				sum = Number(/(-?\d+)\D*$/.exec(r)[1]);
			}
			return String(sum);`,
		want: func(*fixture) string { return "78" },
	}}
}

func sortedFiles(f *fixture, prefix string) []string {
	var out []string
	for p := range f.files {
		if strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func busiest(count map[string]int) string {
	best, most := "", 0
	for name, n := range count {
		if n > most || n == most && name < best {
			best, most = name, n
		}
	}
	return fmt.Sprintf("%s %d", best, most)
}

var lastNum = regexp.MustCompile(`(-?\d+)\D*$`)

func lastNumber(s string) int {
	m := lastNum.FindStringSubmatch(s)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func TestCodeModeSavesTokens(t *testing.T) {
	t.Parallel()
	requireClients(t)
	f := newFixture(t)
	memory := f.memoryFile(t)
	servers, _ := filepath.Abs("../testdata/servers")
	cfg := filepath.Join(t.TempDir(), "servers.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"filesystem": map[string]any{"command": "node", "args": []string{"node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", f.root}, "cwd": servers,
			"paths": map[string]any{"write": []string{f.root}}},
		"memory": map[string]any{"command": "node", "args": []string{"node_modules/@modelcontextprotocol/server-memory/dist/index.js"}, "cwd": servers, "env": map[string]string{"MEMORY_FILE_PATH": memory},
			"paths": map[string]any{"write": []string{filepath.Dir(memory)}}},
		"everything": map[string]any{"command": "node", "args": []string{"node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"}, "cwd": servers},
	}})
	os.WriteFile(cfg, b, 0o644)
	cfg = testenv.ScaledConfig(t, cfg, 2*time.Minute)
	plain := runHTTPScript(t, testenv.ServeScript(t, toolshelf, nil, cfg, "--http", "127.0.0.1:0"))
	code := runHTTPScript(t, testenv.ServeScript(t, toolshelf, nil, cfg, "--http", "127.0.0.1:0", "--code"))
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(5*time.Minute))
	defer cancel()
	steps := &stepper{t: t, ctx: ctx, cs: connectMCP(t, ctx, plain)}
	coder := &stepper{t: t, ctx: ctx, cs: connectMCP(t, ctx, code)}

	var rows []string
	var stepTotal, codeTotal int
	for _, task := range codeTasks(f.root) {
		want := task.want(f)
		steps.tokens, steps.calls, coder.tokens, coder.calls = 0, 0, 0, 0
		for _, q := range task.searches {
			steps.tool("search_tools", map[string]any{"query": q})
			coder.tool("search_tools", map[string]any{"query": q})
		}
		got := task.steps(steps)
		out := coder.tool("run_code", map[string]any{"code": task.program})
		gotCode := strings.TrimSuffix(strings.TrimPrefix(out, "result: "), "\n")
		if got != want || gotCode != want {
			t.Errorf("%s: step by step %q, code %q, want %q", task.name, got, gotCode, want)
		}
		stepTotal += steps.tokens
		codeTotal += coder.tokens
		rows = append(rows, fmt.Sprintf("| %s | %d | %d | %d | %d | %.0f%% |", task.name, steps.calls, steps.tokens, coder.calls, coder.tokens, 100*(1-float64(coder.tokens)/float64(steps.tokens))))
	}
	saved := 1 - float64(codeTotal)/float64(stepTotal)
	rows = append(rows, fmt.Sprintf("| all %d tasks | | %d | | %d | %.0f%% |", len(rows), stepTotal, codeTotal, 100*saved))
	t.Logf("tokens through the model's context (requests to the gateway, step by step | code):\n| task | step-by-step requests | tokens | code-mode requests | tokens | fewer |\n|---|---:|---:|---:|---:|---:|\n%s", strings.Join(rows, "\n"))
	if saved < 0.8 {
		t.Errorf("code mode saved %.0f%% of the tokens, want at least 80%%", 100*saved)
	}
}

// A quarantined tool (trust "approve", not yet approved) is as out of
// reach for a program as for call_tool, by any name the program builds;
// once approved, the program calls it.
func TestCodeCannotCallQuarantined(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := serverConfig(t, dir, "tracker", "create_ticket", map[string]any{"trust": "approve"})
	url := runHTTPScript(t, testenv.ServeScript(t, toolshelf, nil, cfg, "--http", "127.0.0.1:0", "--code"))
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	cs := connectMCP(t, ctx, url)
	run := func(program string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": program}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, program := range []string{
		`return await tools.tracker.create_ticket({text: "x"})`,
		`const s = "tra" + "cker"; return await tools[s][["create", "ticket"].join("_")]({text: "x"})`,
	} {
		if res := run(program); !res.IsError || !strings.Contains(text(res), "quarantined") {
			t.Errorf("%s: %v %s", program, res.IsError, text(res))
		}
	}
	approve := exec.Command(toolshelf, "tools", "approve", "tracker/create_ticket", "--config", cfg)
	approve.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
	if out, err := approve.CombinedOutput(); err != nil {
		t.Fatalf("tools approve: %v\n%s", err, out)
	}
	testenv.Eventually(t, 10*time.Second, "the approved tool to answer the program", func() bool {
		return !run(`return await tools.tracker.create_ticket({text: "x"})`).IsError
	})
}
