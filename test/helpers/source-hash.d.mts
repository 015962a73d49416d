/** A hash of what `npm run build` compiles: every .ts file under src/ (path and content) and the tsconfig files. */
export function sourceHash(root: string): string;
