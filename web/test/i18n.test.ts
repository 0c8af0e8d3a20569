import { readFileSync, existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { LANGS, messages, pickLanguage, reasonText, setLanguage, t } from "../src/i18n/index.js";
import { CLIENT_REASONS } from "../src/api/ws.js";
import { RULE_SETS } from "../src/ui/lobby.js";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "../..");
const placeholders = (s: string) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();

describe("languages", () => {
  it("every key exists in every language, with the same placeholders, none empty", () => {
    const keys = Object.keys(messages.en);
    for (const lang of LANGS) {
      const m = messages[lang] as Record<string, string>;
      expect(Object.keys(m).sort(), lang).toEqual([...keys].sort());
      for (const k of keys) {
        expect(m[k], `${lang} ${k}`).toBeTruthy();
        expect(placeholders(m[k] ?? ""), `${lang} ${k}`).toEqual(placeholders((messages.en as Record<string, string>)[k] ?? ""));
      }
    }
  });

  it("every server reason of docs/errors.md has a translation", () => {
    const doc = readFileSync(resolve(repo, "docs/errors.md"), "utf8");
    const reasons = [...doc.matchAll(/^\| `([A-Z_]+)` \| `[A-Z_]+` \|/gm)].map((m) => m[1]);
    expect(reasons.length).toBeGreaterThan(40);
    for (const r of [...reasons, ...CLIENT_REASONS, "GUESTS_NOT_ALLOWED"]) {
      expect(`reason.${r}` in messages.en, r).toBe(true);
    }
  });

  it("every deployment problem the engine names has a translation", () => {
    const api = resolve(repo, "crates/web-engine/src/api.rs");
    const known = ["OFF_BOARD", "UNKNOWN_KIND", "UNKNOWN_SQUARE", "NOT_IN_OWN_HALF", "IN_CAMP", "DUPLICATE", "SAME_SQUARE", "WRONG_COUNT", "EMPTY_SQUARES", "FLAG_NOT_IN_HQ", "MINE_NOT_ON_BACK_ROWS", "MINE_IN_HQ", "BOMB_ON_FRONT_ROW", "ON_GATE"];
    const src = existsSync(api) ? readFileSync(api, "utf8") : "";
    const named = [...src.matchAll(/\("([A-Z_]+)", /g), ...src.matchAll(/reason: "([A-Z_]+)"/g)].map((m) => m[1] ?? "");
    if (src) expect(named.length).toBeGreaterThan(10);
    for (const r of [...known, ...named]) expect(`problem.${r}` in messages.en, r).toBe(true);
  });

  it("names every piece of both families and every rule set offered", () => {
    const junqi = ["9", "8", "7", "6", "5", "4", "3", "2", "1", "B", "M", "F"];
    const gunjin = ["GEN", "LTG", "MJG", "COL", "LTC", "MAJ", "CPT", "1LT", "2LT", "PLA", "TNK", "CAV", "ENG", "SPY", "MIN", "FLG"];
    for (const c of junqi) expect(`piece.junqi.${c}` in messages.en).toBe(true);
    for (const c of gunjin) expect(`piece.gunjin.${c}` in messages.en).toBe(true);
    for (const r of RULE_SETS) expect(`rules.${r}` in messages.en, r).toBe(true);
    // the rule pages' names
    expect(messages.ko["piece.junqi.9"]).toBe("사령");
    expect(messages.zh["piece.junqi.F"]).toBe("军旗");
    expect(messages.ja["piece.junqi.8"]).toBe("軍団長");
    expect(messages.ja["piece.gunjin.PLA"]).toBe("飛行機");
  });

  it("translates a reason, never showing the server's English", () => {
    setLanguage("ko");
    expect(reasonText("NOT_YOUR_TURN", "FAILED_PRECONDITION")).toBe(messages.ko["reason.NOT_YOUR_TURN"]);
    expect(reasonText("SOME_NEW_REASON", "FAILED_PRECONDITION")).toContain("FAILED_PRECONDITION");
    expect(t("game.away", { s: 12 })).toContain("12");
    setLanguage("en");
  });

  it("picks the language from the browser, a stored choice first", () => {
    expect(pickLanguage(["ko-KR", "en"], null)).toBe("ko");
    expect(pickLanguage(["fr", "zh-CN"], null)).toBe("zh");
    expect(pickLanguage(["fr"], null)).toBe("en");
    expect(pickLanguage(["ko"], "ja")).toBe("ja");
  });
});

/**
 * The piece table of a rule page: `| \`code\` | ... |` rows under a header row naming the
 * columns, as a map column name -> code -> cell.
 */
function ruleTable(file: string): Map<string, Map<string, string>> {
  const md = readFileSync(resolve(repo, "docs/rules", file), "utf8");
  const lines = md.split("\n");
  const head = lines.findIndex((l) => /^\| code \|/.test(l) && /\| English \|/.test(l));
  expect(head, `${file} has a piece table`).toBeGreaterThanOrEqual(0);
  const cells = (l: string) => l.split("|").slice(1, -1).map((c) => c.trim());
  const names = cells(lines[head]!);
  const out = new Map<string, Map<string, string>>();
  for (const name of names) out.set(name, new Map());
  for (const line of lines.slice(head + 2)) {
    if (!line.startsWith("|")) break;
    const row = cells(line);
    const code = row[0]!.replace(/`/g, "");
    names.forEach((n, i) => out.get(n)!.set(code, row[i] ?? ""));
  }
  return out;
}

describe("piece names", () => {
  it("are the rule pages' names, in every language the pages give (read from docs/rules/*.md)", () => {
    const pages = [
      { file: "junqi.md", family: "junqi", columns: { English: "en", Chinese: "zh", Korean: "ko", Japanese: "ja" } },
      { file: "gunjin-shogi.md", family: "gunjin", columns: { English: "en", Korean: "ko", Japanese: "ja" } },
    ] as const;
    for (const page of pages) {
      const table = ruleTable(page.file);
      const codes = [...table.get("English")!.keys()];
      expect(codes.length, page.file).toBeGreaterThanOrEqual(12);
      for (const [column, lang] of Object.entries(page.columns)) {
        const m = messages[lang as keyof typeof messages] as Record<string, string>;
        for (const code of codes) {
          expect(m[`piece.${page.family}.${code}`], `${lang} ${page.family} ${code} (${page.file}, ${column})`).toBe(table.get(column)!.get(code));
        }
      }
      // and the page names no piece the rule page does not have
      const named = Object.keys(messages.en).filter((k) => k.startsWith(`piece.${page.family}.`)).map((k) => k.split(".")[2]);
      expect(named.sort(), page.file).toEqual([...codes].sort());
    }
  });

  it("no other English text of the page uses the old rank names", () => {
    const old = /Field Marshal|Brigadier\b/;
    for (const [k, v] of Object.entries(messages.en)) expect(old.test(v), k).toBe(false);
  });
});
