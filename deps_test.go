package toolshelf_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The pure packages decide what a model sees; they must stay free of
// network and process I/O so that they are cheap to test and safe to embed.
var purePackages = []string{"catalog", "search", "policy", "messages", "evaluate"}

var forbidden = []string{"net/http", "os/exec", "net"}

func TestPurePackagesHaveNoIO(t *testing.T) {
	for _, pkg := range purePackages {
		path := "github.com/toolshelf/toolshelf/" + pkg
		out, err := exec.Command("go", "list", "-deps", "./"+pkg).CombinedOutput()
		if err != nil {
			if strings.Contains(string(out), "matched no packages") || strings.Contains(string(out), "no Go files") || strings.Contains(string(out), "directory not found") {
				t.Logf("%s: not built yet", path)
				continue
			}
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range forbidden {
				if dep == f {
					t.Errorf("%s depends on %s", path, f)
				}
			}
		}
	}
}
