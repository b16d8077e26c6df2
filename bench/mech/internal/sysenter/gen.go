// Package sysenter counts the calls of one system call made by chosen
// processes, with an eBPF program at the raw sys_enter tracepoint
// (sysenter.c). It is what package mech measures as the eBPF
// mechanism: a hook that observes every system call of the machine and
// filters on the process with a hash lookup.
//
// The compiled program and its Go bindings (sysenter_bpfe[lb].*) are
// generated and committed, so that building syscell needs no clang. After
// changing sysenter.c, run go generate in this directory (clang and
// libbpf-dev).
package sysenter

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -tags linux sysenter sysenter.c -- -I/usr/include/x86_64-linux-gnu -Wall -Werror
