#!/usr/bin/env node
// The package's bin: runs the TypeScript CLI through tsx (a runtime dependency), no build step needed.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
