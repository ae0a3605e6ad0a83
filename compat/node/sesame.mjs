// @sesamecare-oss/redlock 1.4, unchanged, with ioredis 5 pointed at
// REDLOCKD_ADDR. Its scripts begin with SELECT of the db given in its
// settings, so each group runs with the client and the settings on one db:
// "db0" and "db2".
import Redis from "ioredis5";
import { ExecutionError, Redlock } from "@sesamecare-oss/redlock";
import { check, connect, eq, ok, pause, rejects, run, sleep } from "./lib.mjs";

// withRedlock gives fn a Redlock over one client on db, and a second one
// (its own client, through the other address) to contend with it.
async function withRedlock(db, fn) {
  const c1 = await connect(Redis, db);
  const c2 = await connect(Redis, db, true);
  // retryCount 0: a refused acquire fails at once instead of retrying.
  const settings = { db, retryCount: 0, automaticExtensionThreshold: 500 };
  const first = new Redlock([c1], settings);
  const second = new Redlock([c2], settings);
  for (const r of [first, second]) r.on("error", () => {}); // also surfaced on the call
  try {
    await fn(first, second, c1);
  } finally {
    c1.disconnect();
    c2.disconnect();
  }
}

async function refused(p, what) {
  const err = await rejects(p, what);
  check(err instanceof ExecutionError, `${what}: want ExecutionError, got ${err}`);
}

async function single(db, first, second, c) {
  const key = `ses:${db}:single`;
  const lock = await first.acquire([key], 5000);
  eq(await c.get(key), lock.value, "GET after acquire");
  await pause("held", { db, keys: [key], value: lock.value });
  ok(`db${db}-acquire`);
  await refused(second.acquire([key], 5000), "second holder's acquire");
  ok(`db${db}-exclusive`);
  const extended = await lock.extend(10000);
  check(extended.expiration > lock.expiration, "extend moved the expiration");
  const pttl = await c.pttl(key);
  check(pttl > 5000 && pttl <= 10000, "PTTL after extend in (5000, 10000]: " + pttl);
  ok(`db${db}-extend`);
  await extended.release();
  eq(await c.get(key), null, "GET after release");
  await pause("gone", { db, keys: [key] });
  const again = await second.acquire([key], 5000);
  await again.release();
  ok(`db${db}-release`);
}

async function multi(db, first, second, c) {
  const keys = [`ses:${db}:m:a`, `ses:${db}:m:b`, `ses:${db}:m:c`];
  const lock = await first.acquire(keys, 5000);
  await pause("held", { db, keys, value: lock.value });
  await refused(second.acquire([keys[1]], 5000), "acquire of one held resource");
  // All or nothing: a set overlapping a held key takes none of its keys.
  const free = `ses:${db}:m:free`;
  await refused(second.acquire([free, keys[2]], 5000), "acquire overlapping a held set");
  eq(await c.get(free), null, "no partial acquire");
  const extended = await lock.extend(8000);
  for (const k of keys) {
    const pttl = await c.pttl(k);
    check(pttl > 5000 && pttl <= 8000, `PTTL ${k} after extend: ${pttl}`);
  }
  await extended.release();
  await pause("gone", { db, keys: [...keys, free] });
  ok(`db${db}-multi`);
}

// using: a 1 s lock held for 2.5 s inside using(), extended by the library
// each time less than 500 ms remain.
async function using(db, first, second, c) {
  const key = `ses:${db}:using`;
  let value = null;
  await first.using([key], 1000, async (signal, context) => {
    await sleep(2500);
    check(!signal.aborted, "not aborted: " + signal.error);
    check(context.extensions >= 2, "extensions in 2.5 s of a 1 s lock: " + context.extensions);
    value = context.lock.value;
    eq(await c.get(key), value, "GET inside using() after 2.5 s");
    await pause("held", { db, keys: [key], value });
    await refused(second.acquire([key], 1000), "acquire while using() holds it");
  });
  check(value !== null, "ran inside using()");
  await pause("gone", { db, keys: [key] });
  ok(`db${db}-using`);
}

function group(db) {
  return () =>
    withRedlock(db, async (first, second, c) => {
      await single(db, first, second, c);
      await multi(db, first, second, c);
      await using(db, first, second, c);
    });
}

await run({ db0: group(0), db2: group(2) });
