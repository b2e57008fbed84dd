{{/* Object name prefix: the release name, short enough for "<prefix>-shared-<runId>-xxxxx" pod names. */}}
{{- define "gpu-smoke-test.prefix" -}}
{{- .Release.Name | trunc 30 | trimSuffix "-" -}}
{{- end -}}

{{- define "gpu-smoke-test.name" -}}
{{- $root := index . 0 -}}
{{- printf "%s-%s-%s" (include "gpu-smoke-test.prefix" $root) (index . 1) $root.Values.runId -}}
{{- end -}}

{{- define "gpu-smoke-test.labels" -}}
app.kubernetes.io/name: gpu-smoke-test
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
ck8s-gpu.io/smoke-run: {{ .Values.runId | quote }}
{{- end -}}

{{/*
Labels KAI reads from the Job (podgrouper) and the pods: the queue, and non-preemptible: without a
priority class KAI gives a Job priority 50 ("train"), which any workload of priority >= 100 may
preempt mid-run (KAI v0.17.0 pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go
reads kai.scheduler/preemptibility from the owner, then the pod). A label, not a priority class:
the class names are the KAI chart's, and a pod naming a missing class is refused at admission.
*/}}
{{- define "gpu-smoke-test.queueLabel" -}}
{{- if eq .Values.scheduler.name "kai-scheduler" -}}
kai.scheduler/queue: {{ .Values.scheduler.queue | quote }}
kai.scheduler/preemptibility: non-preemptible
{{- end -}}
{{- end -}}

{{- define "gpu-smoke-test.image" -}}
{{- include "gpu-smoke-test.imageRef" .Values.image -}}
{{- end -}}

{{/* An image reference from an image value (registry, repository, tag, digest). */}}
{{- define "gpu-smoke-test.imageRef" -}}
{{- $i := . -}}
{{- $ref := ternary $i.repository (printf "%s/%s" $i.registry $i.repository) (empty $i.registry) -}}
{{- if $i.digest -}}
{{- printf "%s:%s@%s" $ref $i.tag $i.digest -}}
{{- else -}}
{{- printf "%s:%s" $ref $i.tag -}}
{{- end -}}
{{- end -}}

{{/* CEL string literal: single-quoted, backslashes and quotes escaped. */}}
{{- define "gpu-smoke-test.celString" -}}
{{- printf "'%s'" (. | replace "\\" "\\\\" | replace "'" "\\'") -}}
{{- end -}}

{{/* Device selectors of the GPU claim template (a YAML list, possibly empty). */}}
{{- define "gpu-smoke-test.gpuSelectors" -}}
{{- $s := .Values.selectors -}}
{{- $d := include "gpu-smoke-test.celString" .Values.attributeDomain -}}
{{- if $s.productNamePattern }}
- cel:
    expression: {{ printf "device.attributes[%s].productName.matches(%s)" $d (include "gpu-smoke-test.celString" $s.productNamePattern) | quote }}
{{- end }}
{{- if gt (int $s.minMemoryGiB) 0 }}
- cel:
    expression: {{ printf "device.capacity[%s].memory.compareTo(quantity('%dGi')) >= 0" $d (int $s.minMemoryGiB) | quote }}
{{- end }}
{{- range $s.cel }}
- cel:
    expression: {{ . | quote }}
{{- end }}
{{- end -}}

{{/*
The `devices` of a whole-GPU claim: one device of deviceClassName matching the selectors and, with
`config` true (the shared cases), NVIDIA's opaque GpuConfig carrying `sharing.gpuSharing` (demo
gpu-test5). Kubernetes copies it into the allocation; the driver applies it when it prepares the
claim. Argument: dict root, config.
*/}}
{{- define "gpu-smoke-test.gpuDevices" -}}
{{- $v := .root.Values -}}
{{- $selectors := include "gpu-smoke-test.gpuSelectors" .root -}}
devices:
  requests:
    - name: gpu
      exactly:
        deviceClassName: {{ $v.deviceClassName | quote }}
        allocationMode: ExactCount
        count: 1
        {{- if $selectors }}
        selectors:
          {{- $selectors | trim | nindent 10 }}
        {{- end }}
  {{- if and .config $v.sharing.gpuSharing }}
  config:
    - requests: ["gpu"]
      opaque:
        driver: {{ $v.sharing.driver | quote }}
        parameters:
          apiVersion: resource.nvidia.com/v1beta1
          kind: GpuConfig
          sharing:
            {{- toYaml $v.sharing.gpuSharing | nindent 12 }}
  {{- end }}
{{- end -}}

{{/*
Impossible values fail the render with a message naming the value (the schema checks types and
patterns; these are the cross-field rules).
*/}}
{{- define "gpu-smoke-test.validate" -}}
{{- $v := .Values -}}
{{- $c := $v.cases -}}
{{- if not (or $c.wholeGpu $c.sharedClaim $c.sharedNamedClaim $c.gang $c.mig.enabled $v.allReduce.enabled $v.computeDomain.enabled $v.firstAvailable.enabled $v.inference.enabled) -}}
{{- fail "no case is enabled (cases.wholeGpu, sharedClaim, sharedNamedClaim, gang, mig.enabled, allReduce.enabled, computeDomain.enabled, firstAvailable.enabled, inference.enabled): the smoke test would prove nothing" -}}
{{- end -}}
{{- if and $v.allReduce.enabled (ne $v.scheduler.name "kai-scheduler") -}}
{{- fail (printf "allReduce needs scheduler.name kai-scheduler (a topology-aware gang), got %q" $v.scheduler.name) -}}
{{- end -}}
{{- if and $v.sharing.gpuSharing (not (or $c.sharedClaim $c.sharedNamedClaim)) -}}
{{- fail "sharing.gpuSharing configures the shared cases' claims: it needs cases.sharedClaim or cases.sharedNamedClaim" -}}
{{- end -}}
{{- if not (regexMatch "^[a-z0-9]{4,12}$" $v.runId) -}}
{{- fail (printf "runId must be 4-12 lowercase letters/digits, got %q (the ck8s-gpu runner sets it)" $v.runId) -}}
{{- end -}}
{{- if or (empty $v.image.repository) (empty $v.image.tag) -}}
{{- fail "image.repository and image.tag are required (the pinned smoke-test image from components/pins.py)" -}}
{{- end -}}
{{- if and (eq $v.scheduler.name "kai-scheduler") (empty $v.scheduler.queue) -}}
{{- fail "scheduler.queue is required with kai-scheduler: KAI leaves pods without a queue label pending" -}}
{{- end -}}
{{- if and $v.cases.gang (ne $v.scheduler.name "kai-scheduler") -}}
{{- fail (printf "cases.gang needs scheduler.name kai-scheduler, got %q" $v.scheduler.name) -}}
{{- end -}}
{{- if and $v.cases.gang (lt (int $v.gpus) 2) -}}
{{- fail "cases.gang needs gpus >= 2: a gang of one pod proves nothing" -}}
{{- end -}}
{{- if and $v.cases.mig.enabled (empty $v.cases.mig.deviceClassName) -}}
{{- fail "cases.mig.deviceClassName is required when cases.mig.enabled" -}}
{{- end -}}
{{- if and $v.barrier.enabled (gt (int $v.barrier.timeoutSeconds) (int $v.activeDeadlineSeconds)) -}}
{{- fail (printf "barrier.timeoutSeconds (%d) exceeds activeDeadlineSeconds (%d): the Job would be killed first" (int $v.barrier.timeoutSeconds) (int $v.activeDeadlineSeconds)) -}}
{{- end -}}
{{- end -}}

{{/*
Pod template shared by every case. Argument: dict root, case, claimTemplate (a ResourceClaimTemplate
per pod) or claimName (one ResourceClaim object all pods share), containers (names), annotations
(extra pod annotations); optional: nodeSelector (replaces the chart-wide one), affinity, extraClaims
(list of dict name, claimTemplate: more claims every container references, e.g. an IMEX channel).
*/}}
{{- define "gpu-smoke-test.podTemplate" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
metadata:
  labels:
    {{- include "gpu-smoke-test.labels" $root | nindent 4 }}
    ck8s-gpu.io/smoke-case: {{ .case | quote }}
    {{- with include "gpu-smoke-test.queueLabel" $root }}{{ . | nindent 4 }}{{ end }}
  {{- with .annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  {{- if ne $v.scheduler.name "default-scheduler" }}
  schedulerName: {{ $v.scheduler.name | quote }}
  {{- end }}
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  automountServiceAccountToken: false
  enableServiceLinks: false
  securityContext:
    runAsNonRoot: true
    runAsUser: 65534
    runAsGroup: 65534
    seccompProfile:
      type: RuntimeDefault
  {{- with $v.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with (.nodeSelector | default $v.nodeSelector) }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  resourceClaims:
    - name: gpu
      {{- if .claimName }}
      resourceClaimName: {{ .claimName | quote }}
      {{- else }}
      resourceClaimTemplateName: {{ .claimTemplate | quote }}
      {{- end }}
    {{- range .extraClaims }}
    - name: {{ .name }}
      resourceClaimTemplateName: {{ .claimTemplate | quote }}
    {{- end }}
  containers:
    {{- range .containers }}
    - name: {{ . }}
      image: {{ include "gpu-smoke-test.image" $root | quote }}
      imagePullPolicy: {{ $v.image.pullPolicy }}
      command: ["/bin/bash", "/smoke/probe.sh"]
      env:
        - name: SMOKE_CASE
          value: {{ $.case | quote }}
        - name: SMOKE_CONTAINER
          value: {{ . | quote }}
        - name: SMOKE_EXPECT
          value: {{ $v.probe.expect | quote }}
        - name: SMOKE_BARRIER
          value: {{ $v.barrier.enabled | quote }}
        - name: SMOKE_BARRIER_TIMEOUT
          value: {{ $v.barrier.timeoutSeconds | quote }}
        - name: SMOKE_POD
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        - name: SMOKE_NODE
          valueFrom:
            fieldRef:
              fieldPath: spec.nodeName
      resources:
        {{- toYaml $v.probe.resources | nindent 8 }}
        claims:
          - name: gpu
          {{- range $.extraClaims }}
          - name: {{ .name }}
          {{- end }}
      securityContext:
        allowPrivilegeEscalation: false
        readOnlyRootFilesystem: true
        capabilities:
          drop: ["ALL"]
      volumeMounts:
        - name: probe
          mountPath: /smoke
          readOnly: true
        - name: podinfo
          mountPath: /etc/smoke/podinfo
          readOnly: true
        - name: tmp
          mountPath: /tmp
    {{- end }}
  volumes:
    - name: probe
      configMap:
        name: {{ include "gpu-smoke-test.name" (list $root "probe") | quote }}
        defaultMode: 0444
    # The barrier: the runner annotates the pod once every pod of the case holds its GPU.
    - name: podinfo
      downwardAPI:
        items:
          - path: annotations
            fieldRef:
              fieldPath: metadata.annotations
    - name: tmp
      emptyDir:
        medium: Memory
        sizeLimit: 1Mi
{{- end -}}

{{/* A suspended Job running one case. Argument: dict root, case, pods, podTemplate (rendered). */}}
{{- define "gpu-smoke-test.job" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ include "gpu-smoke-test.name" (list $root .case) | quote }}
  namespace: {{ $root.Release.Namespace | quote }}
  labels:
    {{- include "gpu-smoke-test.labels" $root | nindent 4 }}
    ck8s-gpu.io/smoke-case: {{ .case | quote }}
    {{- with include "gpu-smoke-test.queueLabel" $root }}{{ . | nindent 4 }}{{ end }}
  annotations:
    ck8s-gpu.io/smoke-pods: {{ .pods | quote }}
spec:
  suspend: {{ $v.suspend }}
  parallelism: {{ .pods }}
  completions: {{ .pods }}
  # A failed pod is a failed hop: never retry it away.
  backoffLimit: 0
  activeDeadlineSeconds: {{ $v.activeDeadlineSeconds }}
  template:
    {{- .podTemplate | nindent 4 }}
{{- end -}}
