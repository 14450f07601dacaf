// Headless Chromium from Debian for the browser flows (card-flow.mjs, assist-flow.mjs,
// voice-flow.mjs): a throwaway profile, the flags a container without a sandbox or GPU needs,
// English, and reduced motion (args: more flags, such as a fake microphone). close() ends the
// browser and removes the profile. signIn() and connected() are the flows' shared first
// steps on Home Assistant's frontend.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export async function openChromium(viewport, args = []) {
  const profile = mkdtempSync(join(tmpdir(), "companion-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: [...FLAGS, ...args],
    viewport,
    locale: "en-US",
    reducedMotion: "reduce",
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const close = async () => {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  };
  return { page, close };
}

// Wait until the frontend has exchanged its login code for tokens and holds a connection.
export async function connected(page, timeout) {
  await page.waitForFunction(
    () => document.querySelector("home-assistant")?.hass?.connection !== undefined,
    null,
    { timeout },
  );
}

// Sign in on HA's own login page at url ("Keep me logged in"), then wait for the connection.
export async function signIn(page, url, user, password, timeout) {
  await page.goto(url, { waitUntil: "domcontentloaded" });
  await page.locator('input[name="username"]').fill(user, { timeout });
  await page.locator('input[name="password"]').fill(password);
  await page.locator('input[name="password"]').press("Enter");
  await page.waitForURL((u) => !u.pathname.startsWith("/auth/"), { timeout });
  await connected(page, timeout);
}
