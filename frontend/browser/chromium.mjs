// Headless Chromium from Debian for the browser flows (card-flow.mjs, assist-flow.mjs): a
// throwaway profile, the flags a container without a sandbox or GPU needs, English, and
// reduced motion. close() ends the browser and removes the profile.
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

export async function openChromium(viewport) {
  const profile = mkdtempSync(join(tmpdir(), "companion-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: FLAGS,
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
