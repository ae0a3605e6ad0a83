// Helpers shared by the compat scripts. Each script is run by a Go test in
// compat/ as `node <script>.mjs [group...]` with REDLOCKD_ADDR=host:port;
// it prints "ok <check>" per passed check and "PASS" at the end, and exits
// non-zero at the first failure.

export const [host, portText] = splitAddr(process.env.REDLOCKD_ADDR ?? "");
export const port = Number(portText);

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
    process.exitCode = 1;
  }
}
