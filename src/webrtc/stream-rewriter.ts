/**
 * One continuous outgoing RTP stream made of whatever arrives: packets keep their spacing in sequence and time
 * (gaps and reordering stay visible to the receiver's jitter buffer), and when the source changes (a new SSRC: the
 * browser replaced its track, the trunk put the call on hold) the stream carries on one packet later instead of
 * jumping, so the far side never sees a second SSRC or a clock step.
 */
import { addTimestamp, nextSequence, sequenceDelta } from '../rtp/rtp-packet.js';
import { FRAME_SAMPLES } from '../rtp/g711.js';
import { randomInt } from 'node:crypto';

export interface Rewritten {
  sequence: number;
  timestamp: number;
  /** The first packet of a new source (and of the stream): a marker bit belongs on it. */
  sourceChanged: boolean;
}

export class RtpStreamRewriter {
  readonly ssrc: number;
  private source: number | undefined;
  private sequenceOffset = 0;
  private timestampOffset = 0;
  /** The newest packet out (by sequence), where a new source continues from. */
  private newestSequence: number | undefined;
  private newestTimestamp = 0;

  constructor(ssrc = randomInt(1, 0xffffffff), private readonly frameTicks = FRAME_SAMPLES) {
    this.ssrc = ssrc >>> 0;
  }

  rewrite(sourceSsrc: number, sequence: number, timestamp: number): Rewritten {
    const sourceChanged = sourceSsrc !== this.source;
    if (sourceChanged) {
      this.source = sourceSsrc;
      const firstSequence = this.newestSequence === undefined ? randomInt(0, 0x10000) : nextSequence(this.newestSequence);
      const firstTimestamp = this.newestSequence === undefined ? randomInt(0, 0xffffffff) : addTimestamp(this.newestTimestamp, this.frameTicks);
      this.sequenceOffset = (firstSequence - sequence) & 0xffff;
      this.timestampOffset = (firstTimestamp - timestamp) >>> 0;
    }
    const out = { sequence: nextSequence(sequence, this.sequenceOffset), timestamp: addTimestamp(timestamp, this.timestampOffset), sourceChanged };
    if (this.newestSequence === undefined || sequenceDelta(this.newestSequence, out.sequence) > 0) {
      this.newestSequence = out.sequence;
      this.newestTimestamp = out.timestamp;
    }
    return out;
  }
}
