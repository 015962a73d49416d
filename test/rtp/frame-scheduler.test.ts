import t from 'tap';
import { FrameScheduler } from '../../src/rtp/frame-scheduler.js';

t.test('a stalled loop skips the missed slots instead of sending them in a burst', async (t) => {
  const frames: number[] = [];
  const dues: bigint[] = [];
  let scheduler!: FrameScheduler;
  await new Promise<void>((resolve) => {
    scheduler = new FrameScheduler((due, frame) => {
      frames.push(frame);
      dues.push(due);
      if (frame === 3) {
        // Block the loop for 200 ms: ten slots pass.
        const until = process.hrtime.bigint() + 200_000_000n;
        while (process.hrtime.bigint() < until);
      }
      if (frames.length >= 15) {
        scheduler.stop();
        resolve();
      }
    });
    scheduler.start();
  });
  t.same(frames.slice(0, 4), [0, 1, 2, 3]);
  t.ok(frames[4] >= 9, `after the stall the clock resumes at the current slot (frame ${frames[4]}), not at 4`);
  for (let i = 1; i < frames.length; i++) {
    t.ok(frames[i] > frames[i - 1], 'frame numbers only grow');
    t.equal(dues[i] - dues[0], BigInt(frames[i]) * 20_000_000n, 'due times are absolute: start + k·20 ms');
  }
  t.equal(frames.length + scheduler.skippedTicks, frames[frames.length - 1] + 1, 'every slot was either ticked or counted as skipped');
});
