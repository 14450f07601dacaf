// The card's look: HA theme variables, and no motion for people who asked for none.

import { css } from "lit";

export const cardStyles = css`
  :host {
    display: block;
  }
  ha-card,
  .card {
    padding: 16px;
    display: flex;
    flex-direction: column;
    gap: 12px;
  }
  .top {
    display: flex;
    align-items: center;
    gap: 16px;
  }
  .face {
    position: relative;
    width: 112px;
    height: 112px;
    flex: none;
  }
  .face svg,
  .face-image {
    width: 100%;
    height: 100%;
    object-fit: contain;
  }
  .head {
    fill: var(--companion-face-color, #ffd98e);
    stroke: var(--primary-text-color, #222);
    stroke-width: 2.5;
  }
  .eye,
  .brow,
  .mouth {
    fill: none;
    stroke: var(--primary-text-color, #222);
    stroke-width: 3.5;
    stroke-linecap: round;
  }
  .eye-fill,
  .heart {
    fill: var(--primary-text-color, #222);
  }
  .heart {
    fill: #e0245e;
  }
  .glint {
    fill: #fff;
  }
  .blush {
    fill: #f49a9a;
    opacity: 0.7;
  }
  .mouth-wrap {
    transform-origin: 60px 80px;
  }
  .state-speaking .mouth-wrap {
    animation: talk 0.32s ease-in-out infinite alternate;
  }
  .state-idle .blink {
    animation: blink 5s infinite;
    transform-box: fill-box;
    transform-origin: center;
  }
  .dots {
    position: absolute;
    top: 0;
    right: -6px;
    display: flex;
    gap: 3px;
  }
  .dots span {
    width: 7px;
    height: 7px;
    border-radius: 50%;
    background: var(--primary-color, #03a9f4);
    animation: pulse 1.2s infinite;
  }
  .dots span:nth-child(2) {
    animation-delay: 0.2s;
  }
  .dots span:nth-child(3) {
    animation-delay: 0.4s;
  }
  .ring {
    position: absolute;
    inset: -4px;
    border-radius: 50%;
    border: 3px solid var(--primary-color, #03a9f4);
    animation: pulse 1.4s infinite;
  }
  .who {
    display: flex;
    flex-direction: column;
    gap: 4px;
    min-width: 0;
  }
  .name {
    font-size: 1.2em;
    font-weight: 500;
  }
  .state {
    color: var(--secondary-text-color, #666);
  }
  .subtitle {
    min-height: 2.6em;
    font-size: 1.15em;
    line-height: 1.3;
  }
  .gesture {
    display: inline-block;
    margin-right: 6px;
    padding: 0 6px;
    border-radius: 10px;
    font-size: 0.8em;
    background: var(--secondary-background-color, #eee);
    color: var(--secondary-text-color, #555);
    font-style: italic;
  }
  h3 {
    margin: 4px 0;
    font-size: 0.95em;
    font-weight: 500;
    color: var(--secondary-text-color, #555);
  }
  ul {
    list-style: none;
    margin: 0;
    padding: 0;
    display: flex;
    flex-direction: column;
    gap: 6px;
  }
  .tool {
    font-family: var(--code-font-family, monospace);
    font-size: 0.9em;
  }
  .held {
    border: 2px solid var(--warning-color, #ff9800);
    border-radius: 8px;
    padding: 8px;
    display: flex;
    flex-wrap: wrap;
    align-items: center;
    gap: 8px;
  }
  .held .what {
    flex: 1 1 160px;
  }
  .memory {
    display: flex;
    align-items: center;
    gap: 8px;
  }
  .memory .text {
    flex: 1;
  }
  button {
    font: inherit;
    padding: 6px 12px;
    border-radius: 6px;
    border: 1px solid var(--divider-color, #ccc);
    background: var(--card-background-color, #fff);
    color: var(--primary-text-color, #222);
    cursor: pointer;
  }
  button.approve {
    background: var(--success-color, #43a047);
    color: #fff;
    border-color: transparent;
  }
  button.deny {
    background: var(--error-color, #db4437);
    color: #fff;
    border-color: transparent;
  }
  button:focus-visible {
    outline: 3px solid var(--primary-color, #03a9f4);
    outline-offset: 2px;
  }
  .error,
  .note {
    color: var(--error-color, #db4437);
  }
  @keyframes talk {
    from {
      transform: scaleY(0.6);
    }
    to {
      transform: scaleY(1.25);
    }
  }
  @keyframes blink {
    0%,
    96%,
    100% {
      transform: scaleY(1);
    }
    98% {
      transform: scaleY(0.1);
    }
  }
  @keyframes pulse {
    0%,
    100% {
      opacity: 0.3;
    }
    50% {
      opacity: 1;
    }
  }
  @media (prefers-reduced-motion: reduce) {
    *,
    .state-speaking .mouth-wrap,
    .state-idle .blink,
    .dots span,
    .ring {
      animation: none !important;
      transition: none !important;
    }
  }
`;
