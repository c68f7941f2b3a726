#!/bin/bash
# A single-node SLURM cluster on this machine, for tests/study_slurm_spec.lua: installs Debian's slurm-wlm and munge
# when missing, starts munged, slurmctld and slurmd (as root) with a generated slurm.conf whose ports, state, spool
# and log files are under DIR, and stops them again.
#   tests/slurm/cluster.sh start DIR   -> prints "SLURM_CONF=DIR/slurm.conf" once the node is idle; exit 1 with the
#                                         daemons' logs when it does not come up
#   tests/slurm/cluster.sh stop DIR
set -u
cmd=${1:?usage: cluster.sh start|stop DIR}
dir=${2:?usage: cluster.sh start|stop DIR}

fail() {
  echo "cluster.sh: $*" >&2
  for f in "$dir"/munged.log "$dir"/slurmctld.log "$dir"/slurmd.log; do
    [ -f "$f" ] && { echo "---- $f (last 30 lines)" >&2; tail -n 30 "$f" >&2; }
  done
  exit 1
}

stop() {
  for d in slurmd slurmctld; do
    [ -f "$dir/$d.pid" ] && kill "$(cat "$dir/$d.pid")" 2>/dev/null
  done
  [ -f "$dir/munged.pid" ] && kill "$(cat "$dir/munged.pid")" 2>/dev/null
  sleep 1
  for d in slurmd slurmctld munged; do
    [ -f "$dir/$d.pid" ] && kill -9 "$(cat "$dir/$d.pid")" 2>/dev/null
  done
  return 0
}

if [ "$cmd" = stop ]; then stop; exit 0; fi
[ "$cmd" = start ] || { echo "usage: cluster.sh start|stop DIR" >&2; exit 2; }
mkdir -p "$dir"
[ "$(id -u)" = 0 ] || fail "SLURM's daemons need root here (slurmd runs jobs as their user); run the tests as root"

missing=""
for p in slurm-wlm munge; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  echo "cluster.sh: installing$missing" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing) >"$dir/apt.log" 2>&1 \
    || { tail -n 20 "$dir/apt.log" >&2; fail "could not install$missing"; }
fi

mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chown munge: "$dir/munge" 2>/dev/null
chmod 755 "$dir/munge"
[ -f /etc/munge/munge.key ] || { /usr/sbin/mungekey --create >/dev/null 2>&1 || fail "cannot create /etc/munge/munge.key"; }
# munged with its own socket (MUNGE_SOCKET would not reach slurm's plugin; AuthInfo below points slurm at it)
sock="$dir/munge/munge.socket"
su -s /bin/sh munge -c "/usr/sbin/munged --socket='$sock' --pid-file='$dir/munge/munged.pid' \
  --log-file='$dir/munge/munged.log' --seed-file='$dir/munge/munged.seed'" >"$dir/munged.out" 2>&1 \
  || { cat "$dir/munged.out" >&2; fail "munged did not start"; }
cp "$dir/munge/munged.pid" "$dir/munged.pid" 2>/dev/null
ln -sf "$dir/munge/munged.log" "$dir/munged.log"

# Free TCP ports for slurmctld and slurmd.
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
p1=$(port); p2=$(port)
while [ "$p2" = "$p1" ]; do p2=$(port); done
host=$(hostname -s)
cpus=$(nproc)
mem=$(awk '/MemTotal/ { print int($2 / 1024 / 2) }' /proc/meminfo)
cat >"$dir/slurm.conf" <<CONF
ClusterName=cqtest
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
