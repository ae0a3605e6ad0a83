"""Take a lock through redlockd with an unchanged redis-py client.

    python3 examples/python/lock.py --port 6380

It needs redis-py (Debian's python3-redis, or pip install redis).
"""
import argparse
import secrets

import redis


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=6380)
    args = ap.parse_args()
    r = redis.Redis(host=args.host, port=args.port, decode_responses=True)

    # LOCK key ttl-ms [WAIT ms] -> [token, validity-ms], or None when held.
    reply = r.execute_command("LOCK", "report:daily", 10000, "WAIT", 2000)
    if reply is None:
        print("someone else holds report:daily")
    else:
        token, validity_ms = reply[0], reply[1]
        print(f"locked with token {token}, safe for {validity_ms} ms")
        # ... work, finishing well within validity_ms ...
        print("released:", r.execute_command("UNLOCK", "report:daily", token) == 1)

    # redis-py's own Lock sends SET NX PX and its Lua scripts, which
    # redlockd recognises and runs over the quorum.
    lock = r.lock("report:weekly", timeout=10, blocking_timeout=2)
    if lock.acquire():
        try:
            print("acquired with redis-py Lock")
        finally:
            lock.release()

    # Or by hand: SET key token NX PX ms -> True or None.
    token = secrets.token_hex(16)
    if r.set("report:monthly", token, nx=True, px=10000):
        print("released:", r.execute_command("UNLOCK", "report:monthly", token) == 1)


if __name__ == "__main__":
    main()
