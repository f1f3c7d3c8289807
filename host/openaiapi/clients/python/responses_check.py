"""make clients-python: the official openai Python package against toolshed serve.

run.sh (`run.sh python`) starts the scripted model (internal/scripted) and
toolshed serve over it, with responses kept (previous_response_id), and
runs this with TOOLSHED_URL, TOOLSHED_KEY and MODEL_URL set.

The flows are clients.mjs's for the openai npm package: the scripted
model finds slugify (tool_search), runs it, then calls the client's tool
get_location; the client sends the conversation back with the tool's
output. The follow-up must carry what the first request discovered: the
model's GET /debug/tools lists the tools sent upstream for every model
request, and exactly one request per flow (the first, before tool_search)
may lack slugify. The call's arguments hold 1.0 and \\u00e9; each flow
re-serialises them as Python programs do before sending them back:
compact (separators), json.dumps' default (spaces, \\u escapes), and
compact with ensure_ascii=False (the raw character).

Then, with the SDK's own 2 retries, chat.completions.create and
responses.create against a persistent upstream 429, 500, 503 and 409: the
server retries twice (model.retries: 2) and marks what it retried
x-should-retry: false, so one SDK call costs 3 upstream calls, not 9.

A failure names the client and the step; the last line counts them.
"""

import json
import os
import sys
import urllib.request

import openai
from clientcheck import Report, StepError, check
from openai import OpenAI

BASE = os.environ["TOOLSHED_URL"]  # http://127.0.0.1:PORT/v1
DEBUG = os.environ["MODEL_URL"].removesuffix("/v1")  # the scripted model
KEY = os.environ["TOOLSHED_KEY"]
MODEL = "scripted"
ARGS = '{"who":"me","n":1.0,"s":"\\u00e9"}'
PROMPT = f'use slugify with {{"text":"A_B"}} to url-slug then get_location with {ARGS}'
PARAMS = {
    "type": "object",
    "properties": {"who": {"type": "string"}, "n": {"type": "number"}, "s": {"type": "string"}},
    "required": ["who", "n", "s"],
    "additionalProperties": False,
}
DESCRIPTION = "The user's city"
CHAT_TOOLS = [{"type": "function", "function": {"name": "get_location", "description": DESCRIPTION, "parameters": PARAMS}}]
RESP_TOOLS = [{"type": "function", "name": "get_location", "description": DESCRIPTION, "parameters": PARAMS, "strict": True}]
report = Report(f"openai (Python) {openai.__version__}")


def compact(args):
    return json.dumps(json.loads(args), separators=(",", ":"))


def spaced(args):
    return json.dumps(json.loads(args))


def raw(args):
    return json.dumps(json.loads(args), separators=(",", ":"), ensure_ascii=False)


def debug(path):
    with urllib.request.urlopen(DEBUG + path, timeout=30) as r:
        return json.load(r) or {}


def kept(since):
    """Only the first upstream request since `since` may lack slugify."""
    sent = debug("/debug/tools")[since:]
    without = sum(1 for names in sent if "slugify" not in names)
    check(len(sent) >= 2, f"follow-up: {len(sent)} upstream requests, want the search and the follow-up")
    check(without == 1, f"follow-up: {without} upstream requests without the discovered slugify "
          f"(tool lists {[len(n) for n in sent]}); the follow-up lost it")


def flow(step, keeps=True):
    """Runs the decorated function at once as the step, and checks the follow-up kept slugify."""
    def run(fn):
        since = len(debug("/debug/tools"))
        try:
            fn()
            if keeps:
                kept(since)
            report.ok(step)
        except Exception as e:  # every failure is reported, the run goes on
            report.fail(step, e)
        return fn

    return run


def answered(text):
    return isinstance(text, str) and "answer:" in text and "Paris" in text


client = OpenAI(base_url=BASE, api_key=KEY, max_retries=0)


# --- chat completions ---

@flow("chat.completions.create with a client tool, then the follow-up (arguments compact)")
def _():
    r1 = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": PROMPT}], tools=CHAT_TOOLS)
    choice = r1.choices[0]
    call = (choice.message.tool_calls or [None])[0]
    check(choice.finish_reason == "tool_calls" and call and call.function.name == "get_location",
          f"first answer {choice.model_dump_json()}")
    r2 = client.chat.completions.create(model=MODEL, tools=CHAT_TOOLS, messages=[
        {"role": "user", "content": PROMPT},
        {"role": "assistant", "content": choice.message.content, "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": call.function.name, "arguments": compact(call.function.arguments)}}]},
        {"role": "tool", "tool_call_id": call.id, "content": "Paris"},
    ])
    check(answered(r2.choices[0].message.content), f"follow-up answered {r2.choices[0].message.model_dump_json()}")


@flow("chat.completions.create stream=True, then the follow-up streamed (arguments as json.dumps writes them)")
def _():
    s1 = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": PROMPT}], tools=CHAT_TOOLS, stream=True)
    calls = {}
    for chunk in s1:
        if not chunk.choices:
            continue
        for d in chunk.choices[0].delta.tool_calls or []:
            c = calls.setdefault(d.index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
            if d.id:
                c["id"] = d.id
            if d.function and d.function.name:
                c["function"]["name"] += d.function.name
            if d.function and d.function.arguments:
                c["function"]["arguments"] += d.function.arguments
    calls = [calls[i] for i in sorted(calls)]
    check(len(calls) == 1 and calls[0]["function"]["name"] == "get_location", f"streamed calls {calls}")
    calls[0]["function"]["arguments"] = spaced(calls[0]["function"]["arguments"])
    s2 = client.chat.completions.create(model=MODEL, tools=CHAT_TOOLS, stream=True, messages=[
        {"role": "user", "content": PROMPT},
        {"role": "assistant", "tool_calls": calls},
        {"role": "tool", "tool_call_id": calls[0]["id"], "content": "Paris"},
    ])
    text = "".join((c.choices[0].delta.content or "") for c in s2 if c.choices)
    check(answered(text), f"follow-up streamed {text!r}")


# --- responses ---

def sent_back(output, reserialise):
    """The response's output items as a client re-sends them (store false)."""
    items = []
    for item in output:
        d = item.model_dump(exclude_none=True)
        if d.get("type") == "function_call":
            d["arguments"] = reserialise(d["arguments"])
        items.append(d)
    return items


def function_call(output):
    return next((i for i in output if i.type == "function_call"), None)


@flow("responses.create with a client tool, then the items sent back (store=False, arguments compact)")
def _():
    r1 = client.responses.create(model=MODEL, input=PROMPT, tools=RESP_TOOLS, store=False)
    fc = function_call(r1.output)
    check(fc and fc.name == "get_location", f"first output {[i.model_dump() for i in r1.output]}")
    r2 = client.responses.create(model=MODEL, tools=RESP_TOOLS, store=False, input=[
        {"role": "user", "content": PROMPT}, *sent_back(r1.output, compact),
        {"type": "function_call_output", "call_id": fc.call_id, "output": "Paris"},
    ])
    check(answered(r2.output_text), f"follow-up output_text {r2.output_text!r}")
    check(r2.usage and r2.usage.total_tokens > 0, f"usage {r2.usage}")


@flow("responses.create, then previous_response_id")
def _():
    r1 = client.responses.create(model=MODEL, input=PROMPT, tools=RESP_TOOLS)
    fc = function_call(r1.output)
    check(fc, f"first output {[i.model_dump() for i in r1.output]}")
    r2 = client.responses.create(model=MODEL, tools=RESP_TOOLS, previous_response_id=r1.id, input=[
        {"type": "function_call_output", "call_id": fc.call_id, "output": "Paris"},
    ])
    check(answered(r2.output_text), f"follow-up output_text {r2.output_text!r}")


@flow("responses.create stream=True, then the follow-up with responses.stream (arguments with the raw character)")
def _():
    done = None
    events = []
    for ev in client.responses.create(model=MODEL, input=PROMPT, tools=RESP_TOOLS, store=False, stream=True):
        events.append(ev.type)
        if ev.type == "response.completed":
            done = ev.response
    check(done is not None, f"no response.completed among {events}")
    check("response.function_call_arguments.done" in events, f"no function call's events among {events}")
    fc = function_call(done.output)
    check(fc and fc.name == "get_location", f"first output {[i.model_dump() for i in done.output]}")
    text = ""
    with client.responses.stream(model=MODEL, tools=RESP_TOOLS, store=False, input=[
        {"role": "user", "content": PROMPT}, *sent_back(done.output, raw),
        {"type": "function_call_output", "call_id": fc.call_id, "output": "Paris"},
    ]) as s2:
        for ev in s2:
            if ev.type == "response.output_text.delta":
                text += ev.delta
        final = s2.get_final_response()
    check(answered(text) and final.status == "completed" and final.output_text == text,
          f"follow-up streamed {text!r}, final {final.status} {final.output_text!r}")


# --- retries never multiply ---

SERVER_RETRIES = 2  # model.retries in run.sh's configuration
retrying = OpenAI(base_url=BASE, api_key=KEY, max_retries=2)
for status in (429, 500, 503, 409):
    for api, call in (
        ("chat.completions.create", lambda m: retrying.chat.completions.create(model=m, messages=[{"role": "user", "content": "hi"}])),
        ("responses.create", lambda m: retrying.responses.create(model=m, input="hi")),
    ):
        @flow(f"{api} against a persistent upstream {status}: one SDK attempt", keeps=False)
        def _(status=status, call=call):
            m = f"fault-{status}"
            before = debug("/debug/faults").get(m, 0)
            err = None
            try:
                call(m)
            except openai.APIStatusError as e:
                err = e
            check(err is not None, "the fault was answered with success")
            n = debug("/debug/faults").get(m, 0) - before
            check(n == SERVER_RETRIES + 1, f"{n} upstream calls for one SDK call (HTTP {err.status_code}), "
                  f"want {SERVER_RETRIES + 1}: the SDK retried what the server had")


sys.exit(report.done())
