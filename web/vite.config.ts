import { defineConfig } from "vitest/config";

// The page is served by the gateway: index.html at /, /game/{id}, /watch/{id}, /invite/{code},
// hashed files under /assets/. In development Vite proxies the gateway's API (/v1, WebSocket
// included) to a local `hidden-front serve` (HF_DEV_GATEWAY, default 127.0.0.1:8080).
const gateway = process.env.HF_DEV_GATEWAY ?? "http://127.0.0.1:8080";

export default defineConfig({
  base: "/",
  build: {
    outDir: process.env.HF_WEB_OUT ?? "dist",
    emptyOutDir: true,
    assetsDir: "assets",
    target: "es2022",
    // The wasm is fetched as a file from /assets/ (never inlined: the CSP allows no data: URLs).
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
  server: {
    proxy: {
      "/v1": { target: gateway, ws: true, changeOrigin: true },
    },
  },
  test: {
    environment: "node",
    include: ["test/**/*.test.ts"],
  },
});
