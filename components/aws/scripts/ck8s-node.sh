#!/bin/bash
# ck8s-gpu node setup, run once by cloud-init (rendered into user-data by components/aws/userdata.py).
#
# Installs the k8s snap, then, by CK8S_ROLE:
#   bootstrap      bootstraps the cluster with the CA keys read from Secrets Manager and registers
#                  the join auth token with k8sd; when other control planes are already running
#                  (this is a replacement of the first one) it joins them instead.
#   control-plane  joins the running control planes
#   worker         joins as a worker, then labels its own Node
# A joining node mints its own single-use join token from a control plane's k8sd
# (POST :6400/1.0/x/capi/generate-join-token with the shared auth token), so no token ever sits
# in user-data and nodes can join long after the cluster was made. See docs/adr (join design).
#
# Idempotent: a marker makes a second run (reboot, `cloud-init clean`) a no-op. Secrets live in a
# tmpfs directory removed on exit and never reach the log. CK8S_* variables override every path
# so tests run this with stand-in commands.
set -euo pipefail
umask 077

CONFIG_DIR=${CK8S_CONFIG_DIR:-/etc/ck8s-gpu}
# shellcheck source=/dev/null
. "$CONFIG_DIR/node.env"
STATE_DIR=${CK8S_STATE_DIR:-/var/lib/ck8s-gpu}
RUN_DIR=${CK8S_RUN_DIR:-/run/ck8s-gpu}
KUBE_PKI_DIR=${CK8S_KUBE_PKI_DIR:-/etc/kubernetes/pki}
LOG=${CK8S_LOG_DIR:-/var/log}/ck8s-gpu-$CK8S_ROLE.log
RETRY_BASE=${CK8S_RETRY_BASE_SECONDS:-5}
RETRY_MAX=${CK8S_RETRY_MAX_SECONDS:-60}
JOIN_ATTEMPTS=${CK8S_JOIN_ATTEMPTS:-40}
TOKEN_TTL_NS=900000000000 # minted join tokens expire after 15 minutes
NODE_NAME=
NODE_IP=

log() { printf '%s [%s] %s\n' "$(date -u +%FT%TZ)" "$CK8S_ROLE" "$*" | tee -a "$LOG" >&2; }
die() {
  log "FAILED: $*"
  exit 1
}
# Output to the log only. Never used for commands that print secrets.
quiet() { "$@" >>"$LOG" 2>&1; }

# retry ATTEMPTS WHAT COMMAND...: exponential backoff from RETRY_BASE, capped at RETRY_MAX seconds.
# COMMAND runs in a condition, where `set -e` does not apply: functions check their own steps.
retry() {
  local attempts=$1 what=$2 n=1 delay=$RETRY_BASE
  shift 2
  until "$@"; do
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

install_snaps() {
  # On first boot snapd may still be seeding: installs fail with "too early for operation".
  retry 8 "wait for snapd seeding" quiet snap wait system seed.loaded || die "snapd did not finish seeding"
  retry 8 "snap install k8s ($CK8S_SNAP_CHANNEL)" quiet snap install k8s --classic --channel="$CK8S_SNAP_CHANNEL" ||
    die "could not install the k8s snap"
  if [ "$CK8S_HOLD_SNAP_REFRESH" = true ]; then
    retry 8 "hold k8s refreshes" quiet snap refresh --hold k8s || die "could not hold k8s snap refreshes"
  fi
  if ! command -v aws >/dev/null; then
    retry 8 "snap install aws-cli" quiet snap install aws-cli --classic || die "could not install the aws-cli snap"
  fi
}

# get_secret ID FILE: the secret's value into FILE, never into the log.
get_secret() {
  aws secretsmanager get-secret-value --region "$CK8S_REGION" --secret-id "$1" \
    --query SecretString --output text >"$2" 2>>"$LOG" && [ -s "$2" ]
}
fetch_secret() {
  retry 8 "read secret $1" get_secret "$1" "$2" || die "cannot read secret $1 (check the instance role)"
}

load_auth_token() {
  fetch_secret "$CK8S_AUTH_SECRET_ID" "$RUN_DIR/auth-token"
  # A header file keeps the token out of curl's command line.
  printf 'capi-auth-token: %s\n' "$(cat "$RUN_DIR/auth-token")" >"$RUN_DIR/auth-header"
}

# discover: private IPs of this cluster's running control planes other than this node, into RUN_DIR/peers.
discover() {
  aws ec2 describe-instances --region "$CK8S_REGION" --output text \
    --filters "Name=tag:ck8s-gpu/cluster,Values=$CK8S_CLUSTER" "Name=tag:ck8s-gpu/role,Values=control-plane" \
    "Name=instance-state-name,Values=running" --query 'Reservations[].Instances[].PrivateIpAddress' \
    >"$RUN_DIR/peers.raw" 2>>"$LOG" || return 1
  tr -s '[:space:]' '\n' <"$RUN_DIR/peers.raw" | grep -E '^[0-9]+(\.[0-9]+){3}$' | grep -vxF "$NODE_IP" \
    >"$RUN_DIR/peers" || true
}

# mint_token PEER WORKER: a single-use join token named after this node, from PEER's k8sd.
mint_token() {
  printf '{"name":"%s","worker":%s,"ttl":%s}' "$NODE_NAME" "$2" "$TOKEN_TTL_NS" >"$RUN_DIR/request.json"
  # -k: k8sd's certificate is made on the first control plane, so nothing here can pin it. The
  # token it returns carries that certificate's fingerprint, which join-cluster then verifies.
  curl -sS -k --max-time 30 -X POST -H 'Content-Type: application/json' -H "@$RUN_DIR/auth-header" \
    --data "@$RUN_DIR/request.json" "https://$1:6400/1.0/x/capi/generate-join-token" \
    >"$RUN_DIR/response.json" 2>>"$LOG" || return 1
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

# join_once WORKER CONFIG: one pass over the running control planes; 0 once joined.
join_once() {
  local peer peers
  discover || {
    log "cannot list control planes"
    return 1
  }
  peers=$(cat "$RUN_DIR/peers")
  [ -n "$peers" ] || {
    log "no running control plane found yet"
    return 1
  }
  for peer in $peers; do
    if ! mint_token "$peer" "$1"; then
      log "no join token from $peer"
      continue
    fi
    if quiet k8s join-cluster "$(cat "$RUN_DIR/join-token")" --name "$NODE_NAME" --address "$NODE_IP" \
      --file "$2" --timeout 10m; then
      log "joined through $peer"
      return 0
    fi
    log "join through $peer failed (concurrent control-plane joins are refused: retrying)"
  done
  return 1
}

join_cluster() {
  log "joining cluster $CK8S_CLUSTER as $NODE_NAME ($NODE_IP)"
  retry "$JOIN_ATTEMPTS" "join cluster $CK8S_CLUSTER" join_once "$1" "$CONFIG_DIR/join.yaml" ||
    die "could not join cluster $CK8S_CLUSTER after $JOIN_ATTEMPTS attempts (see $LOG)"
}

bootstrap_cluster() {
  fetch_secret "$CK8S_PKI_SECRET_ID" "$RUN_DIR/ca-keys.yaml"
  cat "$CONFIG_DIR/bootstrap.yaml" "$RUN_DIR/ca-keys.yaml" >"$RUN_DIR/bootstrap.yaml"
  log "bootstrapping cluster $CK8S_CLUSTER on $NODE_NAME ($NODE_IP)"
  quiet k8s bootstrap --file "$RUN_DIR/bootstrap.yaml" --name "$NODE_NAME" --address "$NODE_IP" --timeout 10m ||
    die "k8s bootstrap failed (see $LOG); replace this instance rather than retrying in place"
  rm -f "$RUN_DIR/bootstrap.yaml" "$RUN_DIR/ca-keys.yaml"
}

become_member() {
  case "$CK8S_ROLE" in
  bootstrap)
    if [ "$CK8S_PEER_JOIN" = true ]; then
      retry 8 "list control planes" discover || die "cannot list control planes: refusing to bootstrap blind"
      if [ -s "$RUN_DIR/peers" ]; then
        log "control planes $(tr '\n' ' ' <"$RUN_DIR/peers")are running: joining them, not bootstrapping"
        join_cluster false
        return
      fi
    fi
    bootstrap_cluster
    ;;
  control-plane) join_cluster false ;;
  worker) join_cluster true ;;
  *) die "unknown role '$CK8S_ROLE'" ;;
  esac
}

# Control planes: wait for the API, then (re-)register the join auth token. Idempotent; the
# token is cluster-wide, so a replaced control plane also picks up a rotated secret.
finish_control_plane() {
  retry 10 "wait for the cluster" quiet k8s status --wait-ready --timeout 2m || die "the cluster did not become ready"
  retry 8 "register the join auth token" quiet k8s x-capi set-auth-token "$(cat "$RUN_DIR/auth-token")" ||
    die "could not register the join auth token with k8sd"
}

# Workers: labels through the API with the kubelet's own credentials (NodeRestriction lets a
# kubelet label its Node outside kubernetes.io/*); never `--node-labels`, which would replace
# k8sd's role labels.
finish_worker() {
  local labels
  read -r -a labels <<<"$CK8S_NODE_LABELS"
  [ "${#labels[@]}" -gt 0 ] || return 0
  retry 30 "label node $NODE_NAME" quiet k8s kubectl label node "$NODE_NAME" --overwrite "${labels[@]}" ||
    die "could not label node $NODE_NAME"
}

main() {
  export PATH="$PATH:/snap/bin" HOME="${HOME:-/root}" # cloud-init may run us without HOME (aws-cli needs it)
  mkdir -p "$STATE_DIR" "$RUN_DIR" "$(dirname "$LOG")"
  trap 'rm -rf "$RUN_DIR"' EXIT
  if [ -e "$STATE_DIR/done" ]; then
    log "already set up ($STATE_DIR/done): nothing to do"
    return 0
  fi
  NODE_NAME=$(cloud-init query ds.meta_data.local-hostname) || die "no instance metadata (local-hostname)"
  NODE_IP=$(cloud-init query ds.meta_data.local-ipv4) || die "no instance metadata (local-ipv4)"
  if [ -z "$NODE_NAME" ] || [ -z "$NODE_IP" ]; then die "empty instance metadata (local-hostname, local-ipv4)"; fi
  log "node $NODE_NAME ($NODE_IP) of cluster $CK8S_CLUSTER, k8s $CK8S_SNAP_CHANNEL"
  install_snaps
  load_auth_token
  if [ -e "$STATE_DIR/member" ] || [ -e "$KUBE_PKI_DIR/ca.crt" ]; then
    log "already a cluster member: not bootstrapping or joining again"
  else
    become_member
    touch "$STATE_DIR/member"
  fi
  if [ "$CK8S_ROLE" = worker ]; then finish_worker; else finish_control_plane; fi
  touch "$STATE_DIR/done"
  log "done"
}

main "$@"
