"""make clients-python: the official MCP Python SDK reads back a chart with a Chinese title.

run.sh (host/openaiapi/clients/run.sh python) starts toolshed serve and
runs this with TOOLSHED_URL (its /v1 base), TOOLSHED_KEY, MCP_BIN,
MCP_CONFIG, MCP_PLUGINS (for toolshed mcp) and MCP_DATA (the server's
XDG_DATA_HOME) set. Over three connections:

- stdio (toolshed mcp started by the SDK's stdio_client), charts inline:
  the SVG comes as an embedded resource;
- stdio with artifacts.inline_kb 0: the SVG comes as a resource_link;
- streamable HTTP (the SDK's streamable_http_client, with the API key) to
  toolshed serve's /mcp;

each session finds the chart tool with tool_search, calls createBarChart
with the title 各城市销售额, takes the resource's URI from the result
(it must be ASCII, the name percent-encoded as RFC 3986 has it), reads
it with resources/read, and checks the bytes read are the ones the tool
stored (the artifact's file in the data directory), the embedded text
when there is one, and an SVG that holds the title; reading an artifact
never made must be refused.

Written for mcp 1 (1.23 and later) and mcp 2 alike. A failure names the
transport and the step; the last line counts them.
"""

import asyncio
import importlib.metadata
import os
import sys
import tempfile
import traceback
from base64 import b64decode
from urllib.parse import unquote

from clientcheck import Report, StepError, check  # host/openaiapi/clients/python
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.shared import exceptions

try:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client  # httpx in mcp 1, httpx2 in mcp 2
except ImportError:  # mcp before 1.24
    streamable_http_client = None
    from mcp.client.streamable_http import streamablehttp_client

# mcp 1 and mcp 2 both: the JSON-RPC error's class was renamed, and the
# types' fields are camelCase in 1 (isError), snake_case in 2 (is_error).
McpError = getattr(exceptions, "McpError", None) or exceptions.MCPError


def field(obj, snake, camel):
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


MCP_URL = os.environ["TOOLSHED_URL"].removesuffix("/v1") + "/mcp"
KEY = os.environ["TOOLSHED_KEY"]
BIN = os.environ["MCP_BIN"]
CONFIG = os.environ["MCP_CONFIG"]
PLUGINS = os.environ["MCP_PLUGINS"]
DATA = os.environ["MCP_DATA"]
PREFIX = "toolshed://artifacts/"
TITLE = "各城市销售额"
CHART = {"title": TITLE, "labels": ["北京", "上海", "广州"],
         "series": [{"name": "销售额", "values": [120, 95, 88]}]}


def stored(artifact_id):
    """The bytes of the artifact's file, wherever the grants put it under DATA."""
    for d, _, files in os.walk(DATA):
        if artifact_id in files:
            with open(os.path.join(d, artifact_id), "rb") as f:
                return f.read()
    raise StepError(f"no file {artifact_id!r} under the data directory")


async def chart_read_back(session, want):
    step = "initialize"
    try:
        await session.initialize()
        step = "tool_search"
        found = await session.call_tool("tool_search", {"query": "bar chart"})
        check(not field(found, "is_error", "isError"), f"tool_search failed: {found.content}")
        step = "createBarChart"
        res = await session.call_tool("createBarChart", CHART)
        check(not field(res, "is_error", "isError"), f"the call failed: {res.content}")
        uri, embedded, mime = None, None, None
        for c in res.content:
            if isinstance(c, types.EmbeddedResource):
                uri, mime = str(c.resource.uri), field(c.resource, "mime_type", "mimeType")
                embedded = c.resource.text.encode() if isinstance(c.resource, types.TextResourceContents) else b64decode(c.resource.blob)
            elif isinstance(c, types.ResourceLink):
                uri, mime = str(c.uri), field(c, "mime_type", "mimeType")
        kind = "embedded resource" if embedded is not None else "resource_link"
        check(uri is not None, f"no resource in the result: {[c.type for c in res.content]}")
        check(kind == want, f"the chart came as {kind!r}, want {want!r}")
        step = f"the {kind}'s URI"
        check(uri.startswith(PREFIX) and uri.isascii(), f"URI {uri!r} is not an ASCII artifact URI")
        artifact_id = unquote(uri[len(PREFIX):])
        check("各城市" in artifact_id and "%E5%90%84" in uri.upper(), f"URI {uri!r} does not carry the title percent-encoded")
        step = f"resources/read of {uri}"
        read = await session.read_resource(uri)
        check(len(read.contents) == 1, f"{len(read.contents)} contents")
        got = read.contents[0]
        data = got.text.encode() if isinstance(got, types.TextResourceContents) else b64decode(got.blob)
        got_mime = field(got, "mime_type", "mimeType")
        check(got_mime == mime == "image/svg+xml", f"content types: read {got_mime}, result {mime}")
        check(data.lstrip().startswith((b"<svg", b"<?xml")) and TITLE.encode() in data, f"not an SVG with the title: {data[:120]!r}")
        check(data == stored(artifact_id), "the bytes read are not the artifact's file")
        check(embedded is None or data == embedded, "the bytes read are not the embedded resource's")
        step = "resources/read of an artifact never made"
        try:
            await session.read_resource(PREFIX + "0" * 32 + "-%E5%90%84-sales.svg")
            raise StepError("it was answered")
        except McpError:
            pass
        return len(data)
    except StepError as e:
        raise StepError(f"{step}: {e}") from None
    except Exception as e:  # the SDK's errors (McpError: the server's JSON-RPC error), with where they came from
        raise StepError(f"{step}: {type(e).__name__}: {e}\n{traceback.format_exc()}") from None


async def over_stdio(config, want):
    # TOOLSHED_* variables are configuration keys to toolshed: the child gets none.
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSHED_")}
    env["XDG_DATA_HOME"] = DATA
    params = StdioServerParameters(command=BIN, args=["mcp", "--config", config, "--plugins", PLUGINS, "--log-level", "warn"], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            return await chart_read_back(session, want)


async def over_http(want):
    headers = {"Authorization": f"Bearer {KEY}"}
    if streamable_http_client is None:
        transport = streamablehttp_client(MCP_URL, headers=headers)
    else:
        transport = streamable_http_client(MCP_URL, http_client=create_mcp_http_client(headers=headers))
    async with transport as streams:  # (read, write, session id) in mcp 1, (read, write) in mcp 2
        async with ClientSession(streams[0], streams[1]) as session:
            return await chart_read_back(session, want)


def link_config(tmp):
    """MCP_CONFIG with artifacts.inline_kb 0: every artifact a resource_link."""
    with open(CONFIG, encoding="utf-8") as f:
        text = f.read()
    check("\nartifacts:" not in "\n" + text, f"{CONFIG} sets artifacts already")
    path = os.path.join(tmp, "toolshed-links.yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.rstrip("\n") + "\nartifacts:\n  inline_kb: 0\n")
    return path


async def main():
    report = Report(f"mcp (Python SDK) {importlib.metadata.version('mcp')}")
    with tempfile.TemporaryDirectory() as tmp:
        for transport, run in (
            ("stdio", lambda: over_stdio(CONFIG, "embedded resource")),
            ("stdio, artifacts.inline_kb 0", lambda: over_stdio(link_config(tmp), "resource_link")),
            ("streamable HTTP", lambda: over_http("embedded resource")),
        ):
            step = f"a chart titled {TITLE} read back over {transport}"
            try:
                n = await asyncio.wait_for(run(), timeout=300)
                report.ok(step, f" ({n} bytes)")
            except Exception as e:  # every transport is tried
                report.fail(step, unwrap(e))
    return report.done()


def unwrap(err):
    """The first StepError inside anyio's exception groups, else err itself."""
    for e in getattr(err, "exceptions", ()):  # BaseExceptionGroup, or its backport before 3.11
        inner = unwrap(e)
        if isinstance(inner, StepError):
            return inner
    return err


sys.exit(asyncio.run(main()))
