package toolshelf_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/toolshelf/toolshelf/"

// mayImport is the house's plan: which of toolshelf's packages each
// package may import. The pure core (catalog, search, policy, shelf,
// messages, evaluate) never reaches the edges (upstream, gateway,
// embedding, anthropic); the edges never reach each other but through
// the core; only the CLI and the example agent see everything they wire.
// docs/design.md draws the same picture.
var mayImport = map[string][]string{
	"catalog":               {"internal/jsonscan", "internal/confusable"},
	"search":                {"catalog", "internal/wordvec", "internal/zhdict", "internal/thesaurus"},
	"policy":                {"catalog"},
	"shelf":                 {"catalog", "search", "policy"},
	"messages":              {"catalog", "search", "policy", "shelf", "internal/jsonscan"},
	"evaluate":              {"catalog", "search"},
	"embedding":             {"search", "internal/folders"},
	"anthropic":             {"policy"},
	"config":                {"catalog", "identity", "internal/fuzzy", "internal/hostpath", "ledger", "pin", "internal/folders"},
	"upstream":              {"catalog", "config", "identity", "internal/confusable", "internal/jsonscan", "internal/fuzzy", "launcher", "pin", "rules", "signin", "telemetry", "internal/folders"},
	"launcher":              {"config", "internal/hookenv", "internal/folders"},
	"identity":              {},
	"rules":                 {},
	"pin":                   {"catalog", "store"},
	"signin":                {"store", "internal/folders"},
	"fleet":                 {"identity", "store"},
	"sandbox":               {},
	"gateway":               {"audit", "catalog", "config", "identity", "signin", "search", "policy", "shelf", "telemetry", "upstream", "learn", "internal/fuzzy", "internal/jsonscan", "ledger", "sandbox"},
	"learn":                 {"journal", "search", "store", "internal/folders"},
	"journal":               {},
	"ledger":                {"journal", "store", "internal/folders"},
	"store":                 {},
	"telemetry":             {},
	"proxy":                 {"catalog", "identity", "internal/jsonscan", "ledger", "messages", "policy", "search", "shelf", "telemetry"},
	"audit":                 {"journal", "store"},
	"console":               {"audit", "catalog", "gateway", "identity", "learn", "ledger", "pin", "search", "upstream"},
	"internal/builtin":      {"catalog"},
	"internal/wordvec":      {},
	"internal/zhdict":       {},
	"internal/thesaurus":    {},
	"internal/jsonscan":     {},
	"internal/bigcatalog":   {"catalog"},
	"internal/fuzzy":        {},
	"internal/confusable":   {},
	"internal/testenv":      {},
	"internal/mcptest":      {"telemetry"},
	"internal/fakeembed":    {},
	"internal/oauthtest":    {},
	"registry":              {"internal/hookenv", "internal/hostpath"},
	"internal/hostpath":     {},
	"internal/hookenv":      {},
	"internal/folders":      {},
	"registry/registrytest": {"registry"},
	"e2e":                   {}, // tests only
	"cmd/toolshelf": {"anthropic", "catalog", "config", "console", "embedding", "fleet", "sandbox", "store", "evaluate", "gateway", "internal/builtin", "internal/hostpath",
		"audit", "identity", "internal/fuzzy", "journal", "ledger", "pin", "policy", "proxy", "learn", "registry", "rules", "search", "shelf", "signin", "telemetry", "upstream", "internal/folders"},
	"examples/agent":     {"anthropic", "catalog", "config", "messages", "policy", "rules", "upstream", "learn", "sandbox"},
	"scripts/scale":      {"catalog", "internal/bigcatalog", "internal/builtin", "search"},
	"scripts/testreport": {},
}

// The pure packages decide what a model sees; they must stay free of
// network and process I/O, directly or through a dependency, so that
// they are cheap to test and safe to embed.
var purePackages = []string{"catalog", "search", "policy", "shelf", "messages", "evaluate", "rules"}

var forbidden = []string{"net/http", "os/exec", "net"}

func TestImportsFollowThePlan(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, ok := strings.CutPrefix(fields[0], module)
		if !ok {
			continue // the module root
		}
		allowed, planned := mayImport[pkg]
		if !planned {
			t.Errorf("%s is not in the plan (deps_test.go, docs/design.md): add it", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			dep, ours := strings.CutPrefix(imp, module)
			if ours && !slices.Contains(allowed, dep) {
				t.Errorf("%s imports %s, which the plan does not allow", pkg, dep)
			}
		}
	}
}

func TestPurePackagesHaveNoIO(t *testing.T) {
	for _, pkg := range purePackages {
		out, err := exec.Command("go", "list", "-deps", "./"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if slices.Contains(forbidden, dep) {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}

// Only the store speaks to PostgreSQL (and the tests' kit, which plays
// someone holding the store's password): a package that needs shared
// state asks the store's interface for its kind.
func TestOnlyTheStoreImportsPgx(t *testing.T) {
	out, err := exec.Command("go", "list", "-test", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		pkg, _, _ = strings.Cut(pkg, " ")
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, "github.com/jackc/pgx") && pkg != "store" && pkg != "internal/testenv" {
				t.Errorf("%s imports %s: only the store may", fields[0], imp)
			}
		}
	}
}
