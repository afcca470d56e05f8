{{/* The chart's name, and the release's full name every resource's name starts with. */}}
{{- define "lockgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "lockgate.fullname" -}}
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

{{/* A part's name: "<fullname>-<part>". Call with (list $ "worker"). */}}
{{- define "lockgate.partName" -}}
{{- $ := index . 0 -}}
{{- printf "%s-%s" (include "lockgate.fullname" $ | trunc 50 | trimSuffix "-") (index . 1) }}
{{- end }}

{{/* The labels a part's pods are selected by. Call with (list $ "worker"). */}}
{{- define "lockgate.selectorLabels" -}}
{{- $ := index . 0 -}}
app.kubernetes.io/name: {{ include "lockgate.name" $ }}
app.kubernetes.io/instance: {{ $.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* Every resource's labels. Call with (list $ "worker"). */}}
{{- define "lockgate.labels" -}}
{{- $ := index . 0 -}}
helm.sh/chart: {{ printf "%s-%s" $.Chart.Name $.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "lockgate.selectorLabels" . }}
app.kubernetes.io/version: {{ $.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ $.Release.Service }}
app.kubernetes.io/part-of: lockgate
{{- end }}

{{- define "lockgate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "lockgate.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "lockgate.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* Refusals that hold for the whole release, checked once wherever a pod is rendered. */}}
{{- define "lockgate.refusals" -}}
{{- $sso := .Values.inbox.sso }}
{{- if or $sso.issuer $sso.clientId $sso.clientSecret.secretName }}
{{- fail "inbox.sso is set, but the inbox does not sign people in with SSO yet: it arrives with SSO sign-in (OIDC). Leave inbox.sso empty until then; people sign in with their key or passkey." }}
{{- end }}
{{- if and .Values.inbox.enabled (not .Values.inbox.origin) }}
{{- fail "inbox.enabled needs inbox.origin: the exact address people open (https://inbox.example.com); passkeys are bound to it." }}
{{- end }}
{{- if and .Values.mcp.enabled (not .Values.mcp.token.secretName) }}
{{- fail "mcp.enabled needs mcp.token.secretName: the Secret holding the bearer token its clients present." }}
{{- end }}
{{- if and .Values.codecServer.enabled (not .Values.codecServer.token.secretName) }}
{{- fail "codecServer.enabled needs codecServer.token.secretName: it decrypts every run, so it answers only callers holding its token." }}
{{- end }}
{{- if and .Values.codecServer.enabled (not .Values.secrets.payloadKeys.secretName) }}
{{- fail "codecServer.enabled needs secrets.payloadKeys.secretName: the codec server decrypts with the payload keys." }}
{{- end }}
{{- if and .Values.mcp.signAs.principal (not .Values.mcp.signAs.secretName) }}
{{- fail "mcp.signAs.principal needs mcp.signAs.secretName: the Secret holding <principal>.key." }}
{{- end }}
{{- $versioning := .Values.worker.versioning }}
{{- if and (or $versioning.deploymentName $versioning.buildId) (not (and $versioning.deploymentName $versioning.buildId)) }}
{{- fail "worker.versioning needs both deploymentName and buildId (a build of a worker deployment), or neither." }}
{{- end }}
{{- if le (float64 .Values.worker.terminationGracePeriodSeconds) (float64 .Values.worker.graceSeconds) }}
{{- fail "worker.terminationGracePeriodSeconds must outlast worker.graceSeconds: the kubelet kills the worker when it runs out." }}
{{- end }}
{{- if and .Values.monitoring.podMonitor.enabled .Values.monitoring.serviceMonitor.enabled }}
{{- fail "monitoring: enable podMonitor or serviceMonitor, not both: the workers would be scraped twice." }}
{{- end }}
{{- end }}

{{/* Temporal's connection variables, which every part reads. */}}
{{- define "lockgate.temporalEnv" -}}
- name: TEMPORAL_ADDRESS
  value: {{ .Values.temporal.address | quote }}
- name: TEMPORAL_NAMESPACE
  value: {{ .Values.temporal.namespace | quote }}
{{- with .Values.temporal.apiKey }}
{{- if .secretName }}
- name: TEMPORAL_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ .key }}
{{- end }}
{{- end }}
{{- with .Values.temporal.tls }}
{{- if .secretName }}
- name: TEMPORAL_TLS_CLIENT_CERT_PATH
  value: /etc/lockgate/temporal-tls/{{ .certKey }}
- name: TEMPORAL_TLS_CLIENT_KEY_PATH
  value: /etc/lockgate/temporal-tls/{{ .keyKey }}
{{- if .serverCAKey }}
- name: TEMPORAL_TLS_SERVER_CA_CERT_PATH
  value: /etc/lockgate/temporal-tls/{{ .serverCAKey }}
{{- end }}
{{- else if .enabled }}
- name: TEMPORAL_TLS
  value: "true"
{{- end }}
{{- if .serverName }}
- name: TEMPORAL_TLS_SERVER_NAME
  value: {{ .serverName | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* A Secret mounted read-only as one file. Call with (list "name" secretValues). */}}
{{- define "lockgate.secretVolume" -}}
- name: {{ index . 0 }}
  secret:
    secretName: {{ (index . 1).secretName }}
    defaultMode: 0400
    items:
      - key: {{ (index . 1).key }}
        path: {{ (index . 1).key }}
{{- end }}

{{/* The Temporal client certificate's volume and mount, with mTLS. */}}
{{- define "lockgate.temporalTLSVolume" -}}
{{- if .Values.temporal.tls.secretName -}}
- name: temporal-tls
  secret:
    secretName: {{ .Values.temporal.tls.secretName }}
    defaultMode: 0400
{{- end }}
{{- end }}

{{- define "lockgate.temporalTLSMount" -}}
{{- if .Values.temporal.tls.secretName -}}
- name: temporal-tls
  mountPath: /etc/lockgate/temporal-tls
  readOnly: true
{{- end }}
{{- end }}

{{/* The Directory's and payload keys' variables, for the parts that read them. */}}
{{- define "lockgate.directoryEnv" -}}
- name: LOCKGATE_DIRECTORY
  value: /etc/lockgate/directory/{{ .Values.secrets.directory.key }}
{{- end }}

{{/* The payload keys, for the parts that read them: the variable, the volume, the mount. Empty
without secrets.payloadKeys.secretName (payloads are then stored as they are). */}}
{{- define "lockgate.payloadKeysEnv" -}}
{{- if .Values.secrets.payloadKeys.secretName -}}
- name: LOCKGATE_PAYLOAD_KEYS_FILE
  value: /etc/lockgate/payload-keys/{{ .Values.secrets.payloadKeys.key }}
{{- end }}
{{- end }}

{{- define "lockgate.payloadKeysVolume" -}}
{{- if .Values.secrets.payloadKeys.secretName -}}
{{ include "lockgate.secretVolume" (list "payload-keys" .Values.secrets.payloadKeys) }}
{{- end }}
{{- end }}

{{- define "lockgate.payloadKeysMount" -}}
{{- if .Values.secrets.payloadKeys.secretName -}}
- name: payload-keys
  mountPath: /etc/lockgate/payload-keys
  readOnly: true
{{- end }}
{{- end }}

{{/* What every part's pod spec shares: account, security, pull secrets, placement. Call with
(list $ partValues). */}}
{{- define "lockgate.podCommon" -}}
{{- $ := index . 0 -}}
{{- $part := index . 1 -}}
serviceAccountName: {{ include "lockgate.serviceAccountName" $ }}
automountServiceAccountToken: false
securityContext:
  {{- toYaml $.Values.podSecurityContext | nindent 2 }}
{{- with $.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $part.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $part.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $part.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
