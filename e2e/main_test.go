package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// toolshelf is the command under test, built by TestMain.
var toolshelf string

// Environment of the processes the tests start.
const (
	// envTokens names the sign-in file of 'toolshelf auth' (cmd/toolshelf).
	envTokens = "TOOLSHELF_TOKENS"
	// binEnv carries the built command's path to this test binary when it
	// runs as a wrapper (conformanceClientEnv).
	binEnv = "TOOLSHELF_E2E_BIN"
)

func TestMain(m *testing.M) {
	mcptest.MaybeServe()
	if os.Getenv(conformanceClientEnv) == "1" {
		// The conformance suite starts 'toolshelf auth login --url URL'
		// through this binary, which adds the suite's credentials as a
		// user would pass them.
		bin := os.Getenv(binEnv)
		args := append(append([]string{bin}, os.Args[1:]...), conformanceContextFlags()...)
		err := syscall.Exec(bin, args, os.Environ())
		fmt.Fprintln(os.Stderr, "exec:", err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "toolshelf-e2e")
	if err != nil {
		panic(err)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		toolshelf = filepath.Join(dir, "toolshelf")
		build := exec.Command("go", "build", "-o", toolshelf, "github.com/toolshelf/toolshelf/cmd/toolshelf")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building toolshelf: %v\n%s", err, out)
			return 1
		}
		// Keep the user's configuration and cache out of the tests.
		os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
		os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
		os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
		os.Unsetenv("TOOLSHELF_CONFIG")
		defer testenv.StopPostgres()
		return m.Run()
	}()
	os.Exit(code)
}

// conformanceClientEnv, set for the process the conformance suite starts,
// turns the suite's pre-registered credentials ($MCP_CONFORMANCE_CONTEXT)
// into auth login's flags, as a user would pass the ones their
// authorization server gave them.
const conformanceClientEnv = "TOOLSHELF_TEST_CONFORMANCE_CLIENT"

func conformanceContextFlags() []string {
	var c struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &c)
	var flags []string
	if c.ClientID != "" {
		flags = append(flags, "--client-id", c.ClientID)
	}
	if c.ClientSecret != "" {
		flags = append(flags, "--client-secret", c.ClientSecret)
	}
	if strings.HasPrefix(os.Getenv("MCP_CONFORMANCE_SCENARIO"), "auth/client-credentials-") {
		// A machine-to-machine client, as its configuration would say.
		flags = append(flags, "--grant", "client_credentials")
	}
	if os.Getenv("MCP_CONFORMANCE_SCENARIO") == "auth/basic-cimd" {
		// The scenario's authorization server expects this Client ID
		// Metadata Document URL, as a user configures their own.
		flags = append(flags, "--client-metadata-url", "https://conformance-test.local/client-metadata.json")
	}
	return flags
}
