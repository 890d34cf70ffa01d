// How the official @ag-ui/client reconnects to a Run: connectAgent().
//
//     node http_connect.mjs BASE_URL THREAD_ID RUN_ID MODE [LAST_EVENT_ID]
//
// MODE "stock": a plain HttpAgent's connectAgent() (HttpAgent implements no connect(), so the client
// gets nothing). MODE "events": an HttpAgent whose connect() GETs the server's events route of the Run
// (BASE_URL/threads/THREAD_ID/runs/RUN_ID/events), sending LAST_EVENT_ID when given, and hands the
// Server-Sent Events to the client's own pipeline (runHttpRequest, transformHttpEventStream), which
// verifies them as it verifies a POSTed Run. Output (stdout, one JSON object): {"ok", "error",
// "messages", "newMessages", "events"}.

import { HttpAgent, runHttpRequest, transformHttpEventStream } from "@ag-ui/client";

const [base, threadId, runId, mode, lastEventId] = process.argv.slice(2);

class EventsAgent extends HttpAgent {
  connect() {
    const url = `${base}/threads/${encodeURIComponent(threadId)}/runs/${encodeURIComponent(runId)}/events`;
    const headers = { Accept: "text/event-stream", ...(lastEventId ? { "Last-Event-ID": lastEventId } : {}) };
    return transformHttpEventStream(runHttpRequest(() => fetch(url, { headers })));
  }
}

const Agent = mode === "events" ? EventsAgent : HttpAgent;
const agent = new Agent({ url: `${base}/runs`, threadId });
const events = [];
const errors = [];
try {
  const outcome = await agent.connectAgent({}, {
    onEvent: ({ event }) => { events.push(event); },
    onRunFailed: ({ error }) => { errors.push(String(error?.message ?? error)); },
  });
  process.stdout.write(JSON.stringify({ ok: errors.length === 0, error: errors.join("; ") || undefined,
    messages: agent.messages, newMessages: outcome.newMessages, events }) + "\n");
} catch (error) {
  process.stdout.write(JSON.stringify({ ok: false, error: String(error?.message ?? error), messages: agent.messages,
    events }) + "\n");
}
process.exit(0);
