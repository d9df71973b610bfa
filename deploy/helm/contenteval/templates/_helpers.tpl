{{- define "contenteval.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "contenteval.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of one role: api, worker or migration. */}}
{{- define "contenteval.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .role }}
{{- end -}}

{{- define "contenteval.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "contenteval.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{ .Values.serviceAccount.name | default (include "contenteval.fullname" .) }}
{{- else -}}
{{ .Values.serviceAccount.name | default "default" }}
{{- end -}}
{{- end -}}

{{- define "contenteval.databaseSecret" -}}
{{ .Values.database.existingSecret | default (printf "%s-database" (include "contenteval.fullname" .)) }}
{{- end -}}

{{- define "contenteval.jwtSecret" -}}
{{ .Values.jwt.existingSecret | default (printf "%s-jwt" (include "contenteval.fullname" .)) }}
{{- end -}}

{{- define "contenteval.s3Secret" -}}
{{ .Values.blobStore.s3.existingSecret | default (printf "%s-s3" (include "contenteval.fullname" .)) }}
{{- end -}}

{{/* The pod's security context: a fixed non-root user, the image's. */}}
{{- define "contenteval.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "contenteval.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
privileged: false
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/* Environment shared by every role. */}}
{{- define "contenteval.env" -}}
- name: CONTENTEVAL_DATA_DIR
  value: /data
- name: TMPDIR
  value: /data/tmp
- name: CONTENTEVAL_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: CONTENTEVAL_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "contenteval.databaseSecret" . }}
      key: database-url
- name: CONTENTEVAL_JWT_KEY_FILE
  value: /secrets/jwt/jwt-ed25519.pem
- name: CONTENTEVAL_BLOB_STORE
  value: {{ .Values.blobStore.type | quote }}
{{- if eq .Values.blobStore.type "s3" }}
- name: CONTENTEVAL_S3_ENDPOINT
  value: {{ .Values.blobStore.s3.endpoint | quote }}
- name: CONTENTEVAL_S3_REGION
  value: {{ .Values.blobStore.s3.region | quote }}
- name: CONTENTEVAL_S3_BUCKET
  value: {{ .Values.blobStore.s3.bucket | quote }}
- name: CONTENTEVAL_S3_PREFIX
  value: {{ .Values.blobStore.s3.prefix | quote }}
- name: CONTENTEVAL_S3_PATH_STYLE
  value: {{ .Values.blobStore.s3.pathStyle | quote }}
- name: CONTENTEVAL_S3_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "contenteval.s3Secret" . }}
      key: s3-access-key
- name: CONTENTEVAL_S3_SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "contenteval.s3Secret" . }}
      key: s3-secret-key
{{- end }}
{{- with .Values.publicURL }}
- name: CONTENTEVAL_PUBLIC_URL
  value: {{ . | quote }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "contenteval.volumes" -}}
- name: data
  emptyDir:
    sizeLimit: {{ .Values.scratch.sizeLimit }}
    {{- with .Values.scratch.medium }}
    medium: {{ . }}
    {{- end }}
- name: jwt
  secret:
    secretName: {{ include "contenteval.jwtSecret" . }}
    defaultMode: 0440
    items:
      - key: jwt-ed25519.pem
        path: jwt-ed25519.pem
{{- end -}}

{{- define "contenteval.volumeMounts" -}}
- name: data
  mountPath: /data
- name: jwt
  mountPath: /secrets/jwt
  readOnly: true
{{- end -}}
