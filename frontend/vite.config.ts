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
