{{- define "gpu-observability.labels" -}}
app.kubernetes.io/name: gpu-observability
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: ck8s-gpu
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{- /* The exporter's scrape target, as `up` and DCGM series carry it. */ -}}
{{- define "gpu-observability.exporter" -}}
namespace="{{ .Values.dcgmExporter.namespace }}", service="{{ .Values.dcgmExporter.service }}"
{{- end }}
