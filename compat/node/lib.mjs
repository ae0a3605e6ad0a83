// Helpers shared by the compat scripts. Each script is run by a Go test in
// compat/ as `node <script>.mjs [group...]` with REDLOCKD_ADDR=host:port;
// it prints "ok <check>" per passed check and "PASS" at the end, and exits
// non-zero at the first failure.

import * as readline from "node:readline";

export const [host, portText] = splitAddr(process.env.REDLOCKD_ADDR ?? "");
export const port = Number(portText);

// REDLOCKD_OTHER_ADDR is where a scenario's second party connects: a
// second redlockd in front of the same backends (the same server when the
// target is a plain redis-server). Default: REDLOCKD_ADDR.
export const [otherHost, otherPortText] = splitAddr(process.env.REDLOCKD_OTHER_ADDR || process.env.REDLOCKD_ADDR || "");
export const otherPort = Number(otherPortText);

function splitAddr(addr) {
  const i = addr.lastIndexOf(":");
  if (i < 0) throw new Error("REDLOCKD_ADDR=host:port is required");
  return [addr.slice(0, i), addr.slice(i + 1)];
}

// The ioredis major under test: IOREDIS=ioredis5 picks the v5 line (npm
// alias in package.json), which speaks only RESP2; default: ioredis (v6).
export const ioredisName = process.env.IOREDIS || "ioredis";
export const Redis = (await import(ioredisName)).default;

export function check(cond, what) {
  if (!cond) throw new Error("check failed: " + what);
}

export function eq(got, want, what) {
  check(got === want, `${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

export function ok(name) {
  console.log("ok " + name);
}

// The compare-and-delete script of redlockd's SPEC §3.
export const compareAndDelete =
  'if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end';

// target is what REDLOCKD_ADDR points at: "redlockd", or "redis-server"
// when the Go test runs the same steps against a plain server to prove
// the checks themselves.
export const target = process.env.TARGET || "redlockd";

let answers = null; // readline over stdin: the Go test's answers to pause lines
let stdinLines = null;

// pause asks the Go test to run a hook on the backends (see
// compat/steps_test.go): "held" (every key of db holds value on every
// backend), "gone" (no backend has any of them), "drop" (delete them on
// every backend). It resolves once the test answers "go".
export async function pause(hook, { db = 0, keys, value = "" }) {
  answers ??= readline.createInterface({ input: process.stdin });
  stdinLines ??= answers[Symbol.asyncIterator]();
  console.log(`pause ${hook} ${JSON.stringify({ db, keys, value })}`);
  const { value: answer, done } = await stdinLines.next();
  if (done) throw new Error(`pause ${hook}: no answer (stdin closed)`);
  if (answer !== "go") throw new Error(`pause ${hook} ${JSON.stringify(keys)}: ${answer}`);
}

// rejects awaits p and returns its error; it throws when p resolves.
export async function rejects(p, what) {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error(what + ": succeeded, want an error");
}

// connect opens a client of the Redis class given (any ioredis major)
// that fails fast instead of reconnecting, on db; other: through
// REDLOCKD_OTHER_ADDR.
export async function connect(RedisClass, db = 0, other = false) {
  const [h, p] = other ? [otherHost, otherPort] : [host, port];
  const c = new RedisClass({ host: h, port: p, db, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  c.on("error", () => {});
  await c.connect();
  // ioredis reports a refused SELECT at connect only as an "error" event
  // and goes on in db 0; selecting again makes it a clear failure.
  if (db !== 0) eq(await c.select(db), "OK", "SELECT " + db);
  return c;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// printVotes prints why each client voted against, for a Redlock
// ExecutionError (its attempts are promises of per-client stats).
async function printVotes(err) {
  for (const attempt of Array.isArray(err?.attempts) ? err.attempts : []) {
    const stats = await attempt;
    for (const e of stats?.votesAgainst?.values() ?? []) console.error("  vote against: " + (e?.message ?? e));
  }
}

// run calls the named groups (all when none are named) in order, then
// prints PASS; any failure prints its stack and exits 1.
export async function run(groups) {
  const names = process.argv.slice(2);
  try {
    for (const name of names.length ? names : Object.keys(groups)) {
      const fn = groups[name];
      if (!fn) throw new Error("unknown group " + name);
      await fn();
    }
    console.log("PASS");
  } catch (err) {
    console.error(err && err.stack ? err.stack : err);
    await printVotes(err);
    // A failed group may leave clients open (a Promise.all of connects
    // that failed half way): exit rather than wait for them.
    process.exit(1);
  } finally {
    answers?.close(); // an open stdin would keep the process alive
  }
}
