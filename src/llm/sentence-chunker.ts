export interface SentenceChunkerOptions {
  /** A piece shorter than this (trimmed) waits to be joined with what follows ("Dr.", "Hi."). Default 12. */
  minLength?: number;
  /**
   * Text running past this with no sentence end is cut at its last comma, or else its last space, so speech never
   * waits long for a run-on sentence. Default 200.
   */
  maxLength?: number;
}

/**
 * A sentence end: . ! ? ; (repeated, as in "…" or "?!"), then closing quotes or brackets, then whitespace; or a line
 * break. A terminator at the very end of the text is not an end yet, since the next delta may continue it ("3." →
 * "3.14"); flush() takes it.
 */
const SENTENCE_END = /[.!?;…]+["'”’»)\]]*(?=\s)|\n/g;

/**
 * Splits streamed text into speakable pieces, so text-to-speech can start on the first sentence while the model is
 * still writing the rest. push() each delta and speak what it returns; flush() at the end of the answer.
 */
export class SentenceChunker {
  private buffer = '';
  private readonly minLength: number;
  private readonly maxLength: number;

  constructor(options: SentenceChunkerOptions = {}) {
    this.minLength = Math.max(0, options.minLength ?? 12);
    this.maxLength = Math.max(this.minLength + 1, options.maxLength ?? 200);
  }

  /** The pieces the delta completed, trimmed, in order (often none). */
  push(delta: string): string[] {
    this.buffer += delta;
    const pieces: string[] = [];
    // Each round removes at least one character from the buffer or stops: bounded by the buffer's length.
    for (;;) {
      const cut = this.nextCut();
      if (cut === undefined) break;
      const piece = this.buffer.slice(0, cut).trim();
      this.buffer = this.buffer.slice(cut);
      if (piece !== '') pieces.push(piece);
    }
    return pieces;
  }

  /** The rest of the text (one piece, or none when only whitespace is left); the chunker is then empty. */
  flush(): string[] {
    const rest = this.buffer.trim();
    this.buffer = '';
    return rest === '' ? [] : [rest];
  }

  /** Forgets the text held back (barge-in: the rest of the answer will not be spoken). */
  reset(): void {
    this.buffer = '';
  }

  /** Where the first speakable piece of the buffer ends, or undefined when none is complete yet. */
  private nextCut(): number | undefined {
    SENTENCE_END.lastIndex = 0;
    for (let match = SENTENCE_END.exec(this.buffer); match !== null; match = SENTENCE_END.exec(this.buffer)) {
      const end = match.index + match[0].length;
      if (this.buffer.slice(0, end).trim().length >= this.minLength) return end;
    }
    if (this.buffer.length <= this.maxLength) return undefined;
    const head = this.buffer.slice(0, this.maxLength);
    const comma = head.lastIndexOf(', ');
    if (comma >= this.minLength) return comma + 1;
    const space = head.lastIndexOf(' ');
    if (space >= this.minLength) return space;
    // One word longer than maxLength: cut it, a piece must come out.
    return this.maxLength;
  }
}
