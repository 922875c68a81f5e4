// The GGUF oracle: Hugging Face's reader (@huggingface/gguf) on a local file.
// usage: node gguf_read.mjs FILE.gguf OUTPUT.json
//   OUTPUT: {version, tensorDataOffset, metadata: {key: {type, subType?, value}},
//   tensors: [{name, shape, dtype, offset}]} with 64-bit integers as strings.
import { writeFileSync } from "node:fs";
import { gguf } from "@huggingface/gguf";

const [file, output] = process.argv.slice(2);
if (!file || !output) {
  console.error("usage: node gguf_read.mjs FILE.gguf OUTPUT.json");
  process.exit(2);
}
const r = await gguf(file, { allowLocalFile: true, typedMetadata: true });
const metadata = {};
for (const [key, entry] of Object.entries(r.typedMetadata)) {
  if (key === "version" || key === "tensor_count" || key === "kv_count") continue;
  metadata[key] = entry;
}
const out = {
  version: r.metadata.version,
  tensorDataOffset: r.tensorDataOffset,
  metadata,
  tensors: r.tensorInfos.map((t) => ({ name: t.name, shape: t.shape, dtype: t.dtype, offset: t.offset })),
};
writeFileSync(output, JSON.stringify(out, (k, v) => (typeof v === "bigint" ? v.toString() : v)));
