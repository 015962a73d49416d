/** Ferry's media plane: RTP/RTCP, G.711, RFC 4733 and in-band DTMF, sessions on worker threads. */
export { RTP_VERSION, RTP_HEADER_LENGTH, encodeRtp, decodeRtp, emptyRtpPacket, writeRtpHeader, rtpPayload, sequenceDelta, timestampDelta, nextSequence, addTimestamp, type RtpHeader, type RtpPacket } from './rtp-packet.js';
export { PAYLOAD_TYPE, SAMPLE_RATE, FRAME_SAMPLES, encodeG711, decodeG711, codecOfPayloadType, silenceOctet, transcodingTable, type G711Codec } from './g711.js';
export {
  DEFAULT_DTMF_PAYLOAD_TYPE,
  DTMF_DIGITS,
  TELEPHONE_EVENT_LENGTH,
  dtmfEventCode,
  dtmfDigit,
  telephoneEventPackets,
  writeTelephoneEvent,
  readTelephoneEvent,
  DtmfReceiver,
  type TelephoneEventPacket,
  type DtmfToneOptions,
} from './dtmf.js';
export { InbandDtmfDetector, goertzelPower, DTMF_ROWS, DTMF_COLUMNS, KEYPAD, type DtmfDetectorOptions } from './dtmf-detector.js';
export { generateTone, generateDtmf, dtmfFrequencies, dominantFrequency, type DtmfSignalOptions } from './tone.js';
export { buildRtcpReport, parseRtcp, ntpTime, ntpMiddle, RTCP_SR, RTCP_RR, RTCP_SDES, RTCP_BYE, type ReportBlock, type SenderInfo, type RtcpReport, type RtcpCompound, type RtcpReportInput } from './rtcp.js';
export { RtpReceiveStats } from './receive-stats.js';
export { PortPool, type PortRange } from './port-pool.js';
export { PacingHistogram, type PacingSummary } from './pacing-histogram.js';
export { FrameScheduler, type FrameSchedulerOptions, type TickHandler } from './frame-scheduler.js';
export { MediaSession, type Negotiated, type MediaSessionOptions, type MediaSessionStats, type MediaSessionEvents, type RemoteAddress, type DigitSource } from './media-session.js';
export { MediaEngine, type MediaEngineOptions, type OpenOptions } from './media-engine.js';
export { MediaHandle, type MediaHandleEvents, type MediaStopResult, type PlayOptions } from './media-handle.js';
export { measurePacing, type PacingProbeOptions, type PacingProbeResult } from './pacing-probe.js';
export { SpeechProfiler, type SpeechRun } from './speech-profiler.js';
export type { ListenOptions, PlaybackEnd } from './media-session.js';
export type { UnbridgeReason } from './media-worker.js';
export { RelayBuffer } from './relay-buffer.js';
