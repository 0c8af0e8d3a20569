/**
 * Batches redraw requests: however many state changes come in one frame (an event, its view's
 * answer, an inference update), the screen is drawn once, at the next animation frame, from the
 * state as it is then.
 */
export class FrameScheduler {
  private pending = false;

  constructor(
    private readonly draw: () => void,
    private readonly nextFrame: (callback: () => void) => void = (callback) => void requestAnimationFrame(callback),
  ) {}

  /** Asks for one drawing at the next frame; further requests before it change nothing. */
  request(): void {
    if (this.pending) return;
    this.pending = true;
    this.nextFrame(() => {
      this.pending = false;
      this.draw();
    });
  }
}
