// Package charttest proves the Helm chart charts/xps without a Kubernetes
// cluster, in three ways:
//
//  1. helm lint and helm template pass with the default values and every
//     values file of charts/xps/ci (external etcd, streaming from Kafka,
//     snapshots on HDFS);
//  2. every rendered object decodes strictly into its Kubernetes API type
//     (an unknown or misplaced field fails), and the objects keep the
//     chart's rules: probes, resources, non-root and a read-only root
//     filesystem on every container, a PodDisruptionBudget per workload;
//  3. a container runner starts the rendered pods on the machine's Docker
//     Engine from the project's own image (deploy/image/build.sh), as a
//     kubelet would: the pod's command, args and env (downward-API values
//     filled in), its ConfigMaps and claims as mounted files, its security
//     context, and its Service names as network aliases on a user-defined
//     network (ams-0.ams and etcd-0.etcd resolve as in the cluster). The
//     cluster forms, trains, snapshots and finishes; a second run, with
//     mutual TLS and etcd auth on (certificates from
//     deploy/tls/gen-dev-certs.sh as the components' Secrets), has one
//     shard container killed mid-training and restarted in place (as the
//     kubelet restarts a container) and finishes with the same exactly-once
//     record. Without Docker the runner test skips with a message.
//
// It is a module of its own so that the Kubernetes API types are not
// dependencies of the platform. Helm is built and cached by
// deploy/tools.sh.
package charttest
