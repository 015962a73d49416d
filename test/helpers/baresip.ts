import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeWav } from '../../src/audio/index.js';

/** Whether a program is on PATH. */
export function hasCommand(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
}

export const HAVE_BARESIP = hasCommand('baresip');

export interface BaresipOptions {
  /** The SIP port baresip listens on (UDP and TCP, 127.0.0.1). */
  sipPort: number;
  /** Its RTP ports, inclusive (it takes an even one and the next for RTCP). */
  rtpPorts: { min: number; max: number };
  /** The user part of its account (the request URI Ferry dials carries the callee's number). */
  user: string;
  /** A hard stop should a test never call stop() (default 120 s). */
  killAfterMs?: number;
}

export interface BaresipCallee {
  /** Waits for the process to end (SIGTERM, then SIGKILL after 3 s) and returns what it printed. Idempotent. */
  stop(): Promise<string>;
  /** What baresip printed so far (its log: the call's progress, errors). */
  output(): string;
  /**
   * The recordings of the sndfile module (one per call and direction): `dec` is what it received and decoded, i.e.
   * what the caller sent; `enc` what it sent.
   */
  recordings(direction: 'dec' | 'enc'): string[];
  /** Removes its folder (config and recordings): after stop(), once the recordings were read. */
  cleanup(): void;
}

// The silence it plays to the caller: longer than any test call, since aufile stops the source at the file's end.
const SILENCE_SECONDS = 120;

/**
 * baresip (Debian package baresip) as an auto-answering callee on 127.0.0.1 with no sound device: its audio source is
 * a silent WAV (aufile), its player a bridge nobody listens to (aubridge), and the sndfile filter records each call's
 * audio both ways to WAV files. Only G.711, so the call negotiates what Ferry offers.
 */
export async function startBaresip(o: BaresipOptions): Promise<BaresipCallee> {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-baresip-'));
  const recordings = join(dir, 'recordings');
  mkdirSync(recordings);
  const silence = join(dir, 'silence.wav');
  writeFileSync(silence, encodeWav(new Int16Array(8000 * SILENCE_SECONDS), 8000));
  const config = [
    'poll_method epoll',
    `sip_listen 127.0.0.1:${o.sipPort}`,
    // Every address it puts in Contact and SDP is the loopback one, never the machine's other interfaces.
    'net_interface 127.0.0.1',
    'call_local_timeout 120',
    'call_max_calls 4',
    `audio_player aubridge,ferry-test`,
    `audio_alert aubridge,ferry-test`,
    `audio_source aufile,${silence}`,
    'ausrc_srate 8000',
    'ausrc_channels 1',
    'auplay_srate 8000',
    'auplay_channels 1',
    `rtp_ports ${o.rtpPorts.min}-${o.rtpPorts.max}`,
    'module_path /usr/lib/baresip/modules',
    'module g711.so',
    'module aufile.so',
    'module aubridge.so',
    'module sndfile.so',
    'module_app account.so',
    `snd_path ${recordings}`,
  ];
  writeFileSync(join(dir, 'config'), config.join('\n') + '\n');
  writeFileSync(join(dir, 'accounts'), `<sip:${o.user}@127.0.0.1>;regint=0;answermode=auto;audio_codecs=PCMU,PCMA\n`);
  writeFileSync(join(dir, 'contacts'), '');

  const child = spawn('baresip', ['-4', '-f', dir], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let printed = '';
  const keep = (d: Buffer): void => {
    printed = (printed + d.toString('latin1')).slice(-20_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise<void>((resolve) => {
    child.once('close', () => resolve());
    child.once('error', () => resolve());
  });
  const killer = setTimeout(() => child.kill('SIGKILL'), o.killAfterMs ?? 120_000);
  void exited.then(() => clearTimeout(killer));
  const running = () => child.exitCode === null && child.signalCode === null;

  let stopping: Promise<string> | null = null;
  const stop = (): Promise<string> =>
    (stopping ??= (async () => {
      if (running()) {
        child.kill('SIGTERM');
        const hard = setTimeout(() => child.kill('SIGKILL'), 3_000);
        await exited;
        clearTimeout(hard);
      }
      return printed;
    })());

  // Ready once it says so; bounded, and a process that exits first fails with what it printed.
  for (let i = 0; !printed.includes('baresip is ready.'); i++) {
    if (!running() || i >= 200) {
      await stop();
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`baresip did not start:\n${printed}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    stop,
    output: () => printed,
    recordings: (direction) =>
      readdirSync(recordings)
        .filter((f) => f.endsWith(`-${direction}.wav`))
        .sort()
        .map((f) => join(recordings, f)),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
