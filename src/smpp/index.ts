/** Ferry's SMPP v3.4 engine: codec, text, receipts, times, sessions, server, client, simulator. */
export * from './constants.js';
export * from './errors.js';
export type * from './pdu.js';
export { RESPONSE_OF } from './schema.js';
export { TLV_KIND } from './tlv.js';
export { decodePdu, encodePdu, encodePduInto, encodedLength, readCommandLength, HEADER_LENGTH, DEFAULT_MAX_PDU_LENGTH } from './codec.js';
export { encodeGsm7, decodeGsm7, gsm7Length, isGsm7, GSM7_EXTENSION_CHARS } from './text/gsm7.js';
export { encodeText, encodeWith, decodeText, chooseDataCoding, alphabetOf, encodeUcs2, decodeUcs2, type EncodedText } from './text/encoding.js';
export { splitMessage, countSegments, type SplitOptions, type SplitMessage, type SarFields, type SegmentCount } from './text/segments.js';
export { parseUdh, concatFromUdh, concatUdh8, concatUdh16, messageParts, UdhIe, type ParsedUdh, type ConcatInfo, type MessageParts } from './text/udh.js';
export { Reassembler, type ReassemblerOptions } from './text/reassembler.js';
export { formatReceipt, parseReceipt, formatReceiptDate, parseReceiptDate, normalizeMessageId, messageIdVariants, type ReceiptFields, type FormatReceiptInput } from './receipt.js';
export { parseSmppTime, formatSmppAbsolute, formatSmppRelative, relativeToMs, type SmppTime, type RelativeTime } from './time.js';
export { Session, NO_RESPONSE, type SessionOptions, type SessionStats, type SessionEvents, type SessionRole, type SessionState, type BindType, type RequestHandler, type ResponseFields, type BindAuthenticator, type BindDecision } from './session.js';
export { SmppServer, type SmppServerOptions } from './server.js';
export { connect, bindClient, SmppConnectError, type ConnectOptions, type BindOptions } from './client.js';
export { SmscSimulator, startSimulator, type SimulatorOptions, type SimulatorBehaviour, type SimulatorStats, type SimulatorLogger, type ReceivedMessage, type InjectMoOptions, type InjectUssdOptions } from '../sim/smpp/simulator.js';
export { startEmbeddedUpstream, EMBEDDED_UPSTREAM_WARNING, type EmbeddedUpstream } from '../sim/smpp/embedded.js';
