// The harness finds the server binary where cargo put it, not under the checkout's target/:
// with CARGO_TARGET_DIR elsewhere (a shared build directory, CI caches), `scripts/test` used to
// stop every browser test with "no server binary at <checkout>/target/debug/hidden-front".
// No browser is started here.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cargoTargetDir, serverBinary } from "./harness.mjs";

test("the server binary is looked up in CARGO_TARGET_DIR", () => {
  const saved = { bin: process.env.HF_BINARY, target: process.env.CARGO_TARGET_DIR };
  const elsewhere = mkdtempSync(join(tmpdir(), "hf-target-"));
  try {
    delete process.env.HF_BINARY;
    process.env.CARGO_TARGET_DIR = elsewhere;
    assert.equal(cargoTargetDir(), elsewhere);
    assert.throws(() => serverBinary(), new RegExp(`no server binary at ${join(elsewhere, "debug")}`));
    mkdirSync(join(elsewhere, "debug"));
    // Written now, so newer than web/dist: not refused as stale.
    writeFileSync(join(elsewhere, "debug", "hidden-front"), "");
    assert.equal(serverBinary(), join(elsewhere, "debug", "hidden-front"));
  } finally {
    for (const [name, value] of [["HF_BINARY", saved.bin], ["CARGO_TARGET_DIR", saved.target]]) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    rmSync(elsewhere, { recursive: true, force: true });
  }
});
