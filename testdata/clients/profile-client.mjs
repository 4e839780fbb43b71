// A client of one gateway profile, written with the official MCP
// TypeScript SDK: it lists the tools, searches, and calls tools through
// call_tool, and prints what it saw as JSON for the Go test to judge.
//
//   node profile-client.mjs URL TOKEN QUERY TOOL...
//
// Prints {"listed": [...], "found": [...], "calls": {TOOL: {"error": bool,
// "text": "..."}}}, or {"refused": "<message>"} when the gateway refuses
// the connection (a wrong token): "<HTTP status> <message>".
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, query, ...tools] = process.argv.slice(2);
const headers = token ? { Authorization: "Bearer " + token } : {};
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
const client = new Client({ name: "toolshelf-profile-test", version: "1.0.0" });

const textOf = (r) => (r.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");

try {
  await client.connect(transport);
} catch (err) {
  // The SDK's StreamableHTTPError carries the HTTP status as code.
  console.log(JSON.stringify({ refused: `${err?.code ?? ""} ${err?.message ?? err}` }));
  process.exit(0);
}
try {
  const out = { listed: [], found: [], calls: {} };
  out.listed = (await client.listTools()).tools.map((t) => t.name).sort();
  // Retry while the upstream servers start.
  for (let i = 0; i < 200; i++) {
    const res = await client.callTool({ name: "search_tools", arguments: { query, limit: 10 } });
    const found = JSON.parse(textOf(res));
    out.found = found.matches.map((m) => m.name).sort();
    if ((found.pending_servers ?? []).length === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  for (const name of tools) {
    const res = await client.callTool({ name: "call_tool", arguments: { name, arguments: { text: "x" } } });
    out.calls[name] = { error: !!res.isError, text: textOf(res) };
  }
  console.log(JSON.stringify(out));
  await client.close();
} catch (err) {
  console.error(err);
  process.exit(1);
}
