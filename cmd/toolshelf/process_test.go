package main

import (
	"os"
	"testing"

	"github.com/toolshelf/toolshelf/internal/testenv"
)

// The tests here that need toolshelf as a process run this test binary as
// it (TestMain, runMainEnv); the end-to-end tests with clients nobody here
// wrote are in package e2e.

const clientsDir = "../../testdata/clients"

func requireClients(t *testing.T) {
	t.Helper()
	testenv.RequireNPM(t, "testdata/clients", "testdata/servers")
}

// runMainEnv makes this test binary behave as the toolshelf command (see
// TestMain), so that clients can start the gateway as a real process.
const runMainEnv = "TOOLSHELF_TEST_RUN_MAIN"

// gatewayScript writes an executable that runs 'toolshelf serve --config
// cfg' with flags: this test binary, run as toolshelf.
func gatewayScript(t *testing.T, cfg string, flags ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return testenv.ServeScript(t, exe, map[string]string{runMainEnv: "1"}, cfg, flags...)
}

// runHTTPScript runs a gateway script that serves HTTP and returns its /mcp
// URL.
func runHTTPScript(t *testing.T, script string) string { return testenv.RunHTTPScript(t, script) }

// node runs a Node program from testdata/clients and returns its output.
func node(t *testing.T, node string, args ...string) (string, error) {
	return testenv.Node(t, clientsDir, node, args...)
}
