/**
 * A tiny element builder: the page is plain DOM (no framework), built by functions that return
 * elements. Attributes are set one by one (never a style attribute: the content security policy
 * forbids inline styles), so the markup stays CSP-clean.
 */
export type Child = Node | string | number | null | undefined | false | Child[];
/** Attributes for `h`: values, or listeners for `on*` names. */
export type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;

/** Creates an element: `on*` attributes become listeners, `true` an empty attribute. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") {
      el.addEventListener(k.slice(2).toLowerCase(), v);
    } else if (k === "class") {
      el.className = String(v);
    } else if (k === "value" && "value" in el) {
      (el as HTMLInputElement).value = String(v);
    } else if (v === true) {
      el.setAttribute(k, "");
    } else {
      el.setAttribute(k, String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

const SVG = "http://www.w3.org/2000/svg";

/** Creates an SVG element with attributes. */
export function s(tag: string, attrs: Record<string, string | number> = {}, ...children: SVGElement[]): SVGElement {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.appendChild(c);
  return el;
}

/**
 * Replaces the children of `root`, keeping keyboard focus on the element with the same
 * identifying data attribute (a square, an action, a field) so re-rendering never steals focus.
 */
export function replaceKeepingFocus(root: HTMLElement, next: Child[]): void {
  const active = document.activeElement;
  let selector: string | null = null;
  let selStart: number | null = null;
  let selEnd: number | null = null;
  if (active instanceof HTMLElement && root.contains(active)) {
    for (const attr of ["data-square", "data-action", "data-field", "data-mark"]) {
      const v = active.getAttribute(attr);
      if (v !== null) {
        selector = `[${attr}="${CSS.escape(v)}"]`;
        break;
      }
    }
    if (active instanceof HTMLInputElement) {
      selStart = active.selectionStart;
      selEnd = active.selectionEnd;
    }
  }
  root.replaceChildren();
  append(root, next);
  if (selector) {
    const el = root.querySelector<HTMLElement>(selector);
    if (el) {
      el.focus({ preventScroll: true });
      if (el instanceof HTMLInputElement && selStart !== null) el.setSelectionRange(selStart, selEnd);
    }
  }
}
