{{/* The name of a component's objects: namePrefix + component. */}}
{{- define "xps.name" -}}
{{- printf "%s%s" .root.Values.namePrefix .name -}}
{{- end -}}

{{/* Labels of every object of a component. */}}
{{- define "xps.labels" -}}
app.kubernetes.io/name: xps
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
app.kubernetes.io/version: {{ .root.Values.image.tag | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{/* The selector of a component's pods. */}}
{{- define "xps.selector" -}}
app.kubernetes.io/name: xps
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{- define "xps.image" -}}
{{ printf "%s:%s" .Values.image.repository .Values.image.tag | quote }}
{{- end -}}

{{/* etcd client endpoints, comma-separated. */}}
{{- define "xps.etcd" -}}
{{- if .Values.etcd.bundled -}}
{{- $n := include "xps.name" (dict "root" . "name" "etcd") -}}
{{- $eps := list -}}
{{- range $i := until (int .Values.etcd.replicas) -}}
{{- $eps = append $eps (printf "%s-%d.%s:2379" $n $i $n) -}}
{{- end -}}
{{- join "," $eps -}}
{{- else -}}
{{- required "etcd.endpoints is required when etcd.bundled is false" (join "," .Values.etcd.endpoints) -}}
{{- end -}}
{{- end -}}

{{/* Flags every xps process takes. */}}
{{- define "xps.commonArgs" -}}
- -log-level={{ .Values.logLevel }}
- -log-format={{ .Values.logFormat }}
- -http=0.0.0.0:{{ .Values.opsPort }}
{{- end -}}

{{/* TLS flags of a container (root as .root), when tls.enabled. */}}
{{- define "xps.tlsArgs" -}}
{{- if .root.Values.tls.enabled }}
- -tls-ca={{ .root.Values.tls.mountPath }}/ca.crt
- -tls-cert={{ .root.Values.tls.mountPath }}/tls.crt
- -tls-key={{ .root.Values.tls.mountPath }}/tls.key
{{- end }}
{{- end -}}

{{/* The TLS Secret volume of a component (.name), when tls.enabled:
the Secret tls.secrets.<name>, or for a worker of its own certificate
(.index set: tls.ownWorkerCerts) tls.secrets.worker suffixed -<index>. */}}
{{- define "xps.tlsVolume" -}}
{{- if .root.Values.tls.enabled }}
{{- $secret := required (printf "tls.secrets.%s is required with tls.enabled" .name) (index .root.Values.tls.secrets .name) }}
- name: tls
  secret:
    secretName: {{ hasKey . "index" | ternary (printf "%s-%v" $secret .index) $secret }}
    defaultMode: 0440
{{- end }}
{{- end -}}

{{- define "xps.tlsMount" -}}
{{- if .root.Values.tls.enabled }}
- name: tls
  mountPath: {{ .root.Values.tls.mountPath }}
  readOnly: true
{{- end }}
{{- end -}}

{{/* The POD_NAME environment variable (downward API). */}}
{{- define "xps.podEnv" -}}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
{{- end -}}

{{/* The ops port, liveness and readiness probes of a container. */}}
{{- define "xps.probes" -}}
livenessProbe:
  httpGet: {path: /healthz, port: ops}
  periodSeconds: 10
  failureThreshold: 6
readinessProbe:
  httpGet: {path: /readyz, port: ops}
  periodSeconds: 5
{{- end -}}

{{/* Pod-level settings shared by every component. */}}
{{- define "xps.podCommon" -}}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Pod annotations: Prometheus scraping on the ops port. */}}
{{- define "xps.podAnnotations" -}}
{{- with .Values.podAnnotations }}
{{- toYaml . }}
{{ end -}}
prometheus.io/port: {{ .Values.opsPort | quote }}
checksum/config: {{ toYaml .Values.config | sha256sum }}
{{- end -}}

{{/* A volume from a values volume source, or nothing when it is {}. */}}
{{- define "xps.volume" -}}
{{- if .source }}
- name: {{ .name }}
  {{- toYaml .source | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The mount of such a volume. */}}
{{- define "xps.mount" -}}
{{- if .source }}
- name: {{ .name }}
  mountPath: {{ .path }}
  {{- if .readOnly }}
  readOnly: true
  {{- end }}
{{- end }}
{{- end -}}

{{/* The PodDisruptionBudget of a component. */}}
{{- define "xps.pdb" -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "xps.name" . }}
  labels:
    {{- include "xps.labels" . | nindent 4 }}
spec:
  {{- toYaml .pdb | nindent 2 }}
  selector:
    matchLabels:
      {{- include "xps.selector" . | nindent 6 }}
{{- end -}}

{{/* Store flags (snapshot and export) shared by shards and scheduler. */}}
{{- define "xps.storeArgs" -}}
{{- if .Values.snapshot.store }}
- -snapshot-store={{ .Values.snapshot.store }}
{{- end }}
{{- if .Values.export.store }}
- -export-store={{ .Values.export.store }}
{{- end }}
{{- end -}}

{{/* The volume source of a local store (snapshot or export): the values'
volume, or else the claim the chart creates; nothing for an hdfs:// or
empty store. Call with (dict "root" $ "kind" "snapshot"). */}}
{{- define "xps.storeSource" -}}
{{- $v := index .root.Values .kind -}}
{{- if and $v.store (not (hasPrefix "hdfs://" $v.store)) -}}
{{- if $v.volume -}}
{{ toYaml $v.volume }}
{{- else -}}
persistentVolumeClaim:
  claimName: {{ include "xps.name" (dict "root" .root "name" (printf "%ss" .kind)) }}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Volumes of the stores and /tmp. */}}
{{- define "xps.storeVolumes" -}}
- name: tmp
  emptyDir: {}
{{- range $kind := list "snapshot" "export" }}
{{- with include "xps.storeSource" (dict "root" $ "kind" $kind) }}
- name: {{ $kind }}s
  {{- . | nindent 2 }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "xps.storeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- range $kind := list "snapshot" "export" }}
{{- if include "xps.storeSource" (dict "root" $ "kind" $kind) }}
- name: {{ $kind }}s
  mountPath: {{ (index $.Values $kind).store }}
{{- end }}
{{- end }}
{{- end -}}
