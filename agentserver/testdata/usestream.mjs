// Renders a React component that uses useStream from
// @langchain/langgraph-sdk/react in jsdom, headless, against a deepgraph
// agentserver: it submits a question, sees the answer stream into
// `messages` (a render shows the first chunk before the run ends), then
// asks for a review, reads `interrupt` and answers it with
// submit(undefined, {command: {resume}}).
// Env: MODULES (a node_modules with react, react-dom, jsdom and the SDK),
// URL, TOKEN, ASSISTANT (the graph id). Prints one line per check; exits 1
// at the first failure, saying what the last render held.
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.env.MODULES;
const url = process.env.URL;
const token = process.env.TOKEN;
const assistantId = process.env.ASSISTANT;
const require = createRequire(path.join(modules, "resolve.js"));

// The DOM first: react-dom reads window and document when it loads.
const { JSDOM } = require("jsdom");
const dom = new JSDOM(`<!doctype html><html><body><div id="root"></div></body></html>`, { url: "http://localhost/" });
globalThis.window = dom.window;
globalThis.document = dom.window.document;
if (typeof globalThis.navigator === "undefined") globalThis.navigator = dom.window.navigator;

const React = require("react");
const { createRoot } = require("react-dom/client");
const { useStream } = await import(pathToFileURL(path.join(modules, "@langchain/langgraph-sdk/dist/react/index.js")).href);
const h = React.createElement;

let step = "";
let last = null; // the newest committed render
const seen = []; // a summary of every committed render
function summary(r) {
  return {
    isLoading: r.isLoading,
    error: r.error ? String(r.error) : undefined,
    interrupt: r.interrupt,
    messages: r.messages.map((m) => ({ type: m.type, id: m.id, content: m.content })),
    dom: [...document.querySelectorAll("#root li")].map((li) => `${li.dataset.type}: ${li.textContent}`),
  };
}
function fail(what) {
  console.error(`FAIL ${step}: ${what}`);
  console.error(`  last render: ${JSON.stringify(last && summary(last))}`);
  console.error(`  renders (${seen.length}), newest last:`);
  for (const s of seen.slice(-12)) console.error(`    ${JSON.stringify(s)}`);
  process.exit(1);
}
function check(cond, what, got) {
  if (!cond) fail(what + (got === undefined ? "" : `: got ${JSON.stringify(got)}`));
  console.log(`ok ${step}: ${what}`);
}

// waitFor resolves with the first committed render (the current one
// included) for which pred holds, and fails the script, naming what it
// waited for, when none does within the bound.
const waiters = [];
function waitFor(pred, what, ms = 20000) {
  return new Promise((resolve) => {
    if (last && pred(last)) return resolve(last);
    const w = { pred, resolve };
    w.timer = setTimeout(() => fail(`no render within ${ms} ms where ${what}`), ms);
    waiters.push(w);
  });
}
function committed(r) {
  last = r;
  seen.push(summary(r));
  for (const w of [...waiters]) {
    if (w.pred(r)) {
      clearTimeout(w.timer);
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(r);
    }
  }
}

// The component: what a chat page does with the hook.
function Chat() {
  const stream = useStream({ apiUrl: url, apiKey: token, assistantId, fetchStateHistory: true });
  const messages = stream.messages; // reading them asks for values and messages-tuple
  const r = { submit: stream.submit, isLoading: stream.isLoading, error: stream.error, interrupt: stream.interrupt, values: stream.values, messages };
  React.useEffect(() => committed(r));
  return h("ul", null, messages.map((m, i) => h("li", { key: m.id ?? i, "data-type": m.type }, typeof m.content === "string" ? m.content : JSON.stringify(m.content))));
}

const root = createRoot(document.getElementById("root"));
root.render(h(Chat));
step = "mount";
await waitFor(() => true, "the component mounted");
check(last.messages.length === 0 && !last.isLoading, "no messages before a submit", summary(last));

// release lets the graph's answer node finish the answer it has begun.
async function release() {
  const res = await fetch(url + "/__test/release", { method: "POST" });
  if (!res.ok) fail(`releasing the answer node: ${res.status}`);
}
const isAnswer = (text) => (m) => m.type === "ai" && m.content === text;

step = "submit a question";
last.submit({ messages: [{ type: "human", content: "hi" }] });
const partial = await waitFor((r) => r.messages.some(isAnswer("You said: ")), "messages holds the first streamed chunk of the answer (messages-tuple)");
check(partial.isLoading, "the first chunk shows while the run is going", summary(partial));
check(partial.messages[0]?.type === "human" && partial.messages[0].content === "hi", "the question is shown first", partial.messages);
await release();
const answered = await waitFor((r) => !r.isLoading && r.messages.some(isAnswer("You said: hi")), "the run ended with the whole answer in messages");
check(!answered.error, "no error", answered.error && String(answered.error));
check(answered.messages.length === 2, "one question, one answer (the chunks became the answer, not a second message)", answered.messages);
check(answered.messages[1].id === partial.messages.find(isAnswer("You said: ")).id, "the answer keeps the id its chunks had", answered.messages);
check(answered.interrupt === undefined, "no interrupt", answered.interrupt);
const shown = summary(answered).dom;
check(shown.length === 2 && shown[1] === "ai: You said: hi", "the DOM lists the answer", shown);

step = "a question that needs a review";
last.submit({ messages: [{ type: "human", content: "check this" }], review: true });
await waitFor((r) => r.messages.some(isAnswer("You said: ")) && r.isLoading, "the second answer's first chunk streamed");
await release();
const paused = await waitFor((r) => !r.isLoading && r.interrupt !== undefined, "the run ended paused with an interrupt");
check(!paused.error, "no error", paused.error && String(paused.error));
check(paused.interrupt.value?.question === "approve the answer?" && paused.interrupt.value?.draft === "You said: check this",
  "interrupt holds the review request", paused.interrupt);
check(typeof paused.interrupt.id === "string" && paused.interrupt.id.length > 0, "the interrupt has an id", paused.interrupt);
check(paused.messages.length === 4 && paused.messages[3].content === "You said: check this", "the draft is in messages", paused.messages);

step = "resume with command";
last.submit(undefined, { command: { resume: "approved" } });
const done = await waitFor((r) => !r.isLoading && r.values?.approved === "approved", "the resumed run ended with approved set");
check(!done.error, "no error", done.error && String(done.error));
check(done.interrupt === undefined, "the interrupt is gone", done.interrupt);
check(JSON.stringify(done.messages.map((m) => [m.type, m.content])) ===
  JSON.stringify([["human", "hi"], ["ai", "You said: hi"], ["human", "check this"], ["ai", "You said: check this"]]),
  "the final messages are the conversation, each once", done.messages);

root.unmount();
console.log("OK all checks passed");
process.exit(0);
