// A client of toolshelf proxy's Chat Completions face, written with the
// official OpenAI client for Node: it sends the built-in catalog's tools
// (as an agent on that API sends its tools every turn), once plainly and
// once streaming, and prints what came back as JSON for the Go test.
//
//   node openai-client.mjs BASE_URL
import OpenAI from "openai";
import { readFileSync } from "node:fs";

const [baseURL] = process.argv.slice(2);
const catalog = JSON.parse(readFileSync(new URL("../../internal/builtin/catalog.json", import.meta.url)));
const tools = catalog.servers.flatMap((s) =>
  s.tools
    .map((t) => ({ name: `mcp__${s.name}__${t.name}`, t }))
    .filter(({ name }) => /^[a-zA-Z0-9_-]{1,64}$/.test(name))
    .map(({ name, t }) => ({ type: "function", function: { name, description: t.description ?? "", parameters: t.inputSchema } })),
);
const client = new OpenAI({ baseURL, apiKey: "sk-openai-client-key", maxRetries: 0 });
const ask = { model: "gpt-test", messages: [{ role: "user", content: "Open a GitHub issue about the crash." }], tools };

const out = { tools: tools.length };
const plain = await client.chat.completions.create(ask);
out.plain = {
  finish: plain.choices[0].finish_reason,
  calls: (plain.choices[0].message.tool_calls ?? []).map((c) => [c.function.name, c.function.arguments]),
  usage: plain.usage,
};

const stream = await client.chat.completions.create({ ...ask, stream: true, stream_options: { include_usage: true } });
const calls = [];
let finish = null;
let usage = null;
for await (const chunk of stream) {
  if (chunk.usage) usage = chunk.usage;
  const choice = chunk.choices[0];
  if (!choice) continue;
  if (choice.finish_reason) finish = choice.finish_reason;
  for (const d of choice.delta.tool_calls ?? []) {
    calls[d.index] ??= ["", ""];
    calls[d.index][0] += d.function?.name ?? "";
    calls[d.index][1] += d.function?.arguments ?? "";
  }
}
out.streamed = { finish, calls, usage };
console.log(JSON.stringify(out));
