// Builds src/companion-card.ts into the one file the integration serves:
// custom_components/companion_agent/frontend/companion-card.js (committed; script/package
// checks it is current). `npm test` runs the unit tests in happy-dom.
import { defineConfig } from "vitest/config";

export default defineConfig({
  build: {
    outDir: "../custom_components/companion_agent/frontend",
    emptyOutDir: false,
    minify: true,
    sourcemap: false,
    reportCompressedSize: false,
    // Vite leaves the whitespace of a library in ES format; the card is no library: the
    // browser loads this one file, so it is minified whole.
    rolldownOptions: { output: { minify: true } },
    lib: {
      entry: "src/companion-card.ts",
      formats: ["es"],
      fileName: () => "companion-card.js",
    },
  },
  test: {
    environment: "happy-dom",
    include: ["test/**/*.test.ts"],
  },
});
