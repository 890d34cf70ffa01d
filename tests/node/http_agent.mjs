// Runs one agent through a harness-agui server with the official
// @ag-ui/client HttpAgent: POST <url> with a RunAgentInput, events read as
// Server-Sent Events from that same response.
//
//     node http_agent.mjs URL THREAD_ID RUN_ID
//
// The HttpAgent gets a fetch that passes the response through unchanged and
// notes the SSE `id:` of every frame on the way, so the test can check the
// durable ids the client was sent.
//
// Output (stdout, one JSON object): {"ok": true, "messages": [...],
// "newMessages": [...], "result": ..., "ids": [...], "errors": [...]};
// "ok" is false, with "error", when the client refused the run or the run
// ended with RUN_ERROR (whose code and message are in "runError").

import { HttpAgent } from "@ag-ui/client";

const [url, threadId, runId] = process.argv.slice(2);
const ids = [];

function noteIds(response) {
  const decoder = new TextDecoder();
  let buffer = "";
  const tee = new TransformStream({
    transform(chunk, controller) {
      buffer += decoder.decode(chunk, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        for (const line of buffer.slice(0, end).split("\n")) {
          if (line.startsWith("id:")) ids.push(line.slice(3).trim());
        }
        buffer = buffer.slice(end + 2);
      }
      controller.enqueue(chunk);
    },
  });
  if (!response.body) return response;
  return new Response(response.body.pipeThrough(tee), {
    status: response.status, statusText: response.statusText, headers: response.headers,
  });
}

const agent = new HttpAgent({
  url,
  threadId,
  initialMessages: [{ id: "client-user-1", role: "user", content: "Will I need an umbrella in Lyon tomorrow?" }],
  fetch: async (input, init) => noteIds(await fetch(input, init)),
});

const errors = [];
let runError = null;
try {
  const outcome = await agent.runAgent(
    { runId },
    {
      onRunFailed: ({ error }) => { errors.push(String(error?.message ?? error)); },
      onRunErrorEvent: ({ event }) => { runError = { code: event.code, message: event.message }; },
    },
  );
  const ok = errors.length === 0 && runError === null;
  process.stdout.write(JSON.stringify({
    ok,
    error: errors.join("; ") || (runError ? `RUN_ERROR ${runError.code}` : undefined),
    runError,
    messages: agent.messages,
    newMessages: outcome.newMessages,
    result: outcome.result ?? null,
    ids,
  }) + "\n");
  process.exit(ok ? 0 : 1);
} catch (error) {
  process.stdout.write(JSON.stringify({
    ok: false, error: String(error?.stack ?? error), runError, messages: agent.messages, ids,
  }) + "\n");
  process.exit(1);
}
