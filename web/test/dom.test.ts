// @vitest-environment jsdom
import { describe, expect, it } from "vitest";
import { h, patchChildren } from "../src/ui/dom.js";

/** A board-like drawing: squares keyed by `data-square`, one picked, each with its click. */
function squares(picked: string, clicks: string[], label = ""): HTMLElement[] {
  return ["A1", "A2", "A3"].map((sq) => {
    const b = h("button", { type: "button", "data-square": sq, "data-selected": sq === picked, onclick: () => clicks.push(`${label}${sq}`) }, sq);
    b.style.left = `${sq.charCodeAt(1)}%`;
    return b;
  });
}

describe("patchChildren", () => {
  it("keeps keyed nodes, so the focused square keeps the focus, and gives them the new drawing's attributes and listeners", () => {
    const root = h("div");
    document.body.replaceChildren(root);
    const clicks: string[] = [];
    patchChildren(root, squares("A1", clicks, "old "));
    const a2 = root.querySelector<HTMLButtonElement>('[data-square="A2"]')!;
    a2.focus();
    patchChildren(root, squares("A2", clicks, "new "));
    expect(root.querySelector('[data-square="A2"]'), "the same node").toBe(a2);
    expect(document.activeElement).toBe(a2);
    expect(a2.hasAttribute("data-selected")).toBe(true);
    expect(root.querySelector('[data-square="A1"]')!.hasAttribute("data-selected")).toBe(false);
    a2.click();
    expect(clicks, "one listener, the newest drawing's").toEqual(["new A2"]);
  });

  it("keeps a scrolled list and its rows by seq, appending the new row without touching the others", () => {
    const root = h("div");
    document.body.replaceChildren(root);
    const list = (n: number) => h("ol", { "data-field": "moves" }, Array.from({ length: n }, (_, i) => h("li", { "data-seq": String(i + 1) }, `move ${i + 1}`)));
    patchChildren(root, [h("h2", {}, "Moves"), list(3)]);
    const ol = root.querySelector("ol")!;
    const rows = [...ol.children];
    ol.scrollTop = 7;
    patchChildren(root, [h("h2", {}, "Moves"), list(4)]);
    expect(root.querySelector("ol")).toBe(ol);
    expect([...ol.children].slice(0, 3)).toEqual(rows);
    expect(ol.lastElementChild!.textContent).toBe("move 4");
    expect(ol.scrollTop).toBe(7);
  });

  it("moves, adds and removes nodes to the new order and copies styles, values and text", () => {
    const root = h("div");
    document.body.replaceChildren(root);
    const input = (value: string) => h("input", { type: "text", "data-field": "move-text", value });
    patchChildren(root, [h("p", { "data-field": "a" }, "one"), input("A6"), h("p", { "data-field": "b" }, "two")]);
    const [a, typed, b] = [...root.children] as HTMLElement[];
    const styled = h("p", { "data-field": "a" }, "uno");
    styled.style.width = "50%";
    patchChildren(root, [h("p", { "data-field": "b" }, "two"), styled, input("A6 A7"), h("span", {}, "new")]);
    expect([...root.children]).toEqual([b, a, typed, root.querySelector("span")]);
    expect(a!.textContent).toBe("uno");
    expect(a!.style.width).toBe("50%");
    expect((typed as HTMLInputElement).value).toBe("A6 A7");
    patchChildren(root, [h("p", { "data-field": "b" }, "two")]);
    expect([...root.children]).toEqual([b]);
    expect(a!.isConnected).toBe(false);
  });
});
