#!/usr/bin/env bash
# Measures option 2 of docs/clustering.md: MQTT/stream state in a SQL store shared by the
# nodes, here PostgreSQL 15 (the Debian package's binaries). Not a test and not part of
# `npm test`: figures on a shared machine, to be read as ratios next to the other options.
#
#   scripts/clustering/pg-store.sh [REPS]        # REPS (default 3) runs of every measurement
#   DURATION=5 CLIENTS=16 SIZES="16 1024" scripts/clustering/pg-store.sh 3
#
# It starts a private PostgreSQL cluster (initdb in a temporary directory, on a free
# loopback port, as the unprivileged user `postgres` when run as root; a system instance is
# never touched), with the durable defaults (fsync on, synchronous_commit on,
# full_page_writes on), and stops it (by the pid in its postmaster.pid) and removes the
# directory at the end. Clients connect over TCP to 127.0.0.1 as a node would.
#
# Measured with pgbench custom scripts (-M prepared, DURATION seconds each), for SIZES:
#   insert   one message INSERTed and committed per transaction (a commit, a WAL flush, per
#            message): one client (latency p50/p99 from pgbench's per-transaction log,
#            and tps), and CLIENTS clients (commits of concurrent clients share WAL flushes:
#            group commit)
#   batch64  64 messages per INSERT and commit (one client): messages/s
#   qos1     what an MQTT QoS 1 delivery to a persistent session needs: the publish (INSERT
#            the message and the session's in-flight row, commit: the PUBACK to the
#            publisher may go) and the subscriber's PUBACK (delete the in-flight row and the
#            message, move the session's cursor, commit): one client (latency of the whole
#            cycle p50/p99, tps = messages) and CLIENTS clients (each its own session)
# and what happens when the database restarts, REPS times each:
#   crash    every process of the cluster sent SIGKILL, then `pg_ctl start` at once (as a
#            supervisor would): crash recovery
#   fast     `pg_ctl restart -m fast` (a planned restart)
#   while a client INSERTs numbered rows one at a time (a psql process per insert, so the
#   resolution is that of a process start, ~10 ms), resending a row after an error; reported:
#   the outage (from the kill or restart to the first insert acknowledged after one failed)
#   and acknowledged rows missing afterwards (must be 0).
# Every figure is printed with the load average at the time (/proc/loadavg).
set -euo pipefail

REPS=${1:-3}
DURATION=${DURATION:-5}
CLIENTS=${CLIENTS:-16}
SIZES=${SIZES:-"16 1024"}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
export PATH="$PGBIN:$PATH"

DIR=$(mktemp -d /tmp/cldoc-pg-XXXXXX)
RUN=()
if [ "$(id -u)" = 0 ]; then
  chown postgres "$DIR"
  RUN=(runuser -u postgres --)
fi
DATA="$DIR/data"

free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 12000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
}
PORT=$(free_port)
load() { cut -d' ' -f1-3 /proc/loadavg; }
emit() { echo "$1" | tee -a "$DIR/results"; }
postmaster_pid() { head -1 "$DATA/postmaster.pid" 2>/dev/null || true; }

stop_cluster() {
  local pid
  pid=$(postmaster_pid)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    "${RUN[@]}" pg_ctl -D "$DATA" -m fast -w stop >/dev/null 2>&1 || kill -9 "$pid" 2>/dev/null || true
  fi
}
cleanup() {
  stop_cluster
  rm -rf "$DIR"
}
trap cleanup EXIT

"${RUN[@]}" initdb -D "$DATA" -U bench -A trust -E UTF8 >/dev/null
cat >>"$DATA/postgresql.conf" <<EOF
port = $PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$DIR'
fsync = on
synchronous_commit = on
full_page_writes = on
shared_buffers = 128MB
max_connections = 64
EOF
start_cluster() { "${RUN[@]}" pg_ctl -D "$DATA" -l "$DIR/server.log" -w -t 60 start >/dev/null; }
start_cluster

PSQL=(psql -h 127.0.0.1 -p "$PORT" -U bench -d postgres -qtAX -v ON_ERROR_STOP=1)
"${PSQL[@]}" <<EOF
CREATE TABLE msgs (id bigserial PRIMARY KEY, topic text NOT NULL, payload bytea NOT NULL);
CREATE TABLE sessions (client_id int PRIMARY KEY, acked bigint NOT NULL DEFAULT 0);
CREATE TABLE inflight (client_id int NOT NULL, msg_id bigint NOT NULL, packet_id int NOT NULL, PRIMARY KEY (client_id, msg_id));
INSERT INTO sessions (client_id) SELECT g FROM generate_series(0, 255) g;
CREATE TABLE rt (id int PRIMARY KEY);
EOF

cat >"$DIR/insert.sql" <<'EOF'
INSERT INTO msgs (topic, payload) VALUES ('bench/t', convert_to(repeat('x', :size), 'UTF8'));
EOF
cat >"$DIR/batch64.sql" <<'EOF'
INSERT INTO msgs (topic, payload) SELECT 'bench/t', convert_to(repeat('x', :size), 'UTF8') FROM generate_series(1, 64);
EOF
cat >"$DIR/qos1.sql" <<'EOF'
BEGIN;
INSERT INTO msgs (topic, payload) VALUES ('bench/t', convert_to(repeat('x', :size), 'UTF8')) RETURNING id AS mid \gset
INSERT INTO inflight (client_id, msg_id, packet_id) VALUES (:client_id, :mid, 1);
COMMIT;
BEGIN;
DELETE FROM inflight WHERE client_id = :client_id AND msg_id = :mid;
DELETE FROM msgs WHERE id = :mid;
UPDATE sessions SET acked = :mid WHERE client_id = :client_id;
COMMIT;
EOF

echo "PostgreSQL $("${RUN[@]}" postgres --version | awk '{print $3}') on 127.0.0.1:$PORT, data in $DATA; $(nproc) CPUs; load $(load)"
echo "disk: fdatasync $(pg_test_fsync -s 2 -f "$DIR/fsync.test" 2>/dev/null | grep -m1 -E '^ +fdatasync +[0-9]' | sed 's/^ *fdatasync *//; s/  */ /g') (pg_test_fsync: one 8 kB write and fdatasync, one at a time)"

# pgbench SCRIPT SIZE CLIENTS -> "tps p50_us p99_us"
bench() {
  local script=$1 size=$2 clients=$3 prefix="$DIR/log-$RANDOM"
  "${PSQL[@]}" -c "TRUNCATE msgs; TRUNCATE inflight; UPDATE sessions SET acked = 0" >/dev/null
  "${PSQL[@]}" -c "CHECKPOINT" >/dev/null
  local out
  out=$(pgbench -n -h 127.0.0.1 -p "$PORT" -U bench -M prepared -T "$DURATION" -c "$clients" -j "$(( clients > 1 ? 2 : 1 ))" \
    -D size="$size" -f "$DIR/$script.sql" --log --log-prefix="$prefix" postgres 2>&1)
  local tps
  tps=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p')
  # column 3 of the per-transaction log: the transaction's latency in µs
  cat "$prefix".* | awk '{print $3}' | sort -n >"$prefix.lat"
  local n p50 p99
  n=$(wc -l <"$prefix.lat")
  p50=$(sed -n "$(( n / 2 + 1 ))p" "$prefix.lat")
  p99=$(sed -n "$(( n * 99 / 100 + 1 ))p" "$prefix.lat")
  rm -f "$prefix".*
  echo "$tps $p50 $p99"
}

for rep in $(seq 1 "$REPS"); do
  for size in $SIZES; do
    for c in 1 "$CLIENTS"; do
      l=$(load); read -r tps p50 p99 < <(bench insert "$size" "$c")
      emit "rep=$rep size=$size test=insert clients=$c msgs_per_s=$tps p50_us=$p50 p99_us=$p99 load=[$l]"
    done
    l=$(load); read -r tps p50 p99 < <(bench batch64 "$size" 1)
    emit "rep=$rep size=$size test=batch64 clients=1 msgs_per_s=$(awk -v t="$tps" 'BEGIN{printf "%.0f", t*64}') commit_p50_us=$p50 commit_p99_us=$p99 load=[$l]"
    for c in 1 "$CLIENTS"; do
      l=$(load); read -r tps p50 p99 < <(bench qos1 "$size" "$c")
      emit "rep=$rep size=$size test=qos1 clients=$c msgs_per_s=$tps cycle_p50_us=$p50 cycle_p99_us=$p99 load=[$l]"
    done
  done
done

ms() { echo $(( $(date +%s%N) / 1000000 )); }

# restart KIND: a writer inserting numbered rows, the database killed or restarted under it
restart() {
  local kind=$1 rep=$2
  "${PSQL[@]}" -c "TRUNCATE rt" >/dev/null
  : >"$DIR/acked"; : >"$DIR/errs"; rm -f "$DIR/stop"
  (
    i=0
    while [ ! -f "$DIR/stop" ]; do
      if psql -h 127.0.0.1 -p "$PORT" -U bench -d postgres -qtAX -c "INSERT INTO rt VALUES ($i) ON CONFLICT DO NOTHING" >/dev/null 2>&1; then
        echo "$i $(ms)" >>"$DIR/acked"; i=$((i + 1))
      else
        echo "$(ms)" >>"$DIR/errs"; sleep 0.005
      fi
    done
  ) &
  local writer=$!
  sleep 1
  local l t0
  l=$(load)
  t0=$(ms)
  if [ "$kind" = crash ]; then
    local pm kids
    pm=$(postmaster_pid)
    kids=$(ps -o pid= --ppid "$pm" || true)
    kill -9 "$pm" $kids 2>/dev/null || true
    # the supervisor starts it again as soon as the old processes are gone
    while kill -0 "$pm" 2>/dev/null; do sleep 0.01; done
    start_cluster
  else
    "${RUN[@]}" pg_ctl -D "$DATA" -m fast -w -t 60 restart -l "$DIR/server.log" >/dev/null
  fi
  # run on until 2 s after the first insert acknowledged after an error
  local until=$(( $(ms) + 30000 )) first_err first_ok=""
  while [ "$(ms)" -lt "$until" ]; do
    first_err=$(awk -v t="$t0" '$1 >= t {print $1; exit}' "$DIR/errs")
    if [ -n "$first_err" ]; then
      first_ok=$(awk -v t="$first_err" '$2 > t {print $2; exit}' "$DIR/acked")
      [ -n "$first_ok" ] && break
    fi
    sleep 0.1
  done
  sleep 2
  touch "$DIR/stop"; wait "$writer" || true
  local acked errs lost outage
  acked=$(wc -l <"$DIR/acked")
  errs=$(awk -v t="$t0" '$1 >= t' "$DIR/errs" | wc -l)
  awk '{print $1}' "$DIR/acked" >"$DIR/acked.ids"
  "${PSQL[@]}" -c "DROP TABLE IF EXISTS ack_check; CREATE TABLE ack_check (id int)" >/dev/null
  "${PSQL[@]}" -c "\\copy ack_check FROM '$DIR/acked.ids'" >/dev/null
  lost=$("${PSQL[@]}" -c "SELECT count(*) FROM ack_check a LEFT JOIN rt USING (id) WHERE rt.id IS NULL")
  if [ -n "$first_ok" ]; then outage=$(( first_ok - t0 )); else outage="no failed insert"; fi
  emit "rep=$rep test=restart-$kind outage_ms=$outage failed_inserts=$errs acked=$acked lost=$lost load=[$l]"
}

for rep in $(seq 1 "$REPS"); do
  restart crash "$rep"
  restart fast "$rep"
done

# min–max of each figure over the repetitions, per test, size and clients
echo
echo "summary (min-max over $REPS runs; load = 1-minute load averages seen):"
awk '
  {
    key = ""; delete kv
    for (i = 1; i <= NF; i++) {
      split($i, a, "=")
      if (a[1] == "rep") continue
      if (a[1] ~ /^(size|test|clients)$/) { key = key " " $i; continue }
      if (a[1] == "load") { v = substr($i, 7) + 0; a[1] = "load" } else v = a[2]
      if (v !~ /^[0-9.]+$/) continue
      k = key SUBSEP a[1]
      if (!(k in lo) || v + 0 < lo[k]) lo[k] = v + 0
      if (!(k in hi) || v + 0 > hi[k]) hi[k] = v + 0
      if (!((key, a[1]) in seen)) { seen[key, a[1]] = 1; order[key] = order[key] " " a[1] }
    }
    if (!(key in keys)) { keys[key] = ++n; names[n] = key }
  }
  END {
    for (j = 1; j <= n; j++) {
      key = names[j]; line = key ":"
      m = split(order[key], f, " ")
      for (i = 1; i <= m; i++) line = line sprintf(" %s=%g-%g", f[i], lo[key SUBSEP f[i]], hi[key SUBSEP f[i]])
      print line
    }
  }' "$DIR/results"
