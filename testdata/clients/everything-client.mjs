// A client of the gateway written with the official MCP TypeScript SDK,
// with server-everything behind the gateway: it lists and gets a prompt,
// reads a resource, answers the sampling request that server-everything's
// trigger-sampling-request tool sends, and receives the progress of a
// long-running operation, all through the gateway.
//
//   node everything-client.mjs stdio COMMAND [ARGS...]   spawn the gateway
//   node everything-client.mjs http URL                  connect to /mcp
//
// Exits 0 and prints a JSON summary when every check passes.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema } from "@modelcontextprotocol/sdk/types.js";

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
  transport = new StreamableHTTPClientTransport(new URL(target));
} else {
  console.error("usage: everything-client.mjs stdio COMMAND [ARGS...] | http URL");
  process.exit(2);
}

const client = new Client({ name: "toolshelf-everything-test", version: "1.0.0" }, { capabilities: { sampling: {} } });
const sampled = [];
client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
  sampled.push(req.params);
  return { role: "assistant", content: { type: "text", text: "sampled by the test client" }, model: "test-model", stopReason: "endTurn" };
});

// until retries f while the gateway's upstream starts and lists.
async function until(what, f) {
  for (let i = 0; i < 300; i++) {
    const v = await f();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("gave up waiting for " + what);
}

try {
  await client.connect(transport);

  const prompts = await until("prompts", async () => {
    const { prompts } = await client.listPrompts();
    return prompts.some((p) => p.name === "simple-prompt") && prompts;
  });
  const prompt = await client.getPrompt({ name: "simple-prompt" });
  check(prompt.messages.length > 0 && prompt.messages[0].content.text, "simple-prompt has a message: " + JSON.stringify(prompt));

  const { resources } = await client.listResources();
  check(resources.length > 0, "resources listed");
  const doc = resources.find((r) => r.uri.startsWith("demo://resource/static/document/")) ?? resources[0];
  const read = await client.readResource({ uri: doc.uri });
  check(read.contents.length > 0 && read.contents[0].uri === doc.uri, "read " + doc.uri + ": " + JSON.stringify(read).slice(0, 300));

  // The sampling tool appears once the server has seen the gateway's
  // sampling capability; it is called through call_tool.
  const tool = "mcp__everything__trigger-sampling-request";
  const res = await until(tool, async () => {
    const r = await client.callTool({ name: "call_tool", arguments: { name: tool, arguments: { prompt: "say hello", maxTokens: 20 } } });
    return !textOf(r).includes("there is no tool") && r;
  });
  check(!res.isError, "trigger-sampling-request: " + textOf(res));
  check(sampled.length === 1 && JSON.stringify(sampled[0]).includes("say hello"), "the sampling request reached the client: " + JSON.stringify(sampled));
  check(textOf(res).includes("sampled by the test client"), "the client's answer reached the server: " + textOf(res));

  const progress = [];
  const op = await client.callTool(
    { name: "call_tool", arguments: { name: "mcp__everything__trigger-long-running-operation", arguments: { duration: 1, steps: 3 } } },
    undefined,
    { onprogress: (p) => progress.push(p) },
  );
  check(!op.isError, "long-running operation: " + textOf(op));
  // The TypeScript SDK handles notifications a microtask later but
  // responses at once: a last progress notification read in the same
  // chunk as the response is dropped by the SDK itself (for a server
  // connected directly too). The gateway sends all three first.
  check(progress.length >= 2 && progress.every((p, i) => p.progress === i + 1), "progress reached the client: " + JSON.stringify(progress));

  console.log(JSON.stringify({ ok: true, mode, prompts: prompts.length, resources: resources.length, sampled: sampled.length, progress: progress.length }));
  await client.close();
} catch (err) {
  console.error(err?.stack ?? String(err));
  process.exit(1);
}
