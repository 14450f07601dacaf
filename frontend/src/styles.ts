// The card's look (card.css): HA theme variables, and no motion for people who asked for
// none. Vite inlines the stylesheet as a string, minified in the built card.

import { unsafeCSS } from "lit";
import cardCss from "./card.css?inline";

export const cardStyles = unsafeCSS(cardCss);
