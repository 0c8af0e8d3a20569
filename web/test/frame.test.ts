import { describe, expect, it } from "vitest";
import { FrameScheduler } from "../src/ui/frame.js";

describe("the frame scheduler", () => {
  it("draws once per frame however many redraws were asked for, and again for a request after it", () => {
    const frames: Array<() => void> = [];
    let draws = 0;
    const scheduler = new FrameScheduler(() => draws++, (callback) => frames.push(callback));
    scheduler.request();
    scheduler.request();
    scheduler.request();
    expect(frames.length, "one frame asked for").toBe(1);
    expect(draws, "nothing is drawn before the frame").toBe(0);
    frames.shift()!();
    expect(draws).toBe(1);
    scheduler.request();
    expect(frames.length).toBe(1);
    frames.shift()!();
    expect(draws).toBe(2);
  });
});
