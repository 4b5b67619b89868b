"""One case of the MQTT client matrix with paho-mqtt (MQTT 3.1.1), run as
`python3 paho_client.py <case> <host:port> [ws=1 user=… pass=… ca=… id=…]`. It prints
{"result":{…}} with what the library reported (CONNACK reason, granted QoS, messages with
their QoS and retain flag), or {"fatal":"…"} and exit 1. test/clients/mqtt-matrix.ts
drives it and checks the result."""
import threading

import paho.mqtt.client as mqtt

from mqtt_case import ARGS, HOST, PORT, WAIT, Recorder, run_cases, wait_until


class Client(Recorder):
    """A paho client on its own network thread that records what the library reports."""

    def __init__(self, client_id, clean=True, will=None, password=None):
        transport = "websockets" if ARGS.get("ws") == "1" else "tcp"
        self.c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=clean,
                             protocol=mqtt.MQTTv311, transport=transport, reconnect_on_failure=False)
        if transport == "websockets":
            self.c.ws_set_options(path="/mqtt")
        if "ca" in ARGS:
            self.c.tls_set(ca_certs=ARGS["ca"])
        if "user" in ARGS:
            self.c.username_pw_set(ARGS["user"], password if password is not None else ARGS.get("pass"))
        if will is not None:
            self.c.will_set(*will)
        self.connack = None
        self.granted = None
        self.messages = []
        self.lock = threading.Lock()
        self.c.on_connect = self._on_connect
        self.c.on_subscribe = self._on_subscribe
        self.c.on_message = self._on_message

    def _on_connect(self, client, userdata, flags, reason_code, properties):
        self.connack = {"reason": str(reason_code), "failure": reason_code.is_failure, "session_present": bool(flags.session_present)}

    def _on_subscribe(self, client, userdata, mid, reason_codes, properties):
        self.granted = [rc.value for rc in reason_codes]

    def _on_message(self, client, userdata, msg):
        with self.lock:
            self.messages.append(f"{msg.topic}|{msg.qos}|{str(msg.retain).lower()}|{msg.payload.decode()}")

    def connect(self):
        self.c.connect(HOST, int(PORT), keepalive=30)
        self.c.loop_start()
        wait_until(lambda: self.connack is not None, "CONNACK")
        return self.connack

    def subscribe(self, topic, qos):
        self.granted = None
        self.c.subscribe(topic, qos)
        wait_until(lambda: self.granted is not None, "SUBACK")
        return self.granted

    def publish(self, topic, payload, qos, retain=False):
        info = self.c.publish(topic, payload, qos=qos, retain=retain)
        info.wait_for_publish(WAIT)
        return info.is_published()

    def drop(self):
        """Close the socket without DISCONNECT, as a device losing power would."""
        self.c.loop_stop()
        self.c.socket().close()


def case_connect():
    c = Client(ARGS.get("id", "paho-connect"))
    connack = c.connect()
    if not connack["failure"]:
        c.disconnect()
    return {"connack": connack}


def case_qos():
    sub, pub = Client("paho-qos-sub"), Client("paho-qos-pub")
    sub.connect()
    pub.connect()
    granted = sub.subscribe("mx/qos/#", 2)
    published = [q for q in (0, 1, 2) if pub.publish(f"mx/qos/q{q}", f"hello {q}", q)]
    received = sub.wait_messages(3)
    sub.disconnect()
    pub.disconnect()
    return {"granted": granted, "published": published, "received": received}


def case_retained():
    pub = Client("paho-ret-pub")
    pub.connect()
    pub.publish("mx/ret", "kept", 1, retain=True)
    pub.disconnect()
    sub = Client("paho-ret-sub")
    sub.connect()
    granted = sub.subscribe("mx/ret", 1)
    received = sub.wait_messages(1)
    sub.disconnect()
    return {"granted": granted, "received": received}


def case_will():
    sub = Client("paho-will-sub")
    sub.connect()
    sub.subscribe("mx/will", 1)
    dev = Client("paho-will-dev", will=("mx/will", "gone", 1, False))
    dev.connect()
    dev.drop()
    received = sub.wait_messages(1)
    sub.disconnect()
    return {"received": received}


def case_persist_subscribe():
    c = Client(ARGS["id"], clean=False)
    connack = c.connect()
    granted = c.subscribe("mx/persist", 1)
    c.disconnect()
    return {"session_present": connack["session_present"], "granted": granted}


def case_publish():
    c = Client(ARGS.get("id", "paho-publisher"))
    c.connect()
    ok = c.publish(ARGS["topic"], ARGS["payload"], int(ARGS["qos"]))
    c.disconnect()
    return {"published": ok}


def case_persist_resume():
    c = Client(ARGS["id"], clean=False)
    connack = c.connect()
    received = c.wait_messages(1)  # no SUBSCRIBE: the session kept it
    c.disconnect()
    return {"session_present": connack["session_present"], "received": received}


CASES = {
    "connect": case_connect, "qos": case_qos, "retained": case_retained, "will": case_will,
    "persist_subscribe": case_persist_subscribe, "publish": case_publish, "persist_resume": case_persist_resume,
}


if __name__ == "__main__":
    run_cases(CASES, "paho_client.py")
