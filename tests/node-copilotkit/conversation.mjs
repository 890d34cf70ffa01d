// CopilotKit in front of a harness-agui server, as a CopilotKit application runs it: CopilotKit's runtime
// (@copilotkit/runtime 1.x, its v2 CopilotRuntime with the default in-memory runner, served by its own Node
// listener on loopback) holds an @ag-ui/client HttpAgent pointed at harness-agui's /runs, and CopilotKit's
// client core (@copilotkit/core: what the React provider wraps) talks to that runtime over HTTP.
//
//     node conversation.mjs AGUI_URL TURNS
//
// TURNS is a JSON list; each turn is {"say": text}, optionally with "tool" ({name, description, result}: a
// frontend tool the client registers for that turn, whose handler returns "result"; CopilotKit's core runs it
// when the agent calls it and runs the agent again with the tool message alone), or {"approve": bool}
// (answers every pending interrupt through runAgent({resume: [...]})). {"follow": true} is a second
// CopilotKit client on the same thread that connects (connectAgent) instead of running. {"say": text, "retry": n}
// is a retried request: the core's stopAgent() after n text deltas (the runtime aborts its HttpAgent's request,
// which harness-agui sees as a dropped connection), then runAgent({runId}) with the same runId again.
//
// Output (stdout, one JSON object): {"threadId", "messages", "pendingInterrupts", "errors", "runs": [{"runId",
// "events"}], "followers": [{"messages"}], "retried": [{"runId",
// "partBefore"}]}; "errors" holds every error CopilotKit's core reported.

import { createServer } from "node:http";
import { HttpAgent } from "@ag-ui/client";
import { CopilotRuntime } from "@copilotkit/runtime/v2";
import { createCopilotNodeListener } from "@copilotkit/runtime/v2/node";
import { CopilotKitCore } from "@copilotkit/core";

// CopilotKit's core connects to its runtime only in a browser (it checks for \`window\`): Node's globals stand in.
globalThis.window ??= globalThis;

const [aguiUrl, turnsJson] = process.argv.slice(2);
const turns = JSON.parse(turnsJson);

const runtime = new CopilotRuntime({ agents: { default: new HttpAgent({ url: aguiUrl }) } });
const listener = createCopilotNodeListener({ runtime, basePath: "/api/copilotkit", activateChannels: false });
const server = createServer(listener);
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const runtimeUrl = `http://127.0.0.1:${server.address().port}/api/copilotkit`;

const errors = [];

async function client() {
  const core = new CopilotKitCore({ runtimeUrl });
  core.subscribe({ onError: ({ code, error }) => { errors.push(`${code}: ${error?.message ?? error}`); } });
  for (let waited = 0; core.runtimeConnectionStatus !== "connected"; waited += 20) {
    if (waited > 20000 || core.runtimeConnectionStatus === "error") {
      throw new Error(`the runtime's /info: ${core.runtimeConnectionStatus}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return core;
}

function plain(messages) {
  return JSON.parse(JSON.stringify(messages));
}

const runs = [];
const followers = [];
const retried = [];
let core;
let agent;
try {
  core = await client();
  agent = core.getAgent("default");
  agent.subscribe({
    onEvent: ({ event }) => {
      if (event.type === "RUN_STARTED") runs.push({ runId: event.runId, events: [] });
      runs.at(-1)?.events.push(plain(event));
    },
  });
  for (const turn of turns) {
    if (turn.follow) {
      const other = await client();
      const follower = other.getAgent("default");
      follower.threadId = agent.threadId;
      await other.connectAgent({ agent: follower });
      followers.push({ messages: plain(follower.messages) });
      continue;
    }
    if (turn.approve !== undefined) {
      await core.runAgent({ agent, resume: agent.pendingInterrupts.map((i) => ({
        interruptId: i.id, status: "resolved", payload: { approved: turn.approve } })) });
      continue;
    }
    if (turn.retry) {  // stop the Run after turn.retry deltas, then send its runId again
      const runId = crypto.randomUUID();
      agent.addMessage({ id: crypto.randomUUID(), role: "user", content: turn.say });
      let deltas = 0;
      const watch = agent.subscribe({ onTextMessageContentEvent: () => {
        deltas += 1;
        if (deltas === turn.retry) core.stopAgent({ agent });
      } });
      await core.runAgent({ agent, runId }).catch(() => {});
      watch.unsubscribe();
      const partBefore = agent.messages.filter((m) => m.role === "assistant").map((m) => m.content ?? "").join("");
      await core.runAgent({ agent, runId });
      retried.push({ runId, partBefore });
      continue;
    }
    if (turn.tool) {
      core.addTool({ name: turn.tool.name, description: turn.tool.description,
                     handler: async () => turn.tool.result });
    }
    agent.addMessage({ id: crypto.randomUUID(), role: "user", content: turn.say });
    await core.runAgent({ agent });
    // the core runs the frontend tool and the follow-up Run without being awaited: wait for it to settle
    for (let waited = 0; agent.isRunning && waited < 60000; waited += 20) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    if (turn.tool) core.removeTool(turn.tool.name);
  }
} catch (error) {
  errors.push(String(error?.stack ?? error));
}
process.stdout.write(JSON.stringify({
  threadId: agent?.threadId, messages: plain(agent?.messages ?? []), pendingInterrupts: agent?.pendingInterrupts ?? [],
  errors, runs, followers, retried }) + "\n");
server.close();
process.exit(0);
