#!/bin/bash
# ck8s-gpu node setup, run once by cloud-init (rendered into user-data by components/aws/userdata.py).
#
# Installs the k8s snap (from the Snap Store, or from the node image's files: CK8S_SNAP_SOURCE=image),
# side-loads the image's container images (CK8S_IMAGES_PRELOADED=1) and points containerd at the
# registry mirror (CK8S_REGISTRY_MIRROR); CK8S_OFFLINE=1 contacts nothing outside the VPC but AWS's
# endpoints (docs/adr/0043). Then, by CK8S_ROLE:
#   bootstrap      bootstraps the cluster with the CA keys read from Secrets Manager and registers
#                  the control-plane join auth token with k8sd. When control planes launched
#                  before it run, this is a replacement of the first one: with peers it joins them;
#                  on a single-control-plane cluster it refuses (docs/adr/0011). Peers launched
#                  after it are its cluster's others, launched beside it (docs/adr/0019).
#   control-plane  joins the running control planes
#   worker         joins as a worker, then labels its own Node
# Control planes mint their single-use join token from a peer's k8sd (POST
# :6400/1.0/x/capi/generate-join-token with the control-plane-only auth token). Workers hold no
# secret: through SSM Run Command they ask a control plane to run CK8S_MINT_DOCUMENT, which can
# only run `k8s get-join-token <name> --worker`. No token ever sits in user-data.
#
# A node that cannot join gives up with `CK8S-GPU-BOOT-FAILED: <reason>` on its console; a worker
# then powers itself off: its launch template terminates it on shutdown and its Auto Scaling group
# replaces it (docs/adr/0040). The worker role can act on no instance, this one included.
# Idempotent: a marker makes a second run (reboot, `cloud-init clean`) a no-op. Secrets live in a
# tmpfs directory removed on exit and never reach the log. CK8S_* variables override every path,
# so tests run this unchanged against the k8s-snap fake (tests/fakes/k8s_snap).
set -euo pipefail
umask 077

CONFIG_DIR=${CK8S_CONFIG_DIR:-/etc/ck8s-gpu}
# shellcheck source=/dev/null
. "$CONFIG_DIR/node.env"
STATE_DIR=${CK8S_STATE_DIR:-/var/lib/ck8s-gpu}
RUN_DIR=${CK8S_RUN_DIR:-/run/ck8s-gpu}
KUBE_DIR=${CK8S_KUBE_DIR:-/etc/kubernetes}
SNAP_DIR=${CK8S_SNAP_DIR:-/snap}
SNAP_COMMON=${CK8S_SNAP_COMMON:-/var/snap/k8s/common}
HOSTS_DIR=${CK8S_CONTAINERD_HOSTS_DIR:-/etc/containerd/hosts.d} # classic k8s-snap: containerd base dir /
UNIT_DIR=${CK8S_SYSTEMD_DIR:-/etc/systemd/system}
CONTAINERD_ETC=${CK8S_CONTAINERD_ETC:-/etc/containerd} # k8sd writes config.toml here at join, imports conf.d/*.toml
NVIDIA_CTK=${CK8S_NVIDIA_CTK:-/usr/bin/nvidia-ctk}     # from the toolkit in the image (nvidia-container-toolkit-base)
NVIDIA_RUNTIME_DIR=${CK8S_NVIDIA_RUNTIME_DIR:-/usr/bin} # nvidia-container-runtime{,.cdi,.legacy} (-base, -operator-extensions)
NVIDIA_RUNTIMES_WORK=${CK8S_NVIDIA_RUNTIMES_WORK:-/run/ck8s-gpu-nvidia-runtimes} # scratch of the runtime chain
SIDELOAD_WAIT=${CK8S_SIDELOAD_WAIT_SECONDS:-300}
CONSOLE=${CK8S_CONSOLE:-/dev/console}
LOG=${CK8S_LOG_DIR:-/var/log}/ck8s-gpu-$CK8S_ROLE.log
RETRY_BASE=${CK8S_RETRY_BASE_SECONDS:-5}
RETRY_MAX=${CK8S_RETRY_MAX_SECONDS:-60}
JOIN_ATTEMPTS=${CK8S_JOIN_ATTEMPTS:-40}
MINT_POLLS=${CK8S_MINT_POLLS:-30}          # SSM invocation polls, one every MINT_POLL_SECONDS
MINT_POLL_SECONDS=${CK8S_MINT_POLL_SECONDS:-2}
TOKEN_TTL_NS=900000000000 # minted control-plane join tokens expire after 15 minutes
NODE_NAME=
NODE_IP=
INSTANCE_ID=

log() { printf '%s [%s] %s\n' "$(date -u +%FT%TZ)" "$CK8S_ROLE" "$*" | tee -a "$LOG" >&2; }

# die REASON: give up for good. cloud-init never runs this script again on this instance, so the
# reason goes to the console (`aws ec2 get-console-output`, kept an hour after termination) and a
# worker powers off: instance-initiated shutdown terminates it (launch template) and its group's
# EC2 health check replaces it. No API call: no credential of a worker may touch an instance.
# A Node it registered is deleted by the cloud controller manager once the instance is terminated
# (a node cannot delete its own Node object; docs/adr/0040, update).
die() {
  log "FAILED: $*"
  { printf 'CK8S-GPU-BOOT-FAILED: %s %s: %s\n' "$CK8S_ROLE" "${NODE_NAME:-?}" "$*" >"$CONSOLE"; } 2>/dev/null || true
  if [ "$CK8S_ROLE" = worker ]; then
    # systemctl poweroff only queues the shutdown and returns: the script still exits (and cleans up).
    if systemctl poweroff >>"$LOG" 2>&1; then
      log "powering off: the instance terminates and its Auto Scaling group replaces it"
    else
      log "could not power off (see $LOG): replace instance ${INSTANCE_ID:-?} by hand"
    fi
  fi
  exit 1
}
# Output to the log only. Never used for commands that print secrets.
quiet() { "$@" >>"$LOG" 2>&1; }

# retry ATTEMPTS WHAT COMMAND...: exponential backoff from RETRY_BASE, capped at RETRY_MAX seconds.
# COMMAND runs in a condition, where `set -e` does not apply: functions check their own steps. A
# function of this script that sets FOR_GOOD before it fails says retrying cannot help: retry gives
# up at once (a variable, not an exit status: external commands' statuses mean their own things).
FOR_GOOD=
retry() {
  local attempts=$1 what=$2 n=1 delay=$RETRY_BASE
  shift 2
  FOR_GOOD=
  until "$@"; do
    if [ -n "$FOR_GOOD" ]; then
      log "$what: failed for good ($FOR_GOOD): no retry helps"
      FOR_GOOD=
      return 1
    fi
    if [ "$n" -ge "$attempts" ]; then
      log "$what: failed after $n attempts"
      return 1
    fi
    log "$what: attempt $n of $attempts failed; retrying in ${delay}s"
    sleep "$delay"
    n=$((n + 1))
    delay=$((delay * 2 > RETRY_MAX ? RETRY_MAX : delay * 2))
  done
}

# snap_attempt COMMAND...: one snapd operation for `retry`: snapd busy is worth a retry (another
# change on the same snap: snapd overlord/snapstate/conflict.go ChangeConflictError, `snap "%s"
# has "%s" change in progress`, e.g. first boot's auto-refresh or seeding; "too early for
# operation" after boot); any other error is for good (a missing or unacked file), so the boot
# fails on its first clear sign.
snap_attempt() {
  local err
  if err=$("$@" 2>&1 </dev/null); then
    printf '%s\n' "$err" >>"$LOG"
    return 0
  fi
  printf '%s\n' "$err" >>"$LOG"
  case "$err" in
  *" change in progress"* | *"too early for operation"*) return 1 ;;
  esac
  FOR_GOOD="snapd: ${err:0:200}"
  return 1
}

# install_snap_files: the snaps the node image carries (the image program, docs/adr/0043), in its
# install-order (`<name> <revision> <classic|strict>`: snapd, then bases, then apps), as k8s-snap
# installs offline (docs/canonicalk8s/snap/howto/install/offline.md): ack the assertions, then
# install the file. No --dangerous: snapd takes the revision from the acked snap-revision matching
# the file.
# The snapd snap: on a classic, seeded system snapd fetches it from the store before installing any
# app snap while it is not installed (snapd 2.77 overlord/snapstate/handlers_prereq.go
# installPrereqs, considerSnapdAsPrereq; offline: `cannot install system snap "snapd": ...`,
# prereqError; spread tests/main/snapd-snap-auto-install). Before snapd 2.66 (#14173, handlers.go
# installPrereqs) only for a base other than `core` with neither the snapd nor the core snap
# installed: installing it whenever it is missing serves both. offline.md lists only core22 and
# k8s: it relies on the host's snapd snap. The carried one is installed only where snapd would
# fetch it, so a newer seeded snapd is never replaced by the image's.
install_snap_files() {
  # A missing file fails in snapd (`cannot open`, `cannot assert`): the node gives up naming it.
  local order=$STATE_DIR/snaps/install-order name rev c f
  grep -qx "k8s $CK8S_SNAP_REVISION classic" "$order" || die "no k8s $CK8S_SNAP_REVISION in $order: not this pin's image"
  if [ "${CK8S_OFFLINE:-0}" = 1 ] && ! grep -q '^snapd ' "$order" && ! snap_installed snapd; then
    die "no snapd line in $order (an image built before the image program carried snapd) and no snapd snap installed: offline, snapd cannot fetch it to install k8s"
  fi
  while read -r name rev c; do
    f=$STATE_DIR/snaps/${name}_$rev
    if [ "$name" = snapd ] && snap_installed snapd; then
      log "the snapd snap is installed: $f.snap is not needed, the host's is kept"
      continue
    fi
    retry 8 "snap ack $f.assert" snap_attempt snap ack "$f.assert" || die "snap ack $f.assert failed (see $LOG)"
    # shellcheck disable=SC2046 # --classic or nothing
    retry 8 "snap install $f.snap" snap_attempt snap install "$f.snap" $([ "$c" != classic ] || echo --classic) ||
      die "could not install $f.snap (see $LOG)"
  done <"$order"
}

# snap_installed NAME: whether the snap NAME is installed. `snap list NAME` fails with "no matching
# snaps installed" when it is not (snapd 2.77 cmd/snapd/cli/cmd_list.go ErrNoMatchingSnaps); any
# other failure answers nothing: the node gives up naming it.
snap_installed() {
  local out
  out=$(LC_ALL=C snap list "$1" 2>&1 </dev/null) && return 0
  case "$out" in *"no matching snaps installed"*) return 1 ;; esac
  die "snap list $1: ${out:0:200}"
}

install_snaps() {
  # On first boot snapd may still be seeding: installs fail with "too early for operation".
  retry 8 "wait for snapd seeding" quiet snap wait system seed.loaded || die "snapd did not finish seeding"
  local pin=()
  [ -z "${CK8S_SNAP_REVISION:-}" ] || pin=(--revision="$CK8S_SNAP_REVISION")
  if [ "${CK8S_SNAP_SOURCE:-store}" = image ]; then
    install_snap_files
  else
    # Offline there is no Snap Store: only the image's files (docs/adr/0043).
    [ "${CK8S_OFFLINE:-0}" != 1 ] || die "offline: no Snap Store (CK8S_SNAP_SOURCE=image)"
    # The cluster's pinned revision when the stack has one (docs/adr/0039): the channel moves on, and
    # k8sd refuses a control plane on another patch. snapd installs any published revision for anyone
    # and tracks the channel given with it (snapd #12817; overlord/snapstate resolveChannelForStore).
    retry 8 "snap install k8s ($CK8S_SNAP_CHANNEL ${pin[*]})" quiet snap install k8s --classic --channel="$CK8S_SNAP_CHANNEL" "${pin[@]}" ||
      die "could not install the k8s snap ${pin[*]}"
  fi
  # A revision is one architecture's build: a wrong one (another patch, another architecture's
  # number) is refused here, not by k8sd at this join (a control plane) or at every later one.
  [ -z "${pin[*]}" ] || snap list k8s | grep -E "^k8s +$CK8S_SNAP_VERSION +$CK8S_SNAP_REVISION " >/dev/null ||
    die "k8s snap is not $CK8S_SNAP_VERSION revision $CK8S_SNAP_REVISION (docs/adr/0039)"
  if [ "$CK8S_HOLD_SNAP_REFRESH" = true ]; then
    retry 8 "hold k8s refreshes" quiet snap refresh --hold k8s || die "could not hold k8s snap refreshes"
  fi
  if ! command -v aws >/dev/null; then
    [ "${CK8S_OFFLINE:-0}" != 1 ] || die "offline: no aws CLI in the image"
    retry 8 "snap install aws-cli" quiet snap install aws-cli --classic || die "could not install the aws-cli snap"
  fi
}

# preload_images: the image's OCI archives into the side-load folder of k8s-snap's containerd,
# which imports each *.tar when it starts (bootstrap, join) and renames it *.tar.loaded
# (build-scripts/components/containerd/patches/default/0001-side-load-images-plugin.patch). Hard
# links: one filesystem, no copy of gigabytes; cp where linking fails.
preload_images() {
  local tar
  mkdir -p "$SNAP_COMMON/images"
  for tar in "$STATE_DIR"/images/*.tar; do
    [ -e "$tar" ] || die "no $STATE_DIR/images/*.tar"
    [ -e "$SNAP_COMMON/images/${tar##*/}.loaded" ] ||
      ln -f "$tar" "$SNAP_COMMON/images/" 2>/dev/null || cp "$tar" "$SNAP_COMMON/images/" || die "cannot copy $tar"
  done
}

# wait_sideload: containerd imports in the background once it runs, so wait for every rename; an
# archive it cannot import stays as it is (the plugin logs it): the node gives up naming it.
wait_sideload() {
  local left n=0
  while left=$(find "$SNAP_COMMON/images" -maxdepth 1 -name '*.tar' -print -quit) && [ -n "$left" ]; do
    [ "$n" -lt "$SIDELOAD_WAIT" ] || die "containerd did not import $left"
    sleep 1
    n=$((n + 1))
  done
}

# write_mirror TOKEN: one hosts.toml per upstream registry sending its pulls to
# CK8S_REGISTRY_MIRROR/<upstream> (k8s-snap offline.md "Nested path registry mirror": override_path,
# the host URL is the whole API path). server is the mirror too, so no pull falls back to the public
# registry (containerd docs/hosts.md). TOKEN: an ECR token, sent as Basic credentials; containerd
# reads hosts.d at each pull, so a new file needs no restart.
write_mirror() {
  # <host>[/<path>] -> https://<host>/v2[/<path>]/<upstream>
  local up ups url d m=$CK8S_REGISTRY_MIRROR host=${CK8S_REGISTRY_MIRROR%%/*}
  read -r -a ups <<<"$CK8S_MIRROR_UPSTREAMS"
  for up in "${ups[@]}"; do
    url="https://$host/v2${m#"$host"}/$up"
    d=$HOSTS_DIR/$up
    mkdir -p "$d" || return 1
    {
      printf 'server = "%s"\n[host."%s"]\ncapabilities = ["pull", "resolve"]\noverride_path = true\n' "$url" "$url"
      [ -z "$1" ] || printf '[host."%s".header]\nauthorization = "Basic %s"\n' "$url" "$1"
    } >"$d/h.new" && mv -f "$d/h.new" "$d/hosts.toml" || return 1
  done
}

# mirror_auth: the mirror's hosts.toml, with a fresh ECR token when CK8S_MIRROR_AUTH=ecr (k8s-snap
# has no kubelet credential provider). The token stays in a variable: never in the log.
mirror_auth() {
  local token=
  if [ "${CK8S_MIRROR_AUTH:-}" = ecr ]; then
    token=$(aws ecr get-authorization-token --region "$CK8S_MIRROR_REGION" \
      --query 'authorizationData[0].authorizationToken' --output text 2>>"$LOG" </dev/null) || return 1
    [ -n "$token" ] || return 1
  fi
  write_mirror "$token"
}

# mirror_timer: ECR tokens last 12 hours (ECR API GetAuthorizationToken): a systemd timer renews
# them every 6 hours (and at boot) with `ck8s-gpu-node mirror-auth`.
mirror_timer() {
  local unit=$UNIT_DIR/ck8s-gpu-mirror-auth self
  self=$(readlink -f "$0")
  printf '[Service]\nType=oneshot\nExecStart=%s mirror-auth\n' "$self" >"$unit.service"
  printf '[Timer]\nOnBootSec=1min\nOnUnitActiveSec=6h\n[Install]\nWantedBy=timers.target\n' >"$unit.timer"
  quiet systemctl daemon-reload && quiet systemctl enable --now "${unit##*/}.timer"
}

setup_mirror() {
  retry 8 "mirror setup" mirror_auth || die "cannot set up mirror $CK8S_REGISTRY_MIRROR (see $LOG)"
  [ "${CK8S_MIRROR_AUTH:-}" != ecr ] || mirror_timer || die "cannot install the mirror credentials timer"
}

# host_toolkit: gpuStack.toolkit host (docs/adr/0046). The image carries the NVIDIA Container
# Toolkit; containerd must have its runtimes from its first start, and k8sd writes config.toml only
# at the join, just before it starts containerd. So systemd runs nvidia-ctk before every start of
# k8s-snap's containerd: `runtime configure --config-source=file` reads the root config k8sd wrote
# and writes conf.d/99-nvidia.toml with the whole CRI section copied (containerd 1.7 imports replace
# a plugin's section whole), as the operator's toolkit does (NVIDIA/nvidia-container-toolkit
# v1.20.0 pkg/config/engine/containerd). A refreshed snap's new root config carries over the same
# way. CK8S_HOST_TOOLKIT: cdi (enable_cdi, nvidia a runtime class: the operator's CDI mode) or
# default-runtime (no CDI: nvidia the default runtime, the toolkit's own default).
#
# Every RuntimeClass the operator creates needs a handler here: `nvidia` always, and with CDI
# `nvidia-cdi` and `nvidia-legacy` too (NVIDIA/gpu-operator v26.7.0 controllers/object_controls.go
# RuntimeClasses, assets/pre-requisites/02{0,1,2}0_runtime_class*.yaml), the three runtimes the
# operator's own toolkit registers (cmd/nvidia-ctk-installer/container/operator/operator.go
# GetRuntimes: nvidia-container-runtime, .cdi, .legacy). nvidia-ctk adds one runtime a run, and each
# drop-in it writes is a copy of its source's CRI section, so two drop-ins would replace each other
# on containerd 1.7. The mode runtimes are therefore added in a chain through scratch copies: each
# run reads the drop-in the one before wrote (it carries `version`), and the last one, holding all
# three, replaces 99-nvidia.toml. Checked with the real nvidia-ctk v1.20.0
# (tests/data/nvidia-ctk-v1.20.0/chain.*) and on the node tier, a pod started with each class.
host_toolkit() {
  local d=$UNIT_DIR/snap.k8s.containerd.service.d mode drop=$CONTAINERD_ETC/conf.d/99-nvidia.toml
  local w=$NVIDIA_RUNTIMES_WORK ctk
  case "$CK8S_HOST_TOOLKIT" in
  cdi) mode=--cdi.enabled ;;
  default-runtime) mode=--nvidia-set-as-default ;;
  *) die "CK8S_HOST_TOOLKIT is '$CK8S_HOST_TOOLKIT': expected cdi or default-runtime" ;;
  esac
  [ -x "$NVIDIA_CTK" ] || die "gpuStack.toolkit host, but the image has no $NVIDIA_CTK (build the pool's image with images/: docs/adr/0046)"
  ctk="$NVIDIA_CTK --quiet runtime configure --runtime=containerd --config-source=file"
  mkdir -p "$d" || die "cannot create $d"
  {
    printf '[Service]\n'
    printf 'ExecStartPre=%s --config=%s --drop-in-config=%s --nvidia-runtime-path=%s %s\n' \
      "$ctk" "$CONTAINERD_ETC/config.toml" "$drop" "$NVIDIA_RUNTIME_DIR/nvidia-container-runtime" "$mode"
    if [ "$CK8S_HOST_TOOLKIT" = cdi ]; then
      printf 'ExecStartPre=/usr/bin/rm -rf %s\nExecStartPre=/usr/bin/mkdir -p %s\n' "$w" "$w"
      printf 'ExecStartPre=/usr/bin/cp %s %s\n' "$drop" "$w/nvidia.toml"
      printf 'ExecStartPre=%s --config=%s --drop-in-config=%s --nvidia-runtime-name=nvidia-cdi --nvidia-runtime-path=%s %s\n' \
        "$ctk" "$w/nvidia.toml" "$w/cdi/99-nvidia.toml" "$NVIDIA_RUNTIME_DIR/nvidia-container-runtime.cdi" "$mode"
      printf 'ExecStartPre=%s --config=%s --drop-in-config=%s --nvidia-runtime-name=nvidia-legacy --nvidia-runtime-path=%s %s\n' \
        "$ctk" "$w/cdi/99-nvidia.toml" "$w/legacy/99-nvidia.toml" "$NVIDIA_RUNTIME_DIR/nvidia-container-runtime.legacy" "$mode"
      printf 'ExecStartPre=/usr/bin/mv %s %s\n' "$w/legacy/99-nvidia.toml" "$drop"
    fi
  } >"$d/10-ck8s-gpu-nvidia-runtime.conf" || die "cannot write $d/10-ck8s-gpu-nvidia-runtime.conf"
  quiet systemctl daemon-reload || die "systemctl daemon-reload failed"
}

# get_secret ID FILE: the secret's value into FILE, never into the log.
get_secret() {
  aws secretsmanager get-secret-value --region "$CK8S_REGION" --secret-id "$1" \
    --query SecretString --output text >"$2" 2>>"$LOG" && [ -s "$2" ]
}
fetch_secret() {
  retry 8 "read secret $1" get_secret "$1" "$2" || die "cannot read secret $1 (check the instance role)"
}

# api_sans: the API load balancer's DNS name as this control plane's extra SAN, in a YAML fragment
# appended to its bootstrap or join file. Looked up by the NLB's name (known at plan time) rather
# than rendered, so no instance waits in the graph for the NLB to become active (docs/adr/0019);
# ELBv2 answers with the DNS name from creation on, while the NLB is still provisioning.
api_sans() {
  local host
  host=$(aws elbv2 describe-load-balancers --region "$CK8S_REGION" --names "$CK8S_API_LB_NAME" \
    --query 'LoadBalancers[0].DNSName' --output text 2>>"$LOG" </dev/null) || return 1
  [[ "$host" =~ ^[a-z0-9][-a-z0-9.]*[a-z0-9]$ ]] || return 1
  printf 'extra-sans:\n- %s\n' "$host" >"$RUN_DIR/extra-sans.yaml"
  [ ! -e "$CONFIG_DIR/join.yaml" ] || cat "$CONFIG_DIR/join.yaml" "$RUN_DIR/extra-sans.yaml" >"$RUN_DIR/join.yaml"
}

# Control planes only: the worker role cannot read this secret.
load_auth_token() {
  fetch_secret "$CK8S_AUTH_SECRET_ID" "$RUN_DIR/auth-token"
  # A header file keeps the token out of curl's command line.
  printf 'capi-auth-token: %s\n' "$(cat "$RUN_DIR/auth-token")" >"$RUN_DIR/auth-header"
}

# discover: "<instance-id> <private-ip>" of this cluster's running control planes other than this
# node, one a line, into RUN_DIR/peers.
discover() {
  aws ec2 describe-instances --region "$CK8S_REGION" --output text \
    --filters "Name=tag:ck8s-gpu/cluster,Values=$CK8S_CLUSTER" "Name=tag:ck8s-gpu/role,Values=control-plane" \
    "Name=instance-state-name,Values=running" \
    --query 'Reservations[].Instances[].[InstanceId,PrivateIpAddress,LaunchTime]' \
    >"$RUN_DIR/peers.raw" 2>>"$LOG" || return 1
  # peers: every other running control plane. peers.older: those launched before this instance
  # (ISO 8601 times in one format compare as strings), the ones a first control plane must join
  # rather than bootstrap beside: the others were launched with it (docs/adr/0019). Lines that are
  # not exactly an instance id, an IPv4 address and a time are ignored.
  : >"$RUN_DIR/peers"
  : >"$RUN_DIR/peers.older"
  awk -v self="$INSTANCE_ID" -v p="$RUN_DIR/peers" -v o="$RUN_DIR/peers.older" '
    NF != 3 || $1 !~ /^i-[0-9a-f]+$/ || $2 !~ /^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$/ || $3 !~ /^[0-9][-0-9T:.+Z]*$/ { next }
    NR == FNR { if ($1 == self) t = $3; next }
    $1 != self { print $1, $2 >>p; if (t == "" || $3 < t) print $1, $2 >>o }
  ' "$RUN_DIR/peers.raw" "$RUN_DIR/peers.raw"
}

# json_get FILE KEY OUT: the string KEY of the JSON object in FILE into OUT (stripped); fails when
# it is missing or empty.
json_get() {
  python3 - "$1" "$2" "$3" <<'EOF'
import json, sys
path, key, out = sys.argv[1:]
try:
    doc = json.load(open(path))
except ValueError:
    sys.exit(f"{path}: the answer is not JSON")
value = doc.get(key) if isinstance(doc, dict) else None
if not isinstance(value, str) or not value.strip():
    sys.exit(f"{path}: no {key} in the answer")
with open(out, "w") as f:
    f.write(value.strip())
EOF
}

# mint_cp_token PEER_IP: a single-use control-plane join token named after this node, from the
# peer's k8sd (x/capi/generate-join-token with the control-plane-only auth token).
mint_cp_token() {
  printf '{"name":"%s","worker":false,"ttl":%s}' "$NODE_NAME" "$TOKEN_TTL_NS" >"$RUN_DIR/request.json"
  # -k: k8sd's certificate is made on the first control plane, so nothing here can pin it. The
  # token it returns carries that certificate's fingerprint, which join-cluster then verifies.
  curl -sS -k --max-time 30 -X POST -H 'Content-Type: application/json' -H "@$RUN_DIR/auth-header" \
    --data "@$RUN_DIR/request.json" "https://$1:6400/1.0/x/capi/generate-join-token" \
    >"$RUN_DIR/response.json" 2>>"$LOG" </dev/null || return 1
  python3 - "$RUN_DIR/response.json" "$RUN_DIR/join-token" 2>>"$LOG" <<'EOF'
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except ValueError:
    sys.exit("generate-join-token: the answer is not JSON")
if not isinstance(doc, dict):
    sys.exit("generate-join-token: unexpected answer")
token = (doc.get("metadata") or {}).get("token")
if doc.get("error_code") or not token:
    sys.exit(f"generate-join-token: {doc.get('error') or 'no token in the answer'}")
with open(sys.argv[2], "w") as out:
    out.write(token)
EOF
}

# mint_worker_token PEER_ID: a single-use worker join token named after this node, from control
# plane PEER_ID through SSM Run Command. The worker role may send only CK8S_MINT_DOCUMENT and only
# to this cluster's control planes; the document hard-codes --worker.
mint_worker_token() {
  local command_id status n=0
  command_id=$(aws ssm send-command --region "$CK8S_REGION" --document-name "$CK8S_MINT_DOCUMENT" \
    --instance-ids "$1" --parameters "NodeName=$NODE_NAME,KubeletMinor=${CK8S_SNAP_CHANNEL%%-*}" \
    --query Command.CommandId --output text \
    2>>"$LOG" </dev/null) || return 1
  while [ "$n" -lt "$MINT_POLLS" ]; do
    n=$((n + 1))
    sleep "$MINT_POLL_SECONDS"
    # The answer holds the token: it goes to the tmpfs run dir, never to the log.
    aws ssm get-command-invocation --region "$CK8S_REGION" --command-id "$command_id" --instance-id "$1" \
      --output json >"$RUN_DIR/invocation.json" 2>>"$LOG" </dev/null || continue # InvocationDoesNotExist at first
    json_get "$RUN_DIR/invocation.json" Status "$RUN_DIR/invocation-status" 2>>"$LOG" || return 1
    status=$(cat "$RUN_DIR/invocation-status")
    case "$status" in
    Pending | InProgress | Delayed) ;;
    Success)
      json_get "$RUN_DIR/invocation.json" StandardOutputContent "$RUN_DIR/join-token" 2>>"$LOG"
      return
      ;;
    *)
      if json_get "$RUN_DIR/invocation.json" StandardErrorContent "$RUN_DIR/mint-error" 2>/dev/null; then
        log "minting on $1: $status: $(head -c 300 "$RUN_DIR/mint-error")"
      else
        log "minting on $1: $status"
      fi
      return 1
      ;;
    esac
  done
  log "minting on $1: no answer after $MINT_POLLS polls"
  return 1
}

# join_once WORKER CONFIG: one pass over the running control planes; 0 once joined. The loop reads
# the peers file on stdin: every command in it reads /dev/null instead, or it would eat the list.
join_once() {
  local peer_id peer_ip
  discover || {
    log "cannot list control planes"
    return 1
  }
  [ -s "$RUN_DIR/peers" ] || {
    log "no running control plane found yet"
    return 1
  }
  while read -r peer_id peer_ip; do
    rm -f "$RUN_DIR/join-token"
    if [ "$1" = true ]; then
      mint_worker_token "$peer_id" || {
        log "no worker join token from $peer_id"
        continue
      }
    else
      mint_cp_token "$peer_ip" || {
        log "no control-plane join token from $peer_id ($peer_ip)"
        continue
      }
    fi
    if k8s join-cluster "$(cat "$RUN_DIR/join-token")" --name "$NODE_NAME" --address "$NODE_IP" \
      --file "$2" --timeout 10m </dev/null >"$RUN_DIR/join.out" 2>&1; then
      cat "$RUN_DIR/join.out" >>"$LOG"
      log "joined through $peer_id ($peer_ip)"
      return 0
    fi
    cat "$RUN_DIR/join.out" >>"$LOG"
    # k8sd's words when THIS node's services do not start (k8s-snap release-1.34 src/k8s/pkg/k8sd/app/
    # hooks_bootstrap.go:284 "failed to start worker services", hooks_join.go:415 "failed to start
    # services", cluster_util.go:31 "failed to start control plane services"): a broken runtime hook,
    # a missing binary. Another peer or token cannot fix the node itself, and each attempt spends a
    # fresh single-use token: stop at this first clear sign.
    local local_failure
    local_failure=$(grep -m1 -oE 'failed to start (worker |control plane )?services.{0,200}' "$RUN_DIR/join.out" || true)
    [ -z "$local_failure" ] || die "this node's own services do not start (k8sd: $local_failure): a new join token cannot fix that"
    log "join through $peer_id ($peer_ip) failed (see $LOG): retrying with a new token"
  done <"$RUN_DIR/peers"
  return 1
}

# join_cluster WORKER: a control plane joins with its extra SAN appended (api_sans).
join_cluster() {
  local config=$RUN_DIR/join.yaml
  [ "$1" != true ] || config=$CONFIG_DIR/join.yaml
  log "joining cluster $CK8S_CLUSTER as $NODE_NAME ($NODE_IP)"
  retry "$JOIN_ATTEMPTS" "join cluster $CK8S_CLUSTER" join_once "$1" "$config" ||
    die "could not join cluster $CK8S_CLUSTER after $JOIN_ATTEMPTS attempts (see $LOG)"
}

bootstrap_cluster() {
  fetch_secret "$CK8S_PKI_SECRET_ID" "$RUN_DIR/ca-keys.yaml"
  cat "$CONFIG_DIR/bootstrap.yaml" "$RUN_DIR/ca-keys.yaml" "$RUN_DIR/extra-sans.yaml" >"$RUN_DIR/bootstrap.yaml"
  log "bootstrapping cluster $CK8S_CLUSTER on $NODE_NAME ($NODE_IP)"
  quiet k8s bootstrap --file "$RUN_DIR/bootstrap.yaml" --name "$NODE_NAME" --address "$NODE_IP" --timeout 10m ||
    die "k8s bootstrap failed (see $LOG); replace this instance rather than retrying in place"
  rm -f "$RUN_DIR/bootstrap.yaml" "$RUN_DIR/ca-keys.yaml"
}

become_member() {
  case "$CK8S_ROLE" in
  bootstrap)
    # Never bootstrap blind: a second cluster behind the same load balancer is worse than none.
    retry 8 "list control planes" discover || die "cannot list control planes: refusing to bootstrap blind"
    if [ -s "$RUN_DIR/peers.older" ]; then
      local running
      running=$(cut -d' ' -f1 "$RUN_DIR/peers.older" | tr '\n' ' ')
      if [ "$CK8S_PEER_JOIN" != true ]; then
        die "control plane ${running}of single-control-plane cluster $CK8S_CLUSTER still runs: a replacement would leave a 2-member etcd that loses quorum when the old instance goes (see docs/adr/0011)"
      fi
      log "control planes ${running}are running: this is a replacement, joining them instead of bootstrapping"
      join_cluster false
      return
    fi
    bootstrap_cluster
    ;;
  control-plane) join_cluster false ;;
  worker) join_cluster true ;;
  *) die "unknown role '$CK8S_ROLE'" ;;
  esac
}

# Control planes: wait for the cluster, then (re-)register the join auth token. Idempotent; the
# token is cluster-wide, so a replaced control plane also picks up a rotated secret.
finish_control_plane() {
  retry 10 "wait for the cluster" quiet k8s status --wait-ready --timeout 2m || die "the cluster did not become ready"
  retry 8 "register the join auth token" quiet k8s x-capi set-auth-token "$(cat "$RUN_DIR/auth-token")" ||
    die "could not register the join auth token with k8sd"
}

# Workers: labels through the API with the kubelet's own credentials (the Node authorizer and
# NodeRestriction let a kubelet label its own Node outside kubernetes.io/*), with the snap's
# kubectl: `k8s kubectl` is refused on 1.34 workers. Never `--node-labels`: it replaces k8sd's
# role labels.
finish_worker() {
  local labels
  read -r -a labels <<<"$CK8S_NODE_LABELS"
  [ "${#labels[@]}" -gt 0 ] || return 0
  retry 30 "label node $NODE_NAME" quiet "$SNAP_DIR/k8s/current/bin/kubectl" --kubeconfig "$KUBE_DIR/kubelet.conf" \
    label node "$NODE_NAME" --overwrite "${labels[@]}" || die "could not label node $NODE_NAME"
}

main() {
  export PATH="$PATH:/snap/bin" HOME="${HOME:-/root}" # cloud-init may run us without HOME (aws-cli needs it)
  # The mirror timer's service: renew the credentials, never die (no boot failure, no power-off).
  if [ "${1:-}" = mirror-auth ]; then
    mirror_auth
    return
  fi
  mkdir -p "$STATE_DIR" "$RUN_DIR" "$(dirname "$LOG")"
  trap 'rm -rf "$RUN_DIR"' EXIT
  if [ -e "$STATE_DIR/done" ]; then
    log "already set up ($STATE_DIR/done): nothing to do"
    return 0
  fi
  NODE_NAME=$(cloud-init query ds.meta_data.local-hostname) || die "no instance metadata (local-hostname)"
  NODE_IP=$(cloud-init query ds.meta_data.local-ipv4) || die "no instance metadata (local-ipv4)"
  INSTANCE_ID=$(cloud-init query ds.meta_data.instance-id) || die "no instance metadata (instance-id)"
  if [ -z "$NODE_NAME" ] || [ -z "$NODE_IP" ] || [ -z "$INSTANCE_ID" ]; then
    die "empty instance metadata (local-hostname, local-ipv4, instance-id)"
  fi
  log "node $NODE_NAME ($NODE_IP, $INSTANCE_ID) of cluster $CK8S_CLUSTER, k8s $CK8S_SNAP_CHANNEL"
  install_snaps
  if [ "$CK8S_ROLE" != worker ]; then load_auth_token; fi
  [ -z "${CK8S_REGISTRY_MIRROR:-}" ] || setup_mirror
  if [ -e "$STATE_DIR/member" ] || [ -e "$KUBE_DIR/pki/ca.crt" ]; then
    log "already a cluster member: not bootstrapping or joining again"
  else
    if [ "$CK8S_ROLE" != worker ]; then
      retry 20 "look up API load balancer $CK8S_API_LB_NAME" api_sans ||
        die "no DNS name for API load balancer $CK8S_API_LB_NAME (see $LOG)"
    fi
    [ -z "${CK8S_IMAGES_PRELOADED:-}" ] || preload_images
    [ -z "${CK8S_HOST_TOOLKIT:-}" ] || host_toolkit
    become_member
    [ -z "${CK8S_IMAGES_PRELOADED:-}" ] || wait_sideload
    touch "$STATE_DIR/member"
  fi
  if [ "$CK8S_ROLE" = worker ]; then finish_worker; else finish_control_plane; fi
  touch "$STATE_DIR/done"
  log "done"
}

main "$@"
