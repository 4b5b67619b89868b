// Subjects only Switchyard servers speak on between themselves (the MQTT retained-message
// sync, docs/cluster-protocol.md): a route or leaf connection hands a message on one to the server instead of
// routing it, and no client may publish on one (it could otherwise say what only a server
// may). They lie apart from nats-server's `$MQTT.sess.`, `$MQTT.msgs.` and `$MQTT.JSA.`.

export const OWN_PREFIX = "$MQTT.rmsg."

/** Whether `subject` is one of them (a `$` first, so that other subjects cost one comparison). */
export const isOwnSubject = (subject: string): boolean => subject.charCodeAt(0) === 36 && subject.startsWith(OWN_PREFIX)
