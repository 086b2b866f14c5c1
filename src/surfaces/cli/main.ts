#!/usr/bin/env node
/** The `gatehouse` command. */
process.stdout.write('gatehouse: not yet\n');
