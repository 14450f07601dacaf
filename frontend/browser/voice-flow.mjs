// Drives a real Home Assistant (started by tests/browser/test_voice_browser.py) in headless
// Chromium from Debian with a fake microphone that plays $SPEECH_WAV (real speech, looped):
// signs in, opens a dashboard holding the companion card, presses "Teach the companion my
// voice", records the four phrases (Stop after a few seconds for the first three; the last
// stops by itself after six) and waits for the card's answer. Screenshots go to $SHOTS; the
// last line printed is a JSON summary. Any step that does not happen in time fails the run.
import { join } from "node:path";
import { connected, openChromium, signIn } from "./chromium.mjs";

const env = process.env;
const url = env.HA_URL;
const shots = env.SHOTS;
const STEP = Number(env.STEP_TIMEOUT_MS ?? 15000);
const SPEAK_MS = 3500;
const MICROPHONE = [
  "--use-fake-ui-for-media-stream",
  "--use-fake-device-for-media-stream",
  `--use-file-for-fake-audio-capture=${env.SPEECH_WAV}`,
];
const { page, close } = await openChromium({ width: 900, height: 760 }, MICROPHONE);
const saved = [];
const summary = { screenshots: saved, phrases: [] };

async function cardShot(name) {
  const path = join(shots, `${name}.png`);
  await card().screenshot({ path });
  saved.push(path);
}

function card() {
  return page.locator("hui-masonry-view companion-card");
}

try {
  await signIn(page, url, env.HA_USER, env.HA_PASSWORD, STEP);
  summary.signed_in = true;
  await page.goto(url + env.DASHBOARD, { waitUntil: "domcontentloaded" });
  const voice = card().locator("section.voice");
  await connected(page, STEP);
  // Note what the card sends: each clip's length and loudness (what the browser captured).
  await page.evaluate(() => {
    const connection = document.querySelector("home-assistant").hass.connection;
    const send = connection.sendMessagePromise.bind(connection);
    window.__clips = [];
    connection.sendMessagePromise = (message) => {
      for (const clip of message.clips ?? []) {
        const bytes = Uint8Array.from(atob(clip), (c) => c.charCodeAt(0));
        const pcm = new Int16Array(bytes.buffer);
        const rms = Math.sqrt(pcm.reduce((sum, v) => sum + v * v, 0) / Math.max(1, pcm.length));
        window.__clips.push({ seconds: pcm.length / 16000, rms: Math.round(rms) });
      }
      return send(message);
    };
  });
  await voice.locator("button.voice-teach").click({ timeout: STEP });
  for (let n = 1; n <= 4; n++) {
    const phrase = voice.locator(`.voice-phrase[data-index="${n}"]`);
    await phrase.waitFor({ timeout: STEP });
    summary.phrases.push((await phrase.locator("q").innerText()).trim());
    await voice.locator("button.voice-record").click({ timeout: STEP });
    await voice.locator(".voice-recording").waitFor({ timeout: STEP });
    if (n === 1) await cardShot("1-voice-recording");
    if (n < 4) {
      await page.waitForTimeout(SPEAK_MS); // the fake microphone speaks meanwhile
      await voice.locator("button.voice-stop").click({ timeout: STEP });
    }
  }
  const done = voice.locator(".voice-done, .voice-error");
  await done.waitFor({ timeout: STEP * 2 });
  summary.answer = (await done.innerText()).trim();
  summary.clips = await page.evaluate(() => window.__clips);
  await cardShot("2-voice-learned");
  console.log(JSON.stringify(summary));
  await close();
} catch (err) {
  summary.error = String(err?.message ?? err).split("\n")[0];
  try {
    const path = join(shots, "failure.png");
    await page.screenshot({ path });
    saved.push(path);
  } catch {
    // no page to take
  }
  console.log(JSON.stringify(summary));
  await close();
  process.exit(1);
}
