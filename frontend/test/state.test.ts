import { describe, expect, it } from "vitest";
import { applyEvent, emptyModel, faceState, speakingTime, MAX_TOOLS } from "../src/state";
import { pickLanguage } from "../src/strings";
import { expressionOf, EXPRESSIONS } from "../src/face";
import { CompanionCardEditor } from "../src/editor";
import { HELD } from "./fixtures";

describe("state", () => {
  it("gives Chinese more time per character than English", () => {
    expect(speakingTime("你好，今天天气很好。")).toBeCloseTo(8000 / 4 + 2000 / 15, 0);
    expect(speakingTime("Hello, the weather is nice.")).toBeCloseTo(1800, -2);
    expect(speakingTime("Hi")).toBe(1200);
  });

  it("keeps whose voice a turn was recognised as until the next turn", () => {
    let model = applyEvent(emptyModel(), { kind: "turn_started", trace_id: "t", recognised: "Ada" }, 0);
    expect(model.turn?.recognised).toBe("Ada");
    model = applyEvent(model, { kind: "turn_ended", trace_id: "t", outcome: "complete" }, 10);
    expect(model.turn?.recognised).toBe("Ada");
    model = applyEvent(model, { kind: "turn_started", trace_id: "u", recognised: null }, 20);
    expect(model.turn?.recognised).toBeUndefined();
  });

  it("keeps the last tool calls of the turn, each once", () => {
    let model = applyEvent(emptyModel(), { kind: "turn_started", trace_id: "t" }, 0);
    for (let i = 0; i < MAX_TOOLS + 3; i++) {
      model = applyEvent(model, { kind: "tool_call", trace_id: "t", tool_id: `c${i}`, name: "X", status: "running" }, 0);
    }
    model = applyEvent(model, { kind: "tool_call", trace_id: "t", tool_id: "c8", name: "X", status: "completed" }, 0);
    expect(model.tools).toHaveLength(MAX_TOOLS);
    expect(model.tools[model.tools.length - 1]).toEqual({ id: "c8", name: "X", status: "completed" });
  });

  it("is idle after the turn and its last sentence", () => {
    let model = applyEvent(emptyModel(), { kind: "turn_started", trace_id: "t" }, 0);
    model = applyEvent(model, { kind: "sentence", trace_id: "t", text: "Hi", gestures: [], emotion: null, timing: "written" }, 0);
    model = applyEvent(model, { kind: "turn_ended", trace_id: "t", outcome: "complete" }, 100);
    expect(faceState(model, 500)).toBe("speaking");
    expect(faceState(model, 1300)).toBe("idle");
    expect(faceState(model, 1300, "responding")).toBe("speaking");
  });

  it("drops a held action's buttons when it ends, also when a restart interrupted it", () => {
    const held = applyEvent(emptyModel(), HELD, 0);
    expect(held.held).toHaveLength(1);
    const { token: _token, ...ended } = HELD;
    for (const status of ["executed", "cancelled", "expired", "interrupted"] as const) {
      expect(applyEvent(held, { ...ended, status }, 0).held).toEqual([]);
    }
  });

  it("notes missed updates", () => {
    expect(applyEvent(emptyModel(), { kind: "dropped", count: 3 }, 0).missed).toBe(true);
  });

  it("picks Simplified Chinese for zh tags and English otherwise", () => {
    expect(["zh-Hans", "zh-CN", "zh", "zh-hans-CN"].map(pickLanguage)).toEqual(Array(4).fill("zh-Hans"));
    expect(["en", "de", "zh-Hant", undefined].map(pickLanguage)).toEqual(Array(4).fill("en"));
  });

  it("draws every emotion the integration knows, neutral for the rest", () => {
    for (const emotion of ["joy", "sad", "angry", "surprise", "shy", "love", "think", "worried"]) {
      expect(EXPRESSIONS[emotion]).toBeDefined();
    }
    expect(expressionOf("bow")).toBe(EXPRESSIONS.neutral);
    expect(expressionOf("JOY")).toBe(EXPRESSIONS.joy);
  });
});

describe("editor", () => {
  it("tells the dashboard the new config, without an empty satellite", () => {
    const editor = new CompanionCardEditor();
    editor.setConfig({ type: "custom:companion-card", entity: "conversation.ada" });
    const seen: unknown[] = [];
    editor.addEventListener("config-changed", (ev) => seen.push((ev as CustomEvent).detail.config));
    editor.valueChanged({ satellite: "", show_tools: false });
    expect(seen).toEqual([{ type: "custom:companion-card", entity: "conversation.ada", show_tools: false }]);
  });
});
