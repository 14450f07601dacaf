// What companion_agent/subscribe sends (custom_components/companion_agent/frontend/events.py),
// the card's configuration, and the small part of HA's frontend objects the card uses.

export type TurnOutcome = "complete" | "cut" | "interrupted" | "failed" | "timed_out";
export type ToolStatus = "running" | "completed" | "error" | "pending_confirmation";
export type ConfirmationStatus =
  | "requested"
  | "executed"
  | "failed"
  | "cancelled"
  | "expired"
  | "interrupted";

export interface PersonaFace {
  entity_id: string;
  name: string;
  profile: string;
  language: string;
  emotions: string[];
  gestures: string[];
  faces: Record<string, string>;
}

export interface HeldTarget {
  entity_id?: string;
  name?: string;
  action?: string;
  domain?: string;
}

export interface ConfirmationEvent {
  kind: "confirmation";
  status: ConfirmationStatus;
  id: string;
  trace_id: string;
  action: { tool: string; targets: HeldTarget[] };
  expires_at: number;
  token?: string;
  /** Only an adult may approve it: an enrolled adult's voice, or a signed-in person not
   * enrolled as a child. */
  needs_adult?: boolean;
}

export interface MemoryItem {
  id: string;
  topic: string;
  text: string;
}

export type CardEvent =
  | {
      kind: "snapshot";
      persona: PersonaFace;
      emotion: string;
      confirmations: ConfirmationEvent[];
      user: { id: string; name: string; is_admin: boolean };
    }
  | { kind: "memories"; available: boolean; items: MemoryItem[] }
  | { kind: "turn_started"; trace_id: string; recognised?: string | null }
  | {
      kind: "sentence";
      trace_id: string;
      text: string;
      gestures: string[];
      emotion: string | null;
      timing: "audio" | "written";
    }
  | { kind: "emotion"; trace_id: string; emotion: string }
  | { kind: "tool_call"; trace_id: string; tool_id: string; name: string; status: ToolStatus }
  | { kind: "turn_ended"; trace_id: string; outcome: TurnOutcome }
  | ConfirmationEvent
  | { kind: "dropped"; count: number };

export interface CompanionCardConfig {
  type: string;
  entity: string;
  satellite?: string;
  show_subtitles?: boolean;
  show_tools?: boolean;
  show_confirmations?: boolean;
  show_memories?: boolean;
  show_voice?: boolean;
}

export interface HassEntityState {
  entity_id: string;
  state: string;
  attributes: Record<string, unknown>;
}

export interface HassConnection {
  subscribeMessage<T>(
    callback: (message: T) => void,
    message: Record<string, unknown>,
  ): Promise<() => Promise<void> | void>;
  sendMessagePromise<T>(message: Record<string, unknown>): Promise<T>;
}

export interface Hass {
  states: Record<string, HassEntityState>;
  entities?: Record<string, { entity_id: string; platform: string }>;
  language?: string;
  locale?: { language: string };
  connection: HassConnection;
  callService(
    domain: string,
    service: string,
    data: Record<string, unknown>,
  ): Promise<unknown>;
}
