// A client whose connection drops mid-answer and that sends the same request again, as an application
// retrying runAgent({runId}) does: the official @ag-ui/client HttpAgent, over HTTP.
//
//     node http_retry.mjs URL TEXT
//
// The first runAgent() is aborted once 20 TEXT_MESSAGE_CONTENT events of the answer arrived (the client
// keeps the part it got); the second runAgent() names the same runId. Output (stdout, one JSON object):
// {"runId", "partBefore" (the answer's length when the first attempt broke), "finalText", "messages"}, or
// {"error"} with exit status 1.

import { HttpAgent, randomUUID } from "@ag-ui/client";

const [url, text] = process.argv.slice(2);
const agent = new HttpAgent({ url });
const runId = randomUUID();
agent.addMessage({ id: randomUUID(), role: "user", content: text });

function answer() {
  return agent.messages.filter((m) => m.role === "assistant").map((m) => m.content ?? "").join("");
}

try {
  let deltas = 0;
  const first = agent.runAgent({ runId }, {
    onTextMessageContentEvent: () => {
      deltas += 1;
      if (deltas === 20) agent.abortRun();
    },
  });
  await first.catch(() => {});  // an aborted run ends the promise one way or the other
  const partBefore = answer().length;
  await agent.runAgent({ runId });
  process.stdout.write(JSON.stringify({ runId, partBefore, finalText: answer(), messages: agent.messages }) + "\n");
  process.exit(0);
} catch (error) {
  process.stdout.write(JSON.stringify({ error: String(error?.stack ?? error) }) + "\n");
  process.exit(1);
}
