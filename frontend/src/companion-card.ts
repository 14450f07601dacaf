// custom:companion-card: the companion's face, live subtitles, tool calls, held actions
// with approve/deny, and the household's memories with forget, all from one WebSocket
// subscription (companion_agent/subscribe) for the signed-in user.

import { html, LitElement, nothing, type PropertyValues, type TemplateResult } from "lit";
import { renderFace } from "./face";
import "./editor";
import {
  applyEvent,
  currentSubtitle,
  emptyModel,
  faceState,
  liveHeld,
  type CardModel,
} from "./state";
import { emotionName, localize, pickLanguage, type Language, type StringKey } from "./strings";
import { cardStyles } from "./styles";
import { MAX_RECORD_MS, Microphone, PHRASES, voiceError, voiceStep, type VoiceAction, type VoiceStep } from "./voice";
import type { CardEvent, CompanionCardConfig, ConfirmationEvent, Hass } from "./types";

const TICK_MS = 250;
/** How long after a subtitle the clock keeps ticking (its hold is far shorter). */
const CLOCK_AFTER_MS = 60_000;
const DOMAIN = "companion_agent";
/** Refusals of an answer that leave the held action waiting for someone who may give it. */
const STILL_HELD = new Set(["confirmation_not_adult", "confirmation_wrong_user"]);

export function describeHeld(held: ConfirmationEvent, language: Language): string {
  const targets = held.action.targets;
  const named = targets.map((t) => t.name || t.entity_id || "").filter(Boolean);
  if (targets.length && targets.every((t) => t.action)) {
    return targets
      .map((t) => localize(language, "held_target", { action: t.action ?? "", target: t.name || t.entity_id || "" }))
      .join(", ");
  }
  return localize(language, "held_action", { tool: held.action.tool, targets: named.join(", ") || "?" });
}

type EntityEntry = NonNullable<Hass["entities"]>[string];

function isPersona(entry: EntityEntry | undefined): entry is EntityEntry {
  return entry?.platform === DOMAIN && entry.entity_id.startsWith("conversation.");
}

function stubConfig(entity: string): Partial<CompanionCardConfig> {
  return {
    entity,
    show_subtitles: true,
    show_tools: true,
    show_confirmations: true,
    show_memories: true,
    show_voice: true,
  };
}

/** The card HA's card picker suggests for an entity (HA 2026.6 on): ours for a persona. */
export function getEntitySuggestion(
  hass: Hass,
  entityId: string,
): { config: Record<string, unknown>; label: string } | null {
  if (!isPersona(hass.entities?.[entityId])) return null;
  return {
    config: { type: "custom:companion-card", ...stubConfig(entityId) },
    label: localize(pickLanguage(hass.locale?.language ?? navigator.language), "card_name"),
  };
}

export class CompanionCard extends LitElement {
  static override styles = cardStyles;

  static override properties = {
    hass: { attribute: false },
    _config: { state: true },
    _model: { state: true },
    _error: { state: true },
    _now: { state: true },
    _voice: { state: true },
    _voiceNote: { state: true },
  };

  hass?: Hass;
  _config?: CompanionCardConfig;
  _model: CardModel = emptyModel();
  _error?: string;
  _now = Date.now();
  _voice: VoiceStep = { step: "idle" };
  _voiceNote?: StringKey;
  private _microphone?: Microphone;
  private _autoStop?: ReturnType<typeof setTimeout>;
  private _unsubscribe?: () => Promise<void> | void;
  private _subscribedTo?: string;
  private _timer?: ReturnType<typeof setInterval>;

  static getConfigElement(): HTMLElement {
    return document.createElement("companion-card-editor");
  }

  static getStubConfig(hass: Hass): Partial<CompanionCardConfig> {
    const persona = Object.values(hass.entities ?? {}).find(isPersona);
    return stubConfig(persona?.entity_id ?? "");
  }

  setConfig(config: CompanionCardConfig): void {
    if (!config || typeof config !== "object") throw new Error("Invalid configuration");
    this._config = {
      show_subtitles: true,
      show_tools: true,
      show_confirmations: true,
      show_memories: true,
      show_voice: true,
      ...config,
    };
  }

  getCardSize(): number {
    return 4;
  }

  get language(): Language {
    return pickLanguage(this.hass?.locale?.language ?? this.hass?.language);
  }

  t(key: StringKey, values?: Record<string, string | number>): string {
    return localize(this.language, key, values);
  }

  override connectedCallback(): void {
    super.connectedCallback();
    this._timer = setInterval(() => {
      if (this._clockMatters()) this._now = Date.now();
    }, TICK_MS);
    void this._subscribe();
  }

  override disconnectedCallback(): void {
    super.disconnectedCallback();
    if (this._timer !== undefined) clearInterval(this._timer);
    this._timer = undefined;
    void this._unsubscribeNow();
    this.voice({ type: "cancel" });
  }

  protected override updated(changed: PropertyValues): void {
    if (changed.has("hass") || changed.has("_config")) void this._subscribe();
  }

  /** Say whether the time changes what the card shows (a turn, a subtitle, a countdown). */
  private _clockMatters(): boolean {
    const { held, subtitle, turn } = this._model;
    const recent = subtitle !== undefined && Date.now() - subtitle.shownAt < CLOCK_AFTER_MS;
    return held.length > 0 || recent || (turn !== undefined && turn.endedAt === undefined);
  }

  /** Take one event from the subscription. */
  handleEvent(event: CardEvent, now = Date.now()): void {
    this._model = applyEvent(this._model, event, now);
    this._now = now;
  }

  private async _subscribe(): Promise<void> {
    const entity = this._config?.entity;
    if (!this.hass || !entity || !this.isConnected || this._subscribedTo === entity) return;
    this._subscribedTo = entity; // set before any await: a second call does not subscribe again
    this._model = emptyModel();
    this._error = undefined;
    await this._stop(this._unsubscribe);
    this._unsubscribe = undefined;
    try {
      const unsubscribe = await this.hass.connection.subscribeMessage<CardEvent>(
        (event) => this.handleEvent(event),
        { type: `${DOMAIN}/subscribe`, entity_id: entity },
      );
      if (this._subscribedTo !== entity) await this._stop(unsubscribe);
      else this._unsubscribe = unsubscribe;
    } catch (err) {
      if (this._subscribedTo !== entity) return;
      const code = (err as { code?: string }).code;
      this._error =
        code === "not_found"
          ? this.t("not_found", { entity })
          : this.t("failed", { error: (err as Error).message ?? String(err) });
    }
  }

  private async _unsubscribeNow(): Promise<void> {
    const unsubscribe = this._unsubscribe;
    this._unsubscribe = undefined;
    this._subscribedTo = undefined;
    await this._stop(unsubscribe);
  }

  private async _stop(unsubscribe?: () => Promise<void> | void): Promise<void> {
    try {
      await unsubscribe?.();
    } catch {
      // the connection is gone: nothing left to stop
    }
  }

  /** Call one of the companion's services; the refusal's translation key, if it was refused. */
  private async _call(service: string, data: Record<string, unknown>): Promise<string | undefined> {
    try {
      await this.hass?.callService(DOMAIN, service, data);
      this._error = undefined;
      return undefined;
    } catch (err) {
      this._error = this.t("failed", { error: (err as Error).message ?? String(err) });
      return (err as { translation_key?: string }).translation_key ?? "failed";
    }
  }

  /** Answer a held action; a refusal that left it waiting (not an adult's) shows it again. */
  async answer(held: ConfirmationEvent, approve: boolean): Promise<void> {
    this._model = { ...this._model, held: this._model.held.filter((h) => h.id !== held.id) };
    const refused = await this._call("confirm_action", { token: held.token, approve });
    if (refused === undefined || !STILL_HELD.has(refused)) return;
    if (!this._model.held.some((h) => h.id === held.id)) {
      this._model = { ...this._model, held: [held, ...this._model.held] };
    }
  }

  async forget(id: string): Promise<void> {
    await this._call("forget", { id });
  }

  /** Take one step of the voice enrolment, and do what the new step needs. */
  voice(action: VoiceAction): void {
    const before = this._voice;
    const after = voiceStep(before, action);
    this._voice = after;
    if (after === before) return;
    if (action.type === "start") this._voiceNote = undefined;
    if (after.step === "asking") void this._openMicrophone();
    if (after.step === "recording") {
      this._microphone?.start();
      this._autoStop = setTimeout(() => this.stopRecording(), MAX_RECORD_MS);
    }
    if (after.step === "sending") void this._sendVoice(after.clips);
    if (after.step !== "asking" && after.step !== "ready" && after.step !== "recording") {
      void this._closeMicrophone();
    }
  }

  /** End the phrase being recorded (the Stop button, or its six seconds are up). */
  stopRecording(): void {
    if (this._voice.step !== "recording" || !this._microphone) return;
    clearTimeout(this._autoStop);
    this.voice({ type: "recorded", clip: this._microphone.stop() });
  }

  /** Remove the signed-in user's own voiceprint. */
  async forgetVoice(): Promise<void> {
    try {
      const answer = await this.hass?.connection.sendMessagePromise<{ removed: boolean }>({
        type: `${DOMAIN}/voice/forget`,
      });
      this._voiceNote = answer?.removed ? "voice_forgotten" : "voice_not_enrolled";
      this._voice = { step: "idle" };
    } catch (err) {
      this.voice({ type: "failed", error: voiceError(err) });
    }
  }

  private async _openMicrophone(): Promise<void> {
    const microphone = new Microphone();
    this._microphone = microphone;
    try {
      await microphone.open();
    } catch (err) {
      await microphone.close();
      if (this._microphone === microphone) this.voice({ type: "failed", error: voiceError(err) });
      return;
    }
    if (this._microphone === microphone) this.voice({ type: "mic_ready" });
    else await microphone.close();
  }

  private async _closeMicrophone(): Promise<void> {
    clearTimeout(this._autoStop);
    const microphone = this._microphone;
    this._microphone = undefined;
    await microphone?.close();
  }

  private async _sendVoice(clips: string[]): Promise<void> {
    try {
      const answer = await this.hass?.connection.sendMessagePromise<{
        samples: number;
        skipped: string[];
      }>({ type: `${DOMAIN}/voice/enrol`, clips });
      this.voice({
        type: "learned",
        samples: answer?.samples ?? 0,
        skipped: answer?.skipped?.length ?? 0,
      });
    } catch (err) {
      this.voice({ type: "failed", error: voiceError(err) });
    }
  }

  protected override render(): TemplateResult {
    const config = this._config;
    if (!config?.entity) {
      return html`<ha-card><div class="card"><p>${this.t("no_entity")}</p></div></ha-card>`;
    }
    const model = this._model;
    const now = this._now;
    const device = config.satellite ? this.hass?.states[config.satellite]?.state : undefined;
    const state = faceState(model, now, device);
    const name = model.persona?.name ?? config.entity;
    const emotion = model.emotion;
    const image = model.persona?.faces[emotion] ?? model.persona?.faces.neutral;
    const label = this.t("face", {
      name,
      state: this.t(state),
      emotion: emotionName(this.language, emotion),
    });
    return html`<ha-card>
      <div class="card" lang=${this.language}>
        <div class="top">
          ${renderFace(emotion, state, label, image)}
          <div class="who">
            <span class="name">${name}</span>
            <span class="state">${this.t(state)} · ${emotionName(this.language, emotion)}</span>
            ${model.turn?.recognised
              ? html`<span class="heard">${this.t("recognised", { person: model.turn.recognised })}</span>`
              : nothing}
          </div>
        </div>
        ${this._error ? html`<p class="error" role="alert">${this._error}</p>` : nothing}
        ${model.missed ? html`<p class="note">${this.t("missed")}</p>` : nothing}
        ${config.show_subtitles ? this._subtitles(name) : nothing}
        ${config.show_tools ? this._tools() : nothing}
        ${config.show_confirmations ? this._held(now) : nothing}
        ${config.show_memories ? this._memories(name) : nothing}
        ${config.show_voice ? this._voicePart() : nothing}
      </div>
    </ha-card>`;
  }

  private _subtitles(name: string): TemplateResult {
    const subtitle = currentSubtitle(this._model, this._now);
    return html`<div
      class="subtitle"
      role="log"
      aria-live="polite"
      aria-label=${this.t("subtitles", { name })}
    >
      ${subtitle
        ? html`${subtitle.gestures.map((g) => html`<span class="gesture">${g}</span>`)}<span
              class="line"
              >${subtitle.text}</span
            >`
        : nothing}
    </div>`;
  }

  private _tools(): TemplateResult | typeof nothing {
    const tools = this._model.turn?.endedAt === undefined ? this._model.tools : [];
    if (!tools.length) return nothing;
    return html`<section>
      <h3>${this.t("tools")}</h3>
      <ul>
        ${tools.map(
          (tool) =>
            html`<li class="tool">${tool.name} · ${this.t(`status_${tool.status}` as StringKey)}</li>`,
        )}
      </ul>
    </section>`;
  }

  private _held(now: number): TemplateResult | typeof nothing {
    const held = liveHeld(this._model, now);
    if (!held.length) return nothing;
    return html`<section>
      <h3>${this.t("held")}</h3>
      <ul>
        ${held.map((item) => {
          const what = describeHeld(item, this.language);
          const seconds = Math.max(0, Math.round(item.expires_at - now / 1000));
          return html`<li class="held" data-id=${item.id}>
            <span class="what"
              >${what} <small>(${this.t("expires", { seconds })})</small>${item.needs_adult
                ? html`<small class="adult">${this.t("needs_adult")}</small>`
                : nothing}</span
            >
            <button
              class="approve"
              aria-label=${this.t("approve_label", { what })}
              @click=${() => this.answer(item, true)}
            >
              ${this.t("approve")}
            </button>
            <button
              class="deny"
              aria-label=${this.t("deny_label", { what })}
              @click=${() => this.answer(item, false)}
            >
              ${this.t("deny")}
            </button>
          </li>`;
        })}
      </ul>
    </section>`;
  }

  private _memories(name: string): TemplateResult {
    const model = this._model;
    let body: TemplateResult;
    if (!model.memoryAvailable) body = html`<p>${this.t("memory_off")}</p>`;
    else if (!model.memories.length) body = html`<p>${this.t("no_memories")}</p>`;
    else
      body = html`<ul>
        ${model.memories.map(
          (memory) =>
            html`<li class="memory" data-id=${memory.id}>
              <span class="text">${memory.text}</span>
              <button
                class="forget"
                aria-label=${this.t("forget_label", { what: memory.text })}
                @click=${() => this.forget(memory.id)}
              >
                ${this.t("forget")}
              </button>
            </li>`,
        )}
      </ul>`;
    return html`<section>
      <h3>${this.t("memories", { name })}</h3>
      ${body}
    </section>`;
  }

  private _voicePart(): TemplateResult {
    const voice = this._voice;
    const teach = (key: StringKey) =>
      html`<button class="voice-teach" @click=${() => this.voice({ type: "start" })}>${this.t(key)}</button>`;
    const cancel = html`<button class="voice-cancel" @click=${() => this.voice({ type: "cancel" })}>
      ${this.t("voice_cancel")}
    </button>`;
    let body: TemplateResult;
    switch (voice.step) {
      case "idle":
        body = html`${this._voiceNote ? html`<p class="voice-note">${this.t(this._voiceNote)}</p>` : nothing}
          ${teach("voice_teach")}
          <button class="voice-forget" @click=${() => this.forgetVoice()}>${this.t("voice_forget")}</button>`;
        break;
      case "asking":
        body = html`<p class="voice-note">${this.t("voice_asking")}</p>
          ${cancel}`;
        break;
      case "ready":
      case "recording": {
        const n = voice.index + 1;
        const phrase = this.t(`voice_phrase_${n}` as StringKey);
        body = html`<p class="voice-phrase" data-index=${n}>
            ${this.t("voice_phrase", { n, total: PHRASES })} <q>${phrase}</q>
          </p>
          ${voice.step === "ready"
            ? html`<button class="voice-record" @click=${() => this.voice({ type: "record" })}>
                ${this.t("voice_record")}
              </button>`
            : html`<span class="voice-recording" role="status">${this.t("voice_recording")}</span>
                <button class="voice-stop" @click=${() => this.stopRecording()}>${this.t("voice_stop")}</button>`}
          ${cancel}`;
        break;
      }
      case "sending":
        body = html`<p class="voice-note" role="status">${this.t("voice_sending")}</p>`;
        break;
      case "done":
        body = html`<p class="voice-done" role="status">${this.t("voice_done", { samples: voice.samples })}</p>
          ${voice.skipped
            ? html`<p class="voice-note">${this.t("voice_skipped", { skipped: voice.skipped })}</p>`
            : nothing}
          ${teach("voice_teach")}`;
        break;
      case "error":
        body = html`<p class="voice-error" role="alert">${voiceErrorLine(this, voice)}</p>
          ${teach("voice_again")}`;
        break;
    }
    return html`<section class="voice">
      <h3>${this.t("voice")}</h3>
      ${body}
    </section>`;
  }
}

function voiceErrorLine(card: CompanionCard, step: Extract<VoiceStep, { step: "error" }>): string {
  const error = step.error;
  if (error.kind === "other") return card.t("failed", { error: error.message });
  return card.t(`voice_${error.kind}` as StringKey);
}

if (!customElements.get("companion-card")) {
  customElements.define("companion-card", CompanionCard);
  const registry = window as unknown as { customCards?: Array<Record<string, unknown>> };
  registry.customCards = registry.customCards ?? [];
  registry.customCards.push({
    type: "companion-card",
    name: localize(pickLanguage(navigator.language), "card_name"),
    description: localize(pickLanguage(navigator.language), "card_description"),
    preview: true,
    getEntitySuggestion,
    documentationURL: "https://github.com/companion-agent/companion_agent#the-companion-card",
  });
}
