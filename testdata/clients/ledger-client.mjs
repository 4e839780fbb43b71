// A client of toolshelf proxy written with the official Anthropic and
// OpenAI SDKs for Node, for the ledger's tests: it sends one request per
// step with the caller's token as its API key, and prints one JSON line
// per step: {"step", "ok": true, "usage"} or {"step", "status",
// "message"} as the SDK surfaced the error.
//
//   node ledger-client.mjs BASE_URL TOKEN STEPS [MODEL]
//
// STEPS is a comma-separated list of anthropic, anthropic-stream,
// openai and openai-stream.
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";

const [baseURL, apiKey, steps, model = "claude-sonnet-4-5"] = process.argv.slice(2);
// The SDKs' own retries stay on: a budget's refusal says not to retry.
const anthropic = new Anthropic({ baseURL, apiKey, maxRetries: 2 });
const openai = new OpenAI({ baseURL: baseURL + "/v1", apiKey, maxRetries: 2 });
const messages = [{ role: "user", content: "Say hello." }];

const run = {
  anthropic: async () => (await anthropic.messages.create({ model, max_tokens: 256, messages })).usage,
  "anthropic-stream": async () => (await anthropic.messages.stream({ model, max_tokens: 256, messages }).finalMessage()).usage,
  openai: async () => (await openai.chat.completions.create({ model: "gpt-5.5", max_completion_tokens: 256, messages })).usage,
  "openai-stream": async () => {
    const stream = await openai.chat.completions.create({ model: "gpt-5.5", max_completion_tokens: 256, messages, stream: true, stream_options: { include_usage: true } });
    let usage = null;
    for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
    return usage;
  },
};

for (const step of steps.split(",")) {
  try {
    console.log(JSON.stringify({ step, ok: true, usage: await run[step]() }));
  } catch (e) {
    console.log(JSON.stringify({ step, status: e.status ?? 0, message: String(e.message ?? e) }));
  }
}
