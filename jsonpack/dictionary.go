package jsonpack

// dictionary holds fragments of Kubernetes objects as encoding/json writes
// them (keys sorted, no spaces). The encoder refers back into it as into text
// already written, and a reference costs less the nearer its target is to
// the end: the fragments every object has come last.
var dictionary = []byte(`` +
	// Less common kinds and fields.
	`{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","spec":{"ingressClassName":"","rules":[{"host":"","http":{"paths":[{"backend":{"service":{"name":"","port":{"number":80}}},"path":"/","pathType":"Prefix"}]}}],"tls":[{"hosts":[""],"secretName":""}]}}` +
	`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":""},"subjects":[{"kind":"ServiceAccount","name":"","namespace":""}]}` +
	`{"kind":"Role","rules":[{"apiGroups":[""],"resources":["pods","configmaps","secrets"],"verbs":["get","list","watch","create","update","patch","delete"]}]}` +
	`{"apiVersion":"batch/v1","kind":"CronJob","spec":{"backoffLimit":6,"completionMode":"NonIndexed","completions":1,"manualSelector":false,"parallelism":1,"podReplacementPolicy":"TerminatingOrFailed","suspend":false,"schedule":"","successfulJobsHistoryLimit":3,"failedJobsHistoryLimit":1,"concurrencyPolicy":"Allow"}}` +
	`{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","spec":{"maxReplicas":10,"metrics":[{"resource":{"name":"cpu","target":{"averageUtilization":80,"type":"Utilization"}},"type":"Resource"}],"minReplicas":1,"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":""}}}` +
	`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","spec":{"maxUnavailable":1,"minAvailable":1,"unhealthyPodEvictionPolicy":"IfHealthyBudget"}}` +
	`{"apiVersion":"apps/v1","kind":"StatefulSet","spec":{"persistentVolumeClaimRetentionPolicy":{"whenDeleted":"Retain","whenScaled":"Retain"},"podManagementPolicy":"OrderedReady","serviceName":"","updateStrategy":{"rollingUpdate":{"partition":0},"type":"RollingUpdate"},"volumeClaimTemplates":[{"apiVersion":"v1","kind":"PersistentVolumeClaim","spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}},"volumeMode":"Filesystem"}}]}}` +
	`{"apiVersion":"apps/v1","kind":"DaemonSet","spec":{"updateStrategy":{"rollingUpdate":{"maxSurge":0,"maxUnavailable":1},"type":"RollingUpdate"}}}` +
	`"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"","operator":"In","values":[""]}]}]}},"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"podAffinityTerm":{"labelSelector":{"matchLabels":{}},"topologyKey":"kubernetes.io/hostname"},"weight":100}]}},` +
	`"tolerations":[{"effect":"NoSchedule","key":"","operator":"Exists"}],"nodeSelector":{"kubernetes.io/os":"linux"},"priorityClassName":"","hostNetwork":false,"automountServiceAccountToken":false,` +
	`"volumeMounts":[{"mountPath":"","name":"","readOnly":true}],"volumes":[{"configMap":{"defaultMode":420,"name":""},"name":""},{"emptyDir":{},"name":""},{"name":"","secret":{"defaultMode":420,"secretName":""}}],` +
	`"env":[{"name":"","value":""},{"name":"","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"}}},{"name":"","valueFrom":{"secretKeyRef":{"key":"","name":""}}}],"envFrom":[{"configMapRef":{"name":""}}],` +
	`"livenessProbe":{"failureThreshold":3,"httpGet":{"path":"/healthz","port":8080,"scheme":"HTTP"},"initialDelaySeconds":10,"periodSeconds":10,"successThreshold":1,"timeoutSeconds":1},"readinessProbe":{"failureThreshold":3,"httpGet":{"path":"/readyz","port":"http","scheme":"HTTP"},"periodSeconds":10,"successThreshold":1,"timeoutSeconds":1},` +
	`"securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]},"readOnlyRootFilesystem":true,"runAsNonRoot":true,"runAsUser":65532,"seccompProfile":{"type":"RuntimeDefault"}},` +
	`"resources":{"limits":{"cpu":"500m","memory":"512Mi"},"requests":{"cpu":"100m","memory":"128Mi"}},"args":["--"],"command":["/"],` +
	`"app.kubernetes.io/component":"","app.kubernetes.io/instance":"","app.kubernetes.io/managed-by":"Helm","app.kubernetes.io/name":"","app.kubernetes.io/part-of":"","app.kubernetes.io/version":"","helm.sh/chart":"","meta.helm.sh/release-name":"","meta.helm.sh/release-namespace":"",` +
	`"ownerReferences":[{"apiVersion":"apps/v1","blockOwnerDeletion":true,"controller":true,"kind":"ReplicaSet","name":"","uid":""}],"finalizers":[""],"deletionGracePeriodSeconds":30,` +
	// Services.
	`{"apiVersion":"v1","kind":"Service","spec":{"clusterIP":"10.0.0.1","clusterIPs":["10.0.0.1"],"externalTrafficPolicy":"Cluster","internalTrafficPolicy":"Cluster","ipFamilies":["IPv4"],"ipFamilyPolicy":"SingleStack","ports":[{"name":"http","nodePort":30080,"port":80,"protocol":"TCP","targetPort":8080}],"selector":{"app":""},"sessionAffinity":"None","type":"ClusterIP"},"status":{"loadBalancer":{}}}` +
	// Deployments and the pod template.
	`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"progressDeadlineSeconds":600,"replicas":1,"revisionHistoryLimit":10,"selector":{"matchLabels":{"app":""}},"strategy":{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":"25%"},"type":"RollingUpdate"},"template":{"metadata":{"creationTimestamp":null,"labels":{"app":""}},"spec":{"containers":[{"image":"","imagePullPolicy":"IfNotPresent","name":"","ports":[{"containerPort":8080,"name":"http","protocol":"TCP"}],"resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"serviceAccountName":"","terminationGracePeriodSeconds":30}}}}` +
	`"deployment.kubernetes.io/revision":"1",` +
	// ConfigMaps and Secrets.
	`{"apiVersion":"v1","data":{"":""},"kind":"Secret","type":"Opaque","immutable":false}{"apiVersion":"v1","kind":"ServiceAccount"}{"apiVersion":"v1","data":{"":""},"kind":"ConfigMap"}` +
	// Every object's metadata, the guard's marks and field managers.
	`"managedFields":[{"apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:":{}},"f:metadata":{"f:annotations":{".":{},"f:":{}},"f:labels":{".":{},"f:":{}}},"f:spec":{"f:":{}}},"manager":"kubectl-client-side-apply","operation":"Update","time":"2026-01-01T00:00:00Z"},` +
	`{"apiVersion":"apps/v1","fieldsType":"FieldsV1","manager":"kube-controller-manager","operation":"Update","subresource":"status","time":"2026-01-01T00:00:00Z"},` +
	`{"apiVersion":"v1","fieldsType":"FieldsV1","manager":"driftguard","operation":"Apply","time":"2026-01-01T00:00:00Z"}],` +
	`{"apiVersion":"v1","kind":"","metadata":{"annotations":{"driftguard.io/changed-by":"","driftguard.io/changed-by-apiserver":""},"creationTimestamp":"2026-01-01T00:00:00Z","generation":1,"labels":{"driftguard.io/guard":""},"name":"","namespace":"","resourceVersion":"","uid":""}}`)
