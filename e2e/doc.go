// Package e2e holds toolshelf's end-to-end tests: MCP clients nobody here
// wrote (the official TypeScript SDK, the MCP Inspector CLI, the MCP
// conformance suite as client and as server, Claude Code and the OpenAI
// client for Node in front of the proxy) driving the toolshelf command
// as a real process, built once by TestMain, in front of real npm MCP
// servers (testdata/servers). They live apart from the CLI's own tests so
// that neither package holds more than a few minutes of work.
//
// The package has no code but its tests.
package e2e
