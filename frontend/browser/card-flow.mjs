// Drives a real Home Assistant (started by tests/browser/test_card_browser.py) in headless
// Chromium from Debian: signs in on HA's own login page, adds a companion card to an empty
// dashboard through HA's card picker and the card's visual editor (its stub config picks
// the persona), starts a turn as the signed-in person, and checks that the card shows
// the sentence as a subtitle, the face's emotion change, and the held unlock, which it then
// approves from the keyboard, and forgets a household memory from the card. Screenshots go
// to $SHOTS; the last line printed is a JSON summary. Any step that does not happen in
// time fails the run (exit status 1).
import { join } from "node:path";
import { connected, openChromium, signIn } from "./chromium.mjs";

const env = process.env;
const url = env.HA_URL;
const persona = env.PERSONA;
const shots = env.SHOTS;
const expected = env.EXPECT_SENTENCE;
const PENCIL = "M20.71,7.04"; // mdiPencil: the "Edit dashboard" button's icon
const STEP = Number(env.STEP_TIMEOUT_MS ?? 15000);
const { page, close } = await openChromium({ width: 900, height: 760 });
const saved = [];
const summary = { screenshots: saved };

async function shot(name) {
  const path = join(shots, `${name}.png`);
  await page.screenshot({ path, fullPage: false });
  saved.push(path);
}

async function cardShot(name) {
  const path = join(shots, `${name}.png`);
  await card().screenshot({ path });
  saved.push(path);
}

function card() {
  return page.locator("hui-masonry-view companion-card"); // not the editor's preview
}

function face() {
  return card().locator(".face");
}

async function emotion() {
  return face().locator("svg").getAttribute("data-emotion");
}

try {
  await signIn(page, url, env.HA_USER, env.HA_PASSWORD, STEP);
  summary.signed_in = true;
  await page.goto(url + env.DASHBOARD, { waitUntil: "domcontentloaded" });

  await connected(page, STEP);
  // Edit dashboard (the toolbar's pencil) → Add card → search → the card's editor → Save.
  await page.locator("hui-masonry-view").waitFor({ timeout: STEP });
  await page.locator("ha-icon-button").filter({ has: page.locator(`path[d^="${PENCIL}"]`) }).click({ timeout: STEP });
  await page.getByRole("button", { name: "Add card" }).first().click({ timeout: STEP });
  await page.locator("hui-card-picker input").first().fill("Companion", { timeout: STEP });
  await page.locator("hui-card-picker .card").filter({ hasText: "Companion" }).first().click();
  await page.locator("companion-card-editor ha-form").waitFor({ timeout: STEP });
  await shot("0-card-editor");
  await page.locator("hui-dialog-edit-card").getByRole("button", { name: "Save" }).click();
  await page.getByRole("button", { name: "Done", exact: true }).click({ timeout: STEP });
  await page.getByRole("button", { name: "Add card" }).waitFor({ state: "hidden", timeout: STEP });
  await card().locator(".face").waitFor({ timeout: STEP });
  summary.card_added = true;
  await card().locator(".name").filter({ hasNotText: "conversation." }).waitFor({ timeout: STEP });
  summary.emotion_before = await emotion();
  await cardShot("1-card-idle");

  await page.evaluate((agent) => {
    const hass = document.querySelector("home-assistant").hass;
    window.__turn = hass
      .callWS({ type: "conversation/process", text: "Unlock the front door", agent_id: agent })
      .then(() => "done", (err) => `failed: ${err.message ?? err}`);
  }, persona);

  await card().locator(".subtitle .line").filter({ hasText: expected }).waitFor({ timeout: STEP });
  summary.subtitle = await card().locator(".subtitle .line").innerText();
  const before = summary.emotion_before;
  await face().locator(`svg:not([data-emotion="${before}"])`).waitFor({ timeout: STEP });
  summary.emotion_after = await emotion();

  const approve = card().locator(".held button.approve");
  await approve.waitFor({ timeout: STEP });
  summary.held = await card().locator(".held .what").innerText();
  await cardShot("2-card-held-unlock");
  await shot("3-dashboard-held-unlock");

  await approve.focus();
  await page.keyboard.press("Enter");
  await card().locator(".held").waitFor({ state: "detached", timeout: STEP });
  await page.waitForFunction(
    () => document.querySelector("home-assistant").hass.states["lock.front_door"]?.state === "unlocked",
    null,
    { timeout: STEP },
  );
  summary.lock = "unlocked";
  summary.turn = await page.evaluate(() => window.__turn);
  await cardShot("4-card-approved");

  const memory = card().locator(".memory").filter({ hasText: env.EXPECT_MEMORY });
  await memory.locator("button.forget").click({ timeout: STEP });
  await memory.waitFor({ state: "detached", timeout: STEP });
  summary.forgotten = env.EXPECT_MEMORY;
  console.log(JSON.stringify(summary));
  await close();
} catch (err) {
  summary.error = String(err?.message ?? err).split("\n")[0];
  try {
    await shot("failure");
  } catch {
    // no page to take
  }
  console.log(JSON.stringify(summary));
  await close();
  process.exit(1);
}
