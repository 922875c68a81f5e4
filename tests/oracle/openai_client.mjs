// The official `openai` npm client driving `tessera serve`:
//   node openai_client.mjs BASE_URL MODEL API_KEY PROMPT MAX_TOKENS OUT.json
// Writes what the client parsed: a completion whole and streamed (with
// usage), and the status of the errors it raised.
import fs from "node:fs";
import OpenAI from "openai";

const [baseURL, model, apiKey, prompt, maxTokensText, out] = process.argv.slice(2);
const max_tokens = Number(maxTokensText);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60000 });
const common = { model, prompt, max_tokens, temperature: 0, ignore_eos: true, stop_token_ids: [1], return_token_ids: true };

const whole = await client.completions.create(common);

const stream = await client.completions.create({ ...common, stream: true, stream_options: { include_usage: true } });
const streamed = { text: "", token_ids: [], finish_reason: null, usage: null, chunks: 0, ids: new Set() };
for await (const chunk of stream) {
  streamed.chunks += 1;
  streamed.ids.add(chunk.id);
  if (chunk.usage) streamed.usage = chunk.usage;
  for (const c of chunk.choices) {
    streamed.text += c.text;
    streamed.token_ids.push(...(c.token_ids ?? []));
    if (c.finish_reason) streamed.finish_reason = c.finish_reason;
  }
}

const errors = {};
try {
  await client.completions.create({ ...common, temperature: "hot" });
} catch (e) {
  errors.bad_type = { status: e.status, param: e.param ?? e.error?.param ?? null, message: e.message };
}
try {
  await new OpenAI({ baseURL, apiKey: "not-the-key", maxRetries: 0 }).completions.create(common);
} catch (e) {
  errors.bad_key = { status: e.status };
}
try {
  await client.completions.create({ ...common, model: "no-such-model" });
} catch (e) {
  errors.bad_model = { status: e.status };
}
const models = await client.models.list();

fs.writeFileSync(
  out,
  JSON.stringify({
    whole: { id: whole.id, object: whole.object, model: whole.model, text: whole.choices[0].text, token_ids: whole.choices[0].token_ids,
             finish_reason: whole.choices[0].finish_reason, usage: whole.usage },
    streamed: { ...streamed, ids: [...streamed.ids] },
    errors,
    models: models.data.map((m) => m.id),
  }),
);
