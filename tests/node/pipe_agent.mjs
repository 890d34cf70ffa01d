// Holds a conversation with the official @ag-ui/client, through stdin and
// stdout instead of HTTP, so that a Python test can serve each Run itself.
//
// The agent is an AbstractAgent subclass driven by the client's own
// runAgent(): the client builds every RunAgentInput (its default uuid thread
// id, a uuid run id, its messages, tools and resume[]), verifies the events it
// gets back and applies them to its message list, as HttpAgent would.
//
// Protocol, one JSON object per line. For each Run the script writes
// {"request": <RunAgentInput>} to stdout; the test answers with the Run's
// AG-UI events on stdin, one per line, then {"type": "__END__"}. At the end
// the script writes {"done": {"threadId", "messages", "pendingInterrupts"}}, or
// {"error": "..."} with exit status 1 when the client refused a Run.
//
// The turns are argv[2], a JSON list. Each turn is {"say": text} (a user
// message) and optionally "tools" (offered to the agent), "approve" (answer
// every pending interrupt with {"approved": <bool>} instead of saying
// anything) and "toolResult" (what the client's tools return). After a Run
// that left calls to the client's tools unanswered, the script runs them (adds
// a tool message with "toolResult" for each) and runs the agent again,
// answering through resume[] the interrupts the client holds for those calls.

import { AbstractAgent, randomUUID } from "@ag-ui/client";
import { Observable } from "rxjs";
import readline from "node:readline";

const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();

class PipeAgent extends AbstractAgent {
  run(input) {
    return new Observable((subscriber) => {
      process.stdout.write(JSON.stringify({ request: input }) + "\n");
      (async () => {
        for (;;) {
          const { value, done } = await lines.next();
          if (done) throw new Error("the server went away");
          const event = JSON.parse(value);
          if (event.type === "__END__") return subscriber.complete();
          subscriber.next(event);
        }
      })().catch((error) => subscriber.error(error));
    });
  }
}

function unansweredCalls(messages, tools) {
  const names = new Set((tools ?? []).map((tool) => tool.name));
  const answered = new Set(messages.filter((m) => m.role === "tool").map((m) => m.toolCallId));
  return messages.flatMap((m) => m.toolCalls ?? []).filter((c) => names.has(c.function.name) && !answered.has(c.id));
}

const turns = JSON.parse(process.argv[2]);
const agent = new PipeAgent({});
const failures = [];
const fail = { onRunFailed: ({ error }) => { failures.push(String(error?.message ?? error)); } };
try {
  for (const turn of turns) {
    let resume;
    if (turn.approve !== undefined) {
      resume = agent.pendingInterrupts.map((i) => ({
        interruptId: i.id, status: "resolved", payload: { approved: turn.approve } }));
    } else {
      agent.addMessage({ id: randomUUID(), role: "user", content: turn.say });
    }
    await agent.runAgent({ tools: turn.tools ?? [], resume }, fail);
    for (let calls = unansweredCalls(agent.messages, turn.tools); calls.length > 0;
         calls = unansweredCalls(agent.messages, turn.tools)) {
      for (const call of calls) {
        agent.addMessage({ id: randomUUID(), role: "tool", toolCallId: call.id, content: turn.toolResult });
      }
      const ids = new Set(calls.map((c) => c.id));
      const acknowledged = agent.pendingInterrupts.filter((i) => ids.has(i.toolCallId)).map((i) => ({
        interruptId: i.id, status: "resolved", payload: turn.toolResult }));
      await agent.runAgent({ tools: turn.tools, resume: acknowledged.length ? acknowledged : undefined }, fail);
    }
    if (failures.length) break;
  }
} catch (error) {
  failures.push(String(error?.stack ?? error));
}
if (failures.length) {
  process.stdout.write(JSON.stringify({ error: failures.join("; ") }) + "\n");
  process.exit(1);
}
process.stdout.write(JSON.stringify({ done: {
  threadId: agent.threadId, messages: agent.messages, pendingInterrupts: agent.pendingInterrupts } }) + "\n");
process.exit(0);
