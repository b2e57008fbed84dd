#!/usr/bin/env bash
# Build the pinned tool binaries (Pulumi CLI, Kubernetes provider plugin, Kubernetes control
# plane, etcd, KWOK) ONCE into a cache outside the checkout, keyed by the pinned versions.
#
#   bash tools/build.sh            # build what is missing, or just verify (fast when cached)
#   bash tools/build.sh --print    # only print the bin dir of the current key (no build, no check)
#
# Later runs with the same tools/mod/*/go.{mod,sum} only check that the binaries exist and exit
# in well under a second. The LAST line of stdout is the bin dir; progress goes to stderr.
# Callers then export (see tools/README.md):
#   PATH=<bin>:$PATH PULUMI_HOME=<bin>/../pulumi-home PULUMI_SKIP_UPDATE_CHECK=true
#   (or simply: source <bin>/../env.sh)
#
# Environment:
#   CK8S_GPU_CACHE   cache root (default $HOME/.cache/ck8s-gpu); binaries in $CK8S_GPU_CACHE/tools/<key>/bin
#   CK8S_GPU_TOOLS   space-separated subset of binaries to build (default: all); for debugging
#   GO               go command (default: `go` on PATH, else /usr/local/go/bin/go)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mods="$here/mod"

# Bump when the build recipe below changes in a way that must rebuild (flags, versions in ldflags).
recipe=1

# Versions reported by the binaries (must agree with tools/mod/*/go.mod; see tools/README.md).
pulumi_version=v3.274.1
k8s_provider_version=4.34.2        # name the plugin is installed under (what pulumi-kubernetes==4.34.2 asks for)
k8s_provider_build=4.0.0-20260115033456-f47bc2d6f199  # what the built code really is (its module pseudo-version)
kube_version=v1.34.4
langhost_version=3.274.1-ck8s.1   # our own host (tools/mod/langhost), built on pulumi sdk/v3 v3.274.1

# name|module dir|package|ldflags (in build order: cheapest first)
targets=(
  "etcd|etcd|go.etcd.io/etcd/server/v3|"
  "kwok|kwok|sigs.k8s.io/kwok/cmd/kwok|"
  "kwokctl|kwok|sigs.k8s.io/kwok/cmd/kwokctl|"
  "kube-scheduler|kubernetes|k8s.io/kubernetes/cmd/kube-scheduler|K8S"
  "kube-controller-manager|kubernetes|k8s.io/kubernetes/cmd/kube-controller-manager|K8S"
  "kube-apiserver|kubernetes|k8s.io/kubernetes/cmd/kube-apiserver|K8S"
  "kubectl|kubernetes|k8s.io/kubernetes/cmd/kubectl|K8S"
  "pulumi|pulumi|github.com/pulumi/pulumi/pkg/v3/cmd/pulumi|-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$pulumi_version"
  "pulumi-language-python|langhost|ck8s-gpu.local/tools/langhost|-X main.version=$langhost_version"
  "pulumi-resource-kubernetes|pulumi-kubernetes|STAGED|-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$k8s_provider_build"
)

k8s_ldflags() {
  local minor=${kube_version#v1.}; minor=${minor%%.*}
  local v
  for v in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    printf -- '-X %s.gitVersion=%s -X %s.gitMajor=1 -X %s.gitMinor=%s -X %s.gitTreeState=clean -X %s.buildDate=1970-01-01T00:00:00Z ' \
      "$v" "$kube_version" "$v" "$v" "$minor" "$v" "$v"
  done
}

log() { printf '[tools/build.sh] %s\n' "$*" >&2; }

# Each wrapper module is built into its own dir keyed by a hash of its go.mod, go.sum, the recipe
# number and its targets' lines (package + version ldflags), so a version bump rebuilds only the
# module that changed. The bin dir of the whole set (key = hash of all module keys) holds hard
# links (or copies) to those binaries, so callers see ONE directory.
cache="${CK8S_GPU_CACHE:-$HOME/.cache/ck8s-gpu}/tools"
mod_key() {
  local dir=$1 t
  {
    echo "recipe=$recipe"
    # go.mod, go.sum and, for our own langhost module, its sources
    find "$mods/$dir" -maxdepth 1 -type f | LC_ALL=C sort | xargs cat
    for t in "${targets[@]}"; do if [[ "$t" == *"|$dir|"* ]]; then echo "$t"; fi; done
    if [[ "$dir" == kubernetes ]]; then k8s_ldflags; fi
  } | sha256sum | cut -c1-16
}
declare -A modkey
for t in "${targets[@]}"; do
  IFS='|' read -r _ dir _ _ <<<"$t"
  for f in go.mod go.sum; do
    [[ -f "$mods/$dir/$f" ]] || { log "missing $mods/$dir/$f (run: cd tools/mod/$dir && go mod tidy)"; exit 2; }
  done
done
for t in "${targets[@]}"; do
  IFS='|' read -r _ dir _ _ <<<"$t"
  [[ -n "${modkey[$dir]:-}" ]] || modkey[$dir]=$(mod_key "$dir")
done
key=$(for d in $(printf '%s\n' "${!modkey[@]}" | sort); do echo "$d=${modkey[$d]}"; done | sha256sum | cut -c1-16)
root="$cache/$key"
bin="$root/bin"
pulumi_home="$root/pulumi-home"
builddir() { echo "$cache/build/$1-${modkey[$1]}"; }

if [[ "${1:-}" == "--print" ]]; then
  echo "$bin"
  exit 0
fi

wanted=()
for t in "${targets[@]}"; do
  name=${t%%|*}
  if [[ -z "${CK8S_GPU_TOOLS:-}" || " $CK8S_GPU_TOOLS " == *" $name "* ]]; then wanted+=("$t"); fi
done

plugin_dir="$pulumi_home/plugins/resource-kubernetes-v$k8s_provider_version"
plugin_ok() { [[ -x "$plugin_dir/pulumi-resource-kubernetes" ]]; }

# ---- fast path: everything present ----------------------------------------------------------
missing=()
for t in "${wanted[@]}"; do
  name=${t%%|*}
  [[ -x "$bin/$name" ]] || missing+=("$name")
done
needs_plugin=0
if [[ " ${wanted[*]} " == *"pulumi-resource-kubernetes|"* ]] && ! plugin_ok; then needs_plugin=1; fi
if [[ ${#missing[@]} -eq 0 && $needs_plugin -eq 0 ]]; then
  log "cached: $root (all ${#wanted[@]} binaries present)"
  echo "$bin"
  exit 0
fi

# ---- cold path -------------------------------------------------------------------------------
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
[[ -x "$GO" ]] || { log "no Go toolchain (looked for 'go' on PATH and /usr/local/go/bin/go)"; exit 2; }
export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0
mkdir -p "$bin" "$pulumi_home"
durations="$root/durations.tsv"
[[ -f "$durations" ]] || printf 'binary\tseconds\tresult\n' >"$durations"
log "key $key -> $root ($("$GO" version)); missing: ${missing[*]:-none}"

# The provider's main package embeds files made by `go generate`, absent from its module zip:
# build our own main (tools/mod/pulumi-kubernetes/main.go) in a staging copy next to those files,
# made from the schema.json / terraform-mapping.json the module ships (compact, version set).
stage_provider() {
  local dir=$1 out=$2 src="$2/src" prov
  rm -rf "$src" && mkdir -p "$src"
  cp "$mods/$dir/go.mod" "$mods/$dir/go.sum" "$mods/$dir/main.go" "$src/"
  prov=$(cd "$src" && "$GO" mod download -json github.com/pulumi/pulumi-kubernetes/provider/v4 |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -f "$prov/cmd/pulumi-resource-kubernetes/schema.json" ]] || { log "no schema.json under '$prov'"; return 1; }
  python3 - "$prov/cmd/pulumi-resource-kubernetes" "$src" "$k8s_provider_build" <<'PY' || return 1
import json, pathlib, sys
cmd, src, version = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
schema = json.loads((cmd / "schema.json").read_text())
schema["version"] = version
(src / "schema-embed.json").write_text(json.dumps(schema, separators=(",", ":")))
mapping = json.loads((cmd / "terraform-mapping.json").read_text())
(src / "terraform-mapping-embed.json").write_text(json.dumps(mapping, separators=(",", ":")))
PY
  echo "$src"
}

failed=()
total_start=$(date +%s)
for t in "${wanted[@]}"; do
  IFS='|' read -r name dir pkg flags <<<"$t"
  [[ -x "$bin/$name" ]] && continue
  out=$(builddir "$dir")
  mkdir -p "$out"
  if [[ ! -x "$out/$name" ]]; then
    [[ "$flags" == K8S ]] && flags=$(k8s_ldflags)
    log "building $name ($pkg) ..."
    start=$(date +%s)
    src="$mods/$dir"
    if [[ "$pkg" == STAGED ]]; then src=$(stage_provider "$dir" "$out") || { failed+=("$name"); continue; }; pkg=.; fi
    if (cd "$src" && "$GO" build -trimpath -ldflags "-s -w $flags" -o "$out/.$name.partial" "$pkg") \
        >"$out/build-$name.log" 2>&1; then
      mv -f "$out/.$name.partial" "$out/$name"
      secs=$(( $(date +%s) - start ))
      printf '%s\t%s\tok\n' "$name" "$secs" >>"$durations"
      log "built $name in ${secs}s"
    else
      secs=$(( $(date +%s) - start ))
      printf '%s\t%s\tFAILED\n' "$name" "$secs" >>"$durations"
      log "FAILED $name after ${secs}s; last lines of $out/build-$name.log:"
      tail -n 15 "$out/build-$name.log" >&2 || true
      rm -f "$out/.$name.partial"
      failed+=("$name")
      continue
    fi
  fi
  ln -f "$out/$name" "$bin/$name" 2>/dev/null || cp -f "$out/$name" "$bin/$name"
done
log "build phase took $(( $(date +%s) - total_start ))s"

# Install the Kubernetes provider into the cache's own PULUMI_HOME, offline, under the version
# the Python SDK pulumi-kubernetes==$k8s_provider_version requests.
if [[ -x "$bin/pulumi" && -x "$bin/pulumi-resource-kubernetes" ]] && ! plugin_ok; then
  log "installing plugin resource kubernetes v$k8s_provider_version into $pulumi_home"
  PULUMI_HOME="$pulumi_home" PULUMI_SKIP_UPDATE_CHECK=true \
    "$bin/pulumi" plugin install resource kubernetes "v$k8s_provider_version" \
    --file "$bin/pulumi-resource-kubernetes" >&2
fi

cat >"$root/env.sh" <<EOF
# Generated by tools/build.sh: source this to use the cached tools.
export PATH="$bin:\$PATH"
export PULUMI_HOME="$pulumi_home"
export PULUMI_SKIP_UPDATE_CHECK=true
export CK8S_GPU_TOOLS_BIN="$bin"
EOF

if [[ ${#failed[@]} -gt 0 ]]; then
  log "FAILED: ${failed[*]} (logs in $root/build-*.log)"
  exit 1
fi
echo "$bin"
