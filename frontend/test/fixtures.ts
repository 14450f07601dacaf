// A stand-in for HA's frontend objects (hass, its WebSocket connection) that records what
// the card asks for and lets a test push subscription events.

import type { CardEvent, ConfirmationEvent, Hass } from "../src/types";
import { CompanionCard } from "../src/companion-card";

export interface FakeHass extends Hass {
  push(event: CardEvent): void;
  calls: Array<{ domain: string; service: string; data: Record<string, unknown> }>;
  subscriptions: Array<Record<string, unknown>>;
  /** Commands sent with sendMessagePromise, and what each type answers (an Error: rejected). */
  sent: Array<Record<string, unknown>>;
  answers: Record<string, unknown>;
  /** What a service call is refused with, by service (HA's WebSocket error object). */
  refusals: Record<string, { code: string; message: string; translation_key?: string }>;
}

export function fakeHass(language = "en", fail?: { code: string; message: string }): FakeHass {
  let listener: ((event: CardEvent) => void) | undefined;
  const hass: FakeHass = {
    states: {},
    entities: {
      "conversation.ada": { entity_id: "conversation.ada", platform: "companion_agent" },
      "conversation.other": { entity_id: "conversation.other", platform: "openai_conversation" },
    },
    language,
    locale: { language },
    calls: [],
    subscriptions: [],
    sent: [],
    answers: {},
    refusals: {},
    connection: {
      async subscribeMessage<T>(callback: (message: T) => void, message: Record<string, unknown>) {
        hass.subscriptions.push(message);
        if (fail) throw fail;
        listener = callback as unknown as (event: CardEvent) => void;
        return () => {
          listener = undefined;
        };
      },
      async sendMessagePromise<T>(message: Record<string, unknown>): Promise<T> {
        hass.sent.push(message);
        const answer = hass.answers[String(message.type)];
        if (answer instanceof Error) throw answer;
        return answer as T;
      },
    },
    async callService(domain, service, data) {
      hass.calls.push({ domain, service, data });
      const refusal = hass.refusals[service];
      if (refusal) throw refusal;
      return {};
    },
    push(event) {
      if (!listener) throw new Error("not subscribed");
      listener(event);
    },
  };
  return hass;
}

export const SNAPSHOT = {
  kind: "snapshot",
  persona: {
    entity_id: "conversation.ada",
    name: "Ada",
    profile: "card",
    language: "en",
    emotions: ["joy", "surprise"],
    gestures: ["wave"],
    faces: {},
  },
  emotion: "neutral",
  confirmations: [],
  user: { id: "u1", name: "Anna", is_admin: false },
} satisfies CardEvent;

export const HELD: ConfirmationEvent = {
  kind: "confirmation",
  status: "requested",
  id: "ref-1",
  trace_id: "t1",
  action: { tool: "HassTurnOff", targets: [{ entity_id: "lock.front_door", name: "Front Door" }] },
  expires_at: Date.now() / 1000 + 60,
  token: "secret-token",
};

export async function mountCard(
  hass: FakeHass,
  config: Record<string, unknown> = { entity: "conversation.ada" },
): Promise<CompanionCard> {
  const card = document.createElement("companion-card") as CompanionCard;
  card.setConfig({ type: "custom:companion-card", ...config } as never);
  card.hass = hass;
  document.body.appendChild(card);
  await settle(card);
  return card;
}

export async function settle(card: CompanionCard): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    await card.updateComplete;
  }
}

export function shadow(card: CompanionCard): ShadowRoot {
  if (!card.shadowRoot) throw new Error("no shadow root");
  return card.shadowRoot;
}
