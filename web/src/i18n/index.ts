/**
 * The page's four languages (the rule pages' languages) and the lookup every label goes through,
 * so no English reaches a player who chose another language; server errors are translated from
 * their stable reason, never shown from the server's English message.
 */
import { en, type Key } from "./en.js";
import { ko } from "./ko.js";
import { zh } from "./zh.js";
import { ja } from "./ja.js";

export type { Key };
/** The languages of the rule pages. */
export type Lang = "en" | "ko" | "zh" | "ja";

/** Every language's messages; `en` is the reference set of keys. */
export const messages: Record<Lang, Record<Key, string>> = { en, ko, zh, ja };
/** The languages in the order the switch offers them. */
export const LANGS: Lang[] = ["en", "ko", "zh", "ja"];
/** Each language's own name, for the switch. */
export const LANG_NAMES: Record<Lang, string> = { en: "English", ko: "한국어", zh: "中文", ja: "日本語" };

let current: Lang = "en";

/** The first supported language among the browser's preferences. */
export function pickLanguage(prefs: readonly string[], stored: string | null): Lang {
  if (stored && (LANGS as string[]).includes(stored)) return stored as Lang;
  for (const p of prefs) {
    const base = p.toLowerCase().split("-")[0] ?? "";
    if ((LANGS as string[]).includes(base)) return base as Lang;
  }
  return "en";
}

/** Switches every later `t` call to `lang`. */
export function setLanguage(lang: Lang): void {
  current = lang;
}

/** The language in use. */
export function language(): Lang {
  return current;
}

/** The message for `key` in the current language, with `{name}` placeholders filled. */
export function t(key: Key, params: Record<string, string | number> = {}): string {
  const text = messages[current][key] ?? en[key];
  return text.replace(/\{(\w+)\}/g, (_, name: string) => String(params[name] ?? `{${name}}`));
}

/** Whether a key exists (for reasons and problems named by the server or the engine). */
export function hasKey(key: string): key is Key {
  return key in en;
}

/** The translated text of a server error: its reason, else its code, never its message. */
export function reasonText(reason: string, code: string): string {
  const key = `reason.${reason}`;
  if (hasKey(key)) return t(key);
  return t("error.generic", { code: code || reason || "?" });
}

/** A piece's localised name by family and code. */
export function pieceName(family: "junqi" | "gunjin", code: string): string {
  const key = `piece.${family}.${code}`;
  return hasKey(key) ? t(key) : code;
}

/** A piece's short label on the board. */
export function pieceShort(family: "junqi" | "gunjin", code: string): string {
  const key = `short.${family}.${code}`;
  return hasKey(key) ? t(key) : code;
}
