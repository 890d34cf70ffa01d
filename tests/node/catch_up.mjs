// Replays several AG-UI streams through the official @ag-ui/client, each in
// a fresh agent, and prints the messages the client built from each.
//
// Input (stdin): one JSON array per line, the events of one stream (wire
// field names, camelCase). Every stream goes through the client's own
// runAgent(): its event verifier, then its default event applier, exactly as
// if a server had streamed the events. tests/test_catch_up.py sends, for one
// run cut at some point, the full stream and the late joiner's stream
// (catch_up() at the cut, then the live events after it).
//
// Output (stdout): one JSON line: [{"ok": true, "messages": [...]}, ...] in
// input order, or {"ok": false, "error": "..."} for a stream the client
// refused.

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

async function replay(events) {
  const started = events.find((e) => e.type === "RUN_STARTED");
  const agent = new ReplayAgent(events, started?.threadId);
  const errors = [];
  try {
    await agent.runAgent(
      { runId: started?.runId },
      { onRunFailed: ({ error }) => { errors.push(String(error?.message ?? error)); } },
    );
  } catch (error) {
    errors.push(String(error?.message ?? error));
  }
  if (errors.length > 0) return { ok: false, error: errors.join("; ") };
  return { ok: true, messages: agent.messages };
}

// The client warns on stderr about events it ignores; keep stdout for the answer.
console.warn = (...args) => process.stderr.write(args.map(String).join(" ") + "\n");
console.error = console.warn;

const text = await readStdin();
const streams = text.split("\n").filter((line) => line.trim() !== "").map((line) => JSON.parse(line));
const results = [];
for (const events of streams) results.push(await replay(events));
process.stdout.write(JSON.stringify(results) + "\n");
