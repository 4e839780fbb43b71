// A client of the gateway written with the official MCP TypeScript SDK:
// it connects, lists tools, searches, and calls tools of real upstream
// servers (server-memory and server-filesystem) through call_tool.
//
//   node sdk-client.mjs stdio COMMAND [ARGS...]   spawn the gateway
//   node sdk-client.mjs http URL [TOKEN]          connect to /mcp
//
// Exits 0 and prints a JSON summary when every check passes.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, target, ...rest] = process.argv.slice(2);

function check(cond, what) {
  if (!cond) throw new Error("check failed: " + what);
}

function textOf(result) {
  return (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
}

let transport;
if (mode === "stdio") {
  transport = new StdioClientTransport({ command: target, args: rest, stderr: "inherit" });
} else if (mode === "http") {
  const headers = rest[0] ? { Authorization: "Bearer " + rest[0] } : {};
  transport = new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
} else {
  console.error("usage: sdk-client.mjs stdio COMMAND [ARGS...] | http URL [TOKEN]");
  process.exit(2);
}

const client = new Client({ name: "toolshelf-sdk-test", version: "1.0.0" });
try {
  await client.connect(transport);
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  check(names.includes("search_tools") && names.includes("call_tool"), "meta tools listed: " + names);
  for (const t of tools.filter((t) => t.name === "search_tools" || t.name === "call_tool")) {
    check(t._meta?.["anthropic/alwaysLoad"] === true, t.name + " has _meta anthropic/alwaysLoad");
  }

  // Search, with retries while the upstream servers start.
  async function search(query) {
    for (let i = 0; i < 100; i++) {
      const res = await client.callTool({ name: "search_tools", arguments: { query, limit: 3 } });
      check(!res.isError, "search_tools succeeded: " + textOf(res));
      const found = JSON.parse(textOf(res));
      if (found.matches.length > 0 && (found.pending_servers ?? []).length === 0) return found;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error("no match for " + query);
  }

  const memory = await search("create entities in the knowledge graph memory");
  const create = memory.matches.find((m) => m.name === "mcp__memory__create_entities");
  check(create, "create_entities found: " + JSON.stringify(memory.matches.map((m) => m.name)));
  check(create.signature?.includes("entities: object[]") && !create.input_schema, "the match is compact, with its signature: " + JSON.stringify(create));

  const entity = "toolshelf-" + mode;
  // As a model might, from the signature alone: a wrong shape. The error
  // carries the whole definition, from which the model calls right.
  let res = await client.callTool({ name: "call_tool", arguments: { name: create.name, arguments: { entities: [entity] } } });
  check(res.isError && textOf(res).includes('"input_schema"') && textOf(res).includes("entityType"), "a misfit call answers with the schema: " + textOf(res));
  res = await client.callTool({
    name: "call_tool",
    arguments: { name: create.name, arguments: { entities: [{ name: entity, entityType: "project", observations: ["reached through the gateway"] }] } },
  });
  check(!res.isError, "create_entities: " + textOf(res));
  res = await client.callTool({ name: "call_tool", arguments: { name: "mcp__memory__open_nodes", arguments: { names: [entity] } } });
  check(!res.isError && textOf(res).includes("reached through the gateway"), "open_nodes returns the entity: " + textOf(res));

  const fs = await search("list the files in a directory");
  const list = fs.matches.find((m) => m.name === "mcp__filesystem__list_directory");
  check(list, "list_directory found: " + JSON.stringify(fs.matches.map((m) => m.name)));
  res = await client.callTool({ name: "call_tool", arguments: { name: list.name, arguments: { path: "." } } });
  check(!res.isError && textOf(res).includes("package.json"), "list_directory lists package.json: " + textOf(res));

  res = await client.callTool({ name: "call_tool", arguments: { name: "mcp__memory__no_such_tool", arguments: {} } });
  check(res.isError && textOf(res).includes("Closest"), "an unknown tool is a tool error with suggestions");

  console.log(JSON.stringify({ ok: true, mode, tools: names.length, searched: memory.tools_searched }));
  await client.close();
  process.exit(0);
} catch (err) {
  console.error(String(err?.stack ?? err));
  await client.close().catch(() => {});
  process.exit(1);
}
