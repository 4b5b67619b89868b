// One case of the client matrix with libnats (Debian's libnats-dev), run as
// `nats-c <case> <url> [user=… pass=… token=… ca=…]`. It prints JSON lines: events
// ({"event":"ready"}) while it runs, then {"result":{…}} with what the library reported,
// or {"fatal":"…"} and exit 1. test/clients/nats-matrix.ts drives it and checks the result.
// libnats has no object store; everything else of the matrix is here.
#include <nats/nats.h>
#include <ctype.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WAIT 10000 /* ms */

static const char *url;
static const char *user, *pass, *token, *ca;

static void fatal(const char *what, natsStatus s) {
    printf("{\"fatal\":\"%s: %s\"}\n", what, natsStatus_GetText(s));
    exit(1);
}

#define CHECK(call, what) do { natsStatus s_ = (call); if (s_ != NATS_OK) fatal(what, s_); } while (0)

/* The status as its enum name, as a user of libnats would compare it. */
static const char *statusName(natsStatus s) {
    switch (s) {
    case NATS_OK: return "NATS_OK";
    case NATS_ERR: return "NATS_ERR";
    case NATS_CONNECTION_AUTH_FAILED: return "NATS_CONNECTION_AUTH_FAILED";
    case NATS_NOT_PERMITTED: return "NATS_NOT_PERMITTED";
    case NATS_NOT_FOUND: return "NATS_NOT_FOUND";
    case NATS_NO_RESPONDERS: return "NATS_NO_RESPONDERS";
    case NATS_MAX_PAYLOAD: return "NATS_MAX_PAYLOAD";
    case NATS_TIMEOUT: return "NATS_TIMEOUT";
    case NATS_NO_SERVER: return "NATS_NO_SERVER";
    default: return "other";
    }
}

static natsOptions *options(void) {
    natsOptions *o = NULL;
    CHECK(natsOptions_Create(&o), "options");
    CHECK(natsOptions_SetURL(o, url), "url");
    CHECK(natsOptions_SetName(o, "matrix-c"), "name");
    CHECK(natsOptions_SetTimeout(o, WAIT), "timeout");
    if (user != NULL) CHECK(natsOptions_SetUserInfo(o, user, pass), "user info");
    if (token != NULL) CHECK(natsOptions_SetToken(o, token), "token");
    if (ca != NULL) {
        CHECK(natsOptions_SetSecure(o, true), "secure");
        CHECK(natsOptions_LoadCATrustedCertificates(o, ca), "CA");
    }
    return o;
}

static natsConnection *connectWith(natsOptions *o) {
    natsConnection *nc = NULL;
    CHECK(natsConnection_Connect(&nc, o), "connect");
    natsOptions_Destroy(o);
    return nc;
}

static void caseConnect(void) {
    natsOptions *o = options();
    natsConnection *nc = NULL;
    natsStatus s = natsConnection_Connect(&nc, o);
    natsOptions_Destroy(o);
    if (s != NATS_OK) {
        printf("{\"result\":{\"connected\":false,\"error_type\":\"%s\",\"error\":\"%s\"}}\n", statusName(s), natsStatus_GetText(s));
        return;
    }
    CHECK(natsConnection_Flush(nc), "flush");
    char id[128];
    CHECK(natsConnection_GetConnectedServerId(nc, id, sizeof(id)), "server id");
    printf("{\"result\":{\"connected\":true,\"server_id\":\"%s\",\"max_payload\":%lld,\"tls\":%s}}\n",
           id, (long long) natsConnection_GetMaxPayload(nc), ca != NULL ? "true" : "false");
    natsConnection_Destroy(nc);
}

/* Receive on a synchronous subscription until it has nothing more within the wait. */
static natsMsg *next(natsSubscription *sub, int64_t timeout) {
    natsMsg *m = NULL;
    return natsSubscription_NextMsg(&m, sub, timeout) == NATS_OK ? m : NULL;
}

static void printMsgs(const char *name, natsSubscription *sub, int n) {
    printf("\"%s\":[", name);
    for (int i = 0; i < n; i++) {
        natsMsg *m = next(sub, WAIT);
        if (m == NULL) break;
        printf("%s\"%s=%.*s\"", i ? "," : "", natsMsg_GetSubject(m), natsMsg_GetDataLength(m), natsMsg_GetData(m));
        natsMsg_Destroy(m);
    }
    printf("]");
}

static void casePubsub(void) {
    natsConnection *nc = connectWith(options());
    natsSubscription *star = NULL, *gt = NULL;
    CHECK(natsConnection_SubscribeSync(&star, nc, "greet.*"), "subscribe");
    CHECK(natsConnection_SubscribeSync(&gt, nc, "greet.>"), "subscribe");
    CHECK(natsConnection_Flush(nc), "flush");
    CHECK(natsConnection_PublishString(nc, "greet.joe", "hello joe"), "publish");
    CHECK(natsConnection_PublishString(nc, "greet.joe.smith", "hello smith"), "publish");
    CHECK(natsConnection_PublishString(nc, "other.joe", "not for us"), "publish");
    CHECK(natsConnection_Flush(nc), "flush");
    printf("{\"result\":{");
    printMsgs("star", star, 1);
    printf(",");
    printMsgs("gt", gt, 2);
    printf("}}\n");
    natsSubscription_Destroy(star);
    natsSubscription_Destroy(gt);
    natsConnection_Destroy(nc);
}

static void caseQueue(void) {
    natsConnection *nc = connectWith(options());
    natsSubscription *members[3], *plain = NULL;
    for (int i = 0; i < 3; i++) CHECK(natsConnection_QueueSubscribeSync(&members[i], nc, "work", "workers"), "queue subscribe");
    CHECK(natsConnection_SubscribeSync(&plain, nc, "work"), "subscribe");
    CHECK(natsConnection_Flush(nc), "flush");
    for (int i = 0; i < 30; i++) CHECK(natsConnection_PublishString(nc, "work", "job"), "publish");
    CHECK(natsConnection_Flush(nc), "flush");
    int plainCount = 0;
    natsMsg *m;
    while (plainCount < 30 && (m = next(plain, WAIT)) != NULL) {
        plainCount++;
        natsMsg_Destroy(m);
    }
    CHECK(natsConnection_Flush(nc), "flush");
    printf("{\"result\":{\"plain\":%d,\"members\":[", plainCount);
    for (int i = 0; i < 3; i++) {
        int n = 0;
        CHECK(natsSubscription_GetPending(members[i], &n, NULL), "pending");
        printf("%s%d", i ? "," : "", n);
        natsSubscription_Destroy(members[i]);
    }
    printf("]}}\n");
    natsSubscription_Destroy(plain);
    natsConnection_Destroy(nc);
}

static void echo(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure) {
    (void) sub;
    (void) closure;
    const char *trace = NULL;
    natsMsgHeader_Get(m, "X-Trace", &trace);
    char upper[64];
    int n = natsMsg_GetDataLength(m) < 63 ? natsMsg_GetDataLength(m) : 63;
    for (int i = 0; i < n; i++) upper[i] = (char) toupper((unsigned char) natsMsg_GetData(m)[i]);
    natsMsg *reply = NULL;
    CHECK(natsMsg_Create(&reply, natsMsg_GetReply(m), NULL, upper, n), "reply");
    if (trace != NULL) CHECK(natsMsgHeader_Set(reply, "X-Trace", trace), "header");
    CHECK(natsConnection_PublishMsg(nc, reply), "respond");
    natsMsg_Destroy(reply);
    natsMsg_Destroy(m);
}

static void caseRequest(void) {
    natsConnection *nc = connectWith(options());
    natsSubscription *sub = NULL;
    CHECK(natsConnection_Subscribe(&sub, nc, "svc.echo", echo, NULL), "subscribe");
    CHECK(natsConnection_Flush(nc), "flush");
    natsMsg *req = NULL, *resp = NULL;
    CHECK(natsMsg_Create(&req, "svc.echo", NULL, "hello", 5), "request");
    CHECK(natsMsgHeader_Set(req, "X-Trace", "trace-42"), "header");
    CHECK(natsConnection_RequestMsg(&resp, nc, req, WAIT), "request");
    const char *trace = "";
    natsMsgHeader_Get(resp, "X-Trace", &trace);
    printf("{\"result\":{\"reply\":\"%.*s\",\"trace\":\"%s\"}}\n", natsMsg_GetDataLength(resp), natsMsg_GetData(resp), trace);
    natsMsg_Destroy(req);
    natsMsg_Destroy(resp);
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
}

static void caseNoResponders(void) {
    natsConnection *nc = connectWith(options());
    natsMsg *resp = NULL;
    natsStatus s = natsConnection_RequestString(&resp, nc, "nobody.home", "anyone?", WAIT);
    if (s == NATS_OK) fatal("a request without responders got an answer", s);
    printf("{\"result\":{\"error_type\":\"%s\",\"error\":\"%s\"}}\n", statusName(s), natsStatus_GetText(s));
    natsConnection_Destroy(nc);
}

static void caseAutoUnsub(void) {
    natsConnection *nc = connectWith(options());
    natsSubscription *sub = NULL;
    CHECK(natsConnection_SubscribeSync(&sub, nc, "auto"), "subscribe");
    CHECK(natsSubscription_AutoUnsubscribe(sub, 3), "auto-unsubscribe");
    CHECK(natsConnection_Flush(nc), "flush");
    for (int i = 0; i < 10; i++) CHECK(natsConnection_PublishString(nc, "auto", "x"), "publish");
    CHECK(natsConnection_Flush(nc), "flush");
    int received = 0;
    natsMsg *m;
    while ((m = next(sub, received < 3 ? WAIT : 200)) != NULL) {
        received++;
        natsMsg_Destroy(m);
    }
    printf("{\"result\":{\"received\":%d}}\n", received);
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
}

static void casePayload(void) {
    natsConnection *nc = connectWith(options());
    natsSubscription *sub = NULL;
    CHECK(natsConnection_SubscribeSync(&sub, nc, "big"), "subscribe");
    CHECK(natsConnection_Flush(nc), "flush");
    int size = 512 * 1024;
    unsigned char *data = malloc(size);
    for (int i = 0; i < size; i++) data[i] = (unsigned char) (i * 7);
    CHECK(natsConnection_Publish(nc, "big", data, size), "publish 512 KiB");
    natsMsg *m = next(sub, WAIT);
    if (m == NULL) fatal("the 512 KiB message did not come back", NATS_TIMEOUT);
    unsigned char sum[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *) natsMsg_GetData(m), natsMsg_GetDataLength(m), sum);
    int64_t max = natsConnection_GetMaxPayload(nc);
    unsigned char *over = calloc(max + 1, 1);
    natsStatus s = natsConnection_Publish(nc, "big", over, (int) max + 1);
    printf("{\"result\":{\"size\":%d,\"sha256\":\"", natsMsg_GetDataLength(m));
    for (int i = 0; i < SHA256_DIGEST_LENGTH; i++) printf("%02x", sum[i]);
    printf("\",\"over_error_type\":\"%s\",\"over_error\":\"%s\"}}\n", statusName(s), natsStatus_GetText(s));
    free(data);
    free(over);
    natsMsg_Destroy(m);
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
}

static volatile int processed = 0;
static volatile bool closed = false;

static void slowHandler(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure) {
    (void) nc;
    (void) sub;
    (void) closure;
    nats_Sleep(2); /* a slow handler, so messages are still pending at Drain */
    processed++;
    natsMsg_Destroy(m);
}

static void onClosed(natsConnection *nc, void *closure) {
    (void) nc;
    (void) closure;
    closed = true;
}

static void caseDrain(void) {
    natsOptions *o = options();
    CHECK(natsOptions_SetClosedCB(o, onClosed, NULL), "closed callback");
    natsConnection *nc = connectWith(o);
    natsSubscription *sub = NULL;
    CHECK(natsConnection_Subscribe(&sub, nc, "drain.me", slowHandler, NULL), "subscribe");
    CHECK(natsConnection_Flush(nc), "flush");
    for (int i = 0; i < 50; i++) CHECK(natsConnection_PublishString(nc, "drain.me", "x"), "publish");
    CHECK(natsConnection_Flush(nc), "flush");
    CHECK(natsConnection_DrainTimeout(nc, WAIT), "drain");
    for (int i = 0; i < WAIT / 10 && !closed; i++) nats_Sleep(10);
    printf("{\"result\":{\"processed\":%d,\"closed\":%s}}\n", processed, natsConnection_IsClosed(nc) ? "true" : "false");
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
}

static volatile bool reconnected = false;

static void onReconnected(natsConnection *nc, void *closure) {
    (void) nc;
    (void) closure;
    reconnected = true;
}

static void caseReconnect(void) {
    natsOptions *o = options();
    CHECK(natsOptions_SetMaxReconnect(o, -1), "max reconnect");
    CHECK(natsOptions_SetReconnectWait(o, 100), "reconnect wait");
    CHECK(natsOptions_SetReconnectedCB(o, onReconnected, NULL), "reconnected callback");
    natsConnection *nc = connectWith(o);
    natsSubscription *sub = NULL;
    CHECK(natsConnection_SubscribeSync(&sub, nc, "rc.>"), "subscribe");
    CHECK(natsConnection_Flush(nc), "flush");
    printf("{\"event\":\"ready\"}\n");
    fflush(stdout);
    for (int i = 0; i < 6000 && !reconnected; i++) nats_Sleep(10);
    if (!reconnected) fatal("no reconnect within 60s", NATS_TIMEOUT);
    CHECK(natsConnection_PublishString(nc, "rc.after", "after restart"), "publish");
    natsMsg *m = next(sub, WAIT);
    natsStatistics *stats = NULL;
    uint64_t reconnects = 0;
    CHECK(natsStatistics_Create(&stats), "stats");
    CHECK(natsConnection_GetStats(nc, stats), "stats");
    CHECK(natsStatistics_GetCounts(stats, NULL, NULL, NULL, NULL, &reconnects), "stats");
    printf("{\"result\":{\"reconnected\":true,\"received\":\"%.*s\",\"reconnects\":%llu}}\n",
           m ? natsMsg_GetDataLength(m) : 0, m ? natsMsg_GetData(m) : "", (unsigned long long) reconnects);
    natsStatistics_Destroy(stats);
    natsMsg_Destroy(m);
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
}

static void printAck(jsPubAck *pa) {
    printf("{\"stream\":\"%s\",\"seq\":%llu,\"duplicate\":%s}", pa->Stream, (unsigned long long) pa->Sequence, pa->Duplicate ? "true" : "false");
    jsPubAck_Destroy(pa);
}

static void caseJetStream(void) {
    natsConnection *nc = connectWith(options());
    jsCtx *js = NULL;
    jsErrCode jerr = 0;
    CHECK(natsConnection_JetStream(&js, nc, NULL), "jetstream");
    jsStreamConfig cfg;
    jsStreamConfig_Init(&cfg);
    const char *subjects[] = {"orders.>"};
    cfg.Name = "ORDERS";
    cfg.Subjects = subjects;
    cfg.SubjectsLen = 1;
    jsStreamInfo *si = NULL;
    CHECK(js_AddStream(&si, js, &cfg, NULL, &jerr), "add stream");
    printf("{\"result\":{\"stream\":\"%s\",\"first\":", si->Config->Name);
    jsStreamInfo_Destroy(si);
    jsPubAck *pa = NULL;
    CHECK(js_Publish(&pa, js, "orders.new", "order 1", 7, NULL, &jerr), "publish");
    printAck(pa);
    printf(",\"dedup\":[");
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = "order-2";
    for (int i = 0; i < 2; i++) {
        CHECK(js_Publish(&pa, js, "orders.new", "order 2", 7, &po, &jerr), "publish with Nats-Msg-Id");
        printf(i ? "," : "");
        printAck(pa);
    }
    CHECK(js_Publish(&pa, js, "orders.paid", "order 3", 7, NULL, &jerr), "publish");
    jsPubAck_Destroy(pa);

    natsSubscription *pull = NULL;
    CHECK(js_PullSubscribe(&pull, js, "orders.>", "puller", NULL, NULL, &jerr), "pull subscribe");
    natsMsgList list;
    CHECK(natsSubscription_Fetch(&list, pull, 3, WAIT, &jerr), "fetch");
    printf("],\"pull\":[");
    for (int i = 0; i < list.Count; i++) {
        natsMsg *m = list.Msgs[i];
        printf("%s\"%.*s\"", i ? "," : "", natsMsg_GetDataLength(m), natsMsg_GetData(m));
        CHECK(natsMsg_AckSync(m, NULL, &jerr), "ack");
    }
    natsMsgList_Destroy(&list);
    jsConsumerInfo *ci = NULL;
    CHECK(natsSubscription_GetConsumerInfo(&ci, pull, NULL, &jerr), "consumer info");
    printf("],\"pull_acked\":%llu,\"push\":[", (unsigned long long) ci->AckFloor.Stream);
    jsConsumerInfo_Destroy(ci);

    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Config.Durable = "pusher";
    so.Config.DeliverPolicy = js_DeliverAll;
    natsSubscription *push = NULL;
    CHECK(js_SubscribeSync(&push, js, "orders.>", NULL, &so, &jerr), "push subscribe");
    for (int i = 0; i < 3; i++) {
        natsMsg *m = NULL;
        CHECK(natsSubscription_NextMsg(&m, push, WAIT), "next push message");
        jsMsgMetaData *meta = NULL;
        CHECK(natsMsg_GetMetaData(&meta, m), "metadata");
        printf("%s\"%llu:%.*s\"", i ? "," : "", (unsigned long long) meta->Sequence.Stream, natsMsg_GetDataLength(m), natsMsg_GetData(m));
        CHECK(natsMsg_Ack(m, NULL), "ack");
        jsMsgMetaData_Destroy(meta);
        natsMsg_Destroy(m);
    }
    printf("]}}\n");
    natsSubscription_Destroy(pull);
    natsSubscription_Destroy(push);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
}

static void caseKV(void) {
    natsConnection *nc = connectWith(options());
    jsCtx *js = NULL;
    CHECK(natsConnection_JetStream(&js, nc, NULL), "jetstream");
    kvConfig cfg;
    kvConfig_Init(&cfg);
    cfg.Bucket = "settings";
    cfg.History = 5;
    kvStore *kv = NULL;
    CHECK(js_CreateKeyValue(&kv, js, &cfg), "create bucket");
    kvWatcher *w = NULL;
    CHECK(kvStore_WatchAll(&w, kv, NULL), "watch");
    uint64_t putRev = 0, updRev = 0, rev = 0;
    CHECK(kvStore_PutString(&putRev, kv, "color", "red"), "put");
    kvEntry *e = NULL;
    CHECK(kvStore_Get(&e, kv, "color"), "get");
    printf("{\"result\":{\"put_rev\":%llu,\"get\":\"%s\"", (unsigned long long) putRev, kvEntry_ValueString(e));
    kvEntry_Destroy(e);
    CHECK(kvStore_UpdateString(&updRev, kv, "color", "blue", putRev), "update");
    natsStatus stale = kvStore_UpdateString(&rev, kv, "color", "green", putRev);
    CHECK(kvStore_PutString(&rev, kv, "size", "xl"), "put");
    CHECK(kvStore_Delete(kv, "size"), "delete");
    natsStatus deleted = kvStore_Get(&e, kv, "size");
    printf(",\"update_rev\":%llu,\"stale_update_error_type\":\"%s\",\"deleted_get_error_type\":\"%s\",\"keys\":[",
           (unsigned long long) updRev, statusName(stale), statusName(deleted));
    kvKeysList keys;
    CHECK(kvStore_Keys(&keys, kv, NULL), "keys");
    for (int i = 0; i < keys.Count; i++) printf("%s\"%s\"", i ? "," : "", keys.Keys[i]);
    kvKeysList_Destroy(&keys);
    printf("],\"history\":[");
    kvEntryList hist;
    CHECK(kvStore_History(&hist, kv, "color", NULL), "history");
    for (int i = 0; i < hist.Count; i++) printf("%s\"%s\"", i ? "," : "", kvEntry_ValueString(hist.Entries[i]));
    kvEntryList_Destroy(&hist);
    printf("],\"watch\":[");
    for (int n = 0; n < 4;) {
        CHECK(kvWatcher_Next(&e, w, WAIT), "watch next");
        if (e == NULL) continue; /* the marker that the initial values are done */
        printf("%s\"%s:%s=%s\"", n ? "," : "", kvEntry_Operation(e) == kvOp_Delete ? "DEL" : "PUT", kvEntry_Key(e), kvEntry_ValueString(e));
        kvEntry_Destroy(e);
        n++;
    }
    printf("]}}\n");
    kvWatcher_Destroy(w);
    kvStore_Destroy(kv);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        printf("{\"fatal\":\"usage: nats-c <case> <url> [key=value ...]\"}\n");
        return 1;
    }
    url = argv[2];
    for (int i = 3; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (eq == NULL) continue;
        *eq = '\0';
        if (!strcmp(argv[i], "user")) user = eq + 1;
        else if (!strcmp(argv[i], "pass")) pass = eq + 1;
        else if (!strcmp(argv[i], "token")) token = eq + 1;
        else if (!strcmp(argv[i], "ca")) ca = eq + 1;
    }
    const char *c = argv[1];
    if (!strcmp(c, "connect")) caseConnect();
    else if (!strcmp(c, "pubsub")) casePubsub();
    else if (!strcmp(c, "queue")) caseQueue();
    else if (!strcmp(c, "request")) caseRequest();
    else if (!strcmp(c, "no_responders")) caseNoResponders();
    else if (!strcmp(c, "autounsub")) caseAutoUnsub();
    else if (!strcmp(c, "payload")) casePayload();
    else if (!strcmp(c, "drain")) caseDrain();
    else if (!strcmp(c, "reconnect")) caseReconnect();
    else if (!strcmp(c, "jetstream")) caseJetStream();
    else if (!strcmp(c, "kv")) caseKV();
    else {
        printf("{\"fatal\":\"unknown case %s\"}\n", c);
        return 1;
    }
    fflush(stdout);
    nats_Close();
    return 0;
}
