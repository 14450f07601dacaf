// The card's visual editor: persona, satellite or media player, and what to show, through
// HA's own ha-form (present wherever the dashboard editor is).

import { html, LitElement, type TemplateResult } from "lit";
import { localize, pickLanguage, type StringKey } from "./strings";
import type { CompanionCardConfig, Hass } from "./types";

export const EDITOR_SCHEMA = [
  {
    name: "entity",
    required: true,
    selector: { entity: { filter: { domain: "conversation", integration: "companion_agent" } } },
  },
  {
    name: "satellite",
    selector: { entity: { filter: [{ domain: "assist_satellite" }, { domain: "media_player" }] } },
  },
  { name: "show_subtitles", selector: { boolean: {} } },
  { name: "show_tools", selector: { boolean: {} } },
  { name: "show_confirmations", selector: { boolean: {} } },
  { name: "show_memories", selector: { boolean: {} } },
  { name: "show_voice", selector: { boolean: {} } },
] as const;

export class CompanionCardEditor extends LitElement {
  static override properties = {
    hass: { attribute: false },
    _config: { state: true },
  };

  hass?: Hass;
  _config?: CompanionCardConfig;

  setConfig(config: CompanionCardConfig): void {
    this._config = config;
  }

  private _label = (field: { name: string }): string =>
    localize(pickLanguage(this.hass?.locale?.language ?? this.hass?.language), field.name as StringKey);

  /** Take ha-form's new values and tell the dashboard editor. */
  valueChanged(value: Partial<CompanionCardConfig>): void {
    const config = { ...this._config, ...value } as CompanionCardConfig;
    if (!config.satellite) delete config.satellite;
    this._config = config;
    this.dispatchEvent(
      new CustomEvent("config-changed", { detail: { config }, bubbles: true, composed: true }),
    );
  }

  protected override render(): TemplateResult {
    return html`<ha-form
      .hass=${this.hass}
      .data=${this._config}
      .schema=${EDITOR_SCHEMA}
      .computeLabel=${this._label}
      @value-changed=${(ev: CustomEvent<{ value: Partial<CompanionCardConfig> }>) =>
        this.valueChanged(ev.detail.value)}
    ></ha-form>`;
  }
}

if (!customElements.get("companion-card-editor")) {
  customElements.define("companion-card-editor", CompanionCardEditor);
}
