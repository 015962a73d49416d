/* eslint-disable @typescript-eslint/no-restricted-imports -- TODO(i43): removed when i43-cli (CLI commands declared by modules) lands */
import { Command } from 'commander';
import { credentialsCipher, seal } from '../../channels/messenger/sealed-credentials.js';
import { loadConfig } from '../../config/load.js';
import { loadSecretKey } from '../../security/secrets.js';
import { messengerNumbersCommand } from './messenger-numbers.js';
import { addMessengerInspect } from './inspect.js';

/**
 * `ferry messenger seal <value>`: encrypts a messenger credential (access token, app secret, verify token) with the
 * key of this data folder (or security.secretKey), so the config file holds `sealed:…` and never the plain value.
 * Instances that share the key open it; the value is read from stdin when not given, to keep it out of the shell history.
 */
export function messengerCommand(): Command {
  const cmd = new Command('messenger').description('messenger product tools');
  cmd.addCommand(
    new Command('seal')
      .description('encrypt a messenger credential for the config file (prints sealed:…)')
      .argument('[value]', 'the plain value; read from stdin when absent')
      .action(async (value: string | undefined, _o, sub: Command) => {
        const { config } = loadConfig({ path: sub.parent?.parent?.opts().config ?? null });
        let plain = value;
        if (plain === undefined) {
          const chunks: Buffer[] = [];
          for await (const c of process.stdin) chunks.push(c as Buffer);
          plain = Buffer.concat(chunks).toString('utf8').trim();
        }
        if (!plain) throw new Error('nothing to seal');
        process.stdout.write(seal(credentialsCipher(loadSecretKey(config.dataDir, config.security.secretKey)), plain) + '\n');
      }),
  );
  cmd.addCommand(messengerNumbersCommand());
  addMessengerInspect(cmd);
  return cmd;
}
