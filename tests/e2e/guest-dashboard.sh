#!/usr/bin/env bash
# A real Prometheus server scraping placed inside a numa-vm guest booted with --systemd
# (scripts/dashboard-snapshot boots it and draws the dashboard afterwards, on the host): the
# daemon as its unit with a model fitted on SIMULATED data for this guest, three transient
# units managed under different policies, one moved by hand and one whose cpuset systemd
# rewrites (then one placed again), so that every panel of dist/grafana-placed.json has something to show.
#
# The guest is software-emulated: no timing or performance figure it records is a real
# placement result. It exits non-zero only when a step cannot run at all.
#
# Arguments: PLACED PLACECTL PLACED_TRAIN TESTLOAD UNIT_FILE OUT_DIR
# OUT_DIR (shared with the host) receives the Prometheus data directory, the time range,
# the last /metrics page, promtool's verdict on it and `journalctl -p warning`.
set -uo pipefail

PLACED=$1 PLACECTL=$2 TRAIN=$3 TESTLOAD=$4 UNIT=$5 OUT=$6
SOCK=/run/placed/placed.sock
MODELS=/var/lib/placed/models
PROM_DATA=/tmp/prometheus-data
pctl() { PLACED_SOCKET="$SOCK" "$PLACECTL" "$@"; }
die() {
    echo "DASHBOARD STEP FAILED: $1"
    journalctl -u placed --no-pager -n 80 2>/dev/null | tail -n 60
    exit 1
}
say() { printf '\n=== %s (t=%ss)\n' "$1" "$SECONDS"; }
# Waits until every managed container has been decided (is watched).
all_decided() {
    local limit=$1 start=$SECONDS
    while ((SECONDS - start < limit)); do
        if pctl containers --json 2>/dev/null | python3 -c "import json,sys
cs=json.load(sys.stdin)['containers']
sys.exit(0 if len(cs)==3 and all(c['state']=='watched' for c in cs) else 1)" 2>/dev/null; then
            echo $((SECONDS - start))
            return 0
        fi
        sleep 2
    done
    return 1
}

mkdir -p "$OUT" "$MODELS" /etc/placed
NODES=$(ls -d /sys/devices/system/node/node[0-9]* | wc -l)
say "guest: $NODES NUMA nodes, $(nproc) CPUs, $(systemctl --version | head -1)"
echo "SIMULATED: a software-emulated guest; no timing or performance figure here is a real placement result"
echo 0 >/proc/sys/kernel/numa_balancing 2>/dev/null || true

say "a model fitted on SIMULATED data for this guest (v = 2)"
"$TRAIN" simulate --host --vcpus 2 --families 16 --workloads-per-family 4 --out /tmp/sim.jsonl \
    >/dev/null || die simulate
"$TRAIN" fit --data /tmp/sim.jsonl --out "$MODELS/guest-v2.json" --trees 30 --cv-trees 10 \
    --no-counters >/tmp/fit.log 2>&1 || { cat /tmp/fit.log; die fit; }

say "placed as its unit, metrics on 127.0.0.1:9464 (the default)"
cat >/etc/placed/placed.toml <<EOF
[containers]
runtimes = []
resync_interval = "30s"
[observe]
# Emulation: short windows, no dropping for foreign load.
warmup = "1s"
window = "500ms"
windows = 8
watch_interval = "15s"
max_foreign_load = 1.0
max_steal = 1.0
EOF
touch /usr/local/bin/placed && mount --bind "$PLACED" /usr/local/bin/placed || die install
sed "s|^ExecStart=.*|ExecStart=/usr/local/bin/placed --config /etc/placed/placed.toml|" "$UNIT" \
    >/etc/systemd/system/placed.service
systemctl daemon-reload && systemctl start placed || die unit-start

say "prometheus (Debian's package) scraping it every 5 s"
cat >/tmp/prometheus.yml <<EOF
global:
  scrape_interval: 5s
scrape_configs:
  - job_name: placed
    static_configs:
      - targets: ["127.0.0.1:9464"]
EOF
prometheus --config.file=/tmp/prometheus.yml --storage.tsdb.path="$PROM_DATA" \
    --web.listen-address=127.0.0.1:9090 >/tmp/prometheus.log 2>&1 &
PROM=$!
date +%s >"$OUT/start"

say "three transient units: a STREAM-like one at goal 0.9, a CPU-bound one at goal 1.0, one observed"
start_unit() { # NAME MODE PORT
    systemd-run --unit="$1" -p AllowedCPUs=0-$(($(nproc) - 1)) \
        "$TESTLOAD" "$2" --mib 256 --serve "127.0.0.1:$3" >/dev/null || die "systemd-run $1"
}
start_unit stream1.service mem 9102
start_unit compute1.service cpu 9103
start_unit batch1.service cpu 9104
sleep 2
manage() { # NAME PORT POLICY ARGS...
    local name=$1 port=$2
    shift 2
    pctl manage "/system.slice/$name" --vcpus 2 "$@" \
        --metric "prometheus http://127.0.0.1:$port/metrics testload_ops_total" >/dev/null ||
        die "manage $name"
}
manage stream1.service 9102 --policy model --goal 0.9
manage compute1.service 9103 --policy model --goal 1.0
manage batch1.service 9104 --policy observe
if T=$(all_decided 900); then
    echo "every container decided ${T}s after manage"
else
    die "no decision for every container within 900 s"
fi
pctl containers

say "watched for 120 s"
sleep 120

say "systemctl daemon-reload: systemd writes every unit's AllowedCPUs back"
systemctl daemon-reload
sleep 60
pctl containers

say "batch1 moved by hand to another placement (placectl place --keep-policy)"
TARGET=$(pctl placements --vcpus 2 --json | python3 -c "import json,sys
ps=json.load(sys.stdin)['placements']
print(ps[-1]['id'])")
pctl place /system.slice/batch1.service --placement "$TARGET" --keep-policy | head -n 3 ||
    die "place batch1"
say "compute1 placed again by its own policy (placectl place)"
pctl place /system.slice/compute1.service | head -n 3 || die "place compute1"
sleep 90
pctl containers

say "the live endpoint, as scraped"
curl -s -H 'Accept: text/plain' http://127.0.0.1:9464/metrics >"$OUT/metrics.txt"
if promtool check metrics <"$OUT/metrics.txt" >"$OUT/promtool.txt" 2>&1; then
    echo "promtool check metrics: clean" | tee -a "$OUT/promtool.txt"
else
    echo "promtool check metrics: FAILED"
    cat "$OUT/promtool.txt"
fi
grep -E '^placed_container_(placement|units|predicted|observed|prediction_error)' "$OUT/metrics.txt" |
    grep -v ' 0$' | head -n 12
journalctl -u placed -p warning -o short-precise --no-pager >"$OUT/journal-warning.txt" 2>&1
echo "journalctl -u placed -p warning: $(wc -l <"$OUT/journal-warning.txt") lines"
tail -n 5 "$OUT/journal-warning.txt" | cut -c1-220

date +%s >"$OUT/end"
systemctl stop stream1.service compute1.service batch1.service placed
# A clean stop leaves the head block in the write-ahead log, which a server started on the
# copy replays.
kill "$PROM" && wait "$PROM"
rm -rf "$OUT/prometheus-data"
cp -a "$PROM_DATA" "$OUT/prometheus-data" || die "copy the Prometheus data"
say "done: $(du -sh "$OUT/prometheus-data" | cut -f1) of Prometheus data in $OUT"
