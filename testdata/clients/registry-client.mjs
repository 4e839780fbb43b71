// Calls one tool through the gateway with the official MCP TypeScript
// SDK, over HTTP with the admin token, by call_tool: the test of
// `toolshelf add` calls a server it added from a registry with it.
//
//   node registry-client.mjs URL TOKEN TOOL ARGUMENTS_JSON
//
// Prints the tool's text; exits 1 when the call is an error.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, tool, args] = process.argv.slice(2);
if (!url || !token || !tool) {
  console.error("usage: registry-client.mjs URL TOKEN TOOL ARGUMENTS_JSON");
  process.exit(2);
}
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: "Bearer " + token } } });
const client = new Client({ name: "toolshelf-registry-test", version: "1.0.0" });
await client.connect(transport);
const res = await client.callTool({ name: "call_tool", arguments: { name: tool, arguments: JSON.parse(args || "{}") } });
const text = (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
console.log(text);
await client.close();
process.exit(res.isError ? 1 : 0);
