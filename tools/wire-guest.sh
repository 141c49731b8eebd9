# Sourced inside a guest of tools/wirepair.sh (as /etc/wire-guest.sh):
# what every guest on the wire needs, whatever its role.
#   netup ADDR   (Linux) load the staged network modules, bring lo and
#                eth0 up with ADDR/24
#   serve NAME   run redis and nginx on 0.0.0.0 until the peer's clients
#                push clients-done onto the redis list "handover"; the
#                other requests on that list (bench/apps' bulk workload):
#                "mkfile MIB" makes nginx's bulk.bin of MIB MiB of random
#                bytes and answers "ready SHA256"; "fetch URL SECS" gets URL
#                once to check it, then again and again for SECS seconds
#                (at least once), and answers "fetched BYTES SECONDS SHA256
#                COUNT": the bytes and seconds of the timed fetches.
#                Answers go onto the list "answer".
#   bulkfile MIB make /usr/share/nginx/html/bulk.bin; print its SHA-256
#   fetch URL S  the timed fetches of "fetch" above; print its answer
#   wait_for CMD retry CMD every 0.2 s, for up to WIRE_WAIT_TRIES tries
#                (default 1500: 5 minutes, a loaded host's slowest boot)
export PATH=/usr/bin:/bin:/usr/sbin:/sbin
wait_for() {
  i=0
  until "$@" >/dev/null 2>&1; do
    i=$((i+1)); [ $i -lt "${WIRE_WAIT_TRIES:-1500}" ] || return 1; usleep 200000
  done
}

netup() {
  while read -r m; do insmod "/lib/modules/$m.ko" 2>/dev/null || true; done </lib/modules/load-order
  ip link set lo up
  ip link set eth0 up || { echo "wire: no eth0"; return 1; }
  ip addr add "$1/24" dev eth0 || { echo "wire: cannot set address $1"; return 1; }
}

bulkfile() {
  head -c $(($1 * 1048576)) /dev/urandom >/usr/share/nginx/html/bulk.bin &&
    sha256sum </usr/share/nginx/html/bulk.bin | cut -d' ' -f1
}

# The clock is /proc/uptime's, in hundredths of a second on both kernels.
now() { cut -d' ' -f1 /proc/uptime; }

fetch() {
  sum=$(wget -q -O - "$1" | sha256sum | cut -d' ' -f1)
  bytes=0 n=0 t0=$(now)
  while :; do
    b=$(wget -q -O - "$1" | wc -c)
    bytes=$((bytes + b)) n=$((n + 1)) t1=$(now)
    awk "BEGIN{exit !($t1 - $t0 >= $2)}" && break
  done
  echo "fetched $bytes $(awk "BEGIN{print $t1 - $t0}") $sum $n"
}

serve() {
  redis-server --port 6379 --bind 0.0.0.0 --protected-mode no --save '' --appendonly no --dir /tmp --logfile /tmp/redis.log &
  nginx -c /etc/nginx/nginx.conf 2>/tmp/nginx.err &
  ngx=$!
  wait_for redis-cli -h 127.0.0.1 ping || { cat /tmp/redis.log; echo "wire: $1 FAIL redis-server does not answer"; return 1; }
  wait_for wget -q -O /dev/null http://127.0.0.1:80/index.html || { cat /tmp/nginx.err; echo "wire: $1 FAIL nginx does not answer"; return 1; }
  echo "wire: $1 serving"
  # The peer's clients are done when they push clients-done onto this
  # list (BLPOP blocks without polling; 0: no time limit but the guest's).
  while :; do
    req=$(redis-cli -h 127.0.0.1 BLPOP handover 0 | tail -n 1)
    case "$req" in
    clients-done) break;;
    "mkfile "*) ans="ready $(bulkfile "${req#mkfile }")";;
    "fetch "*) ans=$(fetch ${req#fetch });;
    *) echo "wire: $1 FAIL waiting for the peer's clients: request '$req'"; return 1;;
    esac
    redis-cli -h 127.0.0.1 RPUSH answer "$ans" >/dev/null
  done
  redis-cli -h 127.0.0.1 shutdown nosave >/dev/null 2>&1
  kill $ngx 2>/dev/null
  wait
  echo "wire: $1 ok served the peer's clients"
}
