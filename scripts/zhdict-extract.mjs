// Writes CC-CEDICT's simplified words of two to four characters with
// their first one or two short English meanings, one "word<TAB>meanings"
// line each, sorted (scripts/zhdict.sh runs it).
import { pathToFileURL } from "node:url";
const { default: data } = await import(pathToFileURL(process.argv[2]).href);
const all = data.all || data;
const out = new Map();
const skip = /^(surname|variant of|old variant|see |CL:|used in|\(|archaic|Japanese variant|erhua variant|abbr\.|also written|same as|classifier)/i;
for (const e of all) {
  const simp = e[1];
  const n = [...simp].length;
  if (n < 2 || n > 4 || !/^[\u4e00-\u9fff]+$/.test(simp)) continue;
  let meanings = typeof e[3] === "string" ? [e[3]] : e[3];
  const kept = [];
  for (let m of meanings) {
    m = m.replace(/\([^)]*\)/g, "").replace(/\[[^\]]*\]/g, "").trim();
    if (!m || skip.test(m) || /[\u4e00-\u9fff|]/.test(m)) continue;
    m = m.replace(/^to /, "");
    const words = m.split(/\s+/);
    if (words.length > 4) continue;
    kept.push(words.join(" "));
    if (kept.length == 2) break;
  }
  if (!kept.length) continue;
  if (!out.has(simp)) out.set(simp, kept.join("; "));
}
const lines = [...out].map(([k, v]) => k + "\t" + v).sort();
process.stdout.write(lines.join("\n") + "\n");
