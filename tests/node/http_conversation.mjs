// Holds a conversation with a harness-agui server through the official
// @ag-ui/client HttpAgent, over HTTP, as an application would: the agent keeps
// its default (uuid) thread id, each turn is runAgent(), an approval is
// answered through runAgent({resume: [...]}), and the client runs its own
// tools and sends their results back.
//
//     node http_conversation.mjs URL TURNS
//
// TURNS is a JSON list; each turn is {"say": text} (a user message), optionally
// with "tools" (offered to the agent) and "toolResult" (what the client's tools
// return), or {"approve": bool} (answer every pending interrupt with
// {"approved": bool} instead of saying anything). After a Run that left calls
// to the client's tools unanswered, the script runs them (a tool message with
// "toolResult" for each) and runs the agent again with those messages alone,
// as AG-UI's frontend tools go: no resume[] entry (the client refuses to run
// while it holds an interrupt the request leaves unanswered).
//
// Output (stdout, one JSON object): {"threadId", "messages", "pendingInterrupts",
// "runs": [{"runId", "events": [...]}]}, or {"error": "..."} with exit status 1
// when the client refused a Run or a Run failed.

import { HttpAgent, randomUUID } from "@ag-ui/client";

const [url, turnsJson] = process.argv.slice(2);
const turns = JSON.parse(turnsJson);
const agent = new HttpAgent({ url });
const runs = [];
const failures = [];

async function run(parameters) {
  const events = [];
  const runId = randomUUID();
  runs.push({ runId, events });
  await agent.runAgent({ ...parameters, runId }, {
    onEvent: ({ event }) => { events.push(event); },
    onRunFailed: ({ error }) => { failures.push(String(error?.message ?? error)); },
    onRunErrorEvent: ({ event }) => { failures.push(`RUN_ERROR ${event.code}: ${event.message}`); },
  });
}

function unansweredCalls(tools) {
  const names = new Set((tools ?? []).map((tool) => tool.name));
  const answered = new Set(agent.messages.filter((m) => m.role === "tool").map((m) => m.toolCallId));
  return agent.messages.flatMap((m) => m.toolCalls ?? [])
    .filter((c) => names.has(c.function.name) && !answered.has(c.id));
}

try {
  for (const turn of turns) {
    if (turn.approve !== undefined) {
      await run({ resume: agent.pendingInterrupts.map((i) => ({
        interruptId: i.id, status: "resolved", payload: { approved: turn.approve } })) });
    } else {
      agent.addMessage({ id: randomUUID(), role: "user", content: turn.say });
      await run({ tools: turn.tools ?? [] });
    }
    for (let calls = unansweredCalls(turn.tools); calls.length > 0 && !failures.length;
         calls = unansweredCalls(turn.tools)) {
      for (const call of calls) {
        agent.addMessage({ id: randomUUID(), role: "tool", toolCallId: call.id, content: turn.toolResult });
      }
      await run({ tools: turn.tools });
    }
    if (failures.length) break;
  }
} catch (error) {
  failures.push(String(error?.stack ?? error));
}
if (failures.length) {
  process.stdout.write(JSON.stringify({ error: failures.join("; "), runs }) + "\n");
  process.exit(1);
}
process.stdout.write(JSON.stringify({
  threadId: agent.threadId, messages: agent.messages, pendingInterrupts: agent.pendingInterrupts, runs }) + "\n");
process.exit(0);
