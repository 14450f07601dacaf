import { afterEach, describe, expect, it } from "vitest";
import {
  floatToPcm16,
  joinBlocks,
  pcmToBase64,
  PHRASES,
  resample,
  voiceError,
  voiceStep,
  type VoiceStep,
} from "../src/voice";
import "../src/companion-card";
import { fakeHass, mountCard, settle, shadow } from "./fixtures";

afterEach(() => {
  document.body.innerHTML = "";
  Reflect.deleteProperty(navigator, "mediaDevices");
});

function bytesOf(base64: string): number[] {
  return [...atob(base64)].map((c) => c.charCodeAt(0));
}

describe("the recording's audio", () => {
  it("turns samples into 16-bit PCM, clipped and rounded", () => {
    const pcm = floatToPcm16(new Float32Array([0, 1, -1, 0.5, -0.5, 2, -3, Number.NaN]));
    expect([...pcm]).toEqual([0, 32767, -32768, 16384, -16384, 32767, -32768, 0]);
  });

  it("writes PCM as base64 of little-endian bytes, long clips too", () => {
    expect(bytesOf(pcmToBase64(new Int16Array([1, -2, 0x1234])))).toEqual([
      1, 0, 0xfe, 0xff, 0x34, 0x12,
    ]);
    const long = new Int16Array(16000 * 6).map((_v, i) => (i % 200) - 100);
    const bytes = bytesOf(pcmToBase64(long));
    expect(bytes.length).toBe(long.length * 2);
    expect(new Int16Array(new Uint8Array(bytes).buffer)[12345]).toBe(long[12345]);
  });

  it("joins blocks and resamples to 16 kHz", () => {
    const joined = joinBlocks([new Float32Array([0, 0.25]), new Float32Array([0.5, 0.75])]);
    expect([...joined]).toEqual([0, 0.25, 0.5, 0.75]);
    expect(resample(joined, 16000, 16000)).toBe(joined);
    const down = resample(new Float32Array(48000).fill(0.5), 48000, 16000);
    expect(down.length).toBe(16000);
    expect(down[100]).toBeCloseTo(0.5);
  });
});

describe("the enrolment's steps", () => {
  it("goes phrase by phrase, then sends, then says how many it learned", () => {
    let state: VoiceStep = { step: "idle" };
    state = voiceStep(state, { type: "record" });
    expect(state).toEqual({ step: "idle" }); // nothing to record before the microphone
    state = voiceStep(state, { type: "start" });
    expect(state).toEqual({ step: "asking" });
    state = voiceStep(state, { type: "mic_ready" });
    for (let n = 0; n < PHRASES; n++) {
      expect(state).toMatchObject({ step: "ready", index: n });
      state = voiceStep(state, { type: "recorded", clip: "x" }); // not recording: ignored
      expect(state).toMatchObject({ step: "ready", index: n });
      state = voiceStep(state, { type: "record" });
      expect(state).toMatchObject({ step: "recording", index: n });
      state = voiceStep(state, { type: "recorded", clip: `clip${n}` });
    }
    expect(state).toEqual({ step: "sending", clips: ["clip0", "clip1", "clip2", "clip3"] });
    state = voiceStep(state, { type: "learned", samples: 3, skipped: 1 });
    expect(state).toEqual({ step: "done", samples: 3, skipped: 1 });
    expect(voiceStep(state, { type: "start" })).toEqual({ step: "asking" });
  });

  it("stops on an error, and cancel starts over", () => {
    const failed = voiceStep({ step: "asking" }, { type: "failed", error: { kind: "mic_refused" } });
    expect(failed).toEqual({ step: "error", error: { kind: "mic_refused" } });
    expect(voiceStep({ step: "recording", index: 2, clips: ["a", "b"] }, { type: "cancel" })).toEqual({
      step: "idle",
    });
  });

  it("names what went wrong", () => {
    const refused = Object.assign(new Error("denied"), { name: "NotAllowedError" });
    expect(voiceError(refused)).toEqual({ kind: "mic_refused" });
    expect(voiceError({ code: "no_speech", message: "none" })).toEqual({ kind: "no_speech" });
    expect(voiceError({ code: "person_without_user" })).toEqual({ kind: "no_person" });
    expect(voiceError({ code: "invalid_format", message: "bad" })).toEqual({
      kind: "other",
      message: "bad",
    });
  });
});

describe("the card's Your voice part", () => {
  it("says plainly when the microphone is refused", async () => {
    Object.defineProperty(navigator, "mediaDevices", {
      configurable: true,
      value: {
        getUserMedia: () =>
          Promise.reject(Object.assign(new Error("Permission denied"), { name: "NotAllowedError" })),
      },
    });
    const card = await mountCard(fakeHass());
    (shadow(card).querySelector("button.voice-teach") as HTMLButtonElement).click();
    await settle(card);
    expect(shadow(card).querySelector(".voice-error")?.textContent).toContain(
      "did not let the card use the microphone",
    );
    expect(shadow(card).querySelector("button.voice-teach")?.textContent).toContain("Try again");
  });

  it("says where a microphone can be had when the browser offers none, in Chinese too", async () => {
    const card = await mountCard(fakeHass("zh-Hans"));
    expect(shadow(card).querySelector(".voice h3")?.textContent).toBe("你的声音");
    (shadow(card).querySelector("button.voice-teach") as HTMLButtonElement).click();
    await settle(card);
    expect(shadow(card).querySelector(".voice-error")?.textContent).toContain("HTTPS");
  });

  it("forgets the user's own voice, and is hidden when show_voice is false", async () => {
    const hass = fakeHass();
    hass.answers["companion_agent/voice/forget"] = { removed: true };
    const card = await mountCard(hass);
    (shadow(card).querySelector("button.voice-forget") as HTMLButtonElement).click();
    await settle(card);
    expect(hass.sent).toEqual([{ type: "companion_agent/voice/forget" }]);
    expect(shadow(card).querySelector(".voice-note")?.textContent).toBe("Your voice is forgotten.");
    const hidden = await mountCard(fakeHass(), { entity: "conversation.ada", show_voice: false });
    expect(shadow(hidden).querySelector(".voice")).toBeNull();
  });
});
