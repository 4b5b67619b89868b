// One case of the client matrix with nats.go (Debian's golang-github-nats-io-go-nats-dev),
// run as `nats-go <case> <url> [user=… pass=… token=… ca=…]`. It prints JSON lines: events
// ({"event":"ready"}) while it runs, then {"result":{…}} with what the library reported,
// or {"fatal":"…"} and exit 1. test/clients/nats-matrix.ts drives it and checks the result.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

const wait = 10 * time.Second

var args = map[string]string{}

func emit(v map[string]interface{}) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

func fatal(format string, a ...interface{}) {
	emit(map[string]interface{}{"fatal": fmt.Sprintf(format, a...)})
	os.Exit(1)
}

func check(err error, what string) {
	if err != nil {
		fatal("%s: %v", what, err)
	}
}

// errorType names a library error by its exported variable, as a user of nats.go would test it.
func errorType(err error) string {
	known := []struct {
		name string
		err  error
	}{
		{"ErrAuthorization", nats.ErrAuthorization},
		{"ErrNoResponders", nats.ErrNoResponders},
		{"ErrMaxPayload", nats.ErrMaxPayload},
		{"ErrTimeout", nats.ErrTimeout},
		{"ErrKeyExists", nats.ErrKeyExists},
		{"ErrKeyNotFound", nats.ErrKeyNotFound},
		{"ErrNoServers", nats.ErrNoServers},
	}
	for _, k := range known {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return fmt.Sprintf("%T", err)
}

func connect(extra ...nats.Option) *nats.Conn {
	nc, err := nats.Connect(os.Args[2], append(options(), extra...)...)
	check(err, "connect")
	return nc
}

func options() []nats.Option {
	opts := []nats.Option{nats.Name("matrix-go"), nats.Timeout(wait)}
	if u, ok := args["user"]; ok {
		opts = append(opts, nats.UserInfo(u, args["pass"]))
	}
	if t, ok := args["token"]; ok {
		opts = append(opts, nats.Token(t))
	}
	if ca, ok := args["ca"]; ok {
		opts = append(opts, nats.RootCAs(ca))
	}
	return opts
}

// collect receives messages on a channel until n arrived or the wait is over.
func collect(ch chan *nats.Msg, n int) []*nats.Msg {
	var got []*nats.Msg
	deadline := time.After(wait)
	for len(got) < n {
		select {
		case m := <-ch:
			got = append(got, m)
		case <-deadline:
			return got
		}
	}
	return got
}

func caseConnect() map[string]interface{} {
	nc, err := nats.Connect(os.Args[2], options()...)
	if err != nil {
		return map[string]interface{}{"connected": false, "error_type": errorType(err), "error": err.Error()}
	}
	defer nc.Close()
	check(nc.Flush(), "flush")
	_, tlsErr := nc.TLSConnectionState()
	return map[string]interface{}{
		"connected":   true,
		"server_id":   nc.ConnectedServerId(),
		"max_payload": nc.MaxPayload(),
		"tls":         tlsErr == nil,
	}
}

func casePubsub() map[string]interface{} {
	nc := connect()
	defer nc.Close()
	star, gt := make(chan *nats.Msg, 16), make(chan *nats.Msg, 16)
	_, err := nc.ChanSubscribe("greet.*", star)
	check(err, "subscribe greet.*")
	_, err = nc.ChanSubscribe("greet.>", gt)
	check(err, "subscribe greet.>")
	check(nc.Flush(), "flush")
	check(nc.Publish("greet.joe", []byte("hello joe")), "publish")
	check(nc.Publish("greet.joe.smith", []byte("hello smith")), "publish")
	check(nc.Publish("other.joe", []byte("not for us")), "publish")
	check(nc.Flush(), "flush")
	show := func(ms []*nats.Msg) []string {
		out := []string{}
		for _, m := range ms {
			out = append(out, m.Subject+"="+string(m.Data))
		}
		sort.Strings(out)
		return out
	}
	return map[string]interface{}{"star": show(collect(star, 1)), "gt": show(collect(gt, 2))}
}

func caseQueue() map[string]interface{} {
	nc := connect()
	defer nc.Close()
	var members [3]*nats.Subscription
	for i := range members {
		sub, err := nc.QueueSubscribeSync("work", "workers")
		check(err, "queue subscribe")
		members[i] = sub
	}
	plain, err := nc.SubscribeSync("work")
	check(err, "subscribe")
	check(nc.Flush(), "flush")
	for i := 0; i < 30; i++ {
		check(nc.Publish("work", []byte(fmt.Sprint(i))), "publish")
	}
	check(nc.Flush(), "flush")
	plainCount := 0
	for ; plainCount < 30; plainCount++ {
		if _, err := plain.NextMsg(wait); err != nil {
			break
		}
	}
	// A round trip after the last delivery: every queue member's messages are in.
	check(nc.Flush(), "flush")
	counts := make([]int, 3)
	for i, m := range members {
		n, _, err := m.Pending()
		check(err, "pending")
		counts[i] = n
	}
	return map[string]interface{}{"members": counts, "plain": plainCount}
}

// echoUpper answers a request with its payload in upper case and its X-Trace header.
func echoUpper(m *nats.Msg) {
	reply := nats.NewMsg(m.Reply)
	reply.Header.Set("X-Trace", m.Header.Get("X-Trace"))
	reply.Data = []byte(strings.ToUpper(string(m.Data)))
	check(m.RespondMsg(reply), "respond")
}

func caseRequest() map[string]interface{} {
	nc := connect()
	defer nc.Close()
	_, err := nc.Subscribe("svc.echo", echoUpper)
	check(err, "subscribe")
	check(nc.Flush(), "flush")
	req := nats.NewMsg("svc.echo")
	req.Header.Set("X-Trace", "trace-42")
	req.Data = []byte("hello")
	resp, err := nc.RequestMsg(req, wait)
	check(err, "request")
	return map[string]interface{}{"reply": string(resp.Data), "trace": resp.Header.Get("X-Trace")}
}

func caseNoResponders() map[string]interface{} {
	nc := connect()
	defer nc.Close()
	_, err := nc.Request("nobody.home", []byte("anyone?"), wait)
	if err == nil {
		fatal("a request without responders got an answer")
	}
	return map[string]interface{}{"error_type": errorType(err), "error": err.Error()}
}

func caseAutoUnsub() map[string]interface{} {
	nc := connect()
	defer nc.Close()
	ch := make(chan *nats.Msg, 16)
	sub, err := nc.ChanSubscribe("auto", ch)
	check(err, "subscribe")
	check(sub.AutoUnsubscribe(3), "auto-unsubscribe")
	check(nc.Flush(), "flush")
	for i := 0; i < 10; i++ {
		check(nc.Publish("auto", []byte(fmt.Sprint(i))), "publish")
	}
	// A round trip after the publishes: anything the server still sent has arrived.
	check(nc.Flush(), "flush")
	got := collect(ch, 3)
	check(nc.Flush(), "flush")
	return map[string]interface{}{"received": len(got) + len(ch)}
}

func casePayload() map[string]interface{} {
	nc := connect()
	defer nc.Close()
	ch := make(chan *nats.Msg, 1)
	_, err := nc.ChanSubscribe("big", ch)
	check(err, "subscribe")
	check(nc.Flush(), "flush")
	data := make([]byte, 512*1024)
	for i := range data {
		data[i] = byte(i * 7)
	}
	check(nc.Publish("big", data), "publish 512 KiB")
	got := collect(ch, 1)
	if len(got) != 1 {
		fatal("the 512 KiB message did not come back")
	}
	sum := sha256.Sum256(got[0].Data)
	overErr := nc.Publish("big", make([]byte, nc.MaxPayload()+1))
	out := map[string]interface{}{"size": len(got[0].Data), "sha256": hex.EncodeToString(sum[:])}
	if overErr != nil {
		out["over_error_type"] = errorType(overErr)
		out["over_error"] = overErr.Error()
	}
	return out
}

func caseDrain() map[string]interface{} {
	closed := make(chan struct{})
	nc := connect(nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	var mu sync.Mutex
	processed := 0
	_, err := nc.Subscribe("drain.me", func(*nats.Msg) {
		time.Sleep(2 * time.Millisecond) // a slow handler, so messages are still pending at Drain
		mu.Lock()
		processed++
		mu.Unlock()
	})
	check(err, "subscribe")
	check(nc.Flush(), "flush")
	for i := 0; i < 50; i++ {
		check(nc.Publish("drain.me", []byte(fmt.Sprint(i))), "publish")
	}
	check(nc.Flush(), "flush")
	check(nc.Drain(), "drain")
	select {
	case <-closed:
	case <-time.After(wait):
		fatal("the connection did not close after Drain")
	}
	mu.Lock()
	defer mu.Unlock()
	return map[string]interface{}{"processed": processed, "closed": nc.IsClosed()}
}

func caseReconnect() map[string]interface{} {
	reconnected := make(chan struct{}, 1)
	nc := connect(
		nats.MaxReconnects(-1),
		nats.ReconnectWait(100*time.Millisecond),
		nats.ReconnectHandler(func(*nats.Conn) { reconnected <- struct{}{} }),
	)
	defer nc.Close()
	ch := make(chan *nats.Msg, 4)
	_, err := nc.ChanSubscribe("rc.>", ch)
	check(err, "subscribe")
	check(nc.Flush(), "flush")
	emit(map[string]interface{}{"event": "ready"})
	select {
	case <-reconnected:
	case <-time.After(60 * time.Second):
		fatal("no reconnect within 60s")
	}
	// The subscription is re-sent on reconnect, before this publish.
	check(nc.Publish("rc.after", []byte("after restart")), "publish")
	got := collect(ch, 1)
	received := ""
	if len(got) == 1 {
		received = string(got[0].Data)
	}
	return map[string]interface{}{"reconnected": true, "received": received, "reconnects": nc.Stats().Reconnects}
}

func caseJetStream() map[string]interface{} {
	nc := connect()
	defer nc.Close()
	js, err := nc.JetStream()
	check(err, "jetstream")
	si, err := js.AddStream(&nats.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	check(err, "add stream")
	first, err := js.Publish("orders.new", []byte("order 1"))
	check(err, "publish")
	var dedup []map[string]interface{}
	for i := 0; i < 2; i++ {
		ack, err := js.Publish("orders.new", []byte("order 2"), nats.MsgId("order-2"))
		check(err, "publish with Nats-Msg-Id")
		dedup = append(dedup, map[string]interface{}{"seq": ack.Sequence, "duplicate": ack.Duplicate})
	}
	_, err = js.Publish("orders.paid", []byte("order 3"))
	check(err, "publish")

	pull, err := js.PullSubscribe("orders.>", "puller")
	check(err, "pull subscribe")
	msgs, err := pull.Fetch(3, nats.MaxWait(wait))
	check(err, "fetch")
	var pulled []string
	for _, m := range msgs {
		pulled = append(pulled, string(m.Data))
		check(m.AckSync(), "ack")
	}
	ci, err := pull.ConsumerInfo()
	check(err, "consumer info")

	push, err := js.SubscribeSync("orders.>", nats.Durable("pusher"), nats.DeliverAll())
	check(err, "push subscribe")
	var pushed []string
	for i := 0; i < 3; i++ {
		m, err := push.NextMsg(wait)
		check(err, "next push message")
		meta, err := m.Metadata()
		check(err, "metadata")
		pushed = append(pushed, fmt.Sprintf("%d:%s", meta.Sequence.Stream, m.Data))
		check(m.Ack(), "ack")
	}
	return map[string]interface{}{
		"stream":     si.Config.Name,
		"first":      map[string]interface{}{"stream": first.Stream, "seq": first.Sequence, "duplicate": first.Duplicate},
		"dedup":      dedup,
		"pull":       pulled,
		"pull_acked": ci.AckFloor.Stream,
		"push":       pushed,
	}
}

func caseKV() map[string]interface{} {
	nc := connect()
	defer nc.Close()
	js, err := nc.JetStream()
	check(err, "jetstream")
	kv, err := js.CreateKeyValue(&nats.KeyValueConfig{Bucket: "settings", History: 5})
	check(err, "create bucket")
	w, err := kv.WatchAll()
	check(err, "watch")
	putRev, err := kv.Put("color", []byte("red"))
	check(err, "put")
	e, err := kv.Get("color")
	check(err, "get")
	updRev, err := kv.Update("color", []byte("blue"), putRev)
	check(err, "update")
	_, staleErr := kv.Update("color", []byte("green"), putRev)
	_, err = kv.Put("size", []byte("xl"))
	check(err, "put")
	check(kv.Delete("size"), "delete")
	_, delErr := kv.Get("size")
	keys, err := kv.Keys()
	check(err, "keys")
	hist, err := kv.History("color")
	check(err, "history")
	var history []string
	for _, h := range hist {
		history = append(history, string(h.Value()))
	}
	var watched []string
	deadline := time.After(wait)
	for len(watched) < 4 {
		select {
		case u := <-w.Updates():
			if u == nil {
				continue // the marker that the initial values are done
			}
			op := "PUT"
			if u.Operation() == nats.KeyValueDelete {
				op = "DEL"
			}
			watched = append(watched, fmt.Sprintf("%s:%s=%s", op, u.Key(), u.Value()))
		case <-deadline:
			fatal("watch saw only %v", watched)
		}
	}
	check(w.Stop(), "stop watch")
	return map[string]interface{}{
		"put_rev": putRev, "get": string(e.Value()), "update_rev": updRev,
		"stale_update_error_type": errorType(staleErr), "deleted_get_error_type": errorType(delErr),
		"keys": keys, "history": history, "watch": watched,
	}
}

func caseObjectStore() map[string]interface{} {
	nc := connect()
	defer nc.Close()
	js, err := nc.JetStream()
	check(err, "jetstream")
	obs, err := js.CreateObjectStore(&nats.ObjectStoreConfig{Bucket: "files"})
	check(err, "create object store")
	data := make([]byte, 300*1024)
	for i := range data {
		data[i] = byte(i % 251)
	}
	_, err = obs.PutBytes("report.bin", data)
	check(err, "put")
	back, err := obs.GetBytes("report.bin")
	check(err, "get")
	info, err := obs.GetInfo("report.bin")
	check(err, "info")
	list, err := obs.List()
	check(err, "list")
	var names []string
	for _, o := range list {
		names = append(names, o.Name)
	}
	sum := sha256.Sum256(back)
	want := sha256.Sum256(data)
	return map[string]interface{}{
		"size": info.Size, "chunks": info.Chunks, "intact": sum == want, "listed": names,
	}
}

// caseCluster runs across two servers of a cluster: subscribers and a responder on the
// server named by other=, the publisher on the case's URL. The responder's interest
// reaching the publisher's server (a request answered through the route) is the signal
// that the interest made before it has arrived too.
func caseCluster() map[string]interface{} {
	pub := connect()
	defer pub.Close()
	sub, err := nats.Connect(args["other"], options()...)
	check(err, "connect other")
	defer sub.Close()
	plain := make(chan *nats.Msg, 64)
	_, err = sub.ChanSubscribe("cl.>", plain)
	check(err, "subscribe cl.>")
	var members [2]*nats.Subscription
	for i := range members {
		members[i], err = sub.QueueSubscribeSync("cl.work", "workers")
		check(err, "queue subscribe")
	}
	_, err = sub.Subscribe("cl.svc", echoUpper)
	check(err, "subscribe cl.svc")
	check(sub.Flush(), "flush")
	req := nats.NewMsg("cl.svc")
	req.Header.Set("X-Trace", "across")
	req.Data = []byte("hello cluster")
	var resp *nats.Msg
	deadline := time.Now().Add(wait)
	for {
		resp, err = pub.RequestMsg(req, time.Second)
		if err == nil {
			break
		}
		if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, nats.ErrTimeout) {
			fatal("request: %v", err)
		}
		if time.Now().After(deadline) {
			fatal("the responder's interest never reached the publisher's server: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := 0; i < 20; i++ {
		check(pub.Publish(fmt.Sprintf("cl.msg.%d", i), []byte(fmt.Sprint(i))), "publish")
	}
	for i := 0; i < 30; i++ {
		check(pub.Publish("cl.work", []byte(fmt.Sprint(i))), "publish work")
	}
	check(pub.Flush(), "flush")
	// cl.> matches cl.msg.* (20), cl.work (30) and cl.svc (the probes and the request).
	got := collect(plain, 50)
	msgs := 0
	for _, m := range got {
		if strings.HasPrefix(m.Subject, "cl.msg.") {
			msgs++
		}
	}
	counts := make([]int, 2)
	for total := 0; total < 30 && time.Now().Before(deadline.Add(wait)); {
		check(sub.Flush(), "flush")
		total = 0
		for i, m := range members {
			n, _, err := m.Pending()
			check(err, "pending")
			counts[i] = n
			total += n
		}
		if total < 30 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	_, nrErr := pub.Request("nobody.cl", []byte("anyone?"), wait)
	return map[string]interface{}{
		"reply": string(resp.Data), "trace": resp.Header.Get("X-Trace"), "msgs": msgs,
		"members": counts, "no_responders": errorType(nrErr),
	}
}

// caseMqtt5 is the NATS side of the MQTT 5.0 bridge (test/clients/go/nats-go-mqtt5.test.ts),
// whose MQTT 5.0 clients (mqtt.js) are connected before it starts: it takes a PUBLISH's
// User Properties as headers, serves an MQTT request, makes a request an MQTT device
// answers, and shares the queue group "G" with an MQTT `$share/G/m5/q` subscriber.
func caseMqtt5() map[string]interface{} {
	nc := connect()
	defer nc.Close()
	hdr := make(chan *nats.Msg, 4)
	_, err := nc.ChanSubscribe("m5.hdr", hdr)
	check(err, "subscribe")
	served := make(chan string, 1)
	_, err = nc.Subscribe("m5.svc", func(m *nats.Msg) {
		reply := nats.NewMsg(m.Reply)
		reply.Header.Set("X-Served-By", "nats.go")
		reply.Data = []byte("re:" + string(m.Data))
		check(m.RespondMsg(reply), "respond")
		served <- m.Reply
	})
	check(err, "subscribe")
	queue, err := nc.QueueSubscribeSync("m5.q", "G")
	check(err, "queue subscribe")
	check(nc.Flush(), "flush")
	emit(map[string]interface{}{"event": "ready"})

	// a request to a subject an MQTT 5.0 device serves: its answer on the Response Topic comes back here
	req := nats.NewMsg("m5.dev")
	req.Header.Set("K", "v")
	req.Data = []byte("ping")
	resp, err := nc.RequestMsg(req, wait)
	check(err, "request to the MQTT device")
	// the shared work: each message to exactly one member of G, MQTT or NATS
	for i := 0; i < 40; i++ {
		check(nc.Publish("m5.q", []byte(fmt.Sprint(i))), "publish")
	}
	check(nc.Flush(), "flush")
	got := collect(hdr, 1)
	if len(got) != 1 {
		fatal("no message from the MQTT 5.0 publisher")
	}
	h := got[0].Header
	var replyTo string
	select {
	case replyTo = <-served:
	case <-time.After(wait):
		fatal("the MQTT request never came")
	}
	// A round trip after the last publish: every message this member got is in.
	check(nc.Flush(), "flush")
	mine, _, err := queue.Pending()
	check(err, "pending")
	return map[string]interface{}{
		"user_a": h.Values("a"), "user_b": h.Values("b"), "content_type": h.Get("Content-Type"),
		"payload": string(got[0].Data), "request_reply_subject": replyTo,
		"device_answer": string(resp.Data), "device_header": resp.Header.Get("Answered"),
		"queue_mine": mine,
	}
}

func main() {
	if len(os.Args) < 3 {
		fatal("usage: nats-go <case> <url> [key=value ...]")
	}
	for _, a := range os.Args[3:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			args[k] = v
		}
	}
	cases := map[string]func() map[string]interface{}{
		"connect": caseConnect, "pubsub": casePubsub, "queue": caseQueue, "request": caseRequest,
		"no_responders": caseNoResponders, "autounsub": caseAutoUnsub, "payload": casePayload,
		"drain": caseDrain, "reconnect": caseReconnect, "jetstream": caseJetStream, "kv": caseKV,
		"objstore": caseObjectStore, "cluster": caseCluster, "mqtt5": caseMqtt5,
	}
	run, ok := cases[os.Args[1]]
	if !ok {
		fatal("unknown case %q", os.Args[1])
	}
	emit(map[string]interface{}{"result": run()})
}
