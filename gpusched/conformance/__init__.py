"""Conformance against the real Kubernetes: a control plane built from the published Go modules, run as processes.

`build` compiles etcd, kube-apiserver, kube-scheduler and kube-controller-manager once into a cache outside git,
`cluster` starts them on loopback ports with generated certificates and a kubeconfig and always stops them, and
`differential` compares every pod's real outcome (and every claim's allocation, and every preemption) with
gpusched's prediction, on scenarios from `scenarios` and `dra`; `sync` waits until the scheduler has seen a play's
objects, and `kubelet` plays the part of the kubelets the cluster does not run.
"""
