"""What the MQTT client-matrix programs share: the command line (`<case> <host:port>
[key=value ...]`), waiting with a bound, and printing {"result": …} or {"fatal": …}."""
import json
import sys
import time

WAIT = 10.0
ARGS = dict(a.split("=", 1) for a in sys.argv[3:] if "=" in a)
HOST, PORT = (sys.argv[2].rsplit(":", 1) + ["0"])[:2] if len(sys.argv) > 2 else ("", "0")


def emit(obj):
    print(json.dumps(obj), flush=True)


def wait_until(cond, what):
    deadline = time.monotonic() + WAIT
    while not cond():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.005)


class Recorder:
    """What both paho clients do with what they recorded: `self.c` (the paho client),
    `self.messages` (guarded by `self.lock`)."""

    def wait_messages(self, n):
        wait_until(lambda: len(self.messages) >= n, f"{n} messages (have {self.messages})")
        with self.lock:
            return sorted(self.messages)

    def disconnect(self):
        self.c.disconnect()
        self.c.loop_stop()


def run_cases(cases, program):
    """Runs the case named on the command line; exit 1 with {"fatal": …} when it fails."""
    if len(sys.argv) < 3 or sys.argv[1] not in cases:
        emit({"fatal": f"usage: {program} <case> <host:port> [key=value ...]"})
        sys.exit(1)
    try:
        emit({"result": cases[sys.argv[1]]()})
    except Exception as e:
        emit({"fatal": f"{type(e).__name__}: {e}"})
        sys.exit(1)
