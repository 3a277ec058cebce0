// `node --import ./test/support/record-imports.mjs ...`: appends the URL of every module the process
// resolves to the file named by IMPORTS_LOG (a module load hook, off the main thread).
import { register } from 'node:module';

register('./record-imports-hooks.mjs', import.meta.url);
