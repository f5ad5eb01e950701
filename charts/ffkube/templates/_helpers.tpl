{{/* Chart name, cut to a label's 63 characters. */}}
{{- define "ffkube.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Prefix of every object name: <release>-ffkube, or <release> when it already says ffkube. */}}
{{- define "ffkube.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "ffkube.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "ffkube.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: ffkube
{{- with .Values.global.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector labels of one component: (dict "root" $ "component" "api"). */}}
{{- define "ffkube.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ffkube.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* All labels of one component's objects. */}}
{{- define "ffkube.componentLabels" -}}
{{ include "ffkube.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Where MediaCommands and runner Jobs live. */}}
{{- define "ffkube.runnerNamespace" -}}
{{- default (printf "%s-runners" .Release.Namespace) .Values.runners.namespace.name }}
{{- end }}

{{/* repository:tag, or repository@digest when a digest is given: (dict "image" .Values.image "root" $). */}}
{{- define "ffkube.image" -}}
{{- if .image.digest }}
{{- printf "%s@%s" .image.repository .image.digest }}
{{- else }}
{{- printf "%s:%s" .image.repository (default .root.Chart.AppVersion .image.tag) }}
{{- end }}
{{- end }}

{{/* Secret of the API-side processes. */}}
{{- define "ffkube.secretName" -}}
{{- default (printf "%s-config" (include "ffkube.fullname" .)) .Values.secrets.existingSecret }}
{{- end }}

{{/* The storage Secret the operator's upload containers mount, in the runner namespace. */}}
{{- define "ffkube.uploadSecretName" -}}
{{- default (printf "%s-storage" (include "ffkube.fullname" .)) .Values.runners.uploadSecret.existingSecret }}
{{- end }}

{{- define "ffkube.runnerServiceAccountName" -}}
{{- printf "%s-runner" (include "ffkube.fullname" .) }}
{{- end }}

{{/* Pod-level securityContext every pod of the chart uses: Pod Security "restricted". */}}
{{- define "ffkube.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* Container-level securityContext every container of the chart uses. */}}
{{- define "ffkube.containerSecurityContext" -}}
runAsNonRoot: true
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* Topology spread constraints, each given the component's selector unless it has its own: (dict "root" $ "component" "api" "constraints" list). */}}
{{- define "ffkube.topologySpread" -}}
{{- $selector := include "ffkube.selectorLabels" . | fromYaml }}
{{- range .constraints }}
{{- $c := deepCopy . }}
{{- if not $c.labelSelector }}
{{- $_ := set $c "labelSelector" (dict "matchLabels" $selector) }}
{{- end }}
- {{ toYaml $c | nindent 2 | trim }}
{{- end }}
{{- end }}

{{/* Environment of the API-side processes (api, worker, webhook deliverer): api/config.ts. */}}
{{- define "ffkube.serviceEnv" -}}
{{- $v := .Values }}
- name: HOST
  value: "0.0.0.0"
- name: EXECUTOR
  value: kubernetes
- name: KUBE_NAMESPACE
  value: {{ include "ffkube.runnerNamespace" . | quote }}
- name: MONGODB_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "ffkube.secretName" . }}
      key: mongodb-url
- name: MONGODB_DATABASE
  value: {{ $v.config.mongodb.database | quote }}
- name: NATS_URL
  value: {{ $v.config.nats.url | quote }}
- name: S3_ENDPOINT
  value: {{ $v.config.s3.endpoint | quote }}
- name: S3_BUCKET
  value: {{ $v.config.s3.bucket | quote }}
- name: S3_REGION
  value: {{ $v.config.s3.region | quote }}
- name: S3_FORCE_PATH_STYLE
  value: {{ $v.config.s3.forcePathStyle | quote }}
- name: S3_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ include "ffkube.secretName" . }}
      key: s3-access-key-id
      optional: true
- name: S3_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "ffkube.secretName" . }}
      key: s3-secret-access-key
      optional: true
- name: ENCRYPTION_KEYS
  valueFrom:
    secretKeyRef:
      name: {{ include "ffkube.secretName" . }}
      key: encryption-keys
- name: ALLOW_PRIVATE_NETWORKS
  value: {{ $v.config.allowPrivateNetworks | quote }}
- name: WEBHOOK_TIMEOUT_MS
  value: {{ $v.config.webhookTimeoutMs | int64 | quote }}
- name: RATE_LIMIT_FREE_PER_MINUTE
  value: {{ $v.config.rateLimits.free | int64 | quote }}
- name: RATE_LIMIT_TRIAL_PER_MINUTE
  value: {{ $v.config.rateLimits.trial | int64 | quote }}
- name: RATE_LIMIT_GROWTH_PER_MINUTE
  value: {{ $v.config.rateLimits.growth | int64 | quote }}
- name: RATE_LIMIT_BUSINESS_PER_MINUTE
  value: {{ $v.config.rateLimits.business | int64 | quote }}
- name: CONSOLE_SIGN_IN_FAILURES_PER_MINUTE
  value: {{ $v.config.consoleSignInFailuresPerMinute | int64 | quote }}
- name: CONCURRENT_COMMANDS_FREE
  value: {{ $v.config.concurrentCommands.free | int64 | quote }}
- name: CONCURRENT_COMMANDS_TRIAL
  value: {{ $v.config.concurrentCommands.trial | int64 | quote }}
- name: CONCURRENT_COMMANDS_GROWTH
  value: {{ $v.config.concurrentCommands.growth | int64 | quote }}
- name: CONCURRENT_COMMANDS_BUSINESS
  value: {{ $v.config.concurrentCommands.business | int64 | quote }}
- name: RETENTION_DAYS_FREE
  value: {{ $v.config.retentionDays.free | int64 | quote }}
- name: RETENTION_DAYS_TRIAL
  value: {{ $v.config.retentionDays.trial | int64 | quote }}
- name: RETENTION_DAYS_GROWTH
  value: {{ $v.config.retentionDays.growth | int64 | quote }}
- name: RETENTION_DAYS_BUSINESS
  value: {{ $v.config.retentionDays.business | int64 | quote }}
- name: STORAGE_QUOTA_FREE_BYTES
  value: {{ $v.config.storageQuotaBytes.free | int64 | quote }}
- name: STORAGE_QUOTA_TRIAL_BYTES
  value: {{ $v.config.storageQuotaBytes.trial | int64 | quote }}
- name: STORAGE_QUOTA_GROWTH_BYTES
  value: {{ $v.config.storageQuotaBytes.growth | int64 | quote }}
- name: STORAGE_QUOTA_BUSINESS_BYTES
  value: {{ $v.config.storageQuotaBytes.business | int64 | quote }}
- name: LOG_LEVEL
  value: {{ $v.config.logLevel | quote }}
- name: FFKUBE_DATA_DIR
  value: /data
- name: TMPDIR
  value: /tmp
{{- with $v.config.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}
