// The persona's face: an SVG expression per emotion, drawn for the state it is in.
// No external assets: a profile that names its own images ([face] in its TOML) gets them
// as data URLs in the snapshot, and they replace the drawing for those emotions.

import { html, svg, type SVGTemplateResult, type TemplateResult } from "lit";
import type { FaceState } from "./state";

type Eyes = "round" | "happy" | "closed" | "wide" | "sad" | "angry" | "heart" | "side";

interface Expression {
  eyes: Eyes;
  mouth: string;
  brows?: [number, number];
  blush?: boolean;
}

const SMILE = "M44 78 Q60 92 76 78";
const GRIN = "M42 76 Q60 98 78 76 Z";
const FLAT = "M46 82 L74 82";
const FROWN = "M46 86 Q60 74 74 86";
const OPEN = "M52 80 a8 9 0 1 0 16 0 a8 9 0 1 0 -16 0";
const SMALL = "M54 82 Q60 86 66 82";
const WAVY = "M44 84 Q50 78 56 84 T68 84 T80 84";

export const EXPRESSIONS: Record<string, Expression> = {
  neutral: { eyes: "round", mouth: SMALL },
  calm: { eyes: "closed", mouth: SMILE },
  joy: { eyes: "happy", mouth: GRIN, blush: true },
  happy: { eyes: "happy", mouth: SMILE, blush: true },
  excited: { eyes: "wide", mouth: GRIN, brows: [-12, 12] },
  proud: { eyes: "happy", mouth: SMILE, brows: [-8, 8] },
  love: { eyes: "heart", mouth: SMILE, blush: true },
  shy: { eyes: "side", mouth: SMALL, blush: true },
  sad: { eyes: "sad", mouth: FROWN, brows: [14, -14] },
  worried: { eyes: "round", mouth: WAVY, brows: [14, -14] },
  fear: { eyes: "wide", mouth: WAVY, brows: [18, -18] },
  angry: { eyes: "angry", mouth: FROWN, brows: [-20, 20] },
  surprise: { eyes: "wide", mouth: OPEN, brows: [-6, 6] },
  surprised: { eyes: "wide", mouth: OPEN, brows: [-6, 6] },
  confused: { eyes: "round", mouth: WAVY, brows: [10, 0] },
  think: { eyes: "side", mouth: FLAT, brows: [0, -10] },
  tired: { eyes: "closed", mouth: FLAT },
};

/** Return the drawn expression of an emotion (the neutral one for tags it does not know). */
export function expressionOf(emotion: string): Expression {
  return EXPRESSIONS[emotion.toLowerCase()] ?? EXPRESSIONS.neutral;
}

function eye(x: number, kind: Eyes): SVGTemplateResult {
  switch (kind) {
    case "happy":
      return svg`<path class="eye" d="M${x - 7} 54 Q${x} 44 ${x + 7} 54" />`;
    case "closed":
      return svg`<path class="eye" d="M${x - 7} 52 Q${x} 57 ${x + 7} 52" />`;
    case "wide":
      return svg`<circle class="eye-fill" cx=${x} cy="50" r="7" /><circle class="glint" cx=${x + 2} cy="48" r="2" />`;
    case "sad":
      return svg`<circle class="eye-fill" cx=${x} cy="54" r="4.5" />`;
    case "angry":
      return svg`<path class="eye-fill" d="M${x - 6} 49 L${x + 6} 53 L${x + 5} 57 L${x - 5} 57 Z" />`;
    case "heart":
      return svg`<path class="heart" d="M${x} 58 l-6 -6 a3.5 3.5 0 0 1 6 -4 a3.5 3.5 0 0 1 6 4 Z" />`;
    case "side":
      return svg`<circle class="eye-fill" cx=${x + 3} cy="50" r="4.5" />`;
    default:
      return svg`<circle class="eye-fill blink" cx=${x} cy="52" r="5" />`;
  }
}

function brow(x: number, angle: number): SVGTemplateResult {
  return svg`<path class="brow" d="M${x - 8} 38 L${x + 8} 38" transform="rotate(${angle} ${x} 38)" />`;
}

/** Render the face for ``emotion`` in ``state``; ``image`` replaces the drawing. */
export function renderFace(
  emotion: string,
  state: FaceState,
  label: string,
  image?: string,
): TemplateResult {
  if (image) {
    return html`<div class="face state-${state}" role="img" aria-label=${label}>
      <img class="face-image" src=${image} alt="" />
      ${stateMarks(state)}
    </div>`;
  }
  const x = expressionOf(emotion);
  return html`<div class="face state-${state}" role="img" aria-label=${label}>
    <svg viewBox="0 0 120 120" aria-hidden="true" data-emotion=${emotion} data-eyes=${x.eyes}>
      <circle class="head" cx="60" cy="60" r="50" />
      ${x.blush
        ? svg`<ellipse class="blush" cx="34" cy="68" rx="7" ry="4" /><ellipse class="blush" cx="86" cy="68" rx="7" ry="4" />`
        : null}
      ${x.brows ? svg`${brow(42, x.brows[0])}${brow(78, x.brows[1])}` : null}
      ${eye(42, x.eyes)} ${eye(78, x.eyes)}
      <g class="mouth-wrap"><path class="mouth" d=${x.mouth} /></g>
    </svg>
    ${stateMarks(state)}
  </div>`;
}

function stateMarks(state: FaceState): TemplateResult | null {
  if (state === "thinking") {
    return html`<div class="dots" aria-hidden="true"><span></span><span></span><span></span></div>`;
  }
  if (state === "listening") return html`<div class="ring" aria-hidden="true"></div>`;
  return null;
}
