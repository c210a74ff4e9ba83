{{- define "name" -}}
gardener-extension-kube-vip
{{- end -}}

{{- define "labels" -}}
app.kubernetes.io/name: {{ include "name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- /* The reference of an image value (repository and tag): repository:tag, with a tag
of the form tag@sha256:… repository:tag@sha256:…, and with a bare digest (sha256:…)
repository@sha256:…, since repository:sha256:… is no valid reference. */ -}}
{{- define "imageRef" -}}
{{- $tag := toString .tag -}}
{{- if hasPrefix "sha256:" $tag -}}
{{ .repository }}@{{ $tag }}
{{- else -}}
{{ .repository }}:{{ $tag }}
{{- end -}}
{{- end -}}

{{- define "image" -}}
{{ include "imageRef" .Values.image }}
{{- end -}}

{{- define "agentImage" -}}
{{ include "imageRef" .Values.agentImage }}
{{- end -}}

{{- define "kubeVIPImage" -}}
{{ include "imageRef" .Values.kubeVIPImage }}
{{- end -}}

{{- define "priorityClassName" -}}
{{- if .Values.gardener.runtimeCluster -}}
{{- if .Values.gardener.runtimeCluster.enabled -}}
{{ .Values.gardener.runtimeCluster.priorityClassName }}
{{- else -}}
{{ .Values.priorityClass.name }}
{{- end -}}
{{- else -}}
{{ .Values.priorityClass.name }}
{{- end -}}
{{- end -}}

{{/* The namespace whose SelfHostedShootExposures the controller serves (GEP-28: always kube-system). */}}
{{- define "servedNamespace" -}}
kube-system
{{- end -}}

{{/* Name of the agent's DaemonSet, ServiceAccount, Role, RoleBinding and Lease (controller/agentrollout.Name). */}}
{{- define "agentName" -}}
kube-vip-agent
{{- end -}}

{{- /* The objects and the Lease of upstream kube-vip (agent.implementation kube-vip), named apart
from a user's own kube-vip release (controller/agentrollout.KubeVIPName, KubeVIPLeaseName). */ -}}
{{- define "kubeVIPName" -}}
gardener-kube-vip
{{- end -}}

{{- define "kubeVIPLeaseName" -}}
gardener-kube-vip
{{- end -}}

{{- /* The names earlier releases gave them: only read and deleted, and only when they carry the
extension's managed-by label (controller/agentrollout.LegacyKubeVIPName, LegacyKubeVIPLeaseName). */ -}}
{{- define "legacyKubeVIPName" -}}
kube-vip
{{- end -}}

{{- define "legacyKubeVIPLeaseName" -}}
kube-vip-cp
{{- end -}}
