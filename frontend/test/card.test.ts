import { afterEach, describe, expect, it } from "vitest";
import { CompanionCard, describeHeld, getEntitySuggestion } from "../src/companion-card";
import { SUBTITLE_HOLD } from "../src/state";
import { fakeHass, HELD, mountCard, settle, shadow, SNAPSHOT } from "./fixtures";

afterEach(() => {
  document.body.innerHTML = "";
});

function face(card: CompanionCard): { state: string; emotion: string; eyes: string; label: string } {
  const root = shadow(card).querySelector(".face") as HTMLElement;
  const svg = root.querySelector("svg");
  return {
    state: [...root.classList].find((c) => c.startsWith("state-")) ?? "",
    emotion: svg?.getAttribute("data-emotion") ?? "",
    eyes: svg?.getAttribute("data-eyes") ?? "",
    label: root.getAttribute("aria-label") ?? "",
  };
}

function subtitle(card: CompanionCard): string {
  const parts = shadow(card).querySelectorAll(".subtitle .gesture, .subtitle .line");
  return [...parts].map((part) => part.textContent?.trim()).join(" ");
}

describe("companion-card", () => {
  it("subscribes once to its persona", async () => {
    const hass = fakeHass();
    const card = await mountCard(hass);
    card.hass = { ...hass } as never;
    await settle(card);
    expect(hass.subscriptions).toEqual([
      { type: "companion_agent/subscribe", entity_id: "conversation.ada" },
    ]);
  });

  it("says whose voice the turn was recognised as, in the viewer's language", async () => {
    const hass = fakeHass();
    const card = await mountCard(hass);
    hass.push(SNAPSHOT);
    hass.push({ kind: "turn_started", trace_id: "t1", recognised: "Ada" });
    await settle(card);
    expect(shadow(card).querySelector(".heard")?.textContent).toBe("heard Ada");
  });

  it("draws the face per state and emotion as the turn goes", async () => {
    const hass = fakeHass();
    const card = await mountCard(hass);
    hass.push(SNAPSHOT);
    await settle(card);
    expect(face(card)).toMatchObject({ state: "state-idle", emotion: "neutral", eyes: "round" });
    hass.push({ kind: "turn_started", trace_id: "t1" });
    await settle(card);
    expect(face(card).state).toBe("state-thinking");
    expect(shadow(card).querySelector(".dots")).not.toBeNull();
    expect(shadow(card).querySelector(".heard")).toBeNull();
    hass.push({
      kind: "sentence",
      trace_id: "t1",
      text: "Hello there!",
      gestures: [],
      emotion: "joy",
      timing: "audio",
    });
    await settle(card);
    expect(face(card)).toMatchObject({ state: "state-speaking", emotion: "joy", eyes: "happy" });
    expect(face(card).label).toBe("Ada is speaking, joy");
    hass.push({ kind: "emotion", trace_id: "t1", emotion: "surprise" });
    await settle(card);
    expect(face(card)).toMatchObject({ emotion: "surprise", eyes: "wide" });
  });

  it("follows the satellite's state when one is configured", async () => {
    const hass = fakeHass();
    hass.states["assist_satellite.kitchen"] = {
      entity_id: "assist_satellite.kitchen",
      state: "listening",
      attributes: {},
    };
    const card = await mountCard(hass, {
      entity: "conversation.ada",
      satellite: "assist_satellite.kitchen",
    });
    hass.push(SNAPSHOT);
    await settle(card);
    expect(face(card).state).toBe("state-listening");
    expect(shadow(card).querySelector(".ring")).not.toBeNull();
  });

  it("shows a subtitle when its sentence is heard, with gestures, then clears it", async () => {
    const hass = fakeHass();
    const card = await mountCard(hass);
    const t0 = Date.now();
    card.handleEvent(SNAPSHOT, t0);
    card.handleEvent({ kind: "turn_started", trace_id: "t1" }, t0);
    await settle(card);
    expect(subtitle(card)).toBe("");
    card.handleEvent(
      { kind: "sentence", trace_id: "t1", text: "Nice to see you.", gestures: ["wave"], emotion: null, timing: "audio" },
      t0 + 500,
    );
    await settle(card);
    expect(subtitle(card)).toBe("wave Nice to see you.");
    const region = shadow(card).querySelector(".subtitle") as HTMLElement;
    expect(region.getAttribute("aria-live")).toBe("polite");
    card.handleEvent({ kind: "turn_ended", trace_id: "t1", outcome: "complete" }, t0 + 600);
    card._now = t0 + 600 + (SUBTITLE_HOLD - 1) * 1000;
    await settle(card);
    expect(subtitle(card)).toBe("wave Nice to see you.");
    card._now = t0 + 2000 + (SUBTITLE_HOLD + 1) * 1000;
    await card.updateComplete;
    expect(subtitle(card)).toBe("");
  });

  it("approves and denies a held action with its token, by keyboard-reachable buttons", async () => {
    const hass = fakeHass();
    const card = await mountCard(hass);
    hass.push(SNAPSHOT);
    hass.push(HELD);
    await settle(card);
    const buttons = [...shadow(card).querySelectorAll<HTMLButtonElement>(".held button")];
    expect(buttons.map((b) => b.textContent?.trim())).toEqual(["Approve", "Deny"]);
    expect(buttons[0].getAttribute("aria-label")).toBe("Approve: HassTurnOff on Front Door");
    expect(describeHeld({ ...HELD, action: { tool: "T", targets: [{ name: "Front Door", action: "unlock" }] } }, "en")).toBe(
      "unlock Front Door",
    );
    buttons[0].focus();
    expect(shadow(card).activeElement).toBe(buttons[0]);
    expect(buttons.every((b) => b.tabIndex >= 0 && !b.disabled)).toBe(true);
    buttons[0].click();
    await settle(card);
    expect(hass.calls).toEqual([
      { domain: "companion_agent", service: "confirm_action", data: { token: "secret-token", approve: true } },
    ]);
    expect(shadow(card).querySelector(".held")).toBeNull();
    hass.push({ ...HELD, id: "ref-2", token: "second" });
    await settle(card);
    (shadow(card).querySelector(".held button.deny") as HTMLButtonElement).click();
    expect(hass.calls[1].data).toEqual({ token: "second", approve: false });
  });

  it("says when only an adult may approve, and shows the action again when the answer was refused for it", async () => {
    const hass = fakeHass();
    const card = await mountCard(hass);
    hass.push(SNAPSHOT);
    hass.push({ ...HELD, needs_adult: true });
    hass.push({ ...HELD, id: "ref-2", token: "second", needs_adult: false });
    await settle(card);
    const held = () => [...shadow(card).querySelectorAll<HTMLElement>(".held")];
    expect(held().map((li) => li.querySelector(".adult")?.textContent)).toEqual([
      "An adult must approve this",
      undefined,
    ]);
    const refuse = (key: string, message: string) => {
      hass.refusals.confirm_action = { code: "service_validation_error", message, translation_key: key };
    };
    const approve = async (index: number) => {
      (held()[index].querySelector("button.approve") as HTMLButtonElement).click();
      await settle(card);
    };
    refuse("confirmation_not_adult", "Only an adult may approve this");
    await approve(0);
    expect(held().map((li) => li.dataset.id)).toEqual(["ref-1", "ref-2"]);
    expect(shadow(card).textContent).toContain("Only an adult may approve this");
    refuse("confirmation_used", "already used");
    await approve(1);
    expect(held().map((li) => li.dataset.id)).toEqual(["ref-1"]);
  });

  it("drops a held action once it was answered elsewhere or expired", async () => {
    const hass = fakeHass();
    const card = await mountCard(hass);
    hass.push(SNAPSHOT);
    hass.push(HELD);
    await settle(card);
    expect(shadow(card).querySelectorAll(".held")).toHaveLength(1);
    hass.push({ ...HELD, status: "executed", token: undefined });
    await settle(card);
    expect(shadow(card).querySelectorAll(".held")).toHaveLength(0);
    hass.push({ ...HELD, id: "old", expires_at: Date.now() / 1000 - 1 });
    await settle(card);
    expect(shadow(card).querySelectorAll(".held")).toHaveLength(0);
  });

  it("lists the household's memories and forgets one by id", async () => {
    const hass = fakeHass();
    const card = await mountCard(hass);
    hass.push(SNAPSHOT);
    hass.push({
      kind: "memories",
      available: true,
      items: [{ id: "m1", topic: "bins", text: "Bins go out on Tuesday" }],
    });
    await settle(card);
    const forget = shadow(card).querySelector(".memory button") as HTMLButtonElement;
    expect(forget.getAttribute("aria-label")).toBe("Forget: Bins go out on Tuesday");
    forget.click();
    expect(hass.calls).toEqual([{ domain: "companion_agent", service: "forget", data: { id: "m1" } }]);
  });

  it("speaks Simplified Chinese to a zh-Hans user", async () => {
    const hass = fakeHass("zh-Hans");
    const card = await mountCard(hass);
    hass.push(SNAPSHOT);
    hass.push(HELD);
    hass.push({ kind: "memories", available: false, items: [] });
    await settle(card);
    const text = shadow(card).textContent ?? "";
    expect(text).toContain("批准");
    expect(text).toContain("拒绝");
    expect(text).toContain("等待你的批准");
    expect(text).toContain("记忆已关闭。");
    expect(face(card).label).toBe("Ada空闲，平静");
  });

  it("shows the profile's own image for an emotion it names", async () => {
    const hass = fakeHass();
    const card = await mountCard(hass);
    const image = "data:image/svg+xml;base64,PHN2Zy8+";
    hass.push({ ...SNAPSHOT, persona: { ...SNAPSHOT.persona, faces: { joy: image } } });
    hass.push({ kind: "emotion", trace_id: "t1", emotion: "joy" });
    await settle(card);
    expect(shadow(card).querySelector(".face img")?.getAttribute("src")).toBe(image);
  });

  it("says so when the entity is not a persona", async () => {
    const hass = fakeHass("en", { code: "not_found", message: "not a companion persona" });
    const card = await mountCard(hass, { entity: "conversation.other" });
    expect(shadow(card).querySelector(".error")?.textContent).toBe(
      "conversation.other is not a loaded Companion Agent persona.",
    );
  });

  it("is suggested in HA's card picker for a persona, and for nothing else", () => {
    expect(getEntitySuggestion(fakeHass("zh-Hans"), "conversation.ada")).toEqual({
      config: {
        type: "custom:companion-card",
        entity: "conversation.ada",
        show_subtitles: true,
        show_tools: true,
        show_confirmations: true,
        show_memories: true,
        show_voice: true,
      },
      label: "陪伴助手",
    });
    expect(getEntitySuggestion(fakeHass(), "conversation.other")).toBeNull();
    expect(getEntitySuggestion(fakeHass(), "light.kitchen")).toBeNull();
    const registered = (window as unknown as { customCards: Array<Record<string, unknown>> })
      .customCards.find((card) => card.type === "companion-card");
    expect(registered?.getEntitySuggestion).toBe(getEntitySuggestion);
  });

  it("offers a stub config with the first persona", () => {
    expect(CompanionCard.getStubConfig(fakeHass())).toMatchObject({
      entity: "conversation.ada",
      show_memories: true,
    });
  });
});
