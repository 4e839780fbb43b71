// A client, written with the official MCP TypeScript SDK, that holds one
// session with a gateway while the gateway's configuration file is
// edited under it (serve follows its configuration): a server added,
// a server's environment changed, a save that does not load, a server
// removed. It calls tools between the edits and checks that its tool list
// follows (notifications/tools/list_changed), that the servers the edits
// leave alone answer throughout, and that its session is never lost.
//
//   node live-client.mjs URL TOKEN CONFIG TIMEOUT_MS WITH_MEMORY WITH_BOTH MEMORY_MOVED BROKEN FILESYSTEM_GONE
//
// CONFIG is the file serve follows; each later argument is a version of
// it, saved over it as an editor does (a file renamed over the old one).
// Exits 0 and prints a JSON summary when every check passes.
import { copyFileSync, renameSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, token, config, timeoutArg, , withBoth, memoryMoved, broken, filesystemGone] = process.argv.slice(2);
const timeout = Number(timeoutArg);

function check(cond, what) {
  if (!cond) throw new Error("check failed: " + what);
}

function textOf(result) {
  return (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
}

function save(version) {
  copyFileSync(version, config + ".swp");
  renameSync(config + ".swp", config);
}

// waitFor polls until f() holds, or fails naming what it waited for.
async function waitFor(what, f) {
  const deadline = Date.now() + timeout;
  let last;
  while (Date.now() < deadline) {
    try {
      if (await f()) return;
    } catch (e) {
      last = e; // a server restarting answers with an error a moment
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("timed out waiting for " + what + (last ? ": " + last.message : ""));
}

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: "Bearer " + token } },
});
const client = new Client({ name: "toolshelf-live-test", version: "1.0.0" });
let changes = 0;
const summary = { listChanged: 0, calls: 0 };
try {
  await client.connect(transport);
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    changes++;
  });
  const session = transport.sessionId;
  check(session, "a session");

  const names = async () => (await client.listTools()).tools.map((t) => t.name);
  const tool = async (suffix) => (await names()).find((n) => n.endsWith(suffix));
  const call = async (suffix, args) => {
    const name = await tool(suffix);
    check(name, suffix + " listed: " + (await names()));
    const res = await client.callTool({ name, arguments: args });
    check(!res.isError, name + " succeeded: " + textOf(res));
    summary.calls++;
    return textOf(res);
  };
  const graphHasAlice = async () => (await call("read_graph", {})).includes("alice");

  await waitFor("the memory server's tools", async () => (await tool("create_entities")) !== undefined);
  await call("create_entities", { entities: [{ name: "alice", entityType: "person", observations: ["likes tea"] }] });
  check(await graphHasAlice(), "alice is in the graph");

  // A server added: its tools reach the list, with list_changed; the
  // memory server is untouched (its graph still holds alice).
  let before = changes;
  save(withBoth);
  await waitFor("the filesystem server's tools, with list_changed", async () => changes > before && (await tool("list_allowed_directories")) !== undefined);
  await call("list_allowed_directories", {});
  check(await graphHasAlice(), "the memory server kept its graph when another was added");

  // The memory server's environment changed: it is restarted with the
  // new file, whose graph is empty; the filesystem server answers on.
  save(memoryMoved);
  await waitFor("the memory server restarted on its new file", async () => !(await graphHasAlice()));
  await call("list_allowed_directories", {});

  // A save that does not load changes nothing: /healthz says it, and
  // both servers answer.
  save(broken);
  const health = new URL("/healthz", url);
  await waitFor("/healthz to name the change that does not load", async () => {
    const h = await (await fetch(health, { headers: { Authorization: "Bearer " + token } })).json();
    return h.configError?.includes("servers.json");
  });
  await call("list_allowed_directories", {});
  await call("read_graph", {});

  // A server removed: its tools leave the list, with list_changed.
  before = changes;
  save(filesystemGone);
  await waitFor("the filesystem server's tools to leave, with list_changed", async () => changes > before && (await tool("list_allowed_directories")) === undefined);
  await call("read_graph", {});

  check(transport.sessionId === session, "the same session throughout");
  summary.listChanged = changes;
  console.log(JSON.stringify(summary));
  await client.close();
} catch (e) {
  console.error(String(e?.stack ?? e));
  process.exit(1);
}
