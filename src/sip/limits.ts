/** Caps that bound what a peer can make us hold or parse. */
export const MAX_MESSAGE_BYTES = 64 * 1024;
export const MAX_HEADERS = 256;
/** A header value longer than this is refused (a message is capped anyway; this stops a pathological single line). */
export const MAX_HEADER_VALUE = 8 * 1024;
