// Drives the real Agent Chat UI (built from its source, served by
// `next start`) in headless Chromium against a deepgraph agentserver: a
// question is answered in the page, a question that asks for a review
// shows the interrupt. Env: MODULES (the app's node_modules, with
// playwright-core), CHROMIUM, UI (the app's URL), API (the server's URL),
// ASSISTANT, SHOTS (a directory for screenshots). Exits 1 at the first
// failure, saying what the page held and which server calls it made.
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.MODULES, "resolve.js"));
const { chromium } = require("playwright-core");
const api = new URL(process.env.API);

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: ["--no-sandbox"] });
const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
const calls = [];
const errors = [];
page.on("request", (r) => {
  const u = new URL(r.url());
  if (u.host === api.host) calls.push(`${r.method()} ${u.pathname}`);
});
page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });

let step = "";
async function fail(what) {
  console.error(`FAIL ${step}: ${what}`);
  console.error(`  server calls: ${JSON.stringify(calls)}`);
  console.error(`  console errors: ${JSON.stringify(errors)}`);
  try {
    console.error(`  page text: ${JSON.stringify((await page.locator("body").innerText()).slice(0, 2000))}`);
    await page.screenshot({ path: path.join(process.env.SHOTS, "failure.png") });
  } catch {}
  await browser.close();
  process.exit(1);
}
async function see(text, what) {
  try {
    await page.getByText(text, { exact: false }).first().waitFor({ timeout: 30000 });
  } catch {
    await fail(`${what}: "${text}" never showed`);
  }
  console.log(`ok ${step}: ${what}`);
}

step = "open";
const ui = new URL(process.env.UI);
ui.searchParams.set("apiUrl", process.env.API);
ui.searchParams.set("assistantId", process.env.ASSISTANT);
await page.goto(ui.href);
const box = page.locator("textarea");
try { await box.waitFor({ timeout: 30000 }); } catch { await fail("the chat box never showed (the setup form instead?)"); }

step = "a question";
await box.fill("hello from headless chromium");
await box.press("Enter");
await see("You said: hello from headless chromium", "the streamed answer is in the page");
await page.screenshot({ path: path.join(process.env.SHOTS, "agent-chat-ui-answer.png") });

step = "a question that asks for a review";
await box.fill("please review this");
await box.press("Enter");
await see("You said: please review this", "the answer is in the page");
await see("approve the answer?", "the interrupt is shown");
await page.screenshot({ path: path.join(process.env.SHOTS, "agent-chat-ui-interrupt.png") });

step = "the calls";
for (const want of ["GET /info", "POST /threads", "POST /threads/search"]) {
  if (!calls.includes(want)) await fail(`the page never called ${want}`);
}
for (const want of [/^POST \/threads\/[^/]+\/runs\/stream$/, /^POST \/threads\/[^/]+\/history$/]) {
  if (!calls.some((c) => want.test(c))) await fail(`the page never called ${want}`);
}
console.log(`ok ${step}: ${calls.join(", ")}`);
await browser.close();
console.log("OK all checks passed");
