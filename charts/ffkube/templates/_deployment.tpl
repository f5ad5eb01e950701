{{/*
One Deployment of a service component, the same hardening for each:
(dict "root" $ "component" "api" "values" .Values.api "port" 8080 "portName" "http"
      "readyPath" "/readyz" "automountToken" false "env" (string) "dataSizeLimit" "" )
*/}}
{{- define "ffkube.deployment" -}}
{{- $root := .root }}
{{- $v := .values }}
{{- $ctx := dict "root" $root "component" .component }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "ffkube.fullname" $root }}-{{ .component }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "ffkube.componentLabels" $ctx | nindent 4 }}
spec:
  replicas: {{ $v.replicas }}
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      {{- include "ffkube.selectorLabels" $ctx | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "ffkube.componentLabels" $ctx | nindent 8 }}
      annotations:
        {{- /* Roll the pods when the chart's own Secret changes. */}}
        checksum/secret: {{ include (print $root.Template.BasePath "/secrets.yaml") $root | sha256sum }}
        {{- with $v.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "ffkube.fullname" $root }}-{{ .component }}
      automountServiceAccountToken: {{ .automountToken }}
      enableServiceLinks: false
      {{- with $root.Values.global.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- include "ffkube.podSecurityContext" $root | nindent 8 }}
      terminationGracePeriodSeconds: 30
      containers:
        - name: {{ .component }}
          image: {{ include "ffkube.image" (dict "image" $root.Values.image "root" $root) }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          command:
            {{- toYaml $v.command | nindent 12 }}
          env:
            {{- .env | nindent 12 }}
            {{- with $v.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          ports:
            - name: {{ .portName }}
              containerPort: {{ .port }}
              protocol: TCP
          startupProbe:
            httpGet: {path: /healthz, port: {{ .portName }}}
            periodSeconds: 2
            failureThreshold: 60
          livenessProbe:
            httpGet: {path: /healthz, port: {{ .portName }}}
            periodSeconds: 10
            timeoutSeconds: 3
            failureThreshold: 3
          readinessProbe:
            httpGet: {path: {{ .readyPath }}, port: {{ .portName }}}
            periodSeconds: 5
            {{- /* /readyz waits up to 2 s for each dependency. */}}
            timeoutSeconds: 4
            failureThreshold: 3
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          securityContext:
            {{- include "ffkube.containerSecurityContext" $root | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            {{- if .dataSizeLimit }}
            - name: data
              mountPath: /data
            {{- end }}
      volumes:
        {{- /* The root filesystem is read-only: temporary files go to emptyDirs. */}}
        - name: tmp
          emptyDir:
            sizeLimit: 256Mi
        {{- if .dataSizeLimit }}
        - name: data
          emptyDir:
            sizeLimit: {{ .dataSizeLimit }}
        {{- end }}
      {{- with $v.topologySpreadConstraints }}
      topologySpreadConstraints:
        {{- include "ffkube.topologySpread" (dict "root" $root "component" $ctx.component "constraints" .) | nindent 8 }}
      {{- end }}
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end }}

{{/* A PodDisruptionBudget for a component: (dict "root" $ "component" "api" "values" .Values.api). */}}
{{- define "ffkube.pdb" -}}
{{- if .values.podDisruptionBudget.enabled }}
{{- $ctx := dict "root" .root "component" .component }}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "ffkube.fullname" .root }}-{{ .component }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "ffkube.componentLabels" $ctx | nindent 4 }}
spec:
  maxUnavailable: {{ .values.podDisruptionBudget.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "ffkube.selectorLabels" $ctx | nindent 6 }}
{{- end }}
{{- end }}

{{/* Ingress to a component on its own port only: (dict "root" $ "component" "api" "port" 8080 "from" list). */}}
{{- define "ffkube.ingressPolicy" -}}
{{- $ctx := dict "root" .root "component" .component }}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ include "ffkube.fullname" .root }}-{{ .component }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "ffkube.componentLabels" $ctx | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- include "ffkube.selectorLabels" $ctx | nindent 6 }}
  policyTypes: [Ingress]
  ingress:
    {{- if .port }}
    - ports:
        - protocol: TCP
          port: {{ .port }}
      {{- with .from }}
      from:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    {{- end }}
{{- end }}
