"""One case of the client matrix with nats-py (asyncio client and its JetStream API), run as
`python3 nats_client.py <case> <url> [user=… pass=… token=… ca=…]`. It prints JSON lines:
events ({"event":"ready"}) while it runs, then {"result":{…}} with what the library
reported, or {"fatal":"…"} and exit 1. test/clients/nats-matrix.ts drives it and checks
the result."""
import asyncio
import hashlib
import json
import ssl
import sys

import nats
import nats.errors
import nats.js.errors
from nats.js.api import StreamConfig, KeyValueConfig, ObjectStoreConfig, DeliverPolicy

WAIT = 10.0
ARGS = dict(a.split("=", 1) for a in sys.argv[3:] if "=" in a)
URL = sys.argv[2] if len(sys.argv) > 2 else ""


def emit(obj):
    print(json.dumps(obj), flush=True)


def options(**extra):
    opts = {"servers": [URL], "name": "matrix-python", "connect_timeout": WAIT, **extra}
    if "user" in ARGS:
        opts.update(user=ARGS["user"], password=ARGS.get("pass"))
    if "token" in ARGS:
        opts["token"] = ARGS["token"]
    if "ca" in ARGS:
        opts["tls"] = ssl.create_default_context(cafile=ARGS["ca"])
    return opts


async def connect(**extra):
    return await nats.connect(**options(**extra))


async def collect(sub, n):
    got = []
    try:
        while len(got) < n:
            got.append(await sub.next_msg(timeout=WAIT))
    except nats.errors.TimeoutError:
        pass
    return got


async def case_connect():
    errors = []

    async def on_error(e):
        errors.append(e)

    try:
        nc = await connect(allow_reconnect=False, max_reconnect_attempts=0, error_cb=on_error)
    except Exception as e:  # the library's own error type is what is reported
        cause = errors[0] if errors else e
        return {"connected": False, "error_type": type(cause).__name__, "error": str(cause)}
    await nc.flush()
    result = {
        "connected": True,
        "server_id": nc._server_info.get("server_id"),
        "max_payload": nc.max_payload,
        "tls": nc._transport._io_writer.get_extra_info("ssl_object") is not None,
    }
    await nc.close()
    return result


async def case_pubsub():
    nc = await connect()
    star = await nc.subscribe("greet.*")
    gt = await nc.subscribe("greet.>")
    await nc.flush()
    await nc.publish("greet.joe", b"hello joe")
    await nc.publish("greet.joe.smith", b"hello smith")
    await nc.publish("other.joe", b"not for us")
    await nc.flush()

    def show(msgs):
        return sorted(f"{m.subject}={m.data.decode()}" for m in msgs)

    result = {"star": show(await collect(star, 1)), "gt": show(await collect(gt, 2))}
    await nc.close()
    return result


async def case_queue():
    nc = await connect()
    members = [await nc.subscribe("work", queue="workers") for _ in range(3)]
    plain = await nc.subscribe("work")
    await nc.flush()
    for i in range(30):
        await nc.publish("work", str(i).encode())
    await nc.flush()
    plain_count = len(await collect(plain, 30))
    await nc.flush()
    result = {"members": [m.pending_msgs for m in members], "plain": plain_count}
    await nc.close()
    return result


async def case_request():
    nc = await connect()

    async def echo(msg):
        await nc.publish(msg.reply, msg.data.upper(), headers={"X-Trace": msg.headers.get("X-Trace", "")})

    await nc.subscribe("svc.echo", cb=echo)
    await nc.flush()
    resp = await nc.request("svc.echo", b"hello", timeout=WAIT, headers={"X-Trace": "trace-42"})
    result = {"reply": resp.data.decode(), "trace": (resp.headers or {}).get("X-Trace", "")}
    await nc.close()
    return result


async def case_no_responders():
    nc = await connect()
    try:
        await nc.request("nobody.home", b"anyone?", timeout=WAIT)
    except Exception as e:
        await nc.close()
        return {"error_type": type(e).__name__, "error": str(e)}
    raise RuntimeError("a request without responders got an answer")


async def case_autounsub():
    nc = await connect()
    sub = await nc.subscribe("auto")
    await sub.unsubscribe(limit=3)
    await nc.flush()
    for i in range(10):
        await nc.publish("auto", str(i).encode())
    await nc.flush()
    got = await collect(sub, 3)
    await nc.flush()
    result = {"received": len(got) + sub.pending_msgs}
    await nc.close()
    return result


async def case_payload():
    nc = await connect()
    sub = await nc.subscribe("big")
    await nc.flush()
    data = bytes((i * 7) & 0xFF for i in range(512 * 1024))
    await nc.publish("big", data)
    got = await collect(sub, 1)
    if len(got) != 1:
        raise RuntimeError("the 512 KiB message did not come back")
    result = {"size": len(got[0].data), "sha256": hashlib.sha256(got[0].data).hexdigest()}
    try:
        await nc.publish("big", bytes(nc.max_payload + 1))
    except Exception as e:
        result.update(over_error_type=type(e).__name__, over_error=str(e))
    await nc.close()
    return result


async def case_drain():
    closed = asyncio.Event()

    async def on_closed():
        closed.set()

    nc = await connect(closed_cb=on_closed)
    processed = 0

    async def slow(msg):
        nonlocal processed
        await asyncio.sleep(0.002)  # a slow handler, so messages are still pending at drain
        processed += 1

    await nc.subscribe("drain.me", cb=slow)
    await nc.flush()
    for i in range(50):
        await nc.publish("drain.me", str(i).encode())
    await nc.flush()
    await nc.drain()
    await asyncio.wait_for(closed.wait(), WAIT)
    return {"processed": processed, "closed": nc.is_closed}


async def case_reconnect():
    reconnected = asyncio.Event()

    async def on_reconnected():
        reconnected.set()

    nc = await connect(max_reconnect_attempts=-1, reconnect_time_wait=0.1, reconnected_cb=on_reconnected)
    sub = await nc.subscribe("rc.>")
    await nc.flush()
    emit({"event": "ready"})
    await asyncio.wait_for(reconnected.wait(), 60)
    await nc.publish("rc.after", b"after restart")
    got = await collect(sub, 1)
    result = {"reconnected": True, "received": got[0].data.decode() if got else "", "reconnects": nc.stats["reconnects"]}
    await nc.close()
    return result


async def case_jetstream():
    nc = await connect()
    js = nc.jetstream(timeout=WAIT)
    si = await js.add_stream(StreamConfig(name="ORDERS", subjects=["orders.>"]))
    first = await js.publish("orders.new", b"order 1")
    dedup = []
    for _ in range(2):
        ack = await js.publish("orders.new", b"order 2", headers={"Nats-Msg-Id": "order-2"})
        dedup.append({"seq": ack.seq, "duplicate": bool(ack.duplicate)})
    await js.publish("orders.paid", b"order 3")

    pull = await js.pull_subscribe("orders.>", durable="puller")
    pulled = []
    for m in await pull.fetch(3, timeout=WAIT):
        pulled.append(m.data.decode())
        await m.ack_sync()
    ci = await pull.consumer_info()

    push = await js.subscribe("orders.>", durable="pusher", deliver_policy=DeliverPolicy.ALL)
    pushed = []
    for _ in range(3):
        m = await push.next_msg(timeout=WAIT)
        pushed.append(f"{m.metadata.sequence.stream}:{m.data.decode()}")
        await m.ack()
    result = {
        "stream": si.config.name,
        "first": {"stream": first.stream, "seq": first.seq, "duplicate": bool(first.duplicate)},
        "dedup": dedup,
        "pull": pulled,
        "pull_acked": ci.ack_floor.stream_seq,
        "push": pushed,
    }
    await nc.close()
    return result


async def case_kv():
    nc = await connect()
    js = nc.jetstream(timeout=WAIT)
    kv = await js.create_key_value(KeyValueConfig(bucket="settings", history=5))
    watcher = await kv.watchall()
    put_rev = await kv.put("color", b"red")
    entry = await kv.get("color")
    upd_rev = await kv.update("color", b"blue", last=put_rev)
    try:
        await kv.update("color", b"green", last=put_rev)
        stale = "none"
    except Exception as e:
        stale = type(e).__name__
    await kv.put("size", b"xl")
    await kv.delete("size")
    try:
        await kv.get("size")
        deleted = "none"
    except Exception as e:
        deleted = type(e).__name__
    keys = await kv.keys()
    history = [e.value.decode() for e in await kv.history("color")]
    watched = []
    while len(watched) < 4:
        u = await watcher.updates(timeout=WAIT)
        if u is None:  # the marker that the initial values are done
            continue
        op = "DEL" if u.operation == "DEL" else "PUT"
        watched.append(f"{op}:{u.key}={(u.value or b'').decode()}")
    await watcher.stop()
    result = {
        "put_rev": put_rev, "get": entry.value.decode(), "update_rev": upd_rev,
        "stale_update_error_type": stale, "deleted_get_error_type": deleted,
        "keys": keys, "history": history, "watch": watched,
    }
    await nc.close()
    return result


async def case_objstore():
    nc = await connect()
    js = nc.jetstream(timeout=WAIT)
    obs = await js.create_object_store("files", config=ObjectStoreConfig(bucket="files"))
    data = bytes(i % 251 for i in range(300 * 1024))
    await obs.put("report.bin", data)
    back = await obs.get("report.bin")
    info = await obs.get_info("report.bin")
    listed = [o.name for o in await obs.list()]
    result = {"size": info.size, "chunks": info.chunks, "intact": back.data == data, "listed": listed}
    await nc.close()
    return result


CASES = {
    "connect": case_connect, "pubsub": case_pubsub, "queue": case_queue, "request": case_request,
    "no_responders": case_no_responders, "autounsub": case_autounsub, "payload": case_payload,
    "drain": case_drain, "reconnect": case_reconnect, "jetstream": case_jetstream, "kv": case_kv,
    "objstore": case_objstore,
}


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in CASES:
        emit({"fatal": "usage: nats_client.py <case> <url> [key=value ...]"})
        sys.exit(1)
    try:
        emit({"result": asyncio.run(CASES[sys.argv[1]]())})
    except Exception as e:
        emit({"fatal": f"{type(e).__name__}: {e}"})
        sys.exit(1)


if __name__ == "__main__":
    main()
