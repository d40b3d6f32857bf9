#!/usr/bin/env bash
# A real single-node Slurm for tests: munged + slurmctld + slurmd on 127.0.0.1,
# started and stopped by hand (no systemd), everything under one directory.
#
#   tests/slurm/local-slurm.sh start [DIR]   prints `export SLURM_CONF=DIR/slurm.conf`
#   tests/slurm/local-slurm.sh stop  [DIR]
#   tests/slurm/local-slurm.sh status [DIR]  exit 0 when up and the node is usable
#
# DIR defaults to $TDSOLVE_SLURM_DIR, else /tmp/tdsolve-slurm-$UID. Both commands
# are idempotent: start on a running instance only prints the line again; stop
# with nothing running does nothing. Stop signals only the daemons that start
# recorded in DIR/pids (by PID, after checking each still is that program),
# after cancelling the jobs of this instance; it never touches another Slurm.
# State is not kept between starts: job ids begin at 1 again.
#
# Clients find this cluster through SLURM_CONF only (nothing is written to
# /etc): `eval "$(tests/slurm/local-slurm.sh start)"; sbatch ...`.
#
# Needs root (slurmd starts jobs as their user) and the Debian packages
# slurmctld slurmd slurm-client munge; srun starts Debian's Open MPI programs
# only through PMIx (Slurm's mpi_pmix plugin + libpmix-dev, which
# libopenmpi-dev pulls in). `start` exits 2, saying what is missing, when it
# cannot run here (the tests skip on that).
#
# Settings (environment):
#   TDSOLVE_SLURM_PORT       slurmctld port; slurmd takes the next one
#                            (default: the first free pair from 6817 on)
#   TDSOLVE_SLURM_KILL_WAIT  seconds between SIGTERM and SIGKILL when a job
#                            ends at its time limit or is cancelled [10]
#   TDSOLVE_SLURM_CPUS       CPUs to advertise instead of the real count
set -euo pipefail

cmd=${1:-}
D=${2:-${TDSOLVE_SLURM_DIR:-/tmp/tdsolve-slurm-$(id -u)}}
case "$cmd" in start | stop | status) ;; *)
  echo "usage: $0 start|stop|status [DIR]" >&2
  exit 64
  ;;
esac
case "$D" in /*) ;; *) D=$PWD/$D ;; esac
case "$D" in / | /tmp | /var | /root | /home) echo "local-slurm: refusing DIR=$D" >&2 && exit 64 ;; esac

CONF=$D/slurm.conf
SOCK=$D/munge/munge.socket
PIDS=$D/pids
NODE=$(hostname -s 2>/dev/null || uname -n | cut -d. -f1) # slurmctld wants the real host name
log() { printf 'local-slurm: %s\n' "$*" >&2; }

# alive NAME PID: PID runs program NAME (Debian installs slurmd as slurmd-wlm)
alive() {
  local exe
  [ -n "${2:-}" ] && [ -d "/proc/$2" ] || return 1
  exe=$(readlink "/proc/$2/exe" 2>/dev/null) || return 1
  case "$exe" in */"$1" | */"$1"-wlm) return 0 ;; esac
  return 1
}
# gone PID: exited (or only a zombie is left)
gone() { [ ! -d "/proc/$1" ] || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
wait_gone() { # wait_gone PID TENTHS
  local _
  for _ in $(seq "$2"); do
    if gone "$1"; then return 0; fi
    sleep 0.1
  done
}
recorded() { if [ -f "$PIDS" ]; then awk -v n="$1" '$1 == n { p = $2 } END { print p }' "$PIDS"; fi; }
munge_ok() { munge -S "$SOCK" -n 2>/dev/null | unmunge -S "$SOCK" >/dev/null 2>&1; }
node_state() { SLURM_CONF=$CONF sinfo -h -N -n "$NODE" -o '%t' 2>/dev/null | head -n 1 || true; }
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

running() {
  alive munged "$(recorded munged)" && alive slurmctld "$(recorded slurmctld)" &&
    alive slurmd "$(recorded slurmd)" && munge_ok &&
    case "$(node_state)" in idle | mix | alloc | comp) true ;; *) false ;; esac
}

stop() {
  [ -f "$PIDS" ] || return 0
  local c m name pid rc=0
  c=$(recorded slurmctld) m=$(recorded munged)
  if alive slurmctld "$c" && alive munged "$m"; then
    local jobs
    jobs=$(SLURM_CONF=$CONF squeue -h -o %i 2>/dev/null || true)
    if [ -n "$jobs" ]; then
      # shellcheck disable=SC2086 # one word per job id
      SLURM_CONF=$CONF scancel $jobs 2>/dev/null || true
      for _ in $(seq 100); do
        [ -z "$(SLURM_CONF=$CONF squeue -h -o %i 2>/dev/null)" ] && break
        sleep 0.2
      done
    fi
  fi
  for name in slurmd slurmctld munged; do # the reverse of the start order
    pid=$(recorded $name)
    alive $name "$pid" || continue
    kill -TERM "$pid" 2>/dev/null || true
    wait_gone "$pid" 100
    if ! gone "$pid" && alive $name "$pid"; then
      log "$name ($pid) ignored SIGTERM for 10 s; SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      wait_gone "$pid" 30
    fi
    gone "$pid" || { log "$name ($pid) is still alive" && rc=1; }
  done
  [ $rc = 0 ] && rm -f "$PIDS"
  return $rc
}

if [ "$cmd" = stop ]; then
  stop
  exit
fi
if [ "$cmd" = status ]; then
  running
  exit
fi

# ---- start ------------------------------------------------------------------
if [ "$(id -u)" != 0 ]; then
  log "cannot run here: needs root (slurmd starts each job as its user)"
  exit 2
fi
for b in munged munge unmunge mungekey slurmctld slurmd sinfo squeue scontrol sbatch srun scancel; do
  command -v $b >/dev/null || {
    log "cannot run here: $b not found (Debian: apt-get install slurmctld slurmd slurm-client munge)"
    exit 2
  }
done
if running; then
  echo "export SLURM_CONF=$CONF"
  exit 0
fi
stop || true # what is left of an earlier start

mkdir -p "$D"
chmod a+x "$D" # munged wants its socket's folders searchable by all (mktemp -d gives 0700)
rm -rf "$D/state" "$D/spool" "$D/log" "$D/munge"
mkdir -p "$D/state" "$D/spool" "$D/log"
install -d -m 0755 "$D/munge" # munged refuses a group- or world-writable directory
: >"$PIDS"
# Whatever fails from here on stops what was started so far (logs stay in DIR).
trap 'rc=$?; [ $rc = 0 ] || { log "start failed; logs in $D/log and $D/munge"; stop || true; }' EXIT

# A private munged: its own key and socket, named in slurm.conf (AuthInfo).
mungekey --create --keyfile="$D/munge/munge.key" --bits=1024
chmod 0400 "$D/munge/munge.key"
munged --socket="$SOCK" --key-file="$D/munge/munge.key" --pid-file="$D/munge/munged.pid" \
  --log-file="$D/munge/munged.log" --seed-file="$D/munge/munged.seed"
wait_pid() { # wait_pid FILE NAME: the PID a daemon wrote, once it runs
  local _ pid
  for _ in $(seq 100); do
    pid=$(tr -dc 0-9 2>/dev/null <"$1" || true)
    alive "$2" "$pid" && echo "$pid" && return 0
    sleep 0.1
  done
  log "$2 did not start"
  return 1
}
echo "munged $(wait_pid "$D/munge/munged.pid" munged)" >>"$PIDS"
for _ in $(seq 50); do if munge_ok; then break; fi; sleep 0.1; done
munge_ok || { log "munge round trip through $SOCK failed" && exit 1; }

port=${TDSOLVE_SLURM_PORT:-}
if [ -z "$port" ]; then
  port=6817
  while port_busy $port || port_busy $((port + 1)); do port=$((port + 2)); done
fi
mpi=none
if compgen -G "/usr/lib/*/slurm-wlm/mpi_pmix.so" >/dev/null && compgen -G "/usr/lib/*/pmix2/lib/libpmix.so" >/dev/null; then
  mpi=pmix
fi
# The node as slurmd sees it: CPUs=2 Boards=1 ... RealMemory=24105
hw=$(slurmd -C | head -n 1)
hw=${hw#NodeName=* }
overrides=
if [ -n "${TDSOLVE_SLURM_CPUS:-}" ]; then
  hw="CPUs=$TDSOLVE_SLURM_CPUS $(grep -o 'RealMemory=[0-9]*' <<<"$hw")"
  overrides=SlurmdParameters=config_overrides
fi

# ProctrackType=proctrack/pgid, TaskPlugin=task/none: no cgroups needed (with
# linuxproc, what a job left in the background would outlive it).
# batch_sched_delay=0 starts a batch job within about a second; MinJobAge
# keeps finished jobs in scontrol for the tests to read their state.
cat >"$CONF.tmp" <<EOF
# Written by tdsolve's tests/slurm/local-slurm.sh
ClusterName=tdsolvetest
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCK,cred_expire=10
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$D/log/jobcomp.log
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_interval=2,bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=$mpi
ReturnToService=2
MinJobAge=300
KillWait=${TDSOLVE_SLURM_KILL_WAIT:-10}
MailProg=/bin/true
$overrides
NodeName=$NODE NodeAddr=127.0.0.1 $hw State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
mv "$CONF.tmp" "$CONF"

slurmctld -f "$CONF"
echo "slurmctld $(wait_pid "$D/slurmctld.pid" slurmctld)" >>"$PIDS"
slurmd -f "$CONF" -N "$NODE"
echo "slurmd $(wait_pid "$D/slurmd.pid" slurmd)" >>"$PIDS"
for _ in $(seq 300); do
  [ "$(node_state)" = idle ] && break
  sleep 0.2
done
if [ "$(node_state)" != idle ]; then
  log "node $NODE is not idle after 60 s (state: $(node_state))"
  tail -n 20 "$D/log/slurmctld.log" "$D/log/slurmd.log" >&2 || true
  exit 1
fi
echo "export SLURM_CONF=$CONF"
