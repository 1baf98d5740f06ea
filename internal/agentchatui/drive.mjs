// Drives the real Agent Chat UI (served by `next start`) in headless
// Chromium: opens it pointed at an Agent Server API and an assistant, then
// does the steps it is given, in order, and writes the API calls the page
// made (method, path, body) and the page's text to RESULT. Env: MODULES
// (the app's node_modules, with playwright-core), CHROMIUM, UI (the app's
// URL), API, ASSISTANT, SHOTS (the screenshots' directory), STEPS (JSON:
// [{what, fill, text, press, key, click, see, wait, scroll, shot,
// timeout_ms}]), RESULT (a file). Exits 1 at the first step that does not happen, saying
// what the page held, which API calls it made and what the console said.
import { createRequire } from "node:module";
import { writeFileSync } from "node:fs";
import path from "node:path";

const require = createRequire(path.join(process.env.MODULES, "resolve.js"));
const { chromium } = require("playwright-core");
const api = new URL(process.env.API);
const steps = JSON.parse(process.env.STEPS);

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: ["--no-sandbox"] });
const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
const calls = [];
const errors = [];
page.on("request", (r) => {
  const u = new URL(r.url());
  if (u.host === api.host && r.method() !== "OPTIONS") {
    calls.push({ method: r.method(), path: u.pathname, body: r.postData() ?? "" });
  }
});
page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });

const said = (c) => `${c.method} ${c.path}`;
let what = "open";
async function fail(why) {
  console.error(`FAIL ${what}: ${why}`);
  console.error(`  API calls: ${JSON.stringify(calls.map(said))}`);
  console.error(`  console errors: ${JSON.stringify(errors)}`);
  try {
    console.error(`  page text: ${JSON.stringify((await page.locator("body").innerText()).slice(0, 3000))}`);
    await page.screenshot({ path: path.join(process.env.SHOTS, "failure.png"), fullPage: true });
  } catch {}
  await browser.close();
  process.exit(1);
}

const ui = new URL(process.env.UI);
ui.searchParams.set("apiUrl", process.env.API);
ui.searchParams.set("assistantId", process.env.ASSISTANT);
try {
  await page.goto(ui.href);
} catch (e) {
  await fail(`the app did not load: ${e.message}`);
}

for (const s of steps) {
  what = s.what || JSON.stringify(s);
  const timeout = s.timeout_ms;
  try {
    if (s.fill) {
      await page.locator(s.fill).first().fill(s.text ?? "", { timeout });
    } else if (s.press) {
      await page.locator(s.press).first().press(s.key, { timeout });
    } else if (s.click) {
      await page.locator(s.click).first().click({ timeout });
    } else if (s.see) {
      await page.getByText(s.see, { exact: false }).first().waitFor({ timeout });
    } else if (s.wait) {
      await page.locator(s.wait).first().waitFor({ timeout });
    } else if (s.scroll) {
      const el = page.locator(s.scroll).first();
      await el.waitFor({ timeout });
      await el.evaluate((e) => e.scrollIntoView({ block: "start", behavior: "instant" }));
    } else if (s.shot) {
      await page.screenshot({ path: path.join(process.env.SHOTS, s.shot), fullPage: true });
    } else {
      await fail("the step does nothing: give one of fill, press, click, see, wait, scroll or shot");
    }
  } catch (e) {
    await fail(e.message.split("\n")[0]);
  }
  console.log(`ok ${what}`);
}

const text = await page.locator("body").innerText();
writeFileSync(process.env.RESULT, JSON.stringify({ calls, text }));
await browser.close();
console.log(`OK ${steps.length} steps; API calls: ${calls.map(said).join(", ")}`);
