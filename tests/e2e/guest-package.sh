#!/usr/bin/env bash
# Runs inside a numa-vm guest booted with --systemd: the Debian package installed, run and
# removed as an operator would. The guest's root is an overlay over the host's, so nothing
# here reaches the host.
#
# Arguments: DEB MAX_EXPOSURE
#   DEB           the package (scripts/package-deb)
#   MAX_EXPOSURE  the highest `systemd-analyze security` exposure the unit may have (the
#                 score docs/daemon.md records)
# Prints "CHECK <name> ok" per check; exits non-zero at the first failure, after dumping
# the daemon's journal.
set -uo pipefail

DEB=$1 MAX_EXPOSURE=$2
SOCK=/run/placed/placed.sock
CG=/sys/fs/cgroup/pkg-guest
UNIT=/lib/systemd/system/placed.service

fail() {
    echo "CHECK $1 FAILED: ${2:-}"
    journalctl -u placed --no-pager -n 200 2>/dev/null | tail -n 80
    systemctl status placed --no-pager 2>&1 | tail -n 20
    # Again last: CI shows only the tail of the output.
    echo "CHECK $1 FAILED: ${2:-}"
    exit 1
}
ok() { echo "CHECK $1 ok${2:+: $2} (t=${SECONDS}s)"; }
mode() { stat -c %a "$1"; }
# Waits (bounded only against a hang) until the unit's ActiveState is $1.
wait_state() {
    local deadline=$((SECONDS + 120))
    while (( SECONDS < deadline )); do
        [ "$(systemctl show placed -p ActiveState --value)" = "$1" ] && return 0
        sleep 0.5
    done
    return 1
}
# The daemon's journal lines at priority $1 or more important, message text only.
journal() { journalctl -u placed -p "$1" -o cat --no-pager 2>/dev/null; }
# Waits until `journal $1` has a line matching $2 (the journal is written asynchronously).
wait_journal() {
    local deadline=$((SECONDS + 120))
    while (( SECONDS < deadline )); do
        journal "$1" | grep -q -- "$2" && return 0
        sleep 0.5
    done
    return 1
}

echo "guest: $(date +%T) $(systemctl --version | head -1), $(stat -fc %T /sys/fs/cgroup)"

# --- Installed with dpkg. -------------------------------------------------------------------
dpkg -s placed >/dev/null 2>&1 && fail clean-root "placed is already installed"
# man-db's trigger rebuilds the whole man index, minutes under emulation; its own switch.
rm -f /var/lib/man-db/auto-update
dpkg -i "$DEB" >/tmp/dpkg-i.log 2>&1 || fail dpkg-install "$(tail -n 20 /tmp/dpkg-i.log)"
for f in /usr/bin/placed /usr/bin/placectl /usr/bin/placed-train "$UNIT" /etc/placed/placed.toml \
    /usr/share/man/man8/placed.8.gz /usr/share/man/man1/placectl.1.gz \
    /usr/share/man/man1/placed-train.1.gz /usr/share/bash-completion/completions/placectl; do
    [ -e "$f" ] || fail package-files "$f missing"
done
zcat /usr/share/man/man1/placed-train.1.gz | grep -q '^\.TH placed-train 1' || fail man-placed-train
getent group placed >/dev/null || fail group
[ "$(mode /var/lib/placed)" = 700 ] || fail state-dir-mode "/var/lib/placed is $(mode /var/lib/placed)"
ok install "$(dpkg-query -W -f '${Package} ${Version} ${Installed-Size} KiB' placed)"

# --- The unit's exposure, as systemd-analyze scores the installed unit. -------------------
systemd-analyze security placed.service --no-pager >/tmp/security.txt 2>&1 || true
SCORE=$(sed -n 's/.*Overall exposure level for placed.service: \([0-9.]*\).*/\1/p' /tmp/security.txt)
[ -n "$SCORE" ] || fail security-score "$(tail -n 5 /tmp/security.txt)"
python3 -c "import sys; sys.exit(0 if float('$SCORE') <= float('$MAX_EXPOSURE') else 1)" \
    || fail security-score "exposure $SCORE is above the recorded $MAX_EXPOSURE; $(grep '✗' /tmp/security.txt)"
ok security "exposure $SCORE (recorded at most $MAX_EXPOSURE)"

# --- Started as shipped (the commented default config): served on the default socket. ----
systemctl start placed || fail start
[ "$(systemctl is-active placed)" = active ] || fail active
placectl status >/tmp/status.out 2>&1 || fail placectl-status "$(cat /tmp/status.out)"
placectl topology >/dev/null || fail placectl-topology
[ "$(mode "$SOCK")" = 660 ] || fail socket-mode "$(mode "$SOCK")"
ok start-as-shipped "$(head -1 /tmp/status.out)"

# journald files each line under its priority: the start-up lines are info, not warnings.
wait_journal info "serving on" || fail journal-info "no 'serving on' line at info"
journal warning | grep -q "serving on" && fail journal-priority "an info line shows under -p warning"
ok journal-priorities "$(journal warning | wc -l) warning-or-worse line(s) at start"

# --- Managing a container: cgroup writes, another user's process, its memory. --------------
cat >/etc/placed/placed.toml <<EOF
[containers]
runtimes = []
cgroups = ["/pkg-guest"]
resync_interval = "1s"
EOF
systemctl restart placed || fail restart
mkdir -p "$CG/c1" && echo +cpuset >"$CG/cgroup.subtree_control" || fail cgroup
# Not root's: the daemon must see and move a process of another user through /proc, whose
# other entries the unit hides (ProtectProc=invisible).
sh -c "echo \$\$ >$CG/c1/cgroup.procs && exec setpriv --reuid=nobody --regid=nogroup --clear-groups sleep 3600" &
LOAD=$!
deadline=$((SECONDS + 180))
until [ "$(stat -c %U "/proc/$LOAD" 2>/dev/null)" = nobody ] &&
    placectl containers --json 2>/dev/null | grep -q '"name": *"c1"'; do
    (( SECONDS < deadline )) || fail discovered "c1 not discovered, or its process not nobody's"
    sleep 1
done
placectl manage c1 --vcpus 1 >/dev/null || fail manage
TARGET=$(placectl placements --vcpus 1 --json | python3 -c "import json,sys; print(json.load(sys.stdin)['placements'][-1]['id'])")
placectl place c1 --placement "$TARGET" >/tmp/place.out 2>&1 || fail place "$(cat /tmp/place.out)"
WANT=$(placectl containers --json | python3 -c "import json,sys; print([c for c in json.load(sys.stdin)['containers'] if c['name']=='c1'][0]['cpus'])")
GOT=$(awk '/Cpus_allowed_list/ {print $2}' "/proc/$LOAD/status")
[ -n "$WANT" ] && [ "$GOT" = "$WANT" ] || fail placed-cpus "placement $TARGET wants '$WANT', /proc says '$GOT'"
[ "$(mode /var/lib/placed/state.json)" = 600 ] || fail state-file-mode "$(mode /var/lib/placed/state.json)"
ok manage "c1 (uid nobody) in $TARGET, cpus $GOT; state.json $(mode /var/lib/placed/state.json)"

# --- systemctl reload: SIGHUP, RELOADING=1 then READY=1, journald priorities. --------------
printf '[policy]\ndefault = "conservative"\n' >>/etc/placed/placed.toml
systemctl reload placed || fail reload
# Back to active only once the daemon said READY=1 after RELOADING=1.
wait_state active || fail reload-ready "unit is $(systemctl show placed -p ActiveState --value) after reload"
wait_journal info "configuration reloaded.*policy.default" || fail reload-applied
journal warning | grep -q "configuration reloaded" && fail reload-priority "the applied reload shows under -p warning"
# A change that needs a restart: refused with a warning.
sed -i 's|^runtimes = \[\]|runtimes = ["docker"]|' /etc/placed/placed.toml
systemctl reload placed || fail reload-2
wait_state active || fail reload-2-ready
wait_journal warning "need a restart.*containers.runtimes" || fail reload-refused-warning "$(journal warning | tail -n 5)"
# A file that does not parse: an error, the daemon goes on.
echo 'default = "greedy"' >>/etc/placed/placed.toml
systemctl reload placed || fail reload-3
wait_state active || fail reload-3-ready
wait_journal err "configuration not reloaded" || fail reload-error "$(journal warning | tail -n 5)"
placectl status >/dev/null || fail serving-after-bad-reload
[ "$(systemctl show placed -p NRestarts --value)" = 0 ] || fail no-restarts
ok reload "three reloads, unit active after each"
echo "--- journalctl -u placed -p warning ---"
journal warning
echo "---"

# --- Removed, then purged: nothing of the unit left behind. --------------------------------
systemctl enable placed 2>/dev/null || fail enable
[ -e /etc/systemd/system/multi-user.target.wants/placed.service ] || fail enabled
dpkg -r placed >/tmp/dpkg-r.log 2>&1 || fail dpkg-remove "$(tail -n 20 /tmp/dpkg-r.log)"
[ ! -e "$UNIT" ] || fail unit-removed
[ ! -e /etc/systemd/system/multi-user.target.wants/placed.service ] || fail unit-disabled
[ "$(systemctl show placed -p LoadState --value)" = not-found ] \
    || fail unit-unloaded "LoadState=$(systemctl show placed -p LoadState --value)"
systemctl is-active placed >/dev/null && fail daemon-stopped
[ ! -e "$SOCK" ] || fail socket-removed
[ ! -e /run/placed ] || fail runtime-dir-removed
[ ! -e /usr/bin/placed ] || fail binaries-removed
[ -e /etc/placed/placed.toml ] || fail conffile-kept-on-remove
kill -0 "$LOAD" || fail container-alive "c1's process ended with the daemon"
grep -q "frozen 0" "$CG/c1/cgroup.events" || fail container-thawed
ok remove "no unit, socket or runtime directory; config kept; c1 alive"
dpkg -P placed >/tmp/dpkg-p.log 2>&1 || fail dpkg-purge "$(tail -n 20 /tmp/dpkg-p.log)"
[ ! -e /etc/placed ] || fail config-purged "$(ls -la /etc/placed)"
[ ! -e /var/lib/placed ] || fail state-purged "$(ls -la /var/lib/placed)"
dpkg -s placed >/dev/null 2>&1 && fail dpkg-forgets
ok purge "no /etc/placed, no /var/lib/placed"

kill "$LOAD" 2>/dev/null
wait "$LOAD" 2>/dev/null
rmdir "$CG/c1" "$CG" 2>/dev/null
echo "GUEST PACKAGE TESTS PASSED"
