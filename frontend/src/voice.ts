// "Your voice": the signed-in user teaches the companion their voice from the card. The
// microphone is read at 16 kHz (an AudioContext at that rate resamples it), each phrase's
// samples become 16-bit little-endian PCM, and after the last phrase the clips go to
// companion_agent/voice/enrol as base64 (the integration's frontend/voice_enrolment.py).
// The pure parts (PCM, base64, the steps) are apart from the microphone so tests run them.

/** The rate the integration reads clips at. */
export const RATE = 16000;
/** A phrase's recording stops by itself after this long. */
export const MAX_RECORD_MS = 6000;
/** The phrases read aloud, one after the other. */
export const PHRASES = 4;

/** Where the enrolment is: one phrase at a time, then sending, then the answer. */
export type VoiceStep =
  | { step: "idle" }
  | { step: "asking" }
  | { step: "ready"; index: number; clips: string[] }
  | { step: "recording"; index: number; clips: string[] }
  | { step: "sending"; clips: string[] }
  | { step: "done"; samples: number; skipped: number }
  | { step: "error"; error: VoiceError };

/** Why an enrolment stopped: each a line of the card's own (``other`` carries the server's). */
export type VoiceError =
  | { kind: "mic_refused" }
  | { kind: "mic_missing" }
  | { kind: "no_speech" }
  | { kind: "no_person" }
  | { kind: "other"; message: string };

export type VoiceAction =
  | { type: "start" }
  | { type: "mic_ready" }
  | { type: "record" }
  | { type: "recorded"; clip: string }
  | { type: "learned"; samples: number; skipped: number }
  | { type: "failed"; error: VoiceError }
  | { type: "cancel" };

/** Take one action; an action that does not fit the step leaves it as it is. */
export function voiceStep(state: VoiceStep, action: VoiceAction): VoiceStep {
  switch (action.type) {
    case "start":
      return state.step === "idle" || state.step === "done" || state.step === "error"
        ? { step: "asking" }
        : state;
    case "mic_ready":
      return state.step === "asking" ? { step: "ready", index: 0, clips: [] } : state;
    case "record":
      return state.step === "ready" ? { ...state, step: "recording" } : state;
    case "recorded": {
      if (state.step !== "recording") return state;
      const clips = [...state.clips, action.clip];
      return clips.length >= PHRASES
        ? { step: "sending", clips }
        : { step: "ready", index: clips.length, clips };
    }
    case "learned":
      return state.step === "sending"
        ? { step: "done", samples: action.samples, skipped: action.skipped }
        : state;
    case "failed":
      return { step: "error", error: action.error };
    case "cancel":
      return { step: "idle" };
  }
}

/** Return ``samples`` in [-1, 1] as 16-bit PCM (clipped, rounded). */
export function floatToPcm16(samples: Float32Array): Int16Array {
  const pcm = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    const s = Math.max(-1, Math.min(1, samples[i] || 0));
    pcm[i] = Math.round(s < 0 ? s * 0x8000 : s * 0x7fff);
  }
  return pcm;
}

/** Return ``pcm`` as base64 of its little-endian bytes. */
export function pcmToBase64(pcm: Int16Array): string {
  const bytes = new Uint8Array(pcm.length * 2);
  const view = new DataView(bytes.buffer);
  pcm.forEach((value, i) => view.setInt16(i * 2, value, true));
  let text = "";
  const CHUNK = 0x8000;
  for (let i = 0; i < bytes.length; i += CHUNK) {
    text += String.fromCharCode(...bytes.subarray(i, i + CHUNK));
  }
  return btoa(text);
}

/** Join recorded blocks into one run of samples. */
export function joinBlocks(blocks: Float32Array[]): Float32Array {
  const joined = new Float32Array(blocks.reduce((n, b) => n + b.length, 0));
  let at = 0;
  for (const block of blocks) {
    joined.set(block, at);
    at += block.length;
  }
  return joined;
}

/** Return ``samples`` at ``from`` Hz resampled to ``to`` Hz (linear; a browser that will not
 * open its AudioContext at 16 kHz runs at its own rate). */
export function resample(samples: Float32Array, from: number, to: number): Float32Array {
  if (from === to || !samples.length) return samples;
  const out = new Float32Array(Math.floor((samples.length * to) / from));
  for (let i = 0; i < out.length; i++) {
    const at = (i * from) / to;
    const low = Math.floor(at);
    const high = Math.min(low + 1, samples.length - 1);
    out[i] = samples[low] + (samples[high] - samples[low]) * (at - low);
  }
  return out;
}

/** Name what went wrong reaching the microphone or the integration. */
export function voiceError(err: unknown): VoiceError {
  const name = (err as { name?: string } | undefined)?.name;
  const code = (err as { code?: string } | undefined)?.code;
  if (name === "NotAllowedError" || name === "SecurityError") return { kind: "mic_refused" };
  if (name === "NotFoundError" || name === "NotReadableError") return { kind: "mic_missing" };
  if (code === "no_speech") return { kind: "no_speech" };
  if (code === "person_without_user") return { kind: "no_person" };
  return { kind: "other", message: (err as Error | undefined)?.message ?? String(err) };
}

/** The browser's microphone, read at 16 kHz, one phrase at a time. */
export class Microphone {
  private _stream?: MediaStream;
  private _context?: AudioContext;
  private _source?: MediaStreamAudioSourceNode;
  private _processor?: ScriptProcessorNode;
  private _blocks: Float32Array[] = [];
  private _recording = false;

  /** Ask for the microphone; raise what getUserMedia raises (``NotAllowedError``: refused). */
  async open(): Promise<void> {
    const media = navigator.mediaDevices;
    if (!media?.getUserMedia) {
      throw Object.assign(new Error("no microphone API here"), { name: "NotFoundError" });
    }
    this._stream = await media.getUserMedia({ audio: true });
    let context: AudioContext;
    try {
      context = new AudioContext({ sampleRate: RATE });
    } catch {
      context = new AudioContext(); // the browser's own rate: stop() resamples
    }
    this._context = context;
    this._source = context.createMediaStreamSource(this._stream);
    const processor = context.createScriptProcessor(4096, 1, 1);
    processor.onaudioprocess = (event) => {
      if (this._recording) this._blocks.push(new Float32Array(event.inputBuffer.getChannelData(0)));
    };
    this._source.connect(processor);
    processor.connect(context.destination); // a processor that goes nowhere is never run
    this._processor = processor;
    await context.resume();
  }

  /** Start keeping what the microphone hears. */
  start(): void {
    this._blocks = [];
    this._recording = true;
  }

  /** Stop keeping; return what was heard as base64 of 16-bit PCM at 16 kHz. */
  stop(): string {
    this._recording = false;
    const rate = this._context?.sampleRate ?? RATE;
    const clip = pcmToBase64(floatToPcm16(resample(joinBlocks(this._blocks), rate, RATE)));
    this._blocks = [];
    return clip;
  }

  /** Let the microphone go. */
  async close(): Promise<void> {
    this._recording = false;
    this._processor?.disconnect();
    this._source?.disconnect();
    this._stream?.getTracks().forEach((track) => track.stop());
    this._stream = undefined;
    const context = this._context;
    this._context = undefined;
    if (context && context.state !== "closed") await context.close();
  }
}
