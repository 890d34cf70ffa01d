// Stops a Run the way an application's Stop button does with the official
// @ag-ui/client HttpAgent: abortRun() ends the client's request, and the
// server's cancel route (DELETE /threads/{threadId}/runs/{runId}) stops the
// Harness.
//
//     node http_cancel.mjs BASE_URL TEXT
//
// The agent (default uuid thread id) POSTs TEXT to BASE_URL/runs; at the first
// TEXT_MESSAGE_CONTENT it aborts and sends the DELETE. Output (stdout, one JSON
// object): {"threadId", "runId", "deleteStatus", "deleteBody", "cancelledAt"
// (ms since the epoch, when the DELETE was sent), "events"}.

import { HttpAgent, randomUUID } from "@ag-ui/client";

const [base, text] = process.argv.slice(2);
const agent = new HttpAgent({ url: `${base}/runs` });
const runId = randomUUID();
const events = [];
let cancelled = null;

agent.addMessage({ id: randomUUID(), role: "user", content: text });
const cancel = async () => {
  const cancelledAt = Date.now();
  agent.abortRun();
  const path = `/threads/${encodeURIComponent(agent.threadId)}/runs/${encodeURIComponent(runId)}`;
  const response = await fetch(`${base}${path}`, { method: "DELETE" });
  cancelled = { deleteStatus: response.status, deleteBody: await response.json(), cancelledAt };
};
let asked = null;
try {
  await agent.runAgent({ runId }, {
    onEvent: ({ event }) => {
      events.push(event);
      if (event.type === "TEXT_MESSAGE_CONTENT" && asked === null) asked = cancel();
    },
  });
} catch (error) {
  events.push({ clientError: String(error?.message ?? error) });
}
await asked;
process.stdout.write(JSON.stringify({ threadId: agent.threadId, runId, ...cancelled, events }) + "\n");
process.exit(0);
