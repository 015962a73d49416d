/**
 * Measures the media plane's send pacing: N sender→receiver pairs on loopback in one engine, each sender playing
 * a tone for `seconds`. Returns how far sends strayed from their 20 ms slots and the jitter the receivers saw.
 */
import { MediaEngine } from './media-engine.js';
import type { MediaHandle } from './media-handle.js';
import { PacingHistogram } from './pacing-histogram.js';
import type { PortRange } from './port-pool.js';
import { generateTone } from './tone.js';

export interface PacingProbeOptions {
  /** Sender/receiver pairs. */
  sessions: number;
  seconds: number;
  workers?: number;
  portRange?: PortRange;
  spinMicros?: number;
}

export interface PacingProbeResult {
  sessions: number;
  seconds: number;
  workers: number;
  packetsSent: number;
  packetsReceived: number;
  lost: number;
  /** Send time against the 20 ms schedule, over every sent packet of every sender, µs. */
  pacing: { samples: number; maxUs: number; p99Us: number; meanUs: number };
  /** RFC 3550 interarrival jitter at the receivers, ms. */
  receiveJitterMs: { max: number; mean: number };
}

export async function measurePacing(options: PacingProbeOptions): Promise<PacingProbeResult> {
  const { sessions, seconds } = options;
  const workers = options.workers ?? 1;
  const portRange = options.portRange ?? { min: 30000, max: 30000 + 4 * sessions + 4 * workers + 8 };
  const engine = await MediaEngine.start({ workers, portRange, spinMicros: options.spinMicros });
  try {
    const receivers: MediaHandle[] = [];
    const senders: MediaHandle[] = [];
    for (let i = 0; i < sessions; i++) receivers.push(await engine.open({ codec: 'PCMU' }));
    for (let i = 0; i < sessions; i++) senders.push(await engine.open({ codec: 'PCMU', remote: { host: '127.0.0.1', port: receivers[i].localPort } }));
    const tone = generateTone([440], seconds * 1000);
    await Promise.all(
      senders.map((sender) => {
        const done = sender.played();
        sender.play(tone, { transfer: false });
        return done;
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 200)); // the last packets in flight
    const pacing = new PacingHistogram();
    let packetsSent = 0;
    let packetsReceived = 0;
    let lost = 0;
    let jitterMax = 0;
    let jitterSum = 0;
    for (const sender of senders) {
      const { stats } = await sender.stop();
      pacing.merge(stats.pacing);
      packetsSent += stats.packetsSent;
    }
    for (const receiver of receivers) {
      const { stats } = await receiver.stop();
      packetsReceived += stats.packetsReceived;
      lost += stats.lost;
      jitterMax = Math.max(jitterMax, stats.jitterMs);
      jitterSum += stats.jitterMs;
    }
    const { histogram: _histogram, ...summary } = pacing.summary();
    return {
      sessions,
      seconds,
      workers,
      packetsSent,
      packetsReceived,
      lost,
      pacing: summary,
      receiveJitterMs: { max: round3(jitterMax), mean: round3(jitterSum / Math.max(1, sessions)) },
    };
  } finally {
    await engine.close();
  }
}

const round3 = (x: number): number => Math.round(x * 1000) / 1000;
