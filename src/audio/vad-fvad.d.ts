// libfvad compiled to WASM by Emscripten (@echogarden/fvad-wasm ships no declarations): the exports src/audio/vad.ts uses.
declare module '@echogarden/fvad-wasm' {
  export interface FvadModule {
    /** The WASM memory as 16-bit words; replaced when the memory grows, so read it from the module each time. */
    readonly HEAP16: Int16Array;
    _malloc(bytes: number): number;
    _free(pointer: number): void;
    /** A new detector (mode 0, 8 kHz), or 0 when out of memory. */
    _fvad_new(): number;
    _fvad_free(instance: number): void;
    _fvad_reset(instance: number): void;
    /** 0 on success, -1 for a mode outside 0-3. */
    _fvad_set_mode(instance: number, mode: number): number;
    /** 0 on success, -1 for a rate other than 8000, 16000, 32000 or 48000. */
    _fvad_set_sample_rate(instance: number, rate: number): number;
    /** 1 speech, 0 not, -1 for a frame that is not 10, 20 or 30 ms long. */
    _fvad_process(instance: number, frame: number, length: number): number;
  }
  const createFvad: (overrides?: Record<string, unknown>) => Promise<FvadModule>;
  export default createFvad;
}
