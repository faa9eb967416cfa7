#!/usr/bin/env bash
# The many-core figures that issues 38, 39 and 43 ask for, in one time-boxed run: meant for a
# lent 16-core machine, which has no network and little time (docs/many-core.md says what
# earlier runs found). Each step runs under its own time limit and writes its CSV and output
# under OUT; a step that fails or runs out of time is noted in OUT/steps.txt and the next one
# runs.
#
#   scripts/many-core.sh BIN OUT [--toy]
#
# BIN: a folder with `swizzledb` (a release build, required) and, optionally:
#   - `lock-bench`: the lock manager's bench binary
#     (`cargo bench -p swizzledb-benches --bench lock --no-run` prints its path);
#   - `vmcache`: vmcache built statically (docs/peers.md names its source and settings).
# OUT: the results folder (made if missing).
# --toy: a few seconds per step, for trying the script on a small machine first.
#
# At full size the steps' limits add up to 575 s (under the device's 600 s per command), TPC-C's
# 150 the most; run it with a command timeout of 600 s.

set -u
if [ $# -lt 2 ]; then
    sed -n '2,18p' "$0" >&2
    exit 2
fi
BIN=$(cd "$1" && pwd)
OUT=$2
TOY=${3:-}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SZ="$BIN/swizzledb"
if [ ! -x "$SZ" ]; then
    echo "no swizzledb binary in $BIN" >&2
    exit 2
fi
# Databases in memory where the machine has it; group commit's on the disk, for its fsyncs.
MEM=/dev/shm/swizzledb-many-core
DISK=${TMPDIR:-/tmp}/swizzledb-many-core
cores=$(nproc)

if [ "$TOY" = "--toy" ]; then
    T_MANY=2 WH=1 TPCC_S=1 WAL_RECORDS=20000 GC_S=1 RECORDS=100000 ZIPF_RECORDS=100000 LOOKUP_S=1
    VM_DATASIZE=1 VM_RECORDS=1e5 VM_RUN=1 VM_VIRT=4 VM_PHYS=2
else
    T_MANY=$cores WH=8 TPCC_S=3 WAL_RECORDS=400000 GC_S=2 RECORDS=10000000 ZIPF_RECORDS=1000000 LOOKUP_S=2
    VM_DATASIZE=8 VM_RECORDS=1e7 VM_RUN=4 VM_VIRT=64 VM_PHYS=24
fi
T_HALF=$((T_MANY / 2 > 0 ? T_MANY / 2 : 1))

# step NAME LIMIT_S COMMAND...: runs COMMAND with its output in OUT/NAME.txt.
step() {
    local name=$1 limit=$2
    shift 2
    local start=$SECONDS
    timeout "$limit" "$@" >"$OUT/$name.txt" 2>&1
    local rc=$?
    echo "$name rc=$rc seconds=$((SECONDS - start))" | tee -a "$OUT/steps.txt"
}

{
    echo "cores: $cores"
    grep -m1 "model name" /proc/cpuinfo
    free -g | head -2
    "$SZ" --version
    date -u
} >"$OUT/machine.txt" 2>&1

# Issues 38 and 39: TPC-C with logging and record locking on and off.
rm -rf "$MEM"
step tpcc 150 "$SZ" bench tpcc --warehouses $WH --threads 1,$T_HALF,$T_MANY --duration $TPCC_S \
    --repeat 2 --modes swizzling --logging off,on --locking off,on --dir "$MEM/tpcc" --out "$OUT/tpcc"

# Issues 38 and 39: one-insert transactions, logged and locked, at 1 and all threads.
rm -rf "$MEM"
step wal-overhead 45 "$SZ" bench wal --parts overhead --batch 1 --threads 1,$T_MANY \
    --records $WAL_RECORDS --repeat 1 --dir "$MEM/wal" --out "$OUT/wal-overhead"

# Issue 38: group commit on the disk, waiting adaptively (the default) and asleep: whether the
# crowd's keeper is worth its core on many cores (docs/logging.md).
rm -rf "$DISK"
step wal-group-commit 40 "$SZ" bench wal --parts group-commit --threads 1,$T_MANY --duration $GC_S \
    --commit-wait adaptive,sleep --repeat 1 --dir "$DISK/gc" --out "$OUT/wal-group-commit"
rm -rf "$DISK"

# Issue 39: the lock table alone (1, 2 and 4 threads).
if [ -x "$BIN/lock-bench" ]; then
    step lock-bench 40 "$BIN/lock-bench" --bench --noplot --measurement-time 2 --warm-up-time 1
fi

# Issue 43: uniform lookups in memory (swizzling against vmcache at all threads is the target;
# the fair LMDB's targets are at one thread, on the 2-core machine).
for t in 1 $T_MANY; do
    rm -rf "$MEM"
    step "lookup-$t" 60 "$SZ" bench lookup --engine swizzledb --mode swizzling --records $RECORDS \
        --threads $t --duration $LOOKUP_S --warmup 1 --repeat 2 --dir "$MEM/lookup" --out "$OUT/lookup-$t"
done
rm -rf "$MEM"

# Issue 43: leaf reads through a view with no latch (btree T21, off by default) against latched
# leaf reads, where all threads read the same hot leaves (Zipf 1.0): keep T21, or retire it.
for t21 in latched t21; do
    rm -rf "$MEM"
    flag=()
    [ "$t21" = t21 ] && flag=(--optimistic-leaf-reads)
    step "lookup-zipf-$t21" 25 "$SZ" bench lookup --engine swizzledb --mode swizzling --records $ZIPF_RECORDS \
        --zipf 1 --threads $T_MANY --duration $LOOKUP_S --warmup 1 --repeat 2 "${flag[@]}" \
        --dir "$MEM/lookup" --out "$OUT/lookup-zipf-$t21"
done
rm -rf "$MEM"

# Issue 43: vmcache's TPC-C (the target is at half the threads) and uniform lookups, its data
# in memory; it opens its block file (which must exist) but reads nothing from it then.
if [ -x "$BIN/vmcache" ]; then
    VM=(env BLOCK="$DISK-bm" VIRTGB=$VM_VIRT PHYSGB=$VM_PHYS RUNFOR=$VM_RUN)
    touch "$DISK-bm"
    for t in $(printf '%s\n' 1 $T_HALF $T_MANY | sort -nu); do
        step "vmcache-tpcc-$t" 20 "${VM[@]}" THREADS=$t DATASIZE=$VM_DATASIZE "$BIN/vmcache"
    done
    for t in 1 $T_MANY; do
        step "vmcache-rndread-$t" 35 "${VM[@]}" RNDREAD=1 THREADS=$t DATASIZE=$VM_RECORDS "$BIN/vmcache"
    done
    rm -f "$DISK-bm"
fi
echo "done: $OUT" | tee -a "$OUT/steps.txt"
