import { main } from './cli';

/**
 * The entry `nest start` runs (nest-cli.json: dist/src/main.js): the same command line as
 * bin/openwop-host.js, `serve` when no command is given.
 */
void main(process.argv.length > 2 ? process.argv : [...process.argv, 'serve']);
