// A client of the Tasks extension (io.modelcontextprotocol/tasks) in front
// of the gateway, with the official TypeScript SDK (v2, which speaks MCP
// 2026-07-28) and the extension's own requester, @modelcontextprotocol/
// ext-tasks: it finds a slow tool by search, calls it and gets a task,
// which the requester polls to its result; it answers a question a task
// asks on the way (tasks/update); it cancels a task. Given a second URL (a
// replica of the same fleet), it starts tasks through the first and
// follows them through the second: one to its result, one that asks
// (answered through the second), and one that waits (with its "marker"
// argument MARKER), cancelled through the second.
//
//   node tasks-client.mjs URL TOKEN|- [OTHER_URL MARKER]
//
// Exits 0 and prints a JSON summary when every check passes.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createTaskSessionFromClient, resultFromTaskOutcome } from "@modelcontextprotocol/ext-tasks/client";

const [url, token, otherURL, marker] = process.argv.slice(2);
const auth = token === "-" ? {} : { Authorization: "Bearer " + token };
const version = "2026-07-28";
const clientInfo = { name: "toolshelf-tasks-test", version: "1.0.0" };
const clientCapabilities = { elicitation: { form: {} } };

function check(cond, what) {
  if (!cond) throw new Error("check failed: " + what);
}
const textOf = (r) => (r?.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");

// The extension's requester sends its task requests through a raw path
// the host owns (the SDK's Client has no public one for them): one
// JSON-RPC request a POST, with the headers 2026-07-28 requires (Mcp-Name
// mirrors the tool's name, or the task's id for tasks/*).
let nextID = 1;
function rawDispatchTo(endpoint) {
  return async (request, options = {}) => {
    const name = request.method === "tools/call" ? request.params?.name : request.params?.taskId;
    const headers = {
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      ...auth,
      "Mcp-Protocol-Version": version,
      "Mcp-Method": request.method,
      ...(name ? { "Mcp-Name": name } : {}),
      ...(options.context?.headers ?? {}),
    };
    const resp = await fetch(endpoint, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: nextID++, ...request }), signal: options.signal });
    let body = await resp.text();
    if ((resp.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
      // The answer is the last message of the stream.
      const messages = body.split("\n").filter((l) => l.startsWith("data:")).map((l) => JSON.parse(l.slice(5)));
      body = JSON.stringify(messages.findLast((m) => "result" in m || "error" in m));
    }
    const msg = JSON.parse(body);
    return "error" in msg ? { kind: "error", error: msg.error } : { kind: "result", result: msg.result };
  };
}

async function connect(endpoint, onInputRequest) {
  const client = new Client(clientInfo, { capabilities: clientCapabilities, versionNegotiation: { mode: { pin: version } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(endpoint), { requestInit: { headers: auth } }));
  const session = createTaskSessionFromClient(client, {
    endpointId: "toolshelf",
    rawDispatch: rawDispatchTo(endpoint),
    v2RequestFraming: { protocolVersion: version, clientInfo, clientCapabilities },
    onInputRequest,
  });
  return { client, session };
}

const asked = [];
const { client, session } = await connect(url, async (request) => {
  asked.push(request);
  check(request.kind === "elicitation" && request.params.message === "Your name?", "the question asked: " + JSON.stringify(request));
  return { action: "accept", content: { name: "Ada" } };
});
const summary = {};
try {
  check(client.getProtocolEra() === "modern", "the client speaks 2026-07-28 with the gateway: " + client.getProtocolEra());
  check(session.capabilities?.generation === "v2" || JSON.stringify(client.getServerCapabilities()?.extensions ?? {}).includes("io.modelcontextprotocol/tasks"),
    "the gateway offers the tasks extension: " + JSON.stringify(client.getServerCapabilities()));

  // Found by search, as a model finds it.
  const found = JSON.parse(textOf(await client.callTool({ name: "search_tools", arguments: { query: "slow" } })));
  const slow = found.matches.find((m) => m.name.endsWith("__slow"));
  check(slow, "the slow tool found: " + JSON.stringify(found.matches.map((m) => m.name)));

  // A long call: a task, polled to its result.
  const seen = [];
  const execution = await session.callTool("call_tool", { name: slow.name, arguments: { ms: 1500 } });
  check(execution.kind === "task" && execution.handle.taskId, "a long call is a task: " + execution.kind);
  const { outcome } = await execution.settle({ onEvent: (e) => seen.push(e.type === "task" ? e.task.status : e.outcome.status) });
  const result = resultFromTaskOutcome(outcome);
  check(textOf(result).includes('"ms":1500'), "the task's result is the tool's: " + JSON.stringify(result));
  summary.slow = { task: execution.handle.taskId, seen };

  // A quick call, answered at once unless the machine is slow enough
  // that it outlasts --task-after (then it is a task): the requester
  // gives its result either way.
  const quick = await session.callTool("call_tool", { name: slow.name, arguments: { ms: 0 } });
  check(textOf(resultFromTaskOutcome((await quick.settle()).outcome)).includes('"ms":0'), "the quick answer");
  summary.quick = quick.kind;

  // A task that asks: the requester answers through tasks/update.
  const ask = found.matches.find((m) => m.name.endsWith("__ask")) ?? { name: slow.name.replace(/__slow$/, "__ask") };
  const asking = await session.callTool("call_tool", { name: ask.name, arguments: { ms: 1000 } });
  check(asking.kind === "task", "a call that works, then asks, is a task: " + asking.kind);
  const answered = resultFromTaskOutcome((await asking.settle()).outcome);
  check(asked.length === 1 && textOf(answered).includes("hello Ada"), "the task resumed with the answer: " + JSON.stringify(answered) + " asked " + asked.length);
  summary.ask = { task: asking.handle.taskId, asked: asked.length };

  // A task cancelled.
  const long = await session.callTool("call_tool", { name: slow.name, arguments: { ms: 600000 } });
  check(long.kind === "task", "a very long call is a task");
  await long.cancel();
  const after = await session.task(long.handle.taskId).snapshot();
  check(after.status === "cancelled", "the cancelled task reads cancelled: " + JSON.stringify(after));
  summary.cancelled = long.handle.taskId;

  if (otherURL) {
    // Started through one replica, followed through another.
    const started = await session.callTool("call_tool", { name: slow.name, arguments: { ms: 2000 } });
    check(started.kind === "task", "a long call through the first replica is a task");
    const taskId = started.handle.taskId;
    await started.detach();
    const askedThere = [];
    const other = await connect(otherURL, async (request) => {
      askedThere.push(request);
      return { action: "accept", content: { name: "Grace" } };
    });
    try {
      const resume = (taskId) => other.session.resumeTask({ endpointId: "toolshelf", generation: "v2", taskId, originalOperation: "tools/call" });
      const done = resultFromTaskOutcome((await (await resume(taskId)).settle()).outcome);
      check(textOf(done).includes('"ms":2000'), "the other replica gives the task's result: " + JSON.stringify(done));
      summary.acrossReplicas = taskId;

      // Asked through the first replica, answered through the second,
      // which sends the answer to the replica running the call.
      const asking = await session.callTool("call_tool", { name: ask.name, arguments: { ms: 500 } });
      check(asking.kind === "task", "a call that asks, through the first replica, is a task");
      await asking.detach();
      const answered = resultFromTaskOutcome((await (await resume(asking.handle.taskId)).settle()).outcome);
      check(askedThere.length === 1 && textOf(answered).includes("hello Grace"), "answered through the other replica: " + JSON.stringify(answered));
      summary.answeredAcross = asking.handle.taskId;

      // Started through the first, cancelled through the second.
      const waiting = await session.callTool("call_tool", { name: slow.name.replace(/__slow$/, "__wait"), arguments: { marker } });
      check(waiting.kind === "task", "a call that waits is a task");
      await waiting.detach();
      await other.session.task(waiting.handle.taskId).cancel();
      const cancelled = await other.session.task(waiting.handle.taskId).snapshot();
      check(cancelled.status === "cancelled", "cancelled through the other replica: " + JSON.stringify(cancelled));
      summary.cancelledAcross = waiting.handle.taskId;
    } finally {
      await other.session.close();
      await other.client.close();
    }
  }

  console.log(JSON.stringify({ ok: true, ...summary }));
  await session.close();
  await client.close();
  process.exit(0);
} catch (err) {
  console.error(String(err?.stack ?? err));
  await session.close().catch(() => {});
  await client.close().catch(() => {});
  process.exit(1);
}
