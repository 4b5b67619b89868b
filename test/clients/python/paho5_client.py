"""MQTT 5.0 cases with paho-mqtt 2.x (protocol=MQTTv5), run as
`python3 paho5_client.py <case> <host:port> [user=… pass=…]`. It prints {"result":{…}}
with what the library reported (CONNACK reason code and properties, SUBACK/UNSUBACK
reason codes, PUBACK reason codes, the server's DISCONNECT reason code, messages), or
{"fatal":"…"} and exit 1. test/clients/python/paho-mqtt5.test.ts checks the result."""
import threading

import paho.mqtt.client as mqtt
from paho.mqtt.properties import Properties
from paho.mqtt.packettypes import PacketTypes

from mqtt_case import ARGS, HOST, PORT, WAIT, Recorder, run_cases, wait_until


class Client(Recorder):
    """A paho MQTTv5 client on its own network thread that records what the library reports."""

    def __init__(self, client_id, user=None, password=None):
        self.c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5,
                             reconnect_on_failure=False)
        if user is not None:
            self.c.username_pw_set(user, password)
        self.connack = None
        self.subscribed = None
        self.unsubscribed = None
        self.published = {}
        self.disconnected = None
        self.messages = []
        self.lock = threading.Lock()
        self.c.on_connect = self._on_connect
        self.c.on_subscribe = self._on_subscribe
        self.c.on_unsubscribe = self._on_unsubscribe
        self.c.on_publish = self._on_publish
        self.c.on_message = self._on_message
        self.c.on_disconnect = self._on_disconnect

    def _on_connect(self, client, userdata, flags, reason_code, properties):
        props = {}
        for name in ("AssignedClientIdentifier", "MaximumPacketSize", "SharedSubscriptionAvailable",
                     "SubscriptionIdentifierAvailable", "TopicAliasMaximum"):
            if hasattr(properties, name):
                props[name] = getattr(properties, name)
        self.connack = {"reason": reason_code.value, "session_present": bool(flags.session_present), "properties": props}

    def _on_subscribe(self, client, userdata, mid, reason_codes, properties):
        self.subscribed = [rc.value for rc in reason_codes]

    def _on_unsubscribe(self, client, userdata, mid, reason_codes, properties):
        self.unsubscribed = [rc.value for rc in reason_codes]

    def _on_publish(self, client, userdata, mid, reason_code, properties):
        self.published[mid] = reason_code.value

    def _on_message(self, client, userdata, msg):
        with self.lock:
            self.messages.append(f"{msg.topic}|{msg.qos}|{msg.payload.decode()}")

    def _on_disconnect(self, client, userdata, flags, reason_code, properties):
        self.disconnected = reason_code.value

    def connect(self, expiry=None):
        props = None
        if expiry is not None:
            props = Properties(PacketTypes.CONNECT)
            props.SessionExpiryInterval = expiry
        self.c.connect(HOST, int(PORT), keepalive=30, clean_start=True, properties=props)
        self.c.loop_start()
        wait_until(lambda: self.connack is not None, "CONNACK")
        return self.connack

    def subscribe(self, topics):
        self.subscribed = None
        self.c.subscribe(topics)
        wait_until(lambda: self.subscribed is not None, "SUBACK")
        return self.subscribed

    def unsubscribe(self, topics):
        self.unsubscribed = None
        self.c.unsubscribe(topics)
        wait_until(lambda: self.unsubscribed is not None, "UNSUBACK")
        return self.unsubscribed

    def publish(self, topic, payload, qos):
        info = self.c.publish(topic, payload, qos=qos)
        if qos > 0:
            wait_until(lambda: info.mid in self.published, f"the acknowledgement of mid {info.mid}")
            return self.published[info.mid]
        info.wait_for_publish(WAIT)
        return 0


def admin(client_id):
    return Client(client_id, ARGS.get("user"), ARGS.get("pass"))


def case_session():
    """CONNACK properties (an assigned id), QoS 0/1/2 both ways, SUBACK and UNSUBACK reason codes."""
    sub, pub = admin(""), admin("paho5-pub")
    connack = sub.connect()
    pub.connect()
    granted = sub.subscribe([("mx5/#", 2), ("$share/g/mx5/x", 1)])
    acks = [pub.publish(f"mx5/q{q}", f"hello {q}", q) for q in (0, 1, 2)]
    received = sub.wait_messages(3)
    unsubscribed = sub.unsubscribe(["mx5/#", "mx5/none"])
    sub.disconnect()
    pub.disconnect()
    return {"connack": connack, "granted": granted, "acks": acks, "received": received, "unsubscribed": unsubscribed}


def case_refused():
    """A user who may publish only under public/: PUBACK and PUBREC 0x87 elsewhere."""
    c = Client("paho5-guest", ARGS.get("user"), ARGS.get("pass"))
    c.connect()
    acks = [c.publish("private/x", "no", 1), c.publish("private/x", "no", 2), c.publish("public/x", "yes", 1)]
    c.disconnect()
    return {"acks": acks}


def case_takeover():
    """The older connection of a client id is told 0x8E (Session taken over)."""
    first = admin("paho5-twice")
    first.connect()
    second = admin("paho5-twice")
    second.connect()
    wait_until(lambda: first.disconnected is not None, "the DISCONNECT of the older connection")
    first.c.loop_stop()
    second.disconnect()
    return {"disconnected": first.disconnected}


CASES = {"session": case_session, "refused": case_refused, "takeover": case_takeover}


if __name__ == "__main__":
    run_cases(CASES, "paho5_client.py")
