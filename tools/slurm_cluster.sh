#!/bin/bash
# A one-node SLURM cluster on this machine, for trying `cqlua study slurm` (`cqlua study cluster start|stop|status`
# runs this script) and for tests/study_slurm_spec.lua: starts munged, slurmctld and slurmd (as root) with a generated
# slurm.conf whose ports, state, spool and log files are under DIR, reports on them and stops them again. It needs
# Debian's slurm-wlm and munge (--install installs them when missing, as the test suite does; otherwise it says how).
#   slurm_cluster.sh start DIR [--install]  -> prints "SLURM_CONF=DIR/slurm.conf" once the node is idle (at once when
#                                              it is already running); exit 1 with the daemons' logs when it does not
#                                              come up, with what to do when packages or root are missing
#   slurm_cluster.sh status DIR              -> the daemons' pids, sinfo and "SLURM_CONF=..."; exit 1 when not running
#   slurm_cluster.sh stop DIR
# CQ_CLUSTER_PROG (environment) names the command in messages (default: this script's name).
set -u
prog=${CQ_CLUSTER_PROG:-slurm_cluster.sh}
usage="usage: $prog start|stop|status DIR [--install]"
cmd=${1:-}
dir=${2:-}
install=${3:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "$usage" >&2; exit 2; }
[ -z "$install" ] || [ "$install" = --install ] || { echo "$usage" >&2; exit 2; }

say() { echo "$prog: $*" >&2; }
fail() {
  say "$*"
  for f in "$dir"/munged.log "$dir"/slurmctld.log "$dir"/slurmd.log; do
    [ -f "$f" ] && { echo "---- $f (last 30 lines)" >&2; tail -n 30 "$f" >&2; }
  done
  [ -n "$starting" ] && stop >/dev/null 2>&1 # no half-started cluster left behind
  exit 1
}
starting=""

# pid of daemon $1 when its pid file names a live process
alive() {
  local pid
  [ -f "$dir/$1.pid" ] || return 1
  pid=$(cat "$dir/$1.pid" 2>/dev/null)
  [ -n "$pid" ] && [ -d "/proc/$pid" ] && echo "$pid"
}

stop() {
  local any=""
  for d in slurmd slurmctld munged; do alive "$d" >/dev/null && any=1; done
  [ -z "$any" ] || [ "$(id -u)" = 0 ] || { say "the daemons run as root: stop them as root (sudo)"; return 1; }
  for d in slurmd slurmctld; do
    [ -f "$dir/$d.pid" ] && kill "$(cat "$dir/$d.pid")" 2>/dev/null
  done
  [ -f "$dir/munged.pid" ] && kill "$(cat "$dir/munged.pid")" 2>/dev/null
  [ -n "$any" ] && sleep 1
  for d in slurmd slurmctld munged; do
    [ -f "$dir/$d.pid" ] && kill -9 "$(cat "$dir/$d.pid")" 2>/dev/null
    rm -f "$dir/$d.pid"
  done
  [ -n "$any" ] && say "stopped the cluster in $dir" || say "no cluster was running in $dir"
  return 0
}

case "$cmd" in
  stop) stop; exit ;;
  status)
    ctld=$(alive slurmctld); slurmd=$(alive slurmd); munged=$(alive munged)
    if [ -z "$ctld$slurmd$munged" ]; then say "no cluster is running in $dir"; exit 1; fi
    echo "slurmctld: ${ctld:-not running}; slurmd: ${slurmd:-not running}; munged: ${munged:-not running}"
    SLURM_CONF="$dir/slurm.conf" sinfo 2>&1
    echo "SLURM_CONF=$dir/slurm.conf"
    [ -n "$ctld" ] && [ -n "$slurmd" ] && [ -n "$munged" ] && exit 0
    say "the cluster in $dir is partly down; restart it: $prog stop, then $prog start"
    exit 1 ;;
  start) ;;
  *) echo "$usage" >&2; exit 2 ;;
esac

if alive slurmctld >/dev/null && alive slurmd >/dev/null && alive munged >/dev/null; then
  say "already running in $dir"
  echo "SLURM_CONF=$dir/slurm.conf"
  exit 0
fi

missing=""
for p in slurm-wlm munge; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ] && [ -z "$install" ]; then
  say "missing the Debian package(s)$missing; install them as root: apt-get install$missing (in the cqlua source tree: make deps-slurm)"
  exit 1
fi
[ "$(id -u)" = 0 ] || { say "SLURM's daemons need root (slurmd starts each job as its user): run this as root (sudo)"; exit 1; }
mkdir -p "$dir" || { say "cannot create $dir"; exit 1; }
if [ -n "$missing" ]; then
  say "installing$missing"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing) >"$dir/apt.log" 2>&1 \
    || { tail -n 20 "$dir/apt.log" >&2; fail "could not install$missing"; }
fi
stop >/dev/null 2>&1 # a half-started cluster's leftovers
starting=1

mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chown munge: "$dir/munge" 2>/dev/null
chmod 755 "$dir" "$dir/munge"
[ -f /etc/munge/munge.key ] || { /usr/sbin/mungekey --create >/dev/null 2>&1 || fail "cannot create /etc/munge/munge.key"; }
# munged with its own socket (MUNGE_SOCKET would not reach slurm's plugin; AuthInfo below points slurm at it)
sock="$dir/munge/munge.socket"
su -s /bin/sh munge -c "/usr/sbin/munged --socket='$sock' --pid-file='$dir/munge/munged.pid' \
  --log-file='$dir/munge/munged.log' --seed-file='$dir/munge/munged.seed'" >"$dir/munged.out" 2>&1 \
  || { cat "$dir/munged.out" >&2; fail "munged did not start"; }
cp "$dir/munge/munged.pid" "$dir/munged.pid" 2>/dev/null
ln -sf "$dir/munge/munged.log" "$dir/munged.log"

# Free TCP ports for slurmctld and slurmd (python3 binds port 0; without it, a random port nothing listens on).
port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null && return
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}
p1=$(port); p2=$(port)
while [ "$p2" = "$p1" ]; do p2=$(port); done
host=$(hostname -s)
cpus=$(nproc)
mem=$(awk '/MemTotal/ { print int($2 / 1024 / 2) }' /proc/meminfo)
cat >"$dir/slurm.conf" <<CONF
ClusterName=cqlocal
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$p1
SlurmdPort=$p2
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
MaxArraySize=1001
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$dir/slurm.conf"
/usr/sbin/slurmctld -i >"$dir/slurmctld.out" 2>&1 || { cat "$dir/slurmctld.out" >&2; fail "slurmctld did not start"; }
/usr/sbin/slurmd >"$dir/slurmd.out" 2>&1 || { cat "$dir/slurmd.out" >&2; fail "slurmd did not start"; }
for _ in $(seq 1 60); do
  state=$(sinfo -h -N -o %t 2>/dev/null | head -n 1)
  case "$state" in idle*) echo "SLURM_CONF=$dir/slurm.conf"; exit 0 ;; esac
  sleep 0.5
done
sinfo >&2
fail "the node did not become idle within 30 s (state: ${state:-none})"
