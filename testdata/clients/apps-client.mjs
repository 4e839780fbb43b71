// An MCP Apps host's view of the gateway, with the official TypeScript
// SDK: it finds a tool with an app by search, calls it, reads the app the
// match and the result name, and reads the same app from the server
// directly, to compare the HTML.
//
//   node apps-client.mjs URL TOKEN SERVER_COMMAND SERVER_ARGS...
//
// Exits 0 and prints a JSON summary when every check passes.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, command, ...args] = process.argv.slice(2);

function check(cond, what) {
  if (!cond) throw new Error("check failed: " + what);
}
const textOf = (r) => (r.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
const htmlOf = (r) => (r.contents ?? []).map((c) => c.text ?? "").join("");

const gateway = new Client({ name: "toolshelf-apps-test", version: "1.0.0" });
const direct = new Client({ name: "toolshelf-apps-test-direct", version: "1.0.0" });
try {
  await gateway.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: "Bearer " + token } } }));
  let found;
  for (let i = 0; i < 100; i++) {
    const res = await gateway.callTool({ name: "search_tools", arguments: { query: "show the weather forecast chart for a city" } });
    found = JSON.parse(textOf(res));
    if (found.matches.some((m) => m.name === "mcp__weather__show_forecast")) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const match = found.matches.find((m) => m.name === "mcp__weather__show_forecast");
  check(match, "show_forecast found: " + JSON.stringify(found.matches.map((m) => m.name)));
  check(match.app === "ui://weather/weather/forecast.html", "the match names its app as the gateway serves it: " + match.app);

  const called = await gateway.callTool({ name: "call_tool", arguments: { name: match.name, arguments: { city: "Lyon" } } });
  check(!called.isError && textOf(called).includes("Lyon"), "the call: " + JSON.stringify(called));
  const inner = JSON.parse(textOf(called).startsWith("{") ? textOf(called) : "{}");
  const resultMeta = called._meta ?? inner._meta;
  check(resultMeta?.ui?.resourceUri === match.app, "the result names the app as the gateway serves it: " + JSON.stringify(called));

  const { resources } = await gateway.listResources();
  check(resources.some((r) => r.uri === match.app), "the app is listed: " + JSON.stringify(resources.map((r) => r.uri)));
  const viaGateway = await gateway.readResource({ uri: match.app });
  check(viaGateway.contents[0].uri === match.app && viaGateway.contents[0].mimeType === "text/html;profile=mcp-app", "the app's content: " + JSON.stringify(viaGateway.contents[0]).slice(0, 200));

  await direct.connect(new StdioClientTransport({ command, args, stderr: "inherit" }));
  const fromServer = await direct.readResource({ uri: "ui://weather/forecast.html" });
  check(htmlOf(viaGateway) === htmlOf(fromServer) && htmlOf(fromServer).includes("<h1>Forecast</h1>"), "the same HTML as from the server");

  console.log(JSON.stringify({ ok: true, app: match.app, bytes: htmlOf(viaGateway).length }));
  await gateway.close();
  await direct.close();
  process.exit(0);
} catch (err) {
  console.error(String(err?.stack ?? err));
  await gateway.close().catch(() => {});
  await direct.close().catch(() => {});
  process.exit(1);
}
