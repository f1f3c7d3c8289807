// make clients: real agent frameworks and SDKs against toolshed serve
// (run.sh starts it over the scripted model, internal/scripted).
//
// Every flow asks the scripted model to find slugify (tool_search), run
// it, then call the client's tool get_location; the framework runs that
// tool and sends the conversation back. The follow-up must carry what the
// first request discovered: the model debug endpoint lists the tools sent
// upstream for every model request, and exactly one request per flow (the
// very first, before tool_search) may lack slugify. The arguments hold
// 1.0 and \u00e9, which every JavaScript framework re-serialises
// (JSON.parse, JSON.stringify) before sending them back.
//
// A failure names the framework and the step. The last line counts them.

import OpenAI from 'openai';
import { generateText, streamText, tool, stepCountIs } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { createOpenAI } from '@ai-sdk/openai';
import { ChatOpenAI } from '@langchain/openai';
import { HumanMessage, ToolMessage } from '@langchain/core/messages';
import { z } from 'zod';

const base = process.env.TOOLSHED_URL; // http://127.0.0.1:PORT/v1
const debug = process.env.MODEL_URL; // the scripted model's base
const apiKey = process.env.TOOLSHED_KEY;
const model = 'scripted';
const ARGS = '{"who":"me","n":1.0,"s":"\\u00e9"}';
const PROMPT = `use slugify with {"text":"A_B"} to url-slug then get_location with ${ARGS}`;
const params = {
  type: 'object',
  properties: { who: { type: 'string' }, n: { type: 'number' }, s: { type: 'string' } },
  required: ['who', 'n', 's'],
  additionalProperties: false,
};
const description = "The user's city";

let passed = 0;
const failed = [];

class StepError extends Error {}
function check(cond, what) {
  if (!cond) throw new StepError(what);
}

async function upstream() {
  const r = await fetch(debug.replace(/\/v1$/, '') + '/debug/tools');
  return (await r.json()) ?? [];
}

// kept checks the upstream requests made since `from`: only the first may
// lack slugify (the request that searched for it).
async function kept(from, what) {
  const all = (await upstream()).slice(from);
  const without = all.filter((names) => !names.includes('slugify')).length;
  check(all.length >= 2, `${what}: ${all.length} upstream requests, want the search and the follow-up`);
  check(without === 1, `${what}: ${without} upstream requests without the discovered slugify (tool lists ${JSON.stringify(all.map((n) => n.length))}); the follow-up lost it`);
}

async function flow(framework, step, fn, keeps = true) {
  const from = (await upstream()).length;
  try {
    await fn();
    if (keeps) await kept(from, 'follow-up');
    passed++;
    console.log(`ok   ${framework}: ${step}`);
  } catch (e) {
    failed.push(`${framework}: ${step}: ${e instanceof StepError ? e.message : e?.stack || e}`);
    console.log(`FAIL ${framework}: ${step}: ${e?.message || e}`);
  }
}

const answered = (text) => typeof text === 'string' && text.includes('answer:') && text.includes('Paris');
const reserialise = (args) => JSON.stringify(JSON.parse(args));

// --- the official openai package: chat completions ---
const client = new OpenAI({ baseURL: base, apiKey, maxRetries: 0 });
const chatTools = [{ type: 'function', function: { name: 'get_location', description, parameters: params } }];

await flow('openai', 'chat.completions.create with a client tool, then the follow-up', async () => {
  const r1 = await client.chat.completions.create({ model, messages: [{ role: 'user', content: PROMPT }], tools: chatTools });
  const call = r1.choices[0].message.tool_calls?.[0];
  check(r1.choices[0].finish_reason === 'tool_calls' && call?.function.name === 'get_location', `first answer ${JSON.stringify(r1.choices[0])}`);
  const r2 = await client.chat.completions.create({
    model, tools: chatTools, messages: [{ role: 'user', content: PROMPT },
      { role: 'assistant', content: r1.choices[0].message.content, tool_calls: [{ ...call, function: { name: call.function.name, arguments: reserialise(call.function.arguments) } }] },
      { role: 'tool', tool_call_id: call.id, content: 'Paris' }],
  });
  check(answered(r2.choices[0].message.content), `follow-up answered ${JSON.stringify(r2.choices[0].message)}`);
});

await flow('openai', 'chat.completions.create stream: true, then the follow-up streamed', async () => {
  const s1 = await client.chat.completions.create({ model, messages: [{ role: 'user', content: PROMPT }], tools: chatTools, stream: true });
  const calls = [];
  for await (const chunk of s1) {
    for (const d of chunk.choices[0]?.delta?.tool_calls ?? []) {
      calls[d.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } };
      if (d.id) calls[d.index].id = d.id;
      if (d.function?.name) calls[d.index].function.name += d.function.name;
      if (d.function?.arguments) calls[d.index].function.arguments += d.function.arguments;
    }
  }
  check(calls.length === 1 && calls[0].function.name === 'get_location', `streamed calls ${JSON.stringify(calls)}`);
  calls[0].function.arguments = reserialise(calls[0].function.arguments);
  const s2 = await client.chat.completions.create({
    model, tools: chatTools, stream: true, messages: [{ role: 'user', content: PROMPT },
      { role: 'assistant', tool_calls: calls }, { role: 'tool', tool_call_id: calls[0].id, content: 'Paris' }],
  });
  let text = '';
  for await (const chunk of s2) text += chunk.choices[0]?.delta?.content ?? '';
  check(answered(text), `follow-up streamed ${JSON.stringify(text)}`);
});

// --- the official openai package: responses ---
const respTools = [{ type: 'function', name: 'get_location', description, parameters: params, strict: true }];

await flow('openai', 'responses.create with a client tool, then the items sent back (store: false)', async () => {
  const r1 = await client.responses.create({ model, input: PROMPT, tools: respTools, store: false });
  const fc = r1.output.find((i) => i.type === 'function_call');
  check(fc?.name === 'get_location', `first output ${JSON.stringify(r1.output)}`);
  const back = r1.output.map((i) => (i.type === 'function_call' ? { ...i, arguments: reserialise(i.arguments) } : i));
  const r2 = await client.responses.create({
    model, tools: respTools, store: false,
    input: [{ role: 'user', content: PROMPT }, ...back, { type: 'function_call_output', call_id: fc.call_id, output: 'Paris' }],
  });
  check(answered(r2.output_text), `follow-up output_text ${JSON.stringify(r2.output_text)}`);
  check(r2.usage?.total_tokens > 0, `usage ${JSON.stringify(r2.usage)}`);
});

await flow('openai', 'responses.create, then previous_response_id', async () => {
  const r1 = await client.responses.create({ model, input: PROMPT, tools: respTools });
  const fc = r1.output.find((i) => i.type === 'function_call');
  check(fc, `first output ${JSON.stringify(r1.output)}`);
  const r2 = await client.responses.create({
    model, tools: respTools, previous_response_id: r1.id,
    input: [{ type: 'function_call_output', call_id: fc.call_id, output: 'Paris' }],
  });
  check(answered(r2.output_text), `follow-up output_text ${JSON.stringify(r2.output_text)}`);
});

await flow('openai', 'responses.stream, then the follow-up streamed', async () => {
  const s1 = client.responses.stream({ model, input: PROMPT, tools: respTools, store: false });
  const r1 = await s1.finalResponse();
  const fc = r1.output.find((i) => i.type === 'function_call');
  check(fc?.name === 'get_location', `first output ${JSON.stringify(r1.output)}`);
  const s2 = await client.responses.create({
    model, tools: respTools, store: false, stream: true,
    input: [{ role: 'user', content: PROMPT }, { ...fc, arguments: reserialise(fc.arguments) }, { type: 'function_call_output', call_id: fc.call_id, output: 'Paris' }],
  });
  let text = '';
  let done = null;
  for await (const ev of s2) {
    if (ev.type === 'response.output_text.delta') text += ev.delta;
    if (ev.type === 'response.completed') done = ev.response;
  }
  check(answered(text) && done?.status === 'completed', `follow-up streamed ${JSON.stringify(text)}, final ${done?.status}`);
});

// --- the AI SDK: generateText and streamText, multi-step, a client tool ---
let runs = 0;
const aiTools = {
  get_location: tool({
    description,
    inputSchema: z.object({ who: z.string(), n: z.number(), s: z.string() }),
    execute: async () => {
      runs++;
      return 'Paris';
    },
  }),
};
const compat = createOpenAICompatible({ name: 'toolshed', baseURL: base, apiKey });
const openaiProvider = createOpenAI({ baseURL: base, apiKey });
for (const [name, m] of [
  ['@ai-sdk/openai-compatible', compat.chatModel(model)],
  ['@ai-sdk/openai .chat()', openaiProvider.chat(model)],
  ['@ai-sdk/openai (responses)', openaiProvider.responses(model)],
]) {
  await flow(`ai ${name}`, 'generateText, multi-step with a client tool', async () => {
    runs = 0;
    const r = await generateText({ model: m, tools: aiTools, prompt: PROMPT, stopWhen: stepCountIs(5), maxRetries: 0 });
    check(answered(r.text), `text ${JSON.stringify(r.text)}`);
    check(runs === 1, `the client tool ran ${runs} times, want once`);
  });
  await flow(`ai ${name}`, 'streamText, multi-step with a client tool', async () => {
    runs = 0;
    const r = streamText({ model: m, tools: aiTools, prompt: PROMPT, stopWhen: stepCountIs(5), maxRetries: 0 });
    let text = '';
    for await (const t of r.textStream) text += t;
    check(answered(text), `text ${JSON.stringify(text)}`);
    check(runs === 1, `the client tool ran ${runs} times, want once`);
  });
}

// --- LangChain JS: bindTools, invoke and stream, with a follow-up ---
const llm = new ChatOpenAI({ model, apiKey, configuration: { baseURL: base }, maxRetries: 0 });
const bound = llm.bindTools([{ type: 'function', function: { name: 'get_location', description, parameters: params } }]);

await flow('@langchain/openai', 'bindTools invoke, then the follow-up', async () => {
  const ai = await bound.invoke([new HumanMessage(PROMPT)]);
  const call = ai.tool_calls?.[0];
  check(call?.name === 'get_location', `first answer's tool calls ${JSON.stringify(ai.tool_calls)}`);
  const final = await bound.invoke([new HumanMessage(PROMPT), ai, new ToolMessage({ content: 'Paris', tool_call_id: call.id })]);
  check(answered(final.content), `follow-up ${JSON.stringify(final.content)}`);
});

await flow('@langchain/openai', 'bindTools stream, then the follow-up streamed', async () => {
  let ai;
  for await (const chunk of await bound.stream([new HumanMessage(PROMPT)])) ai = ai ? ai.concat(chunk) : chunk;
  const call = ai.tool_calls?.[0];
  check(call?.name === 'get_location', `streamed tool calls ${JSON.stringify(ai.tool_calls)}`);
  let final;
  for await (const chunk of await bound.stream([new HumanMessage(PROMPT), ai, new ToolMessage({ content: 'Paris', tool_call_id: call.id })])) {
    final = final ? final.concat(chunk) : chunk;
  }
  check(answered(final.content), `follow-up streamed ${JSON.stringify(final.content)}`);
});

// --- the OpenAI Agents SDK (Responses API) ---
let agents = null;
try {
  agents = await import('@openai/agents');
} catch (e) {
  console.log(`skip @openai/agents: it does not load here (${e.message})`);
}
if (agents) {
  const { Agent, run, setDefaultOpenAIClient, setTracingDisabled, setOpenAIAPI } = agents;
  setTracingDisabled(true);
  setDefaultOpenAIClient(new OpenAI({ baseURL: base, apiKey, maxRetries: 0 }));
  setOpenAIAPI('responses');
  const getLocation = agents.tool({
    name: 'get_location',
    description,
    parameters: z.object({ who: z.string(), n: z.number(), s: z.string() }),
    execute: async () => {
      runs++;
      return 'Paris';
    },
  });
  const agent = new Agent({ name: 'assistant', instructions: 'Answer briefly.', model, tools: [getLocation] });
  await flow('@openai/agents', 'run with a function tool', async () => {
    runs = 0;
    const r = await run(agent, PROMPT);
    check(answered(r.finalOutput), `final output ${JSON.stringify(r.finalOutput)}`);
    check(runs === 1, `the tool ran ${runs} times, want once`);
  });
  await flow('@openai/agents', 'run streamed with a function tool', async () => {
    runs = 0;
    const r = await run(agent, PROMPT, { stream: true });
    for await (const _ of r) {
      // events
    }
    await r.completed;
    check(answered(r.finalOutput), `final output ${JSON.stringify(r.finalOutput)}`);
    check(runs === 1, `the tool ran ${runs} times, want once`);
  });
}

// --- retries never multiply: the openai package (2 retries of its own)
// against a persistent upstream fault; the server retries twice
// (model.retries: 2 in run.sh), so one SDK call is 3 upstream calls, 9 if
// the SDK retried what the server had. ---
const serverRetries = 2;
async function faults() {
  const r = await fetch(debug.replace(/\/v1$/, '') + '/debug/faults');
  return (await r.json()) ?? {};
}
const retrying = new OpenAI({ baseURL: base, apiKey, maxRetries: 2 });
for (const status of [429, 500, 503, 409]) {
  for (const [api, call] of [
    ['chat.completions.create', (m) => retrying.chat.completions.create({ model: m, messages: [{ role: 'user', content: 'hi' }] })],
    ['responses.create', (m) => retrying.responses.create({ model: m, input: 'hi' })],
  ]) {
    await flow('openai', `${api} against a persistent upstream ${status}: one SDK attempt`, async () => {
      const m = `fault-${status}`;
      const before = (await faults())[m] ?? 0;
      let err = null;
      try {
        await call(m);
      } catch (e) {
        err = e;
      }
      check(err, 'the fault was answered with success');
      const n = ((await faults())[m] ?? 0) - before;
      check(n === serverRetries + 1, `${n} upstream calls for one SDK call (HTTP ${err.status}), want ${serverRetries + 1}: the SDK retried what the server had`);
    }, false);
  }
}

for (const f of failed) console.log(`FAIL ${f}`);
console.log(`clients: ${passed} passed, ${failed.length} failed`);
process.exit(failed.length ? 1 : 0);
