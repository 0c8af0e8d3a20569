/**
 * A tiny element builder: the page is plain DOM (no framework), built by functions that return
 * elements. Attributes are set one by one (never a style attribute: the content security policy
 * forbids inline styles), so the markup stays CSP-clean.
 */
export type Child = Node | string | number | null | undefined | false | Child[];
/** Attributes for `h`: values, or listeners for `on*` names. */
export type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;

/**
 * The listeners `h` gave each element, by event type. The element itself listens through
 * `dispatch`, which calls the one recorded here, so `patchChildren` can hand a kept element the
 * listeners of the element drawn in its place (whose closures see the newest state).
 */
const listeners = new WeakMap<EventTarget, Record<string, EventListener>>();

function dispatch(this: EventTarget, e: Event): void {
  listeners.get(this)?.[e.type]?.call(this, e);
}

/** Creates an element: `on*` attributes become listeners, `true` an empty attribute. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") {
      const type = k.slice(2).toLowerCase();
      listeners.set(el, { ...listeners.get(el), [type]: v });
      el.addEventListener(type, dispatch);
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

/**
 * The attributes that say which element a drawn element is, in the order they are read: a kept
 * element is one with the same tag and the same value of the first of these it has (a square, a
 * move-list row by its event's seq, a field, an action, a mark button).
 */
const KEY_ATTRIBUTES = ["data-key", "data-square", "data-seq", "data-field", "data-action", "data-mark"];

/** The identity of a drawn node among its siblings, or null for one matched by position. */
function keyOf(n: Node): string | null {
  if (!(n instanceof Element)) return null;
  for (const attr of KEY_ATTRIBUTES) {
    const v = n.getAttribute(attr);
    if (v !== null) return `${n.nodeName}[${attr}=${v}]`;
  }
  return null;
}

/**
 * Makes the children of `root` what `next` draws, keeping every existing node that has a
 * counterpart: by key (`KEY_ATTRIBUTES`) where the node has one, else the next unused sibling of
 * the same tag (or text). A kept node takes the new one's attributes, inline style (through the
 * CSSOM: the content security policy forbids style attributes), input value and checked state,
 * listeners and children; only nodes without a counterpart are created or removed. So focus,
 * scroll offsets, text selections and CSS transitions survive a redraw.
 */
export function patchChildren(root: Element, next: Child[]): void {
  const fresh = document.createElement("div");
  append(fresh, next);
  morphChildren(root, fresh);
}

function morphChildren(into: Node, from: Node): void {
  const wanted = Array.from(from.childNodes);
  const old = Array.from(into.childNodes);
  const keyed = new Map<string, Node>();
  const loose: Node[] = [];
  for (const n of old) {
    const k = keyOf(n);
    if (k !== null && !keyed.has(k)) keyed.set(k, n);
    else if (k === null) loose.push(n);
  }
  const result = wanted.map((n) => {
    const k = keyOf(n);
    let kept: Node | undefined;
    if (k !== null) {
      kept = keyed.get(k);
      keyed.delete(k);
    } else {
      const i = loose.findIndex((o) => o.nodeName === n.nodeName);
      if (i >= 0) kept = loose.splice(i, 1)[0];
    }
    if (!kept) return n;
    morph(kept, n);
    return kept;
  });
  const keep = new Set(result);
  for (const n of old) if (!keep.has(n)) into.removeChild(n);
  result.forEach((n, i) => {
    const at = into.childNodes[i] ?? null;
    if (at !== n) into.insertBefore(n, at);
  });
}

/** Makes the kept node `into` look and act as `from` (same tag or both text). */
function morph(into: Node, from: Node): void {
  if (!(into instanceof Element) || !(from instanceof Element)) {
    if (into.nodeValue !== from.nodeValue) into.nodeValue = from.nodeValue;
    return;
  }
  for (const name of into.getAttributeNames()) if (name !== "style" && !from.hasAttribute(name)) into.removeAttribute(name);
  for (const name of from.getAttributeNames()) {
    if (name === "style") continue;
    const v = from.getAttribute(name) ?? "";
    if (into.getAttribute(name) !== v) into.setAttribute(name, v);
  }
  if ((into instanceof HTMLElement || into instanceof SVGElement) && (from instanceof HTMLElement || from instanceof SVGElement)) {
    const a = into.style;
    const b = from.style;
    for (const prop of Array.from(a)) if (!b.getPropertyValue(prop)) a.removeProperty(prop);
    for (const prop of Array.from(b)) {
      const v = b.getPropertyValue(prop);
      if (a.getPropertyValue(prop) !== v) a.setProperty(prop, v, b.getPropertyPriority(prop));
    }
  }
  if (into instanceof HTMLInputElement && from instanceof HTMLInputElement) {
    if (into.value !== from.value) into.value = from.value;
    if (into.checked !== from.checked) into.checked = from.checked;
  }
  const handlers = listeners.get(from);
  if (handlers) {
    for (const type of Object.keys(handlers)) into.addEventListener(type, dispatch);
    listeners.set(into, handlers);
  } else listeners.delete(into);
  morphChildren(into, from);
}
