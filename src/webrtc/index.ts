/** Ferry's WebRTC media leg (werift, loaded on first use) and its relay to a trunk's plain RTP, in G.711. */
export { WebRtcLeg, type WebRtcLegOptions, type WebRtcLegEvents, type WebRtcLegState, type WebRtcRtp, type SendRtpOptions, type IceServer } from './webrtc-leg.js';
export { RtpBridge, type RtpBridgeOptions, type RtpBridgeStats, type RtpAddress } from './rtp-bridge.js';
export { RtpStreamRewriter, type Rewritten } from './stream-rewriter.js';
export { WebRtcNegotiationError, offeredAudioCodecs, chooseCodecs, restrictAudioCodecs, type OfferedCodec, type ChosenCodecs } from './sdp-codecs.js';
export { loadWerift } from './werift.js';
