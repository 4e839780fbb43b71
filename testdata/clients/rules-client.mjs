// A client of the gateway written with the official MCP TypeScript SDK,
// for the rules on calls: it answers the gateway's elicitation with yes
// or no, and calls through call_tool tools that the rules forbid by
// argument, ask about, or limit. It prints one JSON line per call:
// {"tool", "isError", "text", "asked"}.
//
//   node rules-client.mjs URL yes|no CALLS_JSON
//
// CALLS_JSON is a list of {"name": ..., "arguments": {...}}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, answer, callsJSON] = process.argv.slice(2);
if (!url || !["yes", "no"].includes(answer) || !callsJSON) {
  console.error("usage: rules-client.mjs URL yes|no CALLS_JSON");
  process.exit(2);
}

const client = new Client({ name: "toolshelf-rules-test", version: "1.0.0" }, { capabilities: { elicitation: {} } });
let asked = [];
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  asked.push(req.params.message);
  return { action: "accept", content: { approve: answer === "yes" } };
});

function textOf(result) {
  return (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
}

await client.connect(new StreamableHTTPClientTransport(new URL(url)));
for (const call of JSON.parse(callsJSON)) {
  asked = [];
  const res = await client.callTool({ name: "call_tool", arguments: call });
  console.log(JSON.stringify({ tool: call.name, isError: !!res.isError, text: textOf(res), asked }));
}
await client.close();
