// Drives a deepgraph agentserver with the real @langchain/langgraph-sdk, in
// the order Agent Chat UI calls it, then the rest of the SDK's run API.
// Env: SDK (the package's dist/index.js), URL, TOKEN. Prints one line per
// check; exits 1 at the first failure.
const { Client } = await import(process.env.SDK);
const url = process.env.URL;
const token = process.env.TOKEN;

let step = "";
function check(cond, what, got) {
  if (!cond) {
    console.error(`FAIL ${step}: ${what}` + (got === undefined ? "" : `: ${JSON.stringify(got)}`));
    process.exit(1);
  }
}
async function collect(gen) {
  const out = [];
  for await (const part of gen) out.push(part);
  return out;
}
const lastValues = (parts) => parts.filter((p) => p.event === "values").at(-1)?.data;

const client = new Client({ apiUrl: url, apiKey: token });

step = "x-api-key auth";
{
  const wrong = new Client({ apiUrl: url, apiKey: "wrong", callerOptions: { maxRetries: 0 } });
  let status = 0;
  try { await wrong.threads.search({ limit: 1 }); } catch (e) { status = e.status ?? 0; }
  check(status === 401, "a wrong key is refused with 401", status);
}

step = "info";
{
  const res = await fetch(url + "/info", { headers: { "x-api-key": token } });
  check(res.ok, "GET /info answers");
}

step = "assistants.search";
const assistants = await client.assistants.search({ metadata: { created_by: "system" } });
const chat = assistants.find((a) => a.graph_id === "chat");
check(chat && chat.assistant_id.length === 36, "the chat graph has an assistant", assistants);
const graphDoc = await client.assistants.getGraph(chat.assistant_id);
check(graphDoc.nodes.some((n) => n.id === "draft"), "its graph has the draft node", graphDoc);
const schemas = await client.assistants.getSchemas("chat");
check(schemas.state_schema?.properties?.messages, "its state schema has messages", schemas);

step = "threads.search (sidebar)";
const before = await client.threads.search({ metadata: { graph_id: "chat" }, limit: 100 });
check(Array.isArray(before) && before.length === 0, "no thread yet", before);

step = "threads.create";
const thread = await client.threads.create();
check(/^[0-9a-f-]{36}$/.test(thread.thread_id), "a UUID thread id", thread);
const tid = thread.thread_id;

step = "runs.stream (submit)";
let created;
const parts = await collect(client.runs.stream(tid, "chat", {
  input: { messages: [{ type: "human", content: "hi", id: "h1" }], context: { ui: "chat" } },
  streamMode: ["values", "messages-tuple", "updates", "custom"],
  streamSubgraphs: true, streamResumable: true, onDisconnect: "continue",
  onRunCreated: (m) => { created = m; },
}));
check(parts[0].event === "metadata" && parts[0].data.run_id, "metadata comes first", parts[0]);
check(created && created.run_id === parts[0].data.run_id && created.thread_id === tid, "onRunCreated has the run from Content-Location", created);
const answer = lastValues(parts).messages.at(-1);
check(answer.type === "ai" && answer.content === "You said: hi", "the answer is the last ai message", answer);
const chunks = parts.filter((p) => p.event === "messages");
check(chunks.length === 2 && chunks.every((c) => c.data[0].id === answer.id), "the chunks share the answer's id", chunks);
check(chunks.map((c) => c.data[0].content).join("") === answer.content, "the chunks make the answer");
check(parts.some((p) => p.event === "custom" && p.data.activity === "drafting"), "the custom event arrives");
check(parts.some((p) => p.event === "updates" && p.data.draft), "the updates name the node");
check(parts.every((p) => p.event !== "error"), "no error", parts.filter((p) => p.event === "error"));

step = "threads.search after a run";
const listed = await client.threads.search({ metadata: { graph_id: "chat" }, limit: 100 });
check(listed.length === 1 && listed[0].values.messages[0].content === "hi", "the thread is listed with its messages", listed);

step = "history";
const hist = await client.threads.getHistory(tid, { limit: 10 });
check(hist.length >= 2 && hist[0].checkpoint.checkpoint_id && hist[0].parent_checkpoint, "history has checkpoints and parents", hist[0]);
const state = await client.threads.getState(tid);
check(state.checkpoint.checkpoint_id === hist[0].checkpoint.checkpoint_id, "the state is the newest history entry");

step = "interrupt";
const review = await collect(client.runs.stream(tid, "chat", {
  input: { messages: [{ type: "human", content: "check this" }], review: true },
  streamMode: ["values", "messages-tuple"],
}));
const paused = lastValues(review);
check(paused.__interrupt__?.length === 1 && paused.__interrupt__[0].value.question === "approve the answer?", "values carry __interrupt__", paused);
const afterReload = await client.threads.getHistory(tid, { limit: 10 });
check(afterReload[0].tasks.some((t) => t.interrupts.length === 1), "history shows the interrupt after a reload", afterReload[0].tasks);
const pausedThread = await client.threads.get(tid);
check(pausedThread.status === "interrupted", "the thread is interrupted", pausedThread.status);

step = "command.resume";
const resumed = await collect(client.runs.stream(tid, "chat", {
  input: {}, command: { resume: "approved" }, streamMode: ["values"],
}));
check(lastValues(resumed).approved === "approved", "the answer reached the node", lastValues(resumed));
check((await client.threads.get(tid)).status === "idle", "the thread is idle again");

step = "regenerate from parent_checkpoint";
const hist2 = await client.threads.getHistory(tid, { limit: 50 });
// The checkpoint where the second question was the input: regenerate its answer.
const inputCp = hist2.find((h) => h.metadata.source === "input" && h.values.messages?.at(-1)?.content === "check this");
check(inputCp, "the input checkpoint of the second question is in the history", hist2.map((h) => h.metadata));
const regen = await collect(client.runs.stream(tid, "chat", {
  input: undefined, checkpoint: inputCp.checkpoint, streamMode: ["values"],
}));
const regenValues = lastValues(regen);
check(regenValues.messages.at(-1).content === "You said: check this" && regenValues.__interrupt__, "the fork answered again and paused again", regenValues);

step = "runs.wait";
const t2 = await client.threads.create({ metadata: { owner: "sdk" } });
const waited = await client.runs.wait(t2.thread_id, "chat", { input: { messages: [{ type: "human", content: "wait" }] } });
check(waited.messages.at(-1).content === "You said: wait", "wait returns the final values", waited);

step = "runs.create + join";
const bg = await client.runs.create(t2.thread_id, "chat", { input: { messages: [{ type: "human", content: "bg" }] } });
check(bg.run_id && ["pending", "running", "success"].includes(bg.status), "a background run", bg);
const joined = await client.runs.join(t2.thread_id, bg.run_id);
check(joined.messages.at(-1).content === "You said: bg", "join returns the final values", joined);
const got = await client.runs.get(t2.thread_id, bg.run_id);
check(got.status === "success", "the run succeeded", got);
const runs = await client.runs.list(t2.thread_id);
check(runs.length === 2, "the thread lists its runs", runs);

step = "joinStream with lastEventId";
const replay = await collect(client.runs.joinStream(t2.thread_id, bg.run_id, { lastEventId: "-1" }));
check(replay[0].event === "metadata" && replay.some((p) => p.event === "values"), "a replay from -1 has it all", replay.map((p) => p.event));

step = "cancel";
const t3 = await client.threads.create();
const slow = await client.runs.create(t3.thread_id, "slow", { input: {} });
await client.runs.cancel(t3.thread_id, slow.run_id, true, "interrupt");
const cancelled = await client.runs.get(t3.thread_id, slow.run_id);
check(cancelled.status === "interrupted", "a cancelled run is interrupted", cancelled);

step = "multitask reject";
const t4 = await client.threads.create();
const hold = await client.runs.create(t4.thread_id, "slow", { input: {} });
let rejected = 0;
try { await client.runs.create(t4.thread_id, "slow", { input: {} }); } catch (e) { rejected = e.status ?? -1; }
check(rejected === 409, "a second run on a busy thread is refused", rejected);
await client.runs.cancel(t4.thread_id, hold.run_id, true);

step = "reconnect after a dropped stream";
const flaky = new Client({ apiUrl: url, apiKey: token, defaultHeaders: { "x-drop-after": "2" } });
const t5 = await client.threads.create();
const reconnected = await collect(flaky.runs.stream(t5.thread_id, "chat", {
  input: { messages: [{ type: "human", content: "flaky" }] },
  streamMode: ["values", "messages-tuple"], streamResumable: true, onDisconnect: "continue",
}));
const ids = reconnected.map((p) => Number(p.id)).filter((n) => !Number.isNaN(n));
check(new Set(ids).size === ids.length, "no event twice", ids);
check(ids.every((id, i) => i === 0 || id === ids[i - 1] + 1), "no event lost", ids);
check(lastValues(reconnected)?.messages?.at(-1)?.content === "You said: flaky", "the stream reached the end", reconnected.map((p) => p.event));

step = "delete";
await client.threads.delete(t2.thread_id);
let gone = 0;
try { await client.threads.get(t2.thread_id); } catch (e) { gone = e.status ?? -1; }
check(gone === 404, "a deleted thread is gone", gone);

step = "runs.stream with streamSubgraphs";
{
  // nest: research (a subgraph over the same state: search → read), then
  // summarise (a subgraph over a state of its own).
  const input = { messages: [{ type: "human", content: "go" }] };
  const t6 = await client.threads.create();
  const nested = await collect(client.runs.stream(t6.thread_id, "nest", {
    input, streamMode: ["values", "updates", "checkpoints"], streamSubgraphs: true,
  }));
  const names = nested.map((p) => p.event);
  const inner = nested.filter((p) => /^updates\|research:[0-9a-f-]{36}$/.test(p.event));
  check(inner.length === 2 && inner[0].data.search?.notes?.[0] === "searched" && inner[1].data.read,
    "the subgraph's updates come as updates|research:<task id>", names);
  check(nested.some((p) => p.event.startsWith("values|summarise:") && p.data.text === "all read"),
    "the other subgraph's state comes as values|summarise:<task id>", names);
  const cps = nested.filter((p) => p.event.startsWith("checkpoints|research:"));
  check(cps.length === 3 && cps.every((p) => p.data.config.configurable.checkpoint_ns === p.event.slice("checkpoints|".length)
    && p.data.metadata.parents[""] && p.data.config.configurable.checkpoint_map[""] === p.data.metadata.parents[""]),
    "the subgraph's checkpoints come as checkpoints|research:<task id>, in its namespace, under the run's", cps.map((p) => p.data));
  check(cps[2].data.parent_config?.configurable?.checkpoint_id === cps[1].data.config.configurable.checkpoint_id,
    "each follows the one before", cps.map((p) => p.data));
  check(nested.some((p) => p.event === "updates" && p.data.research), "the run's own updates stay updates", names);
  check(lastValues(nested)?.summary === "all read", "the run's own values stay values", lastValues(nested));
  const t7 = await client.threads.create();
  const flat = await collect(client.runs.stream(t7.thread_id, "nest", { input, streamMode: ["values", "updates"] }));
  check(flat.every((p) => !p.event.includes("|")), "without streamSubgraphs no event has a namespace", flat.map((p) => p.event));
}

console.log("OK all checks passed");
