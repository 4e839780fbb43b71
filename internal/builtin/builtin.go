// Package builtin holds toolshelf's built-in catalog: the tools of twenty
// real npm MCP servers (the pinned versions of testdata/servers), as
// "toolshelf catalog export --config examples/servers.json" wrote them.
// It lets search, doctor and serve run on a fresh checkout with no
// configuration, on a catalog the size of a real multi-server setup.
//
// Regenerate it with scripts/builtin.sh after changing the pinned servers;
// a test fails while it is stale.
package builtin

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"sync"

	"github.com/toolshelf/toolshelf/catalog"
)

//go:embed catalog.json
var catalogJSON []byte

//go:embed versions.json
var versionsJSON []byte

// Catalog returns the built-in catalog. It is decoded once.
var Catalog = sync.OnceValue(func() *catalog.Catalog {
	c, err := catalog.Decode(bytes.NewReader(catalogJSON))
	if err != nil {
		panic("builtin catalog: " + err.Error()) // checked by the package's tests
	}
	return c
})

// Versions returns the npm packages and versions the catalog was exported
// from.
func Versions() map[string]string {
	var v map[string]string
	if err := json.Unmarshal(versionsJSON, &v); err != nil {
		panic("builtin versions: " + err.Error())
	}
	return v
}
