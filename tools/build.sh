#!/usr/bin/env bash
# Build the pinned tool binaries (Pulumi CLI, Kubernetes provider plugin, Kubernetes control
# plane, etcd, KWOK, controller-gen and the Prometheus Operator CRDs it generates) ONCE into a
# cache outside the checkout, keyed by the pinned versions.
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
pulumi_yaml_version=v1.25.0      # github.com/pulumi/pulumi-yaml (tools/mod/pulumi-yaml); goreleaser sets the tag
actionlint_version=1.7.12        # github.com/rhysd/actionlint (tools/mod/actionlint); goreleaser sets {{.Version}}
sdkgen_version=3.274.1-ck8s.1     # ours: tools/mod/sdkgen (GeneratePackage only) on pulumi pkg/v3 v3.274.1
containerd_version=v2.2.9
# The proxy's .info carries no commit for v2.2.9: the module's go.sum hash names the exact source.
containerd_revision=h1:ddw9THGOXhcKnHORjkKoXtazPjwtcPwmqk8AVyRpfZw=
containerd_pkg=github.com/containerd/containerd/v2
containerd_ldflags="-X $containerd_pkg/version.Version=$containerd_version -X $containerd_pkg/version.Revision=$containerd_revision -X $containerd_pkg/version.Package=$containerd_pkg"
# containerd's Makefile: a static build adds these tags; the shim always has no_grpc (ttrpc only).
containerd_tags="urfave_cli_no_docs osusergo netgo static_build"
# The NVIDIA Container Toolkit (tools/mod/nvidia-container-toolkit): the version the GPU node image
# carries (components/tables/pins.py NVIDIA_CONTAINER_TOOLKIT). Its Makefile's flags: the version in
# internal/info, and cgo with NVML's symbols left for dlopen (EXTLDFLAGS): go-nvml and internal/cuda
# are cgo only.
ctk_version=1.20.0
keda_version=2.21.1              # github.com/kedacore/keda/v2 (tools/mod/keda); its Makefile's VERSION
prometheus_operator_version=0.93.1  # github.com/prometheus-operator/prometheus-operator (tools/mod/prometheus-operator); its VERSION file
prometheus_version=3.16.0        # github.com/prometheus/prometheus v0.316.0 (tools/mod/prometheus)
traefik_version=v3.7.13          # github.com/traefik/traefik/v3 (tools/mod/traefik); pins.TRAEFIK
traefik_codename=langres         # its .github/workflows/release.yaml CODENAME for v3.7
ctk_info=github.com/NVIDIA/nvidia-container-toolkit/internal/info
ctk_ldflags="-X $ctk_info.version=$ctk_version '-extldflags=-Wl,--export-dynamic -Wl,--unresolved-symbols=ignore-in-object-files -Wl,-z,lazy'"

# name|module dir|package|ldflags[|build tags[|cgo]] (in build order: cheapest first); `cgo` builds
# with CGO_ENABLED=1 (everything else is static, CGO_ENABLED=0)
targets=(
  "etcd|etcd|go.etcd.io/etcd/server/v3|"
  "kwok|kwok|sigs.k8s.io/kwok/cmd/kwok|"
  "kwokctl|kwok|sigs.k8s.io/kwok/cmd/kwokctl|"
  # The workflow linter (tests/integration/test_actionlint.py), flags as its .goreleaser.yaml.
  "actionlint|actionlint|github.com/rhysd/actionlint/cmd/actionlint|-X github.com/rhysd/actionlint.version=$actionlint_version"
  "kube-scheduler|kubernetes|k8s.io/kubernetes/cmd/kube-scheduler|K8S"
  "kube-controller-manager|kubernetes|k8s.io/kubernetes/cmd/kube-controller-manager|K8S"
  "kube-apiserver|kubernetes|k8s.io/kubernetes/cmd/kube-apiserver|K8S"
  "kubectl|kubernetes|k8s.io/kubernetes/cmd/kubectl|K8S"
  # The node tier (tools/nodetier.py): a real kubelet, containerd and our simulated GPU driver.
  "kubelet|kubernetes|k8s.io/kubernetes/cmd/kubelet|K8S"
  "containerd|containerd|$containerd_pkg/cmd/containerd|$containerd_ldflags|$containerd_tags"
  "containerd-shim-runc-v2|containerd|$containerd_pkg/cmd/containerd-shim-runc-v2|$containerd_ldflags|$containerd_tags no_grpc"
  "ctr|containerd|$containerd_pkg/cmd/ctr|$containerd_ldflags|$containerd_tags"
  "ck8s-gpu-kubelet-plugin|simgpu|ck8s-gpu.local/tools/simgpu/cmd/ck8s-gpu-kubelet-plugin|"
  "ck8s-sim-nvidia-smi|simgpu|ck8s-gpu.local/tools/simgpu/cmd/nvidia-smi|"
  "ck8s-sim-compute-domain|simgpu|ck8s-gpu.local/tools/simgpu/cmd/ck8s-sim-compute-domain|"
  "ck8s-sim-dcgm-exporter|simgpu|ck8s-gpu.local/tools/simgpu/cmd/ck8s-sim-dcgm-exporter|"
  # The smoke test's `inference` case: the model-server stand-in the probe image carries.
  "ck8s-model-server|simgpu|ck8s-gpu.local/tools/simgpu/cmd/ck8s-model-server|"
  # Our gang gate (issue 41): lifts the scheduling gate from a KAI gang's pods all at once, only when
  # the Karpenter NodePools can hold the whole gang (tests/integration/test_karpenter_local.py).
  "ck8s-gang-gate|ganggate|ck8s-gpu.local/tools/ganggate/cmd/ck8s-gang-gate|"
  # The node tier's GPU runtimes: the node script's nvidia-ctk chain and the three handlers the GPU
  # Operator's RuntimeClasses name (tests/integration/test_node_tier.py).
  "nvidia-ctk|nvidia-container-toolkit|github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-ctk|$ctk_ldflags||cgo"
  "nvidia-container-runtime|nvidia-container-toolkit|github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-container-runtime|$ctk_ldflags||cgo"
  "nvidia-container-runtime.cdi|nvidia-container-toolkit|github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-container-runtime.cdi|$ctk_ldflags||cgo"
  "nvidia-container-runtime.legacy|nvidia-container-toolkit|github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-container-runtime.legacy|$ctk_ldflags||cgo"
  # legacy mode adds this prestart hook to every container (internal/modifier/stable.go); it exits at
  # once for a container that asks for no GPU (cmd/nvidia-container-runtime-hook doPrestart)
  "nvidia-container-runtime-hook|nvidia-container-toolkit|github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-container-runtime-hook|$ctk_ldflags||cgo"
  "pulumi|pulumi|github.com/pulumi/pulumi/pkg/v3/cmd/pulumi|-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$pulumi_version"
  "pulumi-language-python|langhost|ck8s-gpu.local/tools/langhost|-X main.version=$langhost_version"
  # After the CLI: the YAML host shares its third-party dependency versions (Go build cache).
  "pulumi-language-yaml|pulumi-yaml|github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml|-X github.com/pulumi/pulumi-yaml/pkg/version.Version=$pulumi_yaml_version"
  # `pulumi package gen-sdk` asks the language's host to generate; upstream's nodejs and Go hosts are
  # refused by the proxy (403), so ours serve GeneratePackage from pkg/v3/codegen (tests/integration/test_provider_sdks.py).
  "pulumi-language-nodejs|sdkgen|ck8s-gpu.local/tools/sdkgen/cmd/pulumi-language-nodejs|-X ck8s-gpu.local/tools/sdkgen/host.version=$sdkgen_version"
  "pulumi-language-go|sdkgen|ck8s-gpu.local/tools/sdkgen/cmd/pulumi-language-go|-X ck8s-gpu.local/tools/sdkgen/host.version=$sdkgen_version"
  "pulumi-resource-kubernetes|pulumi-kubernetes|STAGED|-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$k8s_provider_build"
  "controller-gen|monitoring-crds|sigs.k8s.io/controller-tools/cmd/controller-gen|"
  # The autoscaler's CI scenarios (tests/integration/test_karpenter_local.py): Karpenter core with its
  # KWOK provider and the AWS provider's DRA device model (tools/mod/karpenter; its go.mod names the
  # toolchain it needs).
  "ck8s-karpenter-kwok|karpenter|ck8s-gpu.local/tools/karpenter/cmd/ck8s-karpenter-kwok|"
  # The AI operator's CI scenario (tests/integration/test_kuberay_local.py): KubeRay's ray-operator
  # main package, as its Dockerfile builds /manager (its version is a constant, no ldflags).
  "ray-operator|kuberay|github.com/ray-project/kuberay/ray-operator|"
  # Pod autoscaling on AI metrics (tests/integration/test_keda_local.py, ADR 0051): KEDA's operator
  # and metrics adapter, flags as its Makefile (version in ldflags, CGO off), and the Prometheus its
  # prometheus scaler queries, flags as its .promu.yml (headless: no `builtinassets`).
  "keda|keda|github.com/kedacore/keda/v2/cmd/operator|-X=github.com/kedacore/keda/v2/version.Version=$keda_version -X=github.com/kedacore/keda/v2/version.GitCommit=$keda_version"
  "keda-adapter|keda|github.com/kedacore/keda/v2/cmd/adapter|-X=github.com/kedacore/keda/v2/version.Version=$keda_version -X=github.com/kedacore/keda/v2/version.GitCommit=$keda_version"
  # Workload metrics discovered (tests/integration/test_keda_local.py): the Prometheus Operator
  # kube-prometheus-stack runs, flags as its Makefile (VERSION in common/version: the default
  # config-reloader tag is built from it, pkg/operator/defaults.go).
  "prometheus-operator|prometheus-operator|github.com/prometheus-operator/prometheus-operator/cmd/operator|-X github.com/prometheus/common/version.Version=$prometheus_operator_version -X github.com/prometheus/common/version.Revision=v$prometheus_operator_version -X github.com/prometheus/common/version.Branch=HEAD"
  "prometheus|prometheus|github.com/prometheus/prometheus/cmd/prometheus|-X github.com/prometheus/common/version.Version=$prometheus_version -X github.com/prometheus/common/version.Revision=v0.316.0 -X github.com/prometheus/common/version.Branch=HEAD|netgo"
  # The inference gateway (tests/integration/test_inference_gateway_local.py, ADR 0052): Traefik's
  # proxy with its Gateway API provider, flags as its Makefile `binary` target (CGO off, -s -w,
  # version and codename; no build date, so the build is reproducible).
  "traefik|traefik|github.com/traefik/traefik/v3/cmd/traefik|-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$traefik_version -X github.com/traefik/traefik/v3/pkg/version.Codename=$traefik_codename"
)

# Not a binary: the Prometheus Operator CRDs (ServiceMonitor, PrometheusRule) generated by the
# controller-gen above from the monitoring.coreos.com Go types, exactly as prometheus-operator
# generates them (its Makefile `generate-crds`); the add-on upgrade test creates them in the
# local cluster (tools/README.md).
crd_package=github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1
crd_files=(monitoring.coreos.com_servicemonitors.yaml monitoring.coreos.com_prometheusrules.yaml)

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
    # go.mod, go.sum and, for our own modules (langhost, sdkgen, simgpu, ganggate), their sources and
    # tests: editing one rebuilds that module only
    find "$mods/$dir" -type f | LC_ALL=C sort | xargs cat
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

write_env() {
  mkdir -p "$root"
  cat >"$root/.env.sh.$$" <<EOF
# Generated by tools/build.sh: source this to use the cached tools.
export PATH="$bin:\$PATH"
export PULUMI_HOME="$pulumi_home"
export PULUMI_SKIP_UPDATE_CHECK=true
# the provider binary is also in bin/ (on PATH): use the installed plugin, without a warning
export PULUMI_IGNORE_AMBIENT_PLUGINS=true
export CK8S_GPU_TOOLS_BIN="$bin"
EOF
  mv -f "$root/.env.sh.$$" "$root/env.sh"
  write_dynamic_provider
}

# The engine starts Python dynamic providers as the plugin `pulumi-resource-pulumi-python`, a
# script shipped in the CLI's release archives, not built from Go. Ours resolves the interpreter
# at run time (the cache is shared by checkouts and virtualenvs): the engine passes the project's
# runtime option `virtualenv` as PULUMI_RUNTIME_VIRTUALENV (relative to the project dir, the
# plugin's cwd); else PULUMI_PYTHON_CMD (what our language host also honours); else python3.
write_dynamic_provider() {
  mkdir -p "$bin"
  cat >"$bin/.pulumi-resource-pulumi-python.$$" <<'SH'
#!/bin/sh
# Generated by tools/build.sh: Pulumi's Python dynamic provider host.
venv=${PULUMI_RUNTIME_VIRTUALENV:-}
if [ -n "$venv" ]; then
  case $venv in /*) ;; *) venv=$PWD/$venv ;; esac
  if [ ! -x "$venv/bin/python" ]; then
    echo "pulumi-resource-pulumi-python: no Python virtualenv at $venv (Pulumi.yaml runtime option virtualenv)" >&2
    exit 1
  fi
  exec "$venv/bin/python" -u -m pulumi.dynamic "$@"
fi
exec "${PULUMI_PYTHON_CMD:-python3}" -u -m pulumi.dynamic "$@"
SH
  chmod 755 "$bin/.pulumi-resource-pulumi-python.$$"
  mv -f "$bin/.pulumi-resource-pulumi-python.$$" "$bin/pulumi-resource-pulumi-python"
}

# Not binaries either: CRDs at the pins, copied from the modules the wrappers build, for the CI
# scenarios that run those controllers. "<wrapper dir> <module> <path in the module>", copied to
# crds/<wrapper dir>/ (the dir's binary is wanted -> its CRDs are):
# - karpenter: core's NodePool, NodeClaim, NodeOverlay, CapacityBuffer and the KWOK provider's
#   KWOKNodeClass (tests/integration/test_karpenter_local.py), and the AWS provider's EC2NodeClass,
#   whose CEL rules judge the classes components/aws/karpenter.py renders;
# - kuberay: the three ray.io CRDs; ray-operator's manager watches all three kinds at start
#   (ray-operator main.go), so a cluster without one of them stops it.
module_crds=(
  "karpenter sigs.k8s.io/karpenter kwok/charts/crds/karpenter.sh_nodepools.yaml"
  "karpenter sigs.k8s.io/karpenter kwok/charts/crds/karpenter.sh_nodeclaims.yaml"
  "karpenter sigs.k8s.io/karpenter kwok/charts/crds/karpenter.sh_nodeoverlays.yaml"
  "karpenter sigs.k8s.io/karpenter kwok/charts/crds/autoscaling.x-k8s.io_capacitybuffers.yaml"
  "karpenter sigs.k8s.io/karpenter kwok/apis/crds/karpenter.kwok.sh_kwoknodeclasses.yaml"
  "karpenter github.com/aws/karpenter-provider-aws pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml"
  "kuberay github.com/ray-project/kuberay/ray-operator config/crd/bases/ray.io_rayclusters.yaml"
  "kuberay github.com/ray-project/kuberay/ray-operator config/crd/bases/ray.io_rayjobs.yaml"
  "kuberay github.com/ray-project/kuberay/ray-operator config/crd/bases/ray.io_rayservices.yaml"
  "keda github.com/kedacore/keda/v2 config/crd/bases/keda.sh_scaledobjects.yaml"
  "keda github.com/kedacore/keda/v2 config/crd/bases/keda.sh_scaledjobs.yaml"
  "keda github.com/kedacore/keda/v2 config/crd/bases/keda.sh_triggerauthentications.yaml"
  "keda github.com/kedacore/keda/v2 config/crd/bases/keda.sh_clustertriggerauthentications.yaml"
  # The operator also watches CloudEventSources: without their CRDs its cache never syncs and the
  # manager exits about two minutes after start ("failed to wait for cloudeventsource caches to
  # sync", cmd/operator/main.go); the chart installs every file of config/crd/bases.
  "keda github.com/kedacore/keda/v2 config/crd/bases/eventing.keda.sh_cloudeventsources.yaml"
  "keda github.com/kedacore/keda/v2 config/crd/bases/eventing.keda.sh_clustercloudeventsources.yaml"
  # - traefik: the Gateway API standard channel at the version Traefik builds against, every file
  #   its release's standard-install.yaml is made of (config/crd/kustomization.yaml at v1.6.1).
  "traefik sigs.k8s.io/gateway-api config/crd/standard/gateway.networking.k8s.io_gatewayclasses.yaml"
  "traefik sigs.k8s.io/gateway-api config/crd/standard/gateway.networking.k8s.io_gateways.yaml"
  "traefik sigs.k8s.io/gateway-api config/crd/standard/gateway.networking.k8s.io_grpcroutes.yaml"
  "traefik sigs.k8s.io/gateway-api config/crd/standard/gateway.networking.k8s.io_httproutes.yaml"
  "traefik sigs.k8s.io/gateway-api config/crd/standard/gateway.networking.k8s.io_referencegrants.yaml"
  "traefik sigs.k8s.io/gateway-api config/crd/standard/gateway.networking.k8s.io_backendtlspolicies.yaml"
  "traefik sigs.k8s.io/gateway-api config/crd/standard/gateway.networking.k8s.io_listenersets.yaml"
  "traefik sigs.k8s.io/gateway-api config/crd/standard/gateway.networking.k8s.io_tcproutes.yaml"
  "traefik sigs.k8s.io/gateway-api config/crd/standard/gateway.networking.k8s.io_tlsroutes.yaml"
  "traefik sigs.k8s.io/gateway-api config/crd/standard/gateway.networking.k8s.io_udproutes.yaml"
  "traefik sigs.k8s.io/gateway-api config/crd/standard/gateway.networking.k8s.io_vap_safeupgrades.yaml"
)
# The CRD entries whose wrapper builds a wanted binary and whose file is not in the cache yet.
missing_module_crds() {
  local e dir f
  for e in "${module_crds[@]}"; do
    read -r dir _ f <<<"$e"
    [[ " ${wanted[*]} " == *"|$dir|"* ]] || continue
    [[ -s "$root/crds/$dir/${f##*/}" ]] || echo "$e"
  done
}

crd_dir="$root/crds/monitoring.coreos.com"
crds_ok() { local f; for f in "${crd_files[@]}"; do [[ -s "$crd_dir/$f" ]] || return 1; done; }

# ---- fast path: everything present ----------------------------------------------------------
missing=()
for t in "${wanted[@]}"; do
  name=${t%%|*}
  [[ -x "$bin/$name" ]] || missing+=("$name")
done
needs_plugin=0
if [[ " ${wanted[*]} " == *"pulumi-resource-kubernetes|"* ]] && ! plugin_ok; then needs_plugin=1; fi
needs_crds=0
if [[ " ${wanted[*]} " == *"controller-gen|"* ]] && ! crds_ok; then needs_crds=1; fi
mapfile -t crds_missing < <(missing_module_crds)
if [[ ${#missing[@]} -eq 0 && $needs_plugin -eq 0 && $needs_crds -eq 0 && ${#crds_missing[@]} -eq 0 ]]; then
  log "cached: $root (all ${#wanted[@]} binaries present)"
  write_env
  echo "$bin"
  exit 0
fi

# ---- cold path -------------------------------------------------------------------------------
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
[[ -x "$GO" ]] || { log "no Go toolchain (looked for 'go' on PATH and /usr/local/go/bin/go)"; exit 2; }
export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0
mkdir -p "$bin" "$pulumi_home"
# One builder at a time per cache (a second caller waits, then finds the binaries built).
if command -v flock >/dev/null; then
  exec 9>"$cache/.build.lock"
  flock 9
fi
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
  IFS='|' read -r name dir pkg flags tags cgo <<<"$t"
  [[ -x "$bin/$name" ]] && continue
  out=$(builddir "$dir")
  mkdir -p "$out"
  if [[ ! -x "$out/$name" ]]; then
    [[ "$flags" == K8S ]] && flags=$(k8s_ldflags)
    log "building $name ($pkg) ..."
    start=$(date +%s)
    src="$mods/$dir"
    if [[ "$pkg" == STAGED ]]; then src=$(stage_provider "$dir" "$out") || { failed+=("$name"); continue; }; pkg=.; fi
    # A wrapper whose go.mod names a `toolchain` builds with that one; one whose `go` line is newer
    # than the local Go (`tidy` drops a toolchain line equal to it) with that release (`auto`): Go
    # fetches it from the module proxy once, checked against the checksum database (go.dev/doc/toolchain).
    toolchain=$(sed -n 's/^toolchain \(go[0-9.]*\)$/\1/p' "$mods/$dir/go.mod")
    [[ -n "$toolchain" ]] || toolchain=auto
    if (cd "$src" && GOTOOLCHAIN=${toolchain:-local} CGO_ENABLED=$([[ "$cgo" == cgo ]] && echo 1 || echo 0) "$GO" build -trimpath -tags "$tags" -ldflags "-s -w $flags" -o "$out/.$name.partial" "$pkg") \
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

# The CRDs, generated once per monitoring-crds module key (the Go types come from the module
# cache through the wrapper's go.mod; controller-gen runs `go list`, so Go must be on PATH).
if [[ -x "$bin/controller-gen" ]] && [[ " ${wanted[*]} " == *"controller-gen|"* ]] && ! crds_ok; then
  gen="$(builddir monitoring-crds)/crds"
  if [[ ! -s "$gen/${crd_files[0]}" ]]; then
    log "generating monitoring.coreos.com CRDs from $crd_package ..."
    rm -rf "$gen.partial" && mkdir -p "$gen.partial"
    if (cd "$mods/monitoring-crds" && PATH="$(dirname "$GO"):$PATH" "$bin/controller-gen" crd:crdVersions=v1 \
          "paths=$crd_package" "output:crd:dir=$gen.partial") >"$gen.log" 2>&1; then
      rm -rf "$gen" && mv "$gen.partial" "$gen"
    else
      log "FAILED generating CRDs; last lines of $gen.log:"; tail -n 15 "$gen.log" >&2 || true
      failed+=("monitoring-crds")
    fi
  fi
  if [[ -d "$gen" ]]; then
    mkdir -p "$crd_dir"
    for f in "${crd_files[@]}"; do cp -f "$gen/$f" "$crd_dir/$f" || failed+=("$f"); done
  fi
fi

for entry in "${crds_missing[@]}"; do
  read -r dir module f <<<"$entry"
  mkdir -p "$root/crds/$dir"
  moddir=$(cd "$mods/$dir" && GOTOOLCHAIN=$(sed -n 's/^toolchain \(go[0-9.]*\)$/\1/p' go.mod | grep . || echo auto) \
    "$GO" mod download -json "$module" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  cp -f "$moddir/$f" "$root/crds/$dir/" || failed+=("$dir CRD $module/$f")
done

write_env

if [[ ${#failed[@]} -gt 0 ]]; then
  log "FAILED: ${failed[*]} (logs: $cache/build/*/build-<binary>.log)"
  exit 1
fi
echo "$bin"
