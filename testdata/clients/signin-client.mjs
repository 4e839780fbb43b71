// A client of the gateway written with the official MCP TypeScript SDK
// that signs its person in as the MCP authorization specification says:
// the gateway's 401 names its protected resource metadata, which names the
// team's identity provider; the SDK registers a client there, sends the
// person's browser to authorize (the URL is printed as "AUTHORIZE <url>"
// for the test's browser to open), takes the code at its own loopback
// callback, and then searches and calls through the gateway. It prints
// one JSON line: {"found", "text", "isError"}.
//
//   node signin-client.mjs URL QUERY TOOL ARGS_JSON
import http from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const [url, query, tool, argsJSON] = process.argv.slice(2);
if (!url || !query || !tool) {
  console.error("usage: signin-client.mjs URL QUERY TOOL ARGS_JSON");
  process.exit(2);
}

const callback = http.createServer();
await new Promise((resolve) => callback.listen(0, "127.0.0.1", resolve));
const redirectUrl = `http://127.0.0.1:${callback.address().port}/callback`;
const code = new Promise((resolve, reject) => {
  callback.on("request", (req, res) => {
    const u = new URL(req.url, redirectUrl);
    if (u.pathname !== "/callback") {
      res.writeHead(404).end();
      return;
    }
    if (u.searchParams.get("error")) {
      res.writeHead(400).end("refused");
      reject(new Error(`the provider refused: ${u.searchParams.get("error")} ${u.searchParams.get("error_description")}`));
      return;
    }
    res.writeHead(200, { "content-type": "text/html" }).end("<p id=done>Signed in.</p>");
    resolve(u.searchParams.get("code"));
  });
});

let info, tokens, verifier;
const provider = {
  get redirectUrl() { return redirectUrl; },
  get clientMetadata() {
    return {
      client_name: "toolshelf sign-in test", redirect_uris: [redirectUrl],
      grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none",
    };
  },
  clientInformation: () => info,
  saveClientInformation: (i) => { info = i; },
  tokens: () => tokens,
  saveTokens: (t) => { tokens = t; },
  redirectToAuthorization: (u) => { console.log(`AUTHORIZE ${u.toString()}`); },
  saveCodeVerifier: (v) => { verifier = v; },
  codeVerifier: () => verifier,
};

function textOf(result) {
  return (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
}

const client = new Client({ name: "toolshelf-signin-test", version: "1.0.0" });
let transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
try {
  await client.connect(transport);
} catch (err) {
  if (!(err instanceof UnauthorizedError)) throw err;
  await transport.finishAuth(await code);
  transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  await client.connect(transport);
}
const found = await client.callTool({ name: "search_tools", arguments: { query } });
const res = await client.callTool({ name: "call_tool", arguments: { name: tool, arguments: JSON.parse(argsJSON || "{}") } });
console.log(JSON.stringify({ found: textOf(found), text: textOf(res), isError: !!res.isError }));
await client.close();
callback.close();
