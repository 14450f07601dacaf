// What the card shows, folded from the subscription's events: pure, so it is tested alone.

import type {
  CardEvent,
  ConfirmationEvent,
  MemoryItem,
  PersonaFace,
  ToolStatus,
  TurnOutcome,
} from "./types";

export type FaceState = "idle" | "listening" | "thinking" | "speaking";

export const MAX_TOOLS = 6;
export const MAX_HELD = 8;
export const MAX_MEMORIES = 50;
/** Seconds a subtitle stays after its turn ended and its speech is over. */
export const SUBTITLE_HOLD = 6;
const LATIN_PER_SECOND = 15;
const CJK_PER_SECOND = 4;
const MIN_SPEAKING = 1.2;

export interface Subtitle {
  traceId: string;
  text: string;
  gestures: string[];
  shownAt: number;
  /** When (ms) the sentence is likely over: speaking until then. */
  until: number;
}

export interface ToolCall {
  id: string;
  name: string;
  status: ToolStatus;
}

export interface CardModel {
  persona?: PersonaFace;
  userId?: string;
  emotion: string;
  subtitle?: Subtitle;
  turn?: { traceId: string; endedAt?: number; outcome?: TurnOutcome; recognised?: string };
  tools: ToolCall[];
  held: ConfirmationEvent[];
  memories: MemoryItem[];
  memoryAvailable: boolean;
  missed: boolean;
}

export function emptyModel(): CardModel {
  return { emotion: "neutral", tools: [], held: [], memories: [], memoryAvailable: true, missed: false };
}

/** Return how long (ms) a sentence takes to say: 15 letters or 4 Chinese characters a second. */
export function speakingTime(text: string): number {
  const cjk = (text.match(/[\u3400-\u9fff\uf900-\ufaff]/g) ?? []).length;
  const seconds = cjk / CJK_PER_SECOND + (text.length - cjk) / LATIN_PER_SECOND;
  return Math.max(MIN_SPEAKING, seconds) * 1000;
}

/** Return the model after one event that arrived at ``now`` (ms). */
export function applyEvent(model: CardModel, event: CardEvent, now: number): CardModel {
  switch (event.kind) {
    case "snapshot":
      return {
        ...model,
        persona: event.persona,
        userId: event.user.id,
        emotion: event.emotion,
        held: event.confirmations.slice(0, MAX_HELD),
        missed: false,
      };
    case "memories":
      return {
        ...model,
        memoryAvailable: event.available,
        memories: event.items.slice(0, MAX_MEMORIES),
      };
    case "turn_started":
      return {
        ...model,
        turn: { traceId: event.trace_id, recognised: event.recognised ?? undefined },
        tools: [],
      };
    case "sentence": {
      const subtitle: Subtitle = {
        traceId: event.trace_id,
        text: event.text,
        gestures: event.gestures,
        shownAt: now,
        until: now + speakingTime(event.text),
      };
      return {
        ...model,
        subtitle,
        emotion: event.emotion ?? model.emotion,
        turn: model.turn ?? { traceId: event.trace_id },
      };
    }
    case "emotion":
      return { ...model, emotion: event.emotion };
    case "tool_call": {
      const others = model.tools.filter((tool) => tool.id !== event.tool_id);
      const call = { id: event.tool_id, name: event.name, status: event.status };
      return { ...model, tools: [...others, call].slice(-MAX_TOOLS) };
    }
    case "turn_ended":
      if (model.turn && model.turn.traceId !== event.trace_id) return model;
      return {
        ...model,
        turn: {
          traceId: event.trace_id,
          endedAt: now,
          outcome: event.outcome,
          recognised: model.turn?.recognised,
        },
      };
    case "confirmation": {
      const others = model.held.filter((held) => held.id !== event.id);
      if (event.status !== "requested" || !event.token) return { ...model, held: others };
      return { ...model, held: [...others, event].slice(-MAX_HELD) };
    }
    case "dropped":
      return { ...model, missed: true };
    default:
      return model;
  }
}

/** Return the held actions still waiting at ``now`` (ms). */
export function liveHeld(model: CardModel, now: number): ConfirmationEvent[] {
  return model.held.filter((held) => held.expires_at * 1000 > now);
}

/** Return the subtitle to show at ``now``, if any. */
export function currentSubtitle(model: CardModel, now: number): Subtitle | undefined {
  const { subtitle, turn } = model;
  if (!subtitle || (turn && turn.traceId !== subtitle.traceId)) return undefined;
  if (turn?.endedAt === undefined) return subtitle;
  return now < Math.max(subtitle.until, turn.endedAt) + SUBTITLE_HOLD * 1000 ? subtitle : undefined;
}

/** Return the face's state: the device's when it says, else the turn's. */
export function faceState(model: CardModel, now: number, device?: string): FaceState {
  switch (device) {
    case "listening":
      return "listening";
    case "processing":
      return "thinking";
    case "responding":
    case "playing":
      return "speaking";
    default:
      break;
  }
  const turn = model.turn;
  const subtitle = model.subtitle;
  const speaking = subtitle !== undefined && subtitle.traceId === turn?.traceId && now < subtitle.until;
  if (speaking) return "speaking";
  if (turn && turn.endedAt === undefined) return "thinking";
  return "idle";
}
