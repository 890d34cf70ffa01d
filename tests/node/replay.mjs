// Replays AG-UI events through the official @ag-ui/client and prints what
// the client made of them.
//
// Input: one AG-UI event per line on stdin, as JSON with the wire (camelCase)
// field names: the whole output of one run, RUN_STARTED first, or of several
// runs of one Thread one after the other (each starting with its
// RUN_STARTED), which one agent then runs in turn as one client session: the
// messages of each run are there for the next, as in an app (a run after
// one that ended with interrupts answers them through "resume"). An
// AbstractAgent subclass whose run() returns a run's events is driven by the
// client's own runAgent(), so the events go through the client's verifier
// and its event-applying machinery exactly as if a server had streamed them.
//
// Output (stdout, one JSON object): {"ok": true, "messages": [...],
// "newMessages": [...], "result": ..., "pendingInterrupts": [...]} (of the
// last run; "messages" is the session's whole list) or, when the client
// refuses a run, {"ok": false, "error": "..."} with exit status 1.

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
const runs = [];
for (const event of events) {
  if (event.type === "RUN_STARTED" || runs.length === 0) runs.push([]);
  runs[runs.length - 1].push(event);
}
const started = events.find((e) => e.type === "RUN_STARTED");
const agent = new ReplayAgent([], started?.threadId);
const errors = [];
try {
  let outcome = { newMessages: [] };
  for (const run of runs) {
    agent.events = run;
    // A run after a suspended one answers its interrupts, as the app's user would.
    const resume = (agent.pendingInterrupts ?? []).map((i) => ({ interruptId: i.id, status: "resolved", payload: {} }));
    outcome = await agent.runAgent(
      { runId: run[0]?.runId, ...(resume.length ? { resume } : {}) },
      { onRunFailed: ({ error }) => { errors.push(String(error?.message ?? error)); } },
    );
    if (errors.length) break;
  }
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
