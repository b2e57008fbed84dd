{{/*
The resource.k8s.io version DeviceClasses are written with (upstream templates/_helpers.tpl
"dra-driver-nvidia-gpu.resourceApiVersion"): the explicit value wins, else the newest of v1,
v1beta2, v1beta1 the API server serves, else nothing (validation.yaml then fails the render).
*/}}
{{- define "standin.resourceApi" -}}
{{- $served := list "resource.k8s.io/v1" "resource.k8s.io/v1beta2" "resource.k8s.io/v1beta1" -}}
{{- $found := "" -}}
{{- range $served -}}
{{- if and (not $found) ($.Capabilities.APIVersions.Has .) -}}{{- $found = . -}}{{- end -}}
{{- end -}}
{{- .Values.resourceApiVersion | default $found -}}
{{- end -}}

{{/* One DeviceClass selecting `driver` devices whose `type` attribute is `type` (upstream deviceclass-*.yaml). */}}
{{- define "standin.deviceClass" -}}
apiVersion: {{ .api }}
kind: DeviceClass
metadata:
  name: {{ .name }}
spec:
  selectors:
  - cel:
      expression: {{ printf "device.driver == '%s' && device.attributes['%s'].type == '%s'%s" .driver .driver .type (.extra | default "") | quote }}
{{- if .extendedResource }}
  extendedResourceName: {{ .extendedResource }}
{{- end }}
{{- end -}}
