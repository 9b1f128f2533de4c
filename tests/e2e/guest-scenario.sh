#!/usr/bin/env bash
# The operator's scenario of issue 14, run inside a numa-vm guest booted with --systemd
# (scripts/guest-scenario boots it): training on this guest with the built-in workloads, a
# STREAM-like workload as a transient systemd unit with a Prometheus counter, managed by the
# model policy at goal 0.9, watched for a while under the default drift rule, then its
# cpuset rewritten by systemd behind placed's back.
#
# It prints what an operator would look at, with times, rather than asserting timings: the
# guest is software-emulated and its timings mean nothing for real placements. It exits
# non-zero only when a step cannot run at all.
#
# Arguments: PLACED PLACECTL PLACED_TRAIN TESTLOAD UNIT_FILE
set -uo pipefail

PLACED=$1 PLACECTL=$2 TRAIN=$3 TESTLOAD=$4 UNIT=$5
SOCK=/run/placed/placed.sock
MODELS=/var/lib/placed/models
SVC=stream1.service
pctl() { PLACED_SOCKET="$SOCK" "$PLACECTL" "$@"; }
die() {
    echo "SCENARIO STEP FAILED: $1"
    journalctl -u placed --no-pager -n 80 2>/dev/null | tail -n 60
    exit 1
}
say() { printf '\n=== %s (t=%ss)\n' "$1" "$SECONDS"; }
field() {
    pctl containers --json | python3 -c "import json,sys
c=[c for c in json.load(sys.stdin)['containers'] if c['name']=='$SVC']
print(c[0].get('$1') if c else '')"
}
# Waits until the python expression over the container's JSON object (c) holds; prints the
# seconds it took.
wait_for() {
    local limit=$1 expr=$2 start=$SECONDS
    while (( SECONDS - start < limit )); do
        if pctl containers --json 2>/dev/null | python3 -c "import json,sys
cs=[c for c in json.load(sys.stdin)['containers'] if c['name']=='$SVC']
c=cs[0] if cs else None
sys.exit(0 if c and ($expr) else 1)" 2>/dev/null; then
            echo $((SECONDS - start))
            return 0
        fi
        sleep 1
    done
    return 1
}

NODES=$(ls -d /sys/devices/system/node/node[0-9]* | wc -l)
say "guest: $NODES NUMA nodes, $(nproc) CPUs, $(systemctl --version | head -1)"
echo "SIMULATED: a software-emulated guest; no timing or performance figure here is a real placement result"
echo 0 >/proc/sys/kernel/numa_balancing 2>/dev/null || true
mkdir -p "$MODELS" /etc/placed

# --- 1. Training on this guest with the built-in workloads. ---------------------------------
say "placed-train train --workloads builtin (real measurements of the emulated guest)"
"$TRAIN" train --vcpus 2 --workloads builtin --model-dir /tmp/trained \
    --warmup 1 --windows 8 --window 0.3 --retries 1 --max-foreign 1 >/tmp/train.log 2>&1
TRAIN_RC=$?
grep -c "recorded as unusable" /tmp/train.log | sed 's/^/measurements recorded unusable: /'
grep -m 3 "recorded as unusable" /tmp/train.log
grep -E "^placed-train: error|accuracy gate|installed model|VIRTUAL" /tmp/train.log | head -n 5
echo "exit status $TRAIN_RC (4: refused, nothing installed)"

# --- 2. A model the daemon can act on: SIMULATED data for this machine class. ---------------
say "a model fitted on SIMULATED data for this guest (the daemon's model for v = 2)"
"$TRAIN" simulate --host --vcpus 2 --families 16 --workloads-per-family 4 --out /tmp/sim.jsonl >/dev/null ||
    die simulate
"$TRAIN" fit --data /tmp/sim.jsonl --out "$MODELS/guest-v2.json" --trees 30 --cv-trees 10 \
    --no-counters >/tmp/fit.log 2>&1 || { cat /tmp/fit.log; die fit; }
grep -E "SIMULATED|probe|cross-validated" /tmp/fit.log | head -n 4

# --- 3. The daemon as its unit, defaults but for short measurement windows. ----------------
cat >/etc/placed/placed.toml <<EOF
[containers]
runtimes = []
resync_interval = "30s"
[observe]
# Emulation: short windows, no dropping for foreign load. Drift settings stay the defaults.
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
pctl status | head -n 4

# --- 4. A STREAM-like workload as a transient unit, managed by the model policy. ------------
say "systemd-run $SVC (placed-testload mem, 256 MiB, Prometheus counter)"
systemd-run --unit="$SVC" -p AllowedCPUs=0-$(($(nproc) - 1)) \
    "$TESTLOAD" mem --mib 256 --serve 127.0.0.1:9102 >/dev/null || die systemd-run
sleep 2
pctl watch --json >/tmp/events.jsonl 2>/dev/null &
WATCH=$!
MANAGED=$SECONDS
pctl manage "/system.slice/$SVC" --vcpus 2 --policy model --goal 0.9 \
    --metric "prometheus http://127.0.0.1:9102/metrics testload_ops_total" >/dev/null || die manage
if T=$(wait_for 900 "c['model_id'] and c['state']=='watched'"); then
    echo "first prediction and decision ${T}s after manage"
else
    die "no prediction within 900 s"
fi
pctl containers
# The stored prediction (placectl predict would measure again, moving the container).
python3 - <<'PY'
import json
# A header line (format, version, checksum), then the state itself.
state = json.loads(open('/var/lib/placed/state.json').read().split('\n', 1)[1])
for c in state['containers']:
    p = c.get('prediction')
    if not p or 'stream1' not in c['id']:
        continue
    print('prediction:', p['model_id'], p['provenance'], 'observations', [(o['placement'], round(o['value'])) for o in p['observations']])
    for x in p['placements']:
        i = x.get('interval')
        print('  %-28s x%.2f %s %s' % (x['placement'], x['relative'], 'measured' if x['measured'] else '', '%.2f-%.2f' % (i['low'], i['high']) if i else ''))
    print('  third measurement:', p.get('third'))
    print('  novel:', p.get('novel', False), 'warnings:', p['warnings'])
    print('decision:', c['detail'])
PY

# --- 5. Watched under the default drift rule: noise moves nothing. -------------------------
say "watched for 180 s (drift: interval overlap, 3 windows in a row, 10 min cool-down)"
PLACED_AT=$(field placement)
sleep 180
MOVES=$(python3 - "$MANAGED" <<'PY'
import json, sys
events = [json.loads(l) for l in open('/tmp/events.jsonl') if l.strip()]
ours = [e for e in events if 'stream1' in e['container']]
placed = [i for i, e in enumerate(ours) if e['kind'] == 'state' and e.get('state') == 'watched']
after = ours[placed[0] + 1:] if placed else []
print(sum(1 for e in after if e['kind'] == 'migration-started'))
PY
)
echo "placement before: $PLACED_AT, after: $(field placement); migrations after the first decision: $MOVES"
journalctl -u placed -o cat --no-pager | grep -E "off its prediction|evaluating again" | tail -n 5
echo "(watch lines above: measurements off the prediction, if any; none means every interval overlapped)"

# --- 6. systemd rewrites the cpuset: noticed within seconds. -------------------------------
say "systemctl daemon-reload (systemd writes $SVC's AllowedCPUs back)"
echo "cpuset before: $(cat /sys/fs/cgroup/system.slice/$SVC/cpuset.cpus)"
echo "daemon-reload at $(date -u +%T.%3N) UTC"
systemctl daemon-reload
echo "cpuset after:  $(cat /sys/fs/cgroup/system.slice/$SVC/cpuset.cpus) ($(date -u +%T.%3N) UTC)"
# placectl polls are slow under emulation: the event's own time below says when the daemon
# noticed.
if T=$(wait_for 120 "c.get('cpuset_override')"); then
    echo "override shown by placectl ${T}s after the reload"
else
    echo "override NOT noticed within 120 s"
fi
pctl containers | grep -A2 stream1 | cut -c1-200
python3 - <<'PY'
import json
for l in open('/tmp/events.jsonl'):
    e = json.loads(l)
    if e['kind'] == 'overridden':
        print('event:', e['time'], e['message'][:160])
PY
journalctl -u placed -p warning -o short-precise --no-pager | tail -n 3 | cut -c1-220

kill "$WATCH" 2>/dev/null
systemctl stop "$SVC" placed
say "scenario done"
