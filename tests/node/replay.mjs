// Replays AG-UI events through the official @ag-ui/client and prints what
// the client made of them.
//
// Input: one AG-UI event per line on stdin, as JSON with the wire (camelCase)
// field names. The events are the whole output of one run: RUN_STARTED first.
// An AbstractAgent subclass whose run() returns those events is driven by the
// client's own runAgent(), so the events go through the client's verifier
// and its event-applying machinery exactly as if a server had streamed them.
//
// Output (stdout, one JSON object): {"ok": true, "messages": [...],
// "newMessages": [...], "result": ..., "pendingInterrupts": [...]} or, when
// the client refuses the run, {"ok": false, "error": "..."} with exit status 1.

import { AbstractAgent } from "@ag-ui/client";
import { from } from "rxjs";

class ReplayAgent extends AbstractAgent {
  constructor(events, threadId) {
    super({ threadId });
    this.events = events;
  }

  run() {
    return from(this.events);
  }
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

const text = await readStdin();
const events = text.split("\n").filter((line) => line.trim() !== "").map((line) => JSON.parse(line));
const started = events.find((e) => e.type === "RUN_STARTED");
const agent = new ReplayAgent(events, started?.threadId);
const errors = [];
try {
  const outcome = await agent.runAgent(
    { runId: started?.runId },
    { onRunFailed: ({ error }) => { errors.push(String(error?.message ?? error)); } },
  );
  process.stdout.write(JSON.stringify({
    ok: errors.length === 0,
    error: errors.join("; ") || undefined,
    messages: agent.messages,
    newMessages: outcome.newMessages,
    result: outcome.result ?? null,
    pendingInterrupts: agent.pendingInterrupts ?? [],
  }) + "\n");
  process.exit(errors.length === 0 ? 0 : 1);
} catch (error) {
  process.stdout.write(JSON.stringify({ ok: false, error: String(error?.stack ?? error) }) + "\n");
  process.exit(1);
}
