import { readdirSync } from 'node:fs';
import { URL } from 'node:url';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// The layers (issue 43): the core never imports a product, and a product reaches another only through its service.
// Import strings are matched as written (relative, ending in .js); test/platform/layers.test.ts proves the rules fire.
const PRODUCTS = readdirSync(new URL('./src/channels/', import.meta.url), { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name);

const NO_PRODUCT = {
  regex: '(^|/)channels/',
  message: 'The core never imports a product (src/channels/*): move what it needs into the core (src/numbers, src/messaging, …) or let the product declare it.',
};
const ONLY_MODULE_LIST = {
  regex: '(^|/)channels/(?!index\\.js$)',
  message: 'The composition root imports the products only through their list, src/channels/index.ts.',
};
/** The SMPP library knows the protocol only: SMS policy lives in src/messaging (e.g. smpp-ingress). */
const SMPP_PROTOCOL_ONLY = {
  regex: '^(\\.\\./)+(ledger|dispatch|routing|receipts|billing|accounts|messaging)/',
  message: 'src/smpp is a protocol library: take what it needs through an interface instead of importing the SMS core.',
};

/** The voice libraries (SIP, RTP, audio, speech, language models) know their protocols only, like src/smpp. */
const MEDIA_PROTOCOL_ONLY = {
  regex: '^(\\.\\./)+(ledger|dispatch|routing|receipts|billing|accounts|messaging|smpp|http|platform)/',
  message: 'src/sip, src/rtp, src/audio, src/speech, src/llm and src/webrtc are protocol libraries: take what they need through an interface instead of importing the gateway.',
};

function restrict(...patterns) {
  return { '@typescript-eslint/no-restricted-imports': ['error', { patterns }] };
}

/** A product may import another only `import type` from its index.ts (the service it gets from ctx.use()). */
function productBoundary(name) {
  const others = PRODUCTS.filter((p) => p !== name).join('|');
  const other = `^(\\.\\./)+(channels/)?(${others})/`;
  return {
    files: [`src/channels/${name}/**/*.ts`],
    rules: restrict(
      { regex: `${other}(?!index\\.js$)`, message: 'A product reaches another only through its service: import type from ../<product>/index.js (and ctx.use()), never its files.' },
      { regex: `${other}index\\.js$`, allowTypeImports: true, message: "Another product's index.ts: import type only (its service type); the object comes from ctx.use()." },
    ),
  };
}

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/', '.tap/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'off',
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  // Layers. For a file two blocks match, the later block's patterns replace the earlier's: each repeats what still holds.
  { files: ['src/**/*.ts'], ignores: ['src/channels/**'], rules: restrict(NO_PRODUCT) },
  { files: ['src/daemon.ts', 'src/cli/**/*.ts'], rules: restrict(ONLY_MODULE_LIST) },
  { files: ['src/smpp/**/*.ts'], rules: restrict(NO_PRODUCT, SMPP_PROTOCOL_ONLY) },
  { files: ['src/sip/**/*.ts', 'src/rtp/**/*.ts', 'src/audio/**/*.ts', 'src/speech/**/*.ts', 'src/llm/**/*.ts', 'src/webrtc/**/*.ts'], rules: restrict(NO_PRODUCT, MEDIA_PROTOCOL_ONLY) },
  ...PRODUCTS.map(productBoundary),
);
