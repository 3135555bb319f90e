// node examples/fetch.mjs [--cacert FILE] [-d FORM-DATA] URL
// Fetches URL IP-direct through httpdnsd with the machine's session (POST with -d) and prints
// the final response's body, as curl -L does; exits 1 for a status of 400 or more.
import { readFileSync } from 'node:fs';
import * as httpdns from 'httpdns';

const args = process.argv.slice(2);
const option = (name) => {
  const index = args.indexOf(name);
  return index === -1 ? undefined : args.splice(index, 2)[1];
};
const ca = option('--cacert');
const form = option('-d');
if (args.length !== 1) {
  console.error('usage: fetch.mjs [--cacert FILE] [-d FORM-DATA] URL');
  process.exit(2);
}
const client = httpdns.connect({ ca: ca ? readFileSync(ca) : undefined });
try {
  const response = await client.fetch(args[0], form === undefined ? {} : { method: 'POST', body: new URLSearchParams(form) });
  process.stdout.write(await response.text());
  process.exitCode = response.status < 400 ? 0 : 1;
} catch (error) {
  console.error(error.message);
  process.exitCode = 1;
} finally {
  client.close();
}
