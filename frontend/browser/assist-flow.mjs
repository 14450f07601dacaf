// Drives the demo's Home Assistant (script/e2e-browser) in headless Chromium from Debian:
// signs in on HA's own login page, opens the companion's dashboard, opens the Assist dialog
// (its keyboard shortcut, "a"), sends $SAY, waits for the streamed reply to show $EXPECT in
// the dialog, and saves screenshots of the dialog and of the companion's card. The last
// line printed is a JSON summary; a step that does not happen in time fails the run
// (exit status 1).
import { join } from "node:path";
import { connected, openChromium, signIn } from "./chromium.mjs";

const env = process.env;
const STEP = Number(env.STEP_TIMEOUT_MS ?? 30000);
const { page, close } = await openChromium({ width: 1100, height: 800 });
const summary = { screenshots: [] };

async function shot(name, target = page) {
  const path = join(env.SHOTS, `${name}.png`);
  await target.screenshot({ path });
  summary.screenshots.push(path);
}

// The text of an element with its shadow roots (the reply is rendered in ha-markdown's).
function composedText(element) {
  const walk = (node) => {
    if (node.nodeType === Node.TEXT_NODE) return node.textContent;
    if (node.nodeType !== Node.ELEMENT_NODE || ["STYLE", "SCRIPT"].includes(node.tagName)) return "";
    const children = [...(node.shadowRoot?.childNodes ?? []), ...node.childNodes];
    return children.map(walk).join("");
  };
  return walk(element).replace(/\s+/g, " ").trim();
}

let failed = false;
try {
  await signIn(page, env.HA_URL, env.HA_USER, env.HA_PASSWORD, STEP);
  summary.signed_in = true;
  await page.goto(env.HA_URL + env.DASHBOARD, { waitUntil: "domcontentloaded" });
  await connected(page, STEP);
  const card = page.locator("hui-masonry-view companion-card");
  await card.locator(".face").waitFor({ timeout: STEP });
  await page.keyboard.press("a");
  const dialog = page.locator("ha-voice-command-dialog ha-dialog");
  const input = dialog.locator("ha-assist-chat input").first();
  await input.waitFor({ timeout: STEP });
  await input.fill(env.SAY);
  await input.press("Enter");
  const reply = dialog.locator("ha-assist-chat .message").filter({ hasText: env.EXPECT });
  await reply.first().waitFor({ timeout: STEP });
  summary.reply = await reply.first().evaluate(composedText);
  await shot("1-assist-dialog-reply");
  await page.keyboard.press("Escape");
  await dialog.waitFor({ state: "detached", timeout: STEP }).catch(() => {});
  await card.locator(".subtitle .line").first().waitFor({ timeout: STEP });
  summary.card_subtitle = (await card.locator(".subtitle .line").first().innerText()).trim();
  await shot("2-companion-card", card);
} catch (err) {
  failed = true;
  summary.error = String(err?.message ?? err).split("\n")[0];
  await shot("failure").catch(() => {});
}
console.log(JSON.stringify(summary));
await close();
process.exit(failed ? 1 : 0);
