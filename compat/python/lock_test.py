"""redis-py's Lock, unchanged, against redlockd.

Run by compat/python_test.go with /usr/bin/python3 (Debian's python3-redis)
and REDLOCKD_ADDR=host:port in the environment.

    lock_test.py suite [GROUP...]
                              run the named groups of checks (default: all);
                              print "PASS" at the end
    lock_test.py hold NAME    take NAME with timeout=None, print "HELD <token>"
                              and wait for stdin to close (or to be killed)

Each check prints "ok <name>"; the first failure raises, so the exit status
is non-zero and the traceback names it.
"""

import os
import sys
import threading
import time

import redis
from redis.exceptions import LockError, LockNotOwnedError


def client():
    host, port = os.environ["REDLOCKD_ADDR"].rsplit(":", 1)
    return redis.Redis(host=host, port=int(port), socket_timeout=30)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def ok(name):
    print("ok", name, flush=True)


def acquire_extend_reacquire_release(r):
    lock = r.lock("py:basic", timeout=10)
    check(lock.acquire(blocking=False), "acquire")
    check(lock.locked() and lock.owned(), "locked and owned after acquire")
    ok("acquire")

    other = r.lock("py:basic", timeout=10)
    check(not other.acquire(blocking=False), "a second lock on a held name")
    check(not other.owned(), "the refused lock does not own it")
    ok("second-lock-refused")

    check(lock.extend(5), "extend adds time")
    pttl = r.pttl("py:basic")
    check(10000 < pttl <= 15000, "pttl after extend(5) = %r" % pttl)
    check(lock.extend(3, replace_ttl=True), "extend replaces the ttl")
    pttl = r.pttl("py:basic")
    check(0 < pttl <= 3000, "pttl after extend(3, replace_ttl) = %r" % pttl)
    ok("extend")

    check(lock.reacquire(), "reacquire")
    pttl = r.pttl("py:basic")
    check(3000 < pttl <= 10000, "pttl after reacquire = %r" % pttl)
    ok("reacquire")

    token = lock.local.token
    lock.release()
    check(not lock.locked(), "free after release")
    ok("release")

    # A stale holder cannot release or extend the next holder's lock.
    check(other.acquire(blocking=False), "reacquire by another after release")
    lock.local.token = token
    try:
        lock.release()
        raise AssertionError("a stale release succeeded")
    except LockNotOwnedError:
        pass
    lock.local.token = token  # release() forgot it before asking the server
    try:
        lock.extend(5)
        raise AssertionError("a stale extend succeeded")
    except LockNotOwnedError:
        pass
    check(other.owned(), "the new holder still owns it")
    other.release()
    ok("not-owner-refused")


def blocking_with_timeout(r):
    holder = r.lock("py:blocking", timeout=10, thread_local=False)
    check(holder.acquire(blocking=False), "holder acquires")
    waiter = r.lock("py:blocking", timeout=10, sleep=0.05)
    start = time.monotonic()
    got = waiter.acquire(blocking_timeout=0.5)
    waited = time.monotonic() - start
    check(not got, "blocking acquire of a held lock times out")
    check(0.3 <= waited < 10, "waited %.3fs for a 0.5s blocking_timeout" % waited)
    ok("blocking-timeout")

    # The holder lets go while the waiter blocks: the waiter gets it.
    releaser = threading.Timer(0.3, holder.release)
    releaser.start()
    try:
        check(waiter.acquire(blocking_timeout=20), "blocking acquire after a release")
    finally:
        releaser.join()
    check(waiter.owned(), "the waiter owns it")
    waiter.release()
    ok("blocking-acquire")


def context_manager(r):
    with r.lock("py:ctx", timeout=5, blocking_timeout=5) as lock:
        check(lock.owned(), "owned inside the with block")
        check(not r.lock("py:ctx", timeout=5).acquire(blocking=False),
              "a second lock inside the with block")
    check(r.get("py:ctx") is None, "released when the with block ends")
    ok("context-manager")


def session_lock(r):
    # timeout=None: redis-py sends SET name token NX, without expiry.
    lock = r.lock("py:session")
    check(lock.acquire(blocking=False), "acquire without timeout")
    check(r.pttl("py:session") == -1, "pttl of a lock without expiry = %r" % r.pttl("py:session"))
    check(r.ttl("py:session") == -1, "ttl of a lock without expiry = %r" % r.ttl("py:session"))
    check(not r.lock("py:session").acquire(blocking=False), "second lock refused")
    try:
        lock.extend(5)
        raise AssertionError("redis-py extended a lock without timeout")
    except LockError:
        pass
    lock.release()
    check(not lock.locked(), "free after release")
    ok("timeout-none")


GROUPS = {
    "basic": acquire_extend_reacquire_release,
    "blocking": blocking_with_timeout,
    "context-manager": context_manager,
    "timeout-none": session_lock,
}


def suite(names):
    r = client()
    check(r.ping(), "PING")
    ok("ping")
    for name in names or GROUPS:
        GROUPS[name](r)
    print("PASS", flush=True)


def hold(name):
    lock = client().lock(name)  # timeout=None: held while this process lives
    check(lock.acquire(blocking=False), "hold: acquire")
    print("HELD", lock.local.token.decode(), flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    if sys.argv[1:2] == ["suite"]:
        suite(sys.argv[2:])
    elif sys.argv[1:2] == ["hold"] and len(sys.argv) == 3:
        hold(sys.argv[2])
    else:
        sys.exit(__doc__)
