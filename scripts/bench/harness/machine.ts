import os from 'node:os';

export interface MachineInfo {
  cores: number;
  model: string;
  memoryGiB: number;
  node: string;
  platform: string;
}

export function machineInfo(): MachineInfo {
  const cpus = os.cpus();
  return {
    cores: cpus.length,
    model: (cpus[0]?.model ?? 'unknown').replace(/\s+/g, ' ').trim(),
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
  };
}
