/**
 * The only error the audio decoders throw. Its message is written for the person who uploaded the file
 * (e.g. "WAV: 24 channels are not supported"), so callers may show it as it is.
 */
export class AudioFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AudioFormatError';
  }
}
